"""``gf01 validate``: the policy checks of run records, each violation one line naming the record and the field.

Checked for every record (the last one of each run id): the schema; the run id (it must hash the instance, the
agent spec and the seed); the track: ``eval_track`` is the agent spec's, and a baseline of the panel (random, greedy,
search on EVAL-CB, tool on EVAL-TA, oracle on EVAL-OC) is on its own; the track's tool policy (DEC-053: EVAL-CB
``none`` with an empty log hash, EVAL-TA ``local-planner-v1`` and EVAL-OC ``oracle-exact-search-v1`` with the sha256
of a real log, checked against the side file when the runs file's ``.d`` directory holds it); the agent's access
against its track; the adaptation policy (DEC-055); the renderer policy (DEC-057: json <-> canonical-json-v1, visual
<-> GF-01-R1); the play protocol (DEC-046: commit_only, scored commit episode); the diagnostic fields (``subset_min``
is null unless ``diagnostic_status`` is ``exact``, and then a boolean; ``diagnostic_note`` names the cap an
``infeasible`` one hit, and only then); and for a finished run its step log: the certificate is exactly the atoms
its steps committed, ``refusals`` and ``agent_errors`` are the steps' counts, and only an imported peer row (protocol
``peer``) has no step log. With a bundle: the instance is there with the same content hash and task fields, the
step log replays on it as recorded (:func:`gf01_formal.runs.replay.replay`, the browser's and the inspect
importer's replay too), the recorded certificate re-verifies to every recorded score, and an exact SubsetMin
diagnostic is decided again (under ``recheck_limits``: one that runs out of them is a note, not a violation); the
status and error are what the recorder derives from the steps, and every call of a tool log in the side directory
is answered again from the instance (:mod:`gf01_formal.runs.tool_log`). With ``official``: also no run may have
failed (harness or provider error), an EVAL-TA or EVAL-OC run's tool log must be in the side directory, an external
program must have run sandboxed, a browser run must be a pilot's issued participant's (never free play), the
harness version must be this one, and the bundle is required. With ``key``: every record carries the evaluator's
signature and matches it (:mod:`gf01_formal.runs.signing`), which proves what no replay can (who played, on which
track, in which sandbox).

>>> from gf01_formal.agents.base import AgentSpec
>>> from gf01_formal.campaign.evaluate import evaluate
>>> _ = evaluate("bundle.json", [AgentSpec("random", "EVAL-CB")], "runs.jsonl")
>>> [str(v) for v in validate(["runs.jsonl"], bundle="bundle.json")]
[]
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from gf01_formal.agents import PANEL_TRACK
from gf01_formal.agents.base import ACCESS_OF_TRACK, ALLOWLIST_OF_TRACK
from gf01_formal.instances.io import instance_problem, load_set
from gf01_formal.instances.model import Instance
from gf01_formal.runs.record import FINAL_STATUSES, HARNESS_VERSION, RunRecord, run_id, upgrade_record
from gf01_formal.runs.replay import log_faults
from gf01_formal.runs.scoring_limit import SCORING_SECONDS
from gf01_formal.runs.store import chain_link, read_records
from gf01_formal.scoring.values import SCORE_FIELDS
from hoa.errors import Gf01Error, quote
from solvers.limits import Limits

if TYPE_CHECKING:
    from encoders.problem import Atom, Problem
    from gf01_formal.runs.signing import Verifier
    from gf01_formal.scoring.scores import AnswerBook, Scorer
    from gf01_formal.scoring.values import Diagnostic

#: The agent name of a person playing in the browser (web/games.py).
HUMAN = "human"
RENDERERS = {"json": "canonical-json-v1", "visual": "GF-01-R1"}
#: The recorded fields a re-verification recomputes (floats compared exactly: both sides come from exact rationals).
RESCORED = SCORE_FIELDS
#: The protocol of imported peer rows, the only records without a step log (the peer kept none).
PEER_PROTOCOL = "peer"
#: Default cap (wall seconds) of re-deciding one recorded exact SubsetMin diagnostic: validation runs inside every
#: campaign, so a diagnostic that needed longer than this is noted as not re-checked rather than stalling it.
RECHECK_SECONDS = 10.0


@dataclass(frozen=True)
class Violation:
    """One policy violation: where (file, line, run id), which field, and what is wrong."""

    file: str
    line: int
    run_id: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.run_id}: {self.field}: {self.message}"


@dataclass(frozen=True)
class Validation:
    """What validation found: the violations, and notes on what it could not check (same shape, never a failure)."""

    violations: list[Violation] = field(default_factory=list)
    notes: list[Violation] = field(default_factory=list)


@dataclass
class _Context:
    """What the checks of one validation share: the bundle's instances, and per-instance work done once."""

    instances: dict[str, Instance]
    official: bool
    rescore: bool
    recheck_limits: Limits
    #: (pilot id, participant id, signature) -> whether the participant was issued (None: the pilot is not known)
    issued: Callable[[str, str, Any], bool | None] | None = None
    gold_set: str | None = None  # the gold set every scored record must name (None: any)
    verifier: Verifier | None = None  # the evaluator's public key every record must be signed by (None: not checked)
    problems: dict[str, tuple[Problem, Scorer]] = field(default_factory=dict)
    scorers: dict[tuple[str, str], Scorer] = field(default_factory=dict)  # (instance id, gold set) -> Scorer
    diagnostics: dict[tuple[str, tuple[Atom, ...]], Diagnostic] = field(default_factory=dict)
    answers: AnswerBook = field(default_factory=dict)  # (content hash, gold set) -> what this process's scorers found
    scoring_seconds: float = SCORING_SECONDS  # the time limit of re-scoring one record (runs/scoring_limit.py)
    #: (instance id, gold set) -> why re-scoring a record of it passed the limit: the others are not tried again
    unscored: dict[tuple[str, str], str] = field(default_factory=dict)
    #: The instances hash of the bundle given (None: an instance file, or none given)
    bundle_hash: str | None = None


