"""The run record: one scored episode, as one line of a JSON Lines file (spec §7.1, §7.4; DEC-031, DEC-046, DEC-053,
DEC-055, DEC-056, DEC-057).

Field names follow the peer's ``gf01.run_record.v1`` wherever it has the field (``instance_id``, ``agent_name``,
``eval_track``, ``certificate``, ``suff``, ``min1``, ``valid``, ``goal``, ``eff_t``, ``eff_a``, ``ap_*``, ``ts_*``,
``budget_timestep``, ``budget_atoms``, ``window_size``, the renderer, adaptation and tool fields, ...), so tools
written for it keep working; the rest are ours (docs/runs.md lists every field).

A record is deterministic given its inputs, except ``timing`` (latencies and runtimes measured on the machine):
``run_id`` hashes the instance, the agent spec and the seed, never a clock. ``status`` keeps failures apart:
``completed``; ``agent_error`` (the agent crashed, timed out or broke the protocol; scored as played);
``harness_error`` and ``provider_error`` (our fault, or the model provider's: never scored as the agent's, and
``gf01 evaluate`` plays such runs again).

The record's typed parts are :class:`~gf01_formal.scoring.values.Scores`, :class:`~gf01_formal.scoring.values.
Diagnostic` and :class:`Step` (with its :class:`AgentError`); the score columns of :class:`RunRecord` are derived
from :class:`Scores` (nullable: a failed run has none), so a new score is one line there. The builders
(:func:`record_base`, :func:`finished_record`, :func:`failed_record`) live here too, and nothing here imports an
agent, the episode engine or a solver: reading runs for a report loads none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from gf01_formal.artifacts import sha256_hex
from gf01_formal.play.protocol import PROTOCOL, RENDERER_PROFILE, Refusal
from gf01_formal.scoring.values import NOT_RUN, SCORE_FIELDS, Diagnostic, Scores

if TYPE_CHECKING:
    from gf01_formal.agents.base import AgentSpec
    from gf01_formal.instances.model import Instance

RUN_SCHEMA = "gf01-formal.run_record.v2"
#: v1 records ranked the best match over M_B(I) and scored an over-budget certificate as malformed; they are read
#: (reports, validation) by :func:`upgrade_record`, never appended to.
RUN_SCHEMA_V1 = "gf01-formal.run_record.v1"
PEER_RUN_SCHEMA = "gf01.run_record.v1"
#: Versions of what makes a record: the episode engine and the harness's policy around it (play rules), and the
#: scorer (checks). Bumped whenever a play rule changes; the replay picks the rule by this version
#: (:data:`gf01_formal.runs.replay.PLAY_RULES`), never by what the record's steps look like. harness.2: an action
#: with an unknown input or a value not 0/1 is void (harness.1 records hold both this and the older per-atom
#: refusal), and a ``tool_denied`` fault is fatal.
HARNESS_VERSION = "gf01-formal.harness.2"
CHECKER_VERSION = "gf01-formal.checker.2"
FAMILY_ID = "GF-01"
Status = Literal["completed", "agent_error", "harness_error", "provider_error"]
#: Statuses whose run is final; the others are played again by ``gf01 evaluate``.
FINAL_STATUSES = ("completed", "agent_error")
_RECORD = ConfigDict(extra="forbid", frozen=True, strict=True)
#: The fault kinds that end the agent's part of an episode (the step with the fault and every later one have no
#: action): the one definition the harness, the recorder and the replay all read.
FATAL_KINDS = ("timeout", "crash", "tool_denied")
#: The fault kinds that are protocol violations: the step has no edit and the episode goes on.
VIOLATION_KINDS = ("not_json", "bad_action")


class AgentError(BaseModel):
    """An agent's fault on one step: ``not_json``, ``bad_action`` (no action could be read, or the episode voided
    the one given), or a fatal one (:data:`FATAL_KINDS`: ``timeout``, ``crash``, ``tool_denied``), with what went
    wrong."""

    model_config = _RECORD
    kind: Literal["not_json", "bad_action", "timeout", "crash", "tool_denied"]
    message: str

    @property
    def fatal(self) -> bool:
        """The fault ends the agent's part of the episode."""
        return self.kind in FATAL_KINDS


