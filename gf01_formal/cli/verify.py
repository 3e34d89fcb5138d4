"""``gf01 verify`` of one certificate, without typer: the record of its scores and the lines that show it. The typer
command (:func:`gf01_formal.cli.query.verify`) and the front door (:mod:`gf01_formal.cli.front`) both print what
:func:`certificate_report` returns, so the two paths cannot differ in what they print."""

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
    file and Unknown past the deadline's limits."""
    from gf01_formal.artifacts import read_json
    from gf01_formal.scoring.certificates import best_match_record, certificate_text, parse_certificate, score

    parsed = parse_certificate(read_json(cert), problem.system.inputs, horizon=problem.horizon,
                               budget_t=problem.budget_t)
    record = score(problem, parsed, subset_min=subset_min, backend=backend, limits=deadline.limits()).to_json()
    if best_match:
        record["best_match"] = best_match_record(problem, parsed, gold_set=gold_set,  # type: ignore[arg-type]
                                                 backend=backend, limits=deadline.limits())
    shown = certificate_text(parsed.atoms, problem.system.inputs) if parsed.well_formed else _raw(parsed.submitted)
    return record, lambda r: _verify_lines(r, shown)


def _raw(submitted: tuple[Any, ...]) -> str:
    return json.dumps(list(submitted)) if len(json.dumps(list(submitted))) < 200 else f"({len(submitted)} atoms)"


def _verify_lines(r: dict[str, Any], shown: str) -> list[str]:
    pairs: list[tuple[str, Any]] = [("certificate", shown)]
    pairs += [(k, r[k]) for k in ("suff", "min1", "valid", "goal", "subset_min", "eff_t", "eff_a", "score_c", "kappa")
              if r[k] is not None]
    if r["within_budget"] is False:  # a flag worth a line only when it is raised (--json always has it)
        pairs.append(("within_budget", False))
    bm = r.get("best_match")
    if bm is not None:
        gold = "{" + ", ".join(f"({t}, {a}, {v})" for t, a, v in bm["gold"]) + "}"
        pairs.append((f"best-match gold (in {'M(I)' if bm['gold_set'] == 'M' else 'M_B(I)'})", gold))
        for level in ("ap", "ts"):
            p, rc, f = (bm[f"{level}_{m}"] for m in ("precision", "recall", "f1"))
            pairs.append((f"{level.upper()} P / R / F1", f"{p:.3f} / {rc:.3f} / {f:.3f}"))
    pairs += [("error", e) for e in r["errors"]]
    return rows(pairs)