def validate(paths: Sequence[str | os.PathLike[str]], *, bundle: str | None = None, official: bool = False,
             recheck_limits: Limits | None = None, gold_set: str | None = None,
             answers: AnswerBook | None = None) -> list[Violation]:
    """Every violation in the runs files ``paths`` (module docstring), in file and line order."""
    return check_runs(paths, bundle=bundle, official=official, recheck_limits=recheck_limits,
                      gold_set=gold_set, answers=answers).violations


def check_runs(paths: Sequence[str | os.PathLike[str]], *, bundle: str | None = None, official: bool = False,
               recheck_limits: Limits | None = None,
               issued: Callable[[str, str, Any], bool | None] | None = None,
               gold_set: str | None = None, answers: AnswerBook | None = None,
               key: str | os.PathLike[str] | None = None, scoring_seconds: float = SCORING_SECONDS) -> Validation:
    """The violations in the runs files ``paths`` (module docstring) and the notes on what could not be re-checked
    within ``recheck_limits`` (default: :data:`RECHECK_SECONDS` per SubsetMin diagnostic), in file and line order.
    ``gold_set`` (M or MB) requires every scored record's best match to be ranked there; ``official`` requires M.

    ``answers``: best matches the scorers of this process (and its local workers) computed, by instance content hash
    and gold set; re-scoring takes a certificate's best match from there instead of computing it again. Only values
    this program computed may go in, never values read from a record: every record is still re-scored against them,
    so a record whose scores or gold were changed still fails, and a changed certificate is simply computed again.

    ``key``: the evaluator's public key file (runs/signing.py): every record must carry its signature, and match it.

    ``scoring_seconds``: the time limit of re-scoring one record (:mod:`gf01_formal.runs.scoring_limit`); a record
    not re-scored within it is a note, and a violation when ``official`` (its scores are not proven); the other
    records of that instance and gold set are then not tried again."""
    if official and gold_set == "MB":
        raise Gf01Error("official runs rank their best match in M(I) (section 7.3): --gold-set MB is not official",
                        field="--gold-set")
    if official and bundle is None:
        raise Gf01Error("--official re-verifies every certificate: give the bundle (--bundle)", field="--bundle")
    verifier = None
    if key is not None:
        from gf01_formal.runs.signing import load_verifier

        verifier = load_verifier(key)
    instances: dict[str, Instance] = {}
    bundle_hash = None
    if bundle is not None:
        loaded = load_set(bundle)
        instances, bundle_hash = loaded.by_id, loaded.bundle_hash
    ctx = _Context(instances, official, bundle is not None,
                   Limits(seconds=RECHECK_SECONDS) if recheck_limits is None else recheck_limits, issued,
                   "M" if official else gold_set, answers={} if answers is None else answers, verifier=verifier,
                   scoring_seconds=scoring_seconds, bundle_hash=bundle_hash)
    out = Validation()
    for path in paths:
        name = quote(os.fspath(path), 200, bare=True)
        last: dict[str, tuple[int, dict[str, Any]]] = {}
        chain = _chain(path, verifier.fingerprint) if verifier is not None else {}
        for number, obj in read_records(path):
            rid = obj.get("run_id")
            key = rid if isinstance(rid, str) else f"#line {number}"
            if verifier is not None and chain.get(number) is not None \
                    and obj.get("previous_signature") != chain[number]:
                # Signed records chain to the line before them: one moved between runs files (the best of several
                # signed runs of one agent and instance kept) no longer follows its signed predecessor.
                out.violations.append(Violation(name, number, key, "previous_signature", _chain_fault(obj)))
            if key in last and last[key][1].get("status") in FINAL_STATUSES:
                out.violations.append(Violation(name, number, key, "run_id", f"a second record of a finished run "
                                                f"(line {last[key][0]} already holds it)"))
            last[key] = (number, obj)
        side = Path(f"{os.fspath(path)}.d")
        for key, (number, obj) in sorted(last.items(), key=lambda kv: kv[1][0]):
            notes: list[tuple[str, str]] = []
            for fld, msg in _check(obj, side, ctx, notes):
                out.violations.append(Violation(name, number, key, fld, msg))
            out.notes.extend(Violation(name, number, key, fld, msg) for fld, msg in notes)
    return out