class Step(BaseModel):
    """One step of a run's step log: the action as submitted, what the episode committed and refused, whether the
    episode ended by a commit here, and the agent's fault on it (if any)."""

    model_config = _RECORD
    t: int
    submitted: dict[str, Any] = Field(description="the action's assignment as submitted (long or odd values cut "
                                      "to text)")
    committed: list[list[Any]] = Field(description="the atoms [t, input, v] committed at this step")
    refused: list[Refusal]
    commit: bool = Field(description="the action committed: the episode ended after this step")
    agent_error: AgentError | None


class RecordSignature(BaseModel):
    """An evaluator's signature of one record: the algorithm, the fingerprint of the public key, the signature."""

    model_config = _RECORD
    alg: Literal["ed25519"]
    key: str = Field(description="fingerprint of the public key: sha256 of its 32 raw bytes, hex")
    sig: str = Field(description="the Ed25519 signature, hex (128 digits)")


def _nullable(model: type[BaseModel], name: str) -> type[BaseModel]:
    """The fields of ``model`` as required, nullable record columns (null when the run has no result)."""
    columns: dict[str, Any] = {k: (f.annotation | None, Field(description=f.description))
                               for k, f in model.model_fields.items()}
    return create_model(name, __config__=_RECORD, **columns)


_ScoreColumns = _nullable(Scores, "ScoreColumns")


class RunBase(BaseModel):
    """The record fields fixed before play (:func:`record_base`): the run id, the instance, the agent and its
    track, the renderer and the protocol, the toolkit's version."""

    model_config = _RECORD

    run_id: str = Field(description="hash of the instance, the agent spec and the seed")

    # the instance
    instance_id: str
    instance_hash: str = Field(description="the instance's content_hash")
    bundle_hash: str | None = Field(description="instances_hash of the bundle it came from (null: a lone instance)")
    split_id: str | None
    mode: Literal["hard", "normal"]
    t_star: int
    window_size: int
    budget_timestep: int = Field(description="B_T")
    budget_atoms: int = Field(description="B_A")
    difficulty_slice: str = Field(description="z(I) band: z0 [0, .25), z1 [.25, .5), z2 [.5, .75), z3 [.75, 1], zNA")
    complexity_z: float | None
    generator_version: str | None

    # the agent and the track
    agent_name: str
    agent_spec: dict[str, Any]
    agent_hash: str = Field(description="sha256 of the agent spec's canonical JSON")
    agent_access: Literal["observations", "observations+planner", "full"]
    seed: int
    eval_track: Literal["EVAL-CB", "EVAL-TA", "EVAL-OC"]
    tool_allowlist_id: str

    # adaptation (DEC-055): the agent spec's declaration (agents/adaptation.py), no_adaptation by default
    adaptation_condition: Literal["no_adaptation", "prompt_adaptation", "weight_finetune"] = "no_adaptation"
    adaptation_budget_tokens: int = 0
    adaptation_data_scope: str = "none"
    adaptation_protocol_id: str = "none"

    # renderer and protocol (DEC-057)
    renderer_track: Literal["json", "visual"]
    renderer_profile_id: str
    protocol: str = Field(description="the agent protocol, e.g. gf01.agent.v1")
    benchmark_version: str


