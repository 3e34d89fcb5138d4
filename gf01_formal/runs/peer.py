"""``gf01 import runs``: the peer implementation's run records (``gf01.run_record.v1``, and its older rows whose
fields are strings: ``"goal": "true"``, ``"ap_f1": "0.5"``) as our run records, re-scored by our exact checks.

The peer's instance ids are kept by ``gf01 import peer``, so each row is matched to the instance of that id in the
bundle given. The certificate is re-verified and every score recomputed; what the peer claimed is kept in
``agent_meta.peer_claims`` and the fields where it differs from the exact answer in ``agent_meta.disagreements``.
A row without a certificate cannot be re-scored: it is reported and not imported.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from encoders.problem import Problem
from gf01_formal.agents.base import TRACKS, AgentSpec
from gf01_formal.instances.io import load_set
from gf01_formal.instances.model import Instance
from gf01_formal.runs.record import PEER_RUN_SCHEMA, RunOutcome, finished_record, record_base
from gf01_formal.runs.store import read_records
from gf01_formal.scoring.certificates import GoldSet, certificate_to_json, parse_certificate
from gf01_formal.scoring.scores import Scorer
from gf01_formal.scoring.values import SCORE_FIELDS
from hoa.errors import Gf01Error, quote

#: Our score fields that the peer's records have too (its claims, compared with the exact re-scoring).
CLAIMS = tuple(k for k in SCORE_FIELDS if k not in ("score_c", "kappa", "best_match_gold"))
_BOOLS = {"true": True, "false": False}


@dataclass
class PeerImport:
    """What an import produced: the outcomes (records), and one note per row that was not imported."""

    outcomes: list[RunOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    disagreements: int = 0


def import_peer_runs(path: str | os.PathLike[str], bundle: str | os.PathLike[str], *,
                     gold_set: GoldSet = "M") -> PeerImport:
    """Our run records of the peer rows in ``path``, re-scored against ``bundle`` (module docstring), the best match
    ranked in ``gold_set`` (M(I) by default)."""
    loaded = load_set(bundle)
    instances = loaded.by_id
    bundle_hash = loaded.bundle_hash
    name = quote(os.fspath(path), 200, bare=True)
    result = PeerImport()
    scorers: dict[str, tuple[Problem, Scorer]] = {}
    for number, row in read_records(path):
        row = {k: _typed(v) for k, v in row.items()}
        iid = row.get("instance_id")
        if not isinstance(iid, str) or iid not in instances:
            raise Gf01Error(f"instance {quote(iid, 60)} is not in {quote(os.fspath(bundle), 200, bare=True)} (import "
                            "the peer's bundle with 'gf01 import peer' first)", file=name, line=number)
        if "certificate" not in row:
            claims = ", ".join(f"{k}={json.dumps(row[k])}" for k in CLAIMS if k in row)
            result.skipped.append(f"{name}:{number}: no certificate, nothing to re-score ({claims or 'no claims'})")
            continue
        inst = instances[iid]
        if iid not in scorers:
            problem = loaded.problem(inst)
            scorers[iid] = (problem, Scorer(problem, gold_set_name=gold_set))
        problem, scorer = scorers[iid]
        try:
            outcome = _record(row, inst, problem, scorer, bundle_hash, f"{name}:{number}")
        except ValidationError as ex:
            err = ex.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise Gf01Error(f"{err['msg']} (got {quote(err.get('input'), 60)})", file=name, line=number,
                            field=where) from None
        except (TypeError, ValueError) as ex:
            raise Gf01Error(f"a field of the wrong type: {quote(str(ex), 80, bare=True)}", file=name,
                            line=number) from None
        result.disagreements += bool(outcome.record.agent_meta.get("disagreements"))
        result.outcomes.append(outcome)
    return result


def _typed(value: Any) -> Any:
    """A legacy string-typed value as what it stands for ("true" -> True, "0.5" -> 0.5, "[[1, ...]]" -> list)."""
    if not isinstance(value, str):
        return value
    if value in _BOOLS:
        return _BOOLS[value]
    if value[:1] in "-0123456789[{" and value:
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _record(row: dict[str, Any], inst: Instance, problem: Problem, scorer: Scorer, bundle_hash: str | None,
            where: str) -> RunOutcome:
    track = row.get("eval_track") if row.get("eval_track") in TRACKS else "EVAL-CB"
    seed = row.get("seed") if isinstance(row.get("seed"), int) and not isinstance(row.get("seed"), bool) else 0
    agent = str(row.get("agent_name") or "unknown")
    spec = AgentSpec("peer", track, {"agent_name": agent})
    parsed = parse_certificate(row["certificate"], problem.system.inputs, horizon=problem.horizon,
                               budget_t=problem.budget_t)
    scores = scorer.score_submitted(parsed)
    if parsed.errors:
        certificate = row["certificate"] if isinstance(row["certificate"], list) else None
    else:
        certificate = certificate_to_json(parsed.atoms, problem.system.inputs)
    claims = {k: row[k] for k in CLAIMS if k in row}
    differ = sorted(k for k, v in claims.items() if getattr(scores, k) != v)
    meta = {"source": where, "peer_schema": row.get("schema_version", PEER_RUN_SCHEMA), "peer_claims": claims,
            "disagreements": differ}
    for key in ("benchmark_version", "harness_version", "checker_version", "git_commit", "config_hash"):
        if key in row:
            meta[f"peer_{key}"] = row[key]
    renderer = row.get("renderer_track") if row.get("renderer_track") in ("json", "visual") else "json"
    base = record_base(inst, spec, seed, bundle_hash=bundle_hash, renderer_track=renderer,
                       renderer_profile_id=str(row.get("renderer_profile_id", "canonical-json-v1")), protocol="peer")
    record = finished_record(
        base, certificate, scores, steps=[], certificate_errors=list(parsed.errors), agent_meta=meta,
        agent_name=agent,  # the spec is "peer"'s; the record names the peer's agent, as the peer's row does
        tool_log_hash=str(row.get("tool_log_hash", "")),
        tool_allowlist_id=str(row.get("tool_allowlist_id", spec.tool_allowlist_id)),
        play_protocol=row.get("play_protocol", "commit_only"),
        scored_commit_episode=row.get("scored_commit_episode", True) is True,
        adaptation_condition=row.get("adaptation_condition", "no_adaptation"),
        adaptation_budget_tokens=int(row.get("adaptation_budget_tokens", 0)),
        adaptation_data_scope=str(row.get("adaptation_data_scope", "none")),
        adaptation_protocol_id=str(row.get("adaptation_protocol_id", "none")),
    )
    return RunOutcome(record)