def _chain(path: str | os.PathLike[str], key: str) -> dict[int, str | None]:
    """Per line number of a runs file, the signature of the record before it (runs/store.py, ``chain_link``; '' for
    the first): what a signed record there must name as its ``previous_signature``. None after a record that is
    unsigned or signed by a key other than ``key``: that record is a violation of its own under ``--key``, and the
    record after it is not faulted twice for it."""
    out: dict[int, str | None] = {}
    previous: str | None = ""
    for number, obj in read_records(path):
        out[number] = previous
        stamp = obj.get("signature")
        previous = chain_link(obj) if isinstance(stamp, dict) and stamp.get("key") == key else None
    return out


def _chain_fault(obj: dict[str, Any]) -> str:
    if "previous_signature" not in obj:
        return "the record is not chained to the record before it (a signing harness of this toolkit chains every " \
               "record): it cannot be told from a record moved here from another runs file"
    return "does not name the record before it in this file (nor the start of the file): the record was moved " \
           "from another runs file, or records were removed, reordered or inserted before it"


def _check(obj: dict[str, Any], side: Path, ctx: _Context,
           notes: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """The violations of one record (``notes`` receives what could not be re-checked)."""
    try:
        rec = RunRecord.model_validate(upgrade_record(obj))
    except ValidationError as ex:
        for err in ex.errors()[:5]:
            yield ".".join(str(p) for p in err["loc"]) or "record", err["msg"]
        return
    if ctx.verifier is not None:
        from gf01_formal.runs.signing import signature_fault

        fault = signature_fault(rec, ctx.verifier)
        if fault is not None:
            yield "signature", fault
    want_id = run_id(rec.instance_id, rec.instance_hash, rec.agent_hash, rec.seed)
    if rec.run_id != want_id:
        yield "run_id", f"does not hash the instance, agent and seed (expected {want_id})"
    if rec.agent_hash != _spec_hash(rec.agent_spec):
        yield "agent_hash", "is not the sha256 of agent_spec"
    yield from _track(rec)
    yield from _tool_policy(rec, side, ctx.official)
    if rec.agent_access != ACCESS_OF_TRACK[rec.eval_track]:
        yield "agent_access", f"{rec.agent_access} exceeds or differs from what {rec.eval_track} grants " \
                              f"({ACCESS_OF_TRACK[rec.eval_track]})"
    yield from _adaptation_policy(rec)
    if RENDERERS.get(rec.renderer_track) != rec.renderer_profile_id:
        yield "renderer_profile_id", f"{rec.renderer_profile_id!r} is not the profile of renderer_track " \
                                     f"{rec.renderer_track!r} ({RENDERERS.get(rec.renderer_track)})"
    if rec.play_protocol != "commit_only" or rec.scored_commit_episode is not True:
        yield "play_protocol", "official runs are commit_only with a scored commit episode (DEC-046)"
    yield from _diagnostic_fields(rec)
    if ctx.official and rec.agent_name == "human" and rec.agent_meta.get("session") == "pilot":
        yield from _pilot_participant(rec, ctx)
    if ctx.official and rec.agent_name == "cmd" and rec.sandbox != "bwrap":
        # An unsandboxed program can read the bundle its harness names: its scores say nothing of closed book.
        yield "sandbox", (f"the external agent ran with sandbox {rec.sandbox}" if rec.sandbox else
                          "the external agent's sandbox is not recorded") + ": official runs of --agent-cmd " \
            "programs are sandboxed (bwrap)"
    if ctx.official and rec.agent_name == HUMAN and rec.agent_meta.get("session") != "pilot":
        # Free play is open to anyone under any id, and shows the gold at each episode's end: never a result.
        yield "agent_meta", f"a browser {quote(rec.agent_meta.get('session'), 20)} session's run (not a pilot's " \
                            "issued participant): free play is never official"
    if ctx.official and None not in (ctx.bundle_hash, rec.bundle_hash) and rec.bundle_hash != ctx.bundle_hash:
        # The same instance in two bundles replays the same: only the bundle's hash tells one campaign's record
        # from another's (ninth red-team round).
        yield "bundle_hash", f"the run was played on another bundle ({quote(rec.bundle_hash, 70, bare=True)}), " \
                             f"not the one given ({ctx.bundle_hash}): an official record is checked against the " \
                             "bundle it was played on"
    if ctx.official and rec.harness_version != HARNESS_VERSION:
        yield "harness_version", f"{quote(rec.harness_version, 60)}: official runs are played by this harness " \
                                 f"({HARNESS_VERSION}); an older one's play rules differ"
    if ctx.official and rec.status not in FINAL_STATUSES:
        yield "status", f"{rec.status}: the run did not finish ({quote(rec.error or '', 120, bare=True)})"
    if rec.status in FINAL_STATUSES and ctx.gold_set is not None and rec.gold_set != ctx.gold_set:
        yield "gold_set", f"{rec.gold_set}, but {ctx.gold_set} is required" + \
            (" (official runs rank their best match in M(I), section 7.3)" if ctx.official else "")
    if rec.status in FINAL_STATUSES:
        if not rec.steps and rec.protocol != PEER_PROTOCOL:
            yield "steps", f"a finished {rec.protocol} episode has a step log (only imported peer rows have none)"
        elif ctx.rescore:
            yield from _rescore(rec, ctx, notes, side)
        else:
            yield from ((f.field, f.message) for f in log_faults(rec))


def _pilot_participant(rec: RunRecord, ctx: _Context) -> Iterator[tuple[str, str]]:
    """A pilot's run is official only from a participant the experimenter issued (a link signed with the pilot's
    key, which the record carries): a throwaway id is not a participant."""
    meta = rec.agent_meta
    pilot_id, pid = str(meta.get("pilot_id")), str(meta.get("participant_id"))
    known = None if ctx.issued is None else ctx.issued(pilot_id, pid, meta.get("issued"))
    if known is None:
        yield "agent_meta", f"a run of pilot {quote(pilot_id, 64)}: give its pilot file (--pilot FILE) so that " \
                            "its participant can be checked"
    elif not known:
        yield "agent_meta", f"participant {quote(pid, 64)} was never issued a link of pilot {quote(pilot_id, 64)}"


def _spec_hash(spec: dict[str, Any]) -> str:
    from gf01_formal.artifacts import spec_digest

    return spec_digest(spec)


def _track(rec: RunRecord) -> Iterator[tuple[str, str]]:
    """The track is the one the agent spec names, and a baseline's own: random on EVAL-TA was not played by random."""
    if rec.agent_spec.get("track") != rec.eval_track:
        yield "eval_track", f"{rec.eval_track} but the agent spec says {quote(rec.agent_spec.get('track'), 40)}"
    for name in dict.fromkeys((rec.agent_name, rec.agent_spec.get("name"))):
        if isinstance(name, str) and name in PANEL_TRACK and PANEL_TRACK[name] != rec.eval_track:
            yield "eval_track", f"{rec.eval_track}, but the built-in agent {name} plays on {PANEL_TRACK[name]}"


def _tool_policy(rec: RunRecord, side: Path, official: bool) -> Iterator[tuple[str, str]]:
    """DEC-053 (gf01.tool_policy.v1): the allowlist id of the track, and a real log hash where a tool is allowed."""
    want = ALLOWLIST_OF_TRACK[rec.eval_track]
    if rec.tool_allowlist_id != want:
        yield "tool_allowlist_id", f"{rec.tool_allowlist_id!r}; {rec.eval_track} requires {want!r}"
    if rec.eval_track == "EVAL-CB":
        if rec.tool_log_hash != "":
            yield "tool_log_hash", "EVAL-CB runs use no tool: the hash must be empty"
        return
    if len(rec.tool_log_hash) != 64 or any(c not in "0123456789abcdef" for c in rec.tool_log_hash):
        yield "tool_log_hash", f"{rec.eval_track} requires the sha256 of the run's tool log"
        return
    log = side / "tool-logs" / f"{rec.tool_log_hash}.jsonl"
    if not log.is_file():  # a FIFO or a device planted there is no log (and would block or never end a read)
        # The tool log is what shows an agent used only its track's budgeted tool: publication audits it.
        if official and rec.eval_track in ("EVAL-TA", "EVAL-OC"):
            yield "tool_log_hash", f"the tool log tool-logs/{log.name} is not in {quote(str(side), 200)}"
        return
    if hashlib.sha256(log.read_bytes()).hexdigest() != rec.tool_log_hash:
        yield "tool_log_hash", f"the side file {log.name} does not hash to it"


def _adaptation_policy(rec: RunRecord) -> Iterator[tuple[str, str]]:
    """DEC-055 (gf01.adaptation_policy.v1); a declaration in the agent spec must be the record's."""
    declared = rec.agent_spec.get("adaptation") if isinstance(rec.agent_spec, dict) else None
    if isinstance(declared, dict):
        got = {"condition": rec.adaptation_condition, "budget_tokens": rec.adaptation_budget_tokens,
               "data_scope": rec.adaptation_data_scope, "protocol_id": rec.adaptation_protocol_id}
        if declared != got:
            yield "adaptation_condition", "the adaptation fields differ from the agent spec's declaration"
    if rec.adaptation_condition == "no_adaptation":
        if (rec.adaptation_budget_tokens, rec.adaptation_data_scope, rec.adaptation_protocol_id) != (0, "none", "none"):
            yield "adaptation_condition", "no_adaptation requires budget 0, data scope none and protocol id none"
    else:
        if rec.adaptation_budget_tokens <= 0:
            yield "adaptation_budget_tokens", f"{rec.adaptation_condition} requires a positive token budget"
        if rec.adaptation_data_scope == "none":
            yield "adaptation_data_scope", f"{rec.adaptation_condition} requires a data scope other than none"
        if not rec.adaptation_protocol_id or rec.adaptation_protocol_id == "none":
            yield "adaptation_protocol_id", f"{rec.adaptation_condition} requires a protocol id"


def _diagnostic_fields(rec: RunRecord) -> Iterator[tuple[str, str]]:
    """Only an exact diagnostic has an answer; only an infeasible one has a note (the cap it hit)."""
    exact = rec.diagnostic_status == "exact"
    if rec.subset_min is not None and not exact:
        yield "subset_min", f"{rec.subset_min} but diagnostic_status is {rec.diagnostic_status!r}: only an exact " \
                            "diagnostic has an answer"
    if exact and rec.subset_min is None:
        yield "subset_min", "null but diagnostic_status is 'exact'"
    if rec.diagnostic_status == "infeasible" and not rec.diagnostic_note:
        yield "diagnostic_note", "an infeasible diagnostic names the cap it hit"
    if rec.diagnostic_status != "infeasible" and rec.diagnostic_note is not None:
        yield "diagnostic_note", f"only an infeasible diagnostic has a note (diagnostic_status is " \
                                 f"{rec.diagnostic_status!r})"


def _rescore(rec: RunRecord, ctx: _Context, notes: list[tuple[str, str]], side: Path) -> Iterator[tuple[str, str]]:
    """The recorded certificate, re-verified against the bundle, must give every recorded score, and an exact
    SubsetMin diagnostic its recorded answer; the tool log in the side directory (when there) must answer again
    as it is logged."""
    from gf01_formal.runs.replay import replay, score_faults
    from gf01_formal.runs.scoring_limit import reason, score_within
    from gf01_formal.scoring.certificates import parse_certificate
    from gf01_formal.scoring.scores import Scorer
    from solvers.limits import Unknown

    inst = ctx.instances.get(rec.instance_id)
    if inst is None:
        yield "instance_id", "not in the bundle"
        yield from ((f.field, f.message) for f in log_faults(rec))
        return
    if inst.content_hash != rec.instance_hash:
        yield "instance_hash", "differs from the bundle's instance"
        yield from ((f.field, f.message) for f in log_faults(rec))
        return
    for fld, want in (("mode", inst.mode), ("t_star", inst.t_star), ("window_size", inst.window),
                      ("budget_timestep", inst.budget_t), ("budget_atoms", inst.budget_a)):
        if getattr(rec, fld) != want:
            yield fld, f"{getattr(rec, fld)!r} but the instance says {want!r}"
    if rec.gold_set is None:
        yield "gold_set", "null, but the run is scored (M or MB)"
        return
    if rec.instance_id not in ctx.problems:
        problem = instance_problem(inst)
        ctx.problems[rec.instance_id] = (problem, Scorer(problem))
    problem, _ = ctx.problems[rec.instance_id]
    # Each record is re-scored against the gold set it names (a v1 record's is M_B(I)).
    key = (rec.instance_id, rec.gold_set)
    if key not in ctx.scorers:
        ctx.scorers[key] = Scorer(problem, gold_set_name=rec.gold_set,
                                  answers=ctx.answers.setdefault((inst.content_hash, rec.gold_set), {}))
    scorer = ctx.scorers[key]
    if rec.steps:
        yield from ((f.field, f.message) for f in replay(rec, problem).faults)
    yield from _tool_log_replay(rec, side, problem)
    parsed = parse_certificate(rec.certificate, problem.system.inputs, horizon=problem.horizon,
                               budget_t=problem.budget_t)
    if list(parsed.errors) != rec.certificate_errors:
        yield "certificate_errors", f"recorded {rec.certificate_errors!r}, re-verified {list(parsed.errors)!r}"
    unscored = ctx.unscored.get(key)
    if unscored is None:
        try:
            scores = score_within(scorer, parsed, seconds=ctx.scoring_seconds)
        except Unknown as ex:
            unscored = ctx.unscored[key] = f"not re-scored: {reason(ex, seconds=ctx.scoring_seconds)}"
        else:
            yield from ((f.field, f.message) for f in score_faults(rec, scores))
    if unscored is not None:  # the scores are not proven: an official validation cannot pass them
        if ctx.official:
            yield "score_c", unscored
        else:
            notes.append(("score_c", unscored))
    if rec.diagnostic_status != "exact" or rec.subset_min is None:
        return  # nothing to re-decide (_diagnostic_fields has judged the fields themselves)
    if not parsed.well_formed:
        yield "diagnostic_status", "exact, but SubsetMin is not defined on a malformed certificate"
        return
    answer = _subset_min(problem, rec.instance_id, parsed.atoms, ctx)
    if answer.diagnostic_status != "exact":
        notes.append(("subset_min", f"could not re-check within limits ({answer.diagnostic_note})"))
    elif answer.subset_min != rec.subset_min:
        yield "subset_min", f"recorded {rec.subset_min}, re-checked {answer.subset_min}"


def _tool_log_replay(rec: RunRecord, side: Path, problem: Problem) -> Iterator[tuple[str, str]]:
    """Every call of an EVAL-TA or EVAL-OC run's tool log answered again from the instance (runs/tool_log.py)."""
    from gf01_formal.runs.tool_log import tool_log_faults

    if rec.eval_track == "EVAL-CB" or rec.tool_allowlist_id != ALLOWLIST_OF_TRACK[rec.eval_track]:
        return  # _tool_policy has said what is wrong
    log = side / "tool-logs" / f"{rec.tool_log_hash}.jsonl"
    if not log.is_file():
        return  # _tool_policy: a violation when official, else nothing to replay
    data = log.read_bytes()
    if hashlib.sha256(data).hexdigest() != rec.tool_log_hash:
        return  # _tool_policy has said so
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        yield "tool_log_hash", "its tool log is not UTF-8 text"
        return
    yield from ((fld if fld != "tool_log" else "tool_log_hash", f"its tool log: {msg}")
                for fld, msg in tool_log_faults(text, rec.tool_allowlist_id, problem))


def _subset_min(problem: Problem, instance_id: str, atoms: tuple[Atom, ...], ctx: _Context) -> Diagnostic:
    """SubsetMin decided as the scorer decides it (:func:`gf01_formal.scoring.scores.diagnose`), once per instance
    and certificate (the panel's agents often commit the same one), under ``recheck_limits``."""
    from gf01_formal.scoring.scores import diagnose

    key = (instance_id, tuple(atoms))
    if key not in ctx.diagnostics:
        ctx.diagnostics[key] = diagnose(problem, atoms, limits=ctx.recheck_limits)[0]
    return ctx.diagnostics[key]