class RunRecord(RunBase, _ScoreColumns, Diagnostic):  # type: ignore[misc,valid-type]
    """One episode's record (one line of a runs file): the fields fixed before play (:class:`RunBase`), the score
    columns (:class:`Scores`'s, nullable), the diagnostic's (:class:`Diagnostic`'s), the policy fields and the step
    log."""

    model_config = _RECORD

    schema_version: Literal["gf01-formal.run_record.v2"] = RUN_SCHEMA
    status: Status
    error: str | None = Field(default=None, description="what went wrong, when status is not completed")
    family_id: Literal["GF-01"] = FAMILY_ID
    agent_meta: dict[str, Any] = Field(default_factory=dict, description="what the agent reports about itself "
                                       "(model, endpoint host, prompt template, participant, ...)")
    sandbox: Literal["bwrap", "none"] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="how an external agent was isolated from the harness: bwrap (own PID, mount and network "
        "namespaces), none (stated with --sandbox none: never official); absent for agents without a program")
    tool_log_hash: str = Field(description="sha256 of the tool log (side file tool-logs/<hash>.jsonl); '' for none")
    previous_signature: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="the signature (sig, hex) of the record before this one in its runs file; '' for the file's "
        "first record (or one after an unsigned record); set by a signing harness, so the signature binds the "
        "record to its place: a record moved from one runs file into another breaks the chain (runs/signing.py)")
    signature: RecordSignature | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="the evaluator's Ed25519 signature of the record (its canonical JSON without this field); "
        "absent when the harness was given no signing key (runs/signing.py)")

    # protocol and renderer (DEC-046, DEC-057)
    play_protocol: Literal["commit_only"] = "commit_only"
    scored_commit_episode: bool = True
    renderer_policy_version: str = "gf01.renderer_policy.v1"

    adaptation_policy_version: str = "gf01.adaptation_policy.v1"

    # versions
    harness_version: str = HARNESS_VERSION
    checker_version: str = CHECKER_VERSION

    # the result (and the score and diagnostic columns; scores null when status is harness_error or provider_error)
    certificate: list[list[Any]] | None
    certificate_errors: list[str] = Field(default_factory=list, description="structural errors of an imported "
                                          "certificate (scored false); an episode's certificate has none")

    # the episode
    steps: list[Step] = Field(description="the step log, one entry per step played")
    refusals: int
    agent_errors: int
    usage: dict[str, Any] | None = Field(default=None, description="tokens and calls the agent reports, if any")
    timing: dict[str, Any] = Field(default_factory=dict, description="latencies (ms); the machine-dependent part")

    @property
    def scores(self) -> Scores | None:
        """The record's scores (None for a run that has none: a harness or provider error)."""
        values = {k: getattr(self, k) for k in SCORE_FIELDS}
        return None if self.suff is None else Scores.model_validate(values)

    @property
    def diagnostic(self) -> Diagnostic:
        """The record's SubsetMin diagnostic."""
        return Diagnostic(subset_min=self.subset_min, diagnostic_status=self.diagnostic_status,
                          diagnostic_note=self.diagnostic_note)

    def to_json(self) -> dict[str, Any]:
        """The record as one JSON object (a runs file's line is its canonical JSON)."""
        return self.model_dump(mode="json")


@dataclass(frozen=True)
class RunOutcome:
    """A finished run: its record, and its side files (path relative to the runs' side directory -> text)."""

    record: RunRecord
    side_files: dict[str, str] = field(default_factory=dict)


def run_id(instance_id: str, instance_hash: str, agent_hash: str, seed: int) -> str:
    """The stable id of a run: the same instance, agent spec and seed give the same id (no clock, no order)."""
    return "run-" + sha256_hex([instance_id, instance_hash, agent_hash, seed])[:24]


@cache
def benchmark_version() -> str:
    """This toolkit's version (the run records' ``benchmark_version``); read once per process (the package's
    metadata is read from disk and parsed: about 0.8 ms a call, once per run record before)."""
    try:
        return version("gf01-formal")
    except PackageNotFoundError:
        return "0+unknown"


def step_timing(latencies: list[float]) -> dict[str, Any]:
    """A record's ``timing`` from the latencies (ms) of the steps the agent played, in order."""
    return {"step_ms": list(latencies), "total_ms": round(sum(latencies), 3)}


