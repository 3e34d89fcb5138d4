"""``gf01 verify`` of one certificate, without typer: the record of its score and the lines that show it. The typer
command (:func:`gf01_formal.cli.query.verify`) and the front door (:mod:`gf01_formal.cli.front`) both print what
:func:`certificate_report` returns, so the two paths cannot differ in what they print.

The record is :class:`gf01_formal.scoring.score.Score`'s JSON (the run record's field names, docs/cli.md). What was
asked for and ran out of ``--seconds``/``--memory`` is left undecided, never dropped with the rest: SubsetMin as the
record has it (``diagnostic_status: infeasible`` with the cap in ``diagnostic_note``), the best match as
``unknown`` (under ``--json``, its fields null and ``unknown`` holding the query, reason and what was spent); the
verdicts decided are printed all the same, and the command exits 3.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gf01_formal.cli.plain import Deadline, rows

if TYPE_CHECKING:
    from encoders.problem import Problem


def certificate_report(
    problem: Problem,
    cert: str,
    *,
    subset_min: bool,
    best_match: bool,
    gold_set: str,
    backend: str | None,
    deadline: Deadline,
) -> tuple[dict[str, Any], Callable[[dict[str, Any]], list[str]]]:
    """The verification record of the certificate file ``cert`` on ``problem`` (with the best match when asked) and
    the function that turns it into the plain-text lines; nothing is printed. Raises Gf01Error for an unreadable
    file. A query that ran out of the deadline's limits leaves the record :func:`undecided`."""
    from gf01_formal.artifacts import read_json
    from gf01_formal.scoring.certificates import certificate_text, parse_certificate, score, verification_record

    parsed = parse_certificate(read_json(cert), problem.system.inputs, horizon=problem.horizon,
                               budget_t=problem.budget_t)
    s = score(problem, parsed, subset_min=subset_min, backend=backend, limits=deadline.limits())
    record = verification_record(problem, parsed, s, measure=best_match, gold_set=gold_set,  # type: ignore[arg-type]
                                 backend=backend, limits=deadline.limits())
    shown = certificate_text(parsed.atoms, problem.system.inputs) if parsed.well_formed else _raw(parsed.submitted)
    return record, lambda r: _verify_lines(r, shown)


def undecided(record: dict[str, Any]) -> bool:
    """Something asked for ran out of its limits: the command exits 3 (the record printed all the same)."""
    return "unknown" in record or record["diagnostic_status"] == "infeasible"


def _raw(submitted: tuple[Any, ...]) -> str:
    return json.dumps(list(submitted)) if len(json.dumps(list(submitted))) < 200 else f"({len(submitted)} atoms)"


def _verify_lines(r: dict[str, Any], shown: str) -> list[str]:
    pairs: list[tuple[str, Any]] = [("certificate", shown)]
    pairs += [(k, r[k]) for k in ("suff", "min1", "valid", "goal", "subset_min", "eff_t", "eff_a", "score_c", "kappa")
              if r[k] is not None]
    if r["diagnostic_status"] == "infeasible":
        pairs.append(("subset_min", f"unknown ({r['diagnostic_note']})"))
    if r["within_budget"] is False:  # a flag worth a line only when it is raised (--json always has it)
        pairs.append(("within_budget", False))
    if r["gold_set"] is not None:
        gold = "-" if r["best_match_gold"] is None else "{" + ", ".join(
            f"({t}, {a}, {v})" for t, a, v in r["best_match_gold"]) + "}"
        pairs.append((f"best-match gold (in {'M(I)' if r['gold_set'] == 'M' else 'M_B(I)'})", gold))
        for level in ("ap", "ts"):
            p, rc, f = (r[f"{level}_{m}"] for m in ("precision", "recall", "f1"))
            pairs.append((f"{level.upper()} P / R / F1", f"{p:.3f} / {rc:.3f} / {f:.3f}"))
    if "unknown" in r:
        u = r["unknown"]
        pairs.append(("best_match", f"unknown ({u['reason']}; spent {json.dumps(u['spent'], sort_keys=True)})"))
    pairs += [("error", e) for e in r["certificate_errors"]]
    return rows(pairs)
