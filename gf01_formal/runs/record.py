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
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gf01_formal.artifacts import sha256_hex

RUN_SCHEMA = "gf01-formal.run_record.v2"
#: v1 records ranked the best match over M_B(I) and scored an over-budget certificate as malformed; they are read
#: (reports, validation) by :func:`upgrade_record`, never appended to.
RUN_SCHEMA_V1 = "gf01-formal.run_record.v1"
PEER_RUN_SCHEMA = "gf01.run_record.v1"
#: Versions of what makes a record: the episode engine (play rules) and the scorer (checks).
HARNESS_VERSION = "gf01-formal.harness.1"
CHECKER_VERSION = "gf01-formal.checker.2"
FAMILY_ID = "GF-01"
Status = Literal["completed", "agent_error", "harness_error", "provider_error"]
#: Statuses whose run is final; the others are played again by ``gf01 evaluate``.
FINAL_STATUSES = ("completed", "agent_error")


class RunRecord(BaseModel):
    """One episode's record (one line of a runs file)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    schema_version: Literal["gf01-formal.run_record.v2"] = RUN_SCHEMA
    run_id: str = Field(description="hash of the instance, the agent spec and the seed")
    status: Status
    error: str | None = Field(default=None, description="what went wrong, when status is not completed")

    # the instance
    instance_id: str
    instance_hash: str = Field(description="the instance's content_hash")
    bundle_hash: str | None = Field(description="instances_hash of the bundle it came from (null: a lone instance)")
    family_id: Literal["GF-01"] = FAMILY_ID
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
    agent_meta: dict[str, Any] = Field(default_factory=dict, description="what the agent reports about itself "
                                       "(model, endpoint host, prompt template, participant, ...)")
    seed: int
    eval_track: Literal["EVAL-CB", "EVAL-TA", "EVAL-OC"]
    tool_allowlist_id: str
    tool_log_hash: str = Field(description="sha256 of the tool log (side file tool-logs/<hash>.jsonl); '' for none")

    # protocol and renderer (DEC-046, DEC-057)
    play_protocol: Literal["commit_only"] = "commit_only"
    scored_commit_episode: bool = True
    renderer_track: Literal["json", "visual"]
    renderer_profile_id: str
    renderer_policy_version: str = "gf01.renderer_policy.v1"
    protocol: str = Field(description="the agent protocol, e.g. gf01.agent.v1")

    # adaptation (DEC-055)
    adaptation_condition: Literal["no_adaptation", "prompt_adaptation", "weight_finetune"] = "no_adaptation"
    adaptation_budget_tokens: int = 0
    adaptation_data_scope: str = "none"
    adaptation_protocol_id: str = "none"
    adaptation_policy_version: str = "gf01.adaptation_policy.v1"

    # versions
    benchmark_version: str
    harness_version: str = HARNESS_VERSION
    checker_version: str = CHECKER_VERSION

    # the result (null when status is harness_error or provider_error)
    certificate: list[list[Any]] | None
    certificate_errors: list[str] = Field(default_factory=list, description="structural errors of an imported "
                                          "certificate (scored false); an episode's certificate has none")
    suff: bool | None
    min1: bool | None
    valid: bool | None
    goal: bool | None
    eff_t: int | None
    eff_a: int | None
    score_c: int | None
    kappa: list[int] | None
    ap_precision: float | None
    ap_recall: float | None
    ap_f1: float | None
    ts_precision: float | None
    ts_recall: float | None
    ts_f1: float | None
    best_match_gold: list[list[Any]] | None = Field(description="the DEC-025 gold the PRF is measured against")
    gold_set: Literal["M", "MB"] | None = Field(description="the set the gold was ranked in: M (M(I), every valid "
                                                "certificate, section 7.3) or MB (M_B(I), within B_T, an option); "
                                                "null when not scored")
    within_budget: bool | None = Field(description="the certificate touches at most B_T timesteps (a flag: an "
                                       "over-budget certificate is scored by Definitions 10-12); null when not "
                                       "scored or malformed")
    subset_min: bool | None = Field(description="the optional exact diagnostic (null: not run or infeasible)")
    diagnostic_status: Literal["exact", "infeasible", "not-run"]
    diagnostic_note: str | None = None

    # the episode
    steps: list[dict[str, Any]] = Field(description="per step: submitted, committed, refused, commit, agent_error")
    refusals: int
    agent_errors: int
    usage: dict[str, Any] | None = Field(default=None, description="tokens and calls the agent reports, if any")
    timing: dict[str, Any] = Field(default_factory=dict, description="latencies (ms); the machine-dependent part")


def run_id(instance_id: str, instance_hash: str, agent_hash: str, seed: int) -> str:
    """The stable id of a run: the same instance, agent spec and seed give the same id (no clock, no order)."""
    return "run-" + sha256_hex([instance_id, instance_hash, agent_hash, seed])[:24]


def upgrade_record(obj: dict[str, Any]) -> dict[str, Any]:
    """A record of this toolkit in the current schema: a v1 record (best match over M_B(I); an over-budget imported
    certificate was scored malformed) gets ``gold_set`` MB and ``within_budget`` from its certificate and B_T (None
    for a malformed one), its
    scores as they were recorded. Anything else is returned as it is (the schema check then judges it)."""
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