def record_base(
    instance: Instance,
    spec: AgentSpec,
    seed: int,
    *,
    bundle_hash: str | None = None,
    renderer_track: str = "json",
    renderer_profile_id: str = RENDERER_PROFILE,
    protocol: str = PROTOCOL,
) -> RunBase:
    """The record fields fixed before play (:class:`RunBase`)."""
    from gf01_formal.instances.splits import difficulty_band

    iid = instance.instance_id
    return RunBase(
        run_id=run_id(iid, instance.content_hash, spec.digest, seed),
        instance_id=iid,
        instance_hash=instance.content_hash,
        bundle_hash=bundle_hash,
        split_id=instance.split_id,
        mode=instance.mode,
        t_star=instance.t_star,
        window_size=instance.window,
        budget_timestep=instance.budget_t,
        budget_atoms=instance.budget_a,
        difficulty_slice=difficulty_band(instance),
        complexity_z=None if instance.complexity is None else instance.complexity.z,
        generator_version=instance.meta.generator_version,
        agent_name=spec.name,
        agent_spec=spec.to_json(),
        agent_hash=spec.digest,
        agent_access=spec.access,  # type: ignore[arg-type]
        seed=seed,
        eval_track=spec.track,
        tool_allowlist_id=spec.tool_allowlist_id,
        **spec.adaptation_fields(),
        renderer_track=renderer_track,  # type: ignore[arg-type]
        renderer_profile_id=renderer_profile_id,
        protocol=protocol,
        benchmark_version=benchmark_version(),
    )


def finished_record(
    base: RunBase,
    certificate: list[list[Any]] | None,
    scores: Scores,
    *,
    steps: list[Step],
    diagnostic: Diagnostic = NOT_RUN,
    status: Status = "completed",
    error: str | None = None,
    certificate_errors: list[str] | None = None,
    tool_log_hash: str = "",
    agent_meta: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
    timing: dict[str, Any] | None = None,
    **extra: Any,
) -> RunRecord:
    """The record of a finished episode (or an imported certificate) scored as ``scores``; ``steps`` is its step
    log, whose refusals and agent errors the record counts; ``extra`` sets other fields, over the base's (an
    import's agent name, tool and adaptation fields)."""
    return RunRecord(
        **{**base.model_dump(), **extra},
        status=status,
        error=error,
        tool_log_hash=tool_log_hash,
        agent_meta=agent_meta or {},
        certificate=certificate,
        certificate_errors=certificate_errors or [],
        **scores.model_dump(),
        **diagnostic.model_dump(),
        steps=steps,
        refusals=sum(len(s.refused) for s in steps),
        agent_errors=sum(1 for s in steps if s.agent_error is not None),
        usage=usage,
        timing=timing or {},
    )


def failed_record(
    base: RunBase, error: str, steps: list[Step], *, status: Status = "harness_error",
    usage: dict[str, Any] | None = None, agent_meta: dict[str, Any] | None = None,
    timing: dict[str, Any] | None = None, sandbox: str | None = None,
) -> RunRecord:
    """The record of a run that could not finish for a reason not the agent's (no scores: never held against it).
    ``timing``: the latencies measured before it stopped (:func:`step_timing`), since a failed run took time too
    (a provider's retries and waits above all)."""
    return RunRecord(**base.model_dump(), status=status, error=error, tool_log_hash="", certificate=None,
                     **dict.fromkeys(SCORE_FIELDS), **NOT_RUN.model_dump(), steps=steps, refusals=0,
                     agent_errors=0, usage=usage, agent_meta=agent_meta or {}, sandbox=sandbox, timing=timing or {})


def upgrade_record(obj: dict[str, Any]) -> dict[str, Any]:
    """A record of this toolkit in the current schema: a v1 record (best match over M_B(I); an over-budget imported
    certificate was scored malformed) gets ``gold_set`` MB and ``within_budget`` from its certificate and B_T (None
    for a malformed one), its scores as they were recorded. Anything else is returned as it is (the schema check
    then judges it)."""
    if obj.get("schema_version") != RUN_SCHEMA_V1:
        return obj
    out = {**obj, "schema_version": RUN_SCHEMA}
    cert, budget = obj.get("certificate"), obj.get("budget_timestep")
    scored = obj.get("suff") is not None
    times = {repr(a[0]) for a in cert if isinstance(a, list) and a} if isinstance(cert, list) else set()
    out["gold_set"] = "MB" if scored else None
    malformed = bool(obj.get("certificate_errors"))
    out["within_budget"] = (len(times) <= budget) if scored and not malformed and isinstance(budget, int) else None
    return out


def schema_documents() -> dict[str, dict[str, Any]]:
    """The JSON Schema of the run record, by file name under docs/schemas/."""
    return {"run_record.v2.json": RunRecord.model_json_schema()}
