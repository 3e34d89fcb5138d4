"""``gf01 validate``: the policy checks of run records, each violation one line naming the record and the field.

Checked for every record (the last one of each run id): the schema; the run id (it must hash the instance, the
agent spec and the seed); the track's tool policy (DEC-053: EVAL-CB ``none`` with an empty log hash, EVAL-TA
``local-planner-v1`` and EVAL-OC ``oracle-exact-search-v1`` with the sha256 of a real log, checked against the
side file when the runs file's ``.d`` directory holds it); the agent's access against its track; the adaptation
policy (DEC-055); the renderer policy (DEC-057: json <-> canonical-json-v1, visual <-> GF-01-R1); the play protocol
(DEC-046: commit_only, scored commit episode). With a bundle: the instance is there with the same content hash and
task fields, and the recorded certificate re-verifies to every recorded score. With ``official``: also no run may
have failed (harness or provider error) and the bundle is required.

>>> [str(v) for v in validate(["runs.jsonl"], bundle="bundle.json")]   # doctest: +SKIP
[]
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gf01_formal.agents.base import ACCESS_OF_TRACK, ALLOWLIST_OF_TRACK
from gf01_formal.instance_io import check_instance, load_artifact
from gf01_formal.instances import Instance
from gf01_formal.runs.record import FINAL_STATUSES, RunRecord, run_id
from gf01_formal.runs.store import read_records
from hoa.errors import Gf01Error, quote

RENDERERS = {"json": "canonical-json-v1", "visual": "GF-01-R1"}
#: The recorded fields a re-verification recomputes (floats compared exactly: both sides come from exact rationals).
RESCORED = ("suff", "min1", "valid", "goal", "eff_t", "eff_a", "score_c", "kappa", "ap_precision", "ap_recall",
            "ap_f1", "ts_precision", "ts_recall", "ts_f1", "best_match_gold")


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


def validate(paths: Sequence[str | os.PathLike[str]], *, bundle: str | None = None,
             official: bool = False) -> list[Violation]:
    """Every violation in the runs files ``paths`` (module docstring), in file and line order."""
    if official and bundle is None:
        raise Gf01Error("--official re-verifies every certificate: give the bundle (--bundle)", field="--bundle")
    instances: dict[str, Instance] = {}
    if bundle is not None:
        art = load_artifact(bundle, check_all=False)
        instances = {i.instance_id: i for i in ([art] if isinstance(art, Instance) else art.instances)}
    out: list[Violation] = []
    problems: dict[str, Any] = {}
    for path in paths:
        name = quote(os.fspath(path), 200, bare=True)
        last: dict[str, tuple[int, dict[str, Any]]] = {}
        for number, obj in read_records(path):
            rid = obj.get("run_id")
            key = rid if isinstance(rid, str) else f"#line {number}"
            if key in last and last[key][1].get("status") in FINAL_STATUSES:
                out.append(Violation(name, number, key, "run_id", f"a second record of a finished run (line "
                                     f"{last[key][0]} already holds it)"))
            last[key] = (number, obj)
        side = Path(f"{os.fspath(path)}.d")
        for key, (number, obj) in sorted(last.items(), key=lambda kv: kv[1][0]):
            for fld, msg in _check(obj, side, instances, problems, official, bundle is not None):
                out.append(Violation(name, number, key, fld, msg))
    return out


def _check(obj: dict[str, Any], side: Path, instances: dict[str, Instance], problems: dict[str, Any],
           official: bool, rescore: bool) -> Iterator[tuple[str, str]]:
    try:
        rec = RunRecord.model_validate(obj)
    except ValidationError as ex:
        for err in ex.errors()[:5]:
            yield ".".join(str(p) for p in err["loc"]) or "record", err["msg"]
        return
    want_id = run_id(rec.instance_id, rec.instance_hash, rec.agent_hash, rec.seed)
    if rec.run_id != want_id:
        yield "run_id", f"does not hash the instance, agent and seed (expected {want_id})"
    if rec.agent_hash != _spec_hash(rec.agent_spec):
        yield "agent_hash", "is not the sha256 of agent_spec"
    yield from _tool_policy(rec, side)
    if rec.agent_access != ACCESS_OF_TRACK[rec.eval_track]:
        yield "agent_access", f"{rec.agent_access} exceeds or differs from what {rec.eval_track} grants " \
                              f"({ACCESS_OF_TRACK[rec.eval_track]})"
    yield from _adaptation_policy(rec)
    if RENDERERS.get(rec.renderer_track) != rec.renderer_profile_id:
        yield "renderer_profile_id", f"{rec.renderer_profile_id!r} is not the profile of renderer_track " \
                                     f"{rec.renderer_track!r} ({RENDERERS.get(rec.renderer_track)})"
    if rec.play_protocol != "commit_only" or rec.scored_commit_episode is not True:
        yield "play_protocol", "official runs are commit_only with a scored commit episode (DEC-046)"
    if official and rec.status not in FINAL_STATUSES:
        yield "status", f"{rec.status}: the run did not finish ({quote(rec.error or '', 120, bare=True)})"
    if rescore and rec.status in FINAL_STATUSES:
        yield from _rescore(rec, instances, problems)


def _spec_hash(spec: dict[str, Any]) -> str:
    from gf01_formal.artifacts import sha256_hex

    return sha256_hex(spec)


def _tool_policy(rec: RunRecord, side: Path) -> Iterator[tuple[str, str]]:
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
    if log.exists() and hashlib.sha256(log.read_bytes()).hexdigest() != rec.tool_log_hash:
        yield "tool_log_hash", f"the side file {log.name} does not hash to it"


def _adaptation_policy(rec: RunRecord) -> Iterator[tuple[str, str]]:
    """DEC-055 (gf01.adaptation_policy.v1)."""
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


def _rescore(rec: RunRecord, instances: dict[str, Instance], problems: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The recorded certificate, re-verified against the bundle, must give every recorded score."""
    from gf01_formal.certificates import parse_certificate
    from gf01_formal.play.scoring import Scorer

    inst = instances.get(rec.instance_id)
    if inst is None:
        yield "instance_id", "not in the bundle"
        return
    if inst.content_hash != rec.instance_hash:
        yield "instance_hash", "differs from the bundle's instance"
        return
    for fld, want in (("mode", inst.mode), ("t_star", inst.t_star), ("window_size", inst.window),
                      ("budget_timestep", inst.budget_t), ("budget_atoms", inst.budget_a)):
        if getattr(rec, fld) != want:
            yield fld, f"{getattr(rec, fld)!r} but the instance says {want!r}"
    if rec.instance_id not in problems:
        problem = check_instance(inst)
        problems[rec.instance_id] = (problem, Scorer(problem))
    problem, scorer = problems[rec.instance_id]
    parsed = parse_certificate(rec.certificate, problem.system.inputs, horizon=problem.horizon,
                               budget_t=problem.budget_t)
    if list(parsed.errors) != rec.certificate_errors:
        yield "certificate_errors", f"recorded {rec.certificate_errors!r}, re-verified {list(parsed.errors)!r}"
    got = scorer.score_submitted(parsed)
    for fld in RESCORED:
        if getattr(rec, fld) != got[fld]:
            yield fld, f"recorded {getattr(rec, fld)!r}, re-verified {got[fld]!r}"
