"""Run records for reports: read from one or more runs files, schema-checked, one record per run id.

Inside a file the last record of a run id counts (a replayed run supersedes its failed record, as in
:mod:`gf01_formal.runs.store`). Across files a run id may appear again (a campaign's runs copied into a release):
a final record (completed, agent_error) wins over a failed one, two final records must agree on everything but
``timing`` (the one machine-dependent field), and a disagreement is an error naming both files. The result is
sorted by run id, so nothing downstream depends on file order or completion order.

>>> from gf01_formal.agents.base import AgentSpec
>>> from gf01_formal.campaign.evaluate import evaluate
>>> _ = evaluate("bundle.json", [AgentSpec("oracle", "EVAL-OC")], "runs.jsonl")
>>> runs = load_runs(["runs.jsonl"])
>>> len(runs.digest)  # sha256 of the records without timing, sorted by run id
64
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gf01_formal.artifacts import sha256_hex
from gf01_formal.runs.record import FINAL_STATUSES, RunRecord, upgrade_record
from gf01_formal.runs.store import read_lines
from gf01_formal.scoring.values import SCORE_FIELDS, Scores
from hoa.errors import Gf01Error, quote

#: Statuses whose runs are scored (an agent_error run is the agent's own play, scored as played); the others are
#: counted and shown but never scored: they are failures of the harness or of a model provider, not of the agent.
SCORED = FINAL_STATUSES


@dataclass(frozen=True)
class Runs:
    """The run records of a report, one per run id, sorted by run id."""

    records: list[RunRecord]
    files: int

    @property
    def digest(self) -> str:
        """sha256 of the records without ``timing``, in run-id order: what the report's numbers depend on."""
        return sha256_hex([strip_timing(r) for r in self.records])

    def scored(self) -> list[RunRecord]:
        """The records whose status is scored (:data:`SCORED`)."""
        return [r for r in self.records if r.status in SCORED]


def strip_timing(record: RunRecord) -> dict[str, Any]:
    """The record's JSON without its machine-dependent ``timing`` field."""
    return {k: v for k, v in record.to_json().items() if k != "timing"}


def _read(path: str | os.PathLike[str]) -> dict[str, tuple[int, RunRecord]]:
    """run id -> (line, record) for the last record of each run id in one file, schema-checked."""
    name = quote(os.fspath(path), 200, bare=True)
    last: dict[str, tuple[int, RunRecord]] = {}
    for number, raw in read_lines(path):
        obj = upgrade_record(raw)
        try:
            rec = RunRecord.model_validate(obj)
        except ValidationError as ex:
            err = ex.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "record"
            raise Gf01Error(f"not a run record ({err['msg']})", file=name, line=number, field=where) from None
        _check_scored(rec, name, number)
        last[rec.run_id] = (number, rec)
    return last


def _check_scored(rec: RunRecord, name: str, number: int) -> None:
    """A scored run (:data:`SCORED`) has every score column, typed as a score: the record's columns are nullable for
    the runs that have none, and a completed run with ``"score_c": null`` ended the report in an internal error
    (the mutation fuzzer, bench/corpus_mutate.py)."""
    if rec.status not in SCORED:
        return
    try:
        Scores.model_validate({k: getattr(rec, k) for k in SCORE_FIELDS})
    except ValidationError as ex:
        err = ex.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "record"
        raise Gf01Error(f"a {rec.status} run without its score ({err['msg']})", file=name, line=number,
                        field=where) from None


def load_runs(paths: Sequence[str | os.PathLike[str]]) -> Runs:
    """The run records of ``paths`` merged as the module docstring says; an empty input is an error."""
    chosen: dict[str, tuple[str, int, RunRecord]] = {}
    for path in paths:
        name = quote(os.fspath(path), 200, bare=True)
        for rid, (line, rec) in _read(path).items():
            if rid not in chosen:
                chosen[rid] = (name, line, rec)
                continue
            other_name, other_line, other = chosen[rid]
            final, other_final = rec.status in SCORED, other.status in SCORED
            if final and other_final and strip_timing(rec) != strip_timing(other):
                raise Gf01Error(f"run {rid} has different results here and in {other_name}:{other_line}",
                                file=name, line=line)
            if final and not other_final:
                chosen[rid] = (name, line, rec)
    if not chosen:
        shown = ", ".join(quote(os.fspath(p), 80, bare=True) for p in paths)
        raise Gf01Error(f"no run records in {shown}")
    return Runs(records=[chosen[rid][2] for rid in sorted(chosen)], files=len(paths))
