"""Certificate structural checks (DESIGN.md §3.3) and the MET-C / MET-M scores of a certificate.

A structurally invalid certificate is not an error of the tool: it is scored suff = min1 = valid = goal = false
with every reason listed, so an agent's malformed answer still gets a score record.

>>> atoms, errors = parse_certificate([[0, "a", 1], [0, "a", 0]], ["a"], T=4, budget_t=1)
>>> errors
['atom 1: a second atom on (t=0, a)']
"""

from __future__ import annotations

from typing import Any

from encoders.problem import Atom, Problem
from gf01_formal.traces import atoms_to_json
from solvers import api
from solvers.canonical import canonical, timesteps
from solvers.limits import Limits


def parse_certificate(
    data: Any, input_names: tuple[str, ...] | list[str], T: int, budget_t: int | None
) -> tuple[tuple[Atom, ...], list[str]]:
    """Atoms ``(t, input index, v)`` from decoded JSON ``[[t, "ap", v], ...]``, and every structural error found.

    Rules: a list of 3-element lists; t an integer in [0, T-1]; ap an input name; v 0 or 1; no two atoms on one
    (t, ap); at most ``budget_t`` distinct timesteps (None: no cap). Atoms with errors are left out of the result.
    """
    if not isinstance(data, list):
        return (), ['a certificate is a JSON list of [t, "input", v] atoms']
    index = {n: i for i, n in enumerate(input_names)}
    errors: list[str] = []
    atoms: list[Atom] = []
    seen: set[tuple[int, int]] = set()
    for k, atom in enumerate(data):
        if not (isinstance(atom, list) and len(atom) == 3):
            errors.append(f'atom {k}: expected [t, "input", v], got {atom!r}')
            continue
        t, name, v = atom
        bad = False
        if isinstance(t, bool) or not isinstance(t, int):
            errors.append(f"atom {k}: time {t!r} is not an integer")
            bad = True
        elif not 0 <= t < T:
            errors.append(f"atom {k}: time {t!r} is outside [0, {T - 1}]")
            bad = True
        if not isinstance(name, str) or name not in index:
            errors.append(f"atom {k}: {name!r} is not an input (inputs: {', '.join(input_names)})")
            bad = True
        if isinstance(v, bool) or v not in (0, 1):
            errors.append(f"atom {k}: value {v!r} must be 0 or 1")
            bad = True
        if bad:
            continue
        key = (t, index[name])
        if key in seen:
            errors.append(f"atom {k}: a second atom on (t={t}, {name})")
            continue
        seen.add(key)
        atoms.append((t, index[name], v))
    used = len(timesteps(atoms))
    if budget_t is not None and used > budget_t:
        errors.append(f"the certificate touches {used} timesteps, more than B_T = {budget_t}")
    return tuple(atoms), errors


def score(
    problem: Problem,
    atoms: tuple[Atom, ...] | list[Atom],
    errors: list[str] | None = None,
    *,
    subset_min: bool = False,
    backend: str = "explicit",
) -> dict[str, Any]:
    """The verification record of a certificate: suff, min1, valid, goal, Eff_t, Eff_a, Score_C, kappa, errors.

    ``goal`` is G = 1[Suff]; ``score_c`` = 1[Valid] (MET-C); ``kappa`` = [M, G, -Eff_t, -Eff_a] (MET-M).
    With errors, suff = min1 = valid = goal = false. ``subset_min`` (optional, exact) is None unless asked for.
    """
    errors = list(errors or [])
    atoms = canonical(problem, atoms)
    eff_t, eff_a = len(timesteps(atoms)), len(atoms)
    if errors:
        s = m = False
        sm = False if subset_min else None
    else:
        s = api.suff(problem, atoms, backend)
        m = api.min1(problem, atoms, backend)
        sm = api.subset_min(problem, atoms, backend) if subset_min else None
    v = s and m
    return {
        "suff": s,
        "min1": m,
        "valid": v,
        "goal": s,
        "eff_t": eff_t,
        "eff_a": eff_a,
        "score_c": int(v),
        "kappa": [int(v), int(s), -eff_t, -eff_a],
        "subset_min": sm,
        "errors": errors,
    }


def best_match_record(
    problem: Problem, atoms: tuple[Atom, ...] | list[Atom], *, backend: str = "bdd", limits: Limits | None = None
) -> dict[str, Any]:
    """AP/TS precision, recall and F1 against the best-matching gold of the complete M_B(I) (DEC-025).

    The gold set is M_B(I) with B_T = the instance's budget, exact and complete (DESIGN.md §3.3). Only the
    structurally well-formed atoms take part (see :func:`parse_certificate`). May raise ``Unknown`` under ``limits``.
    """
    bm = api.best_match(problem, canonical(problem, atoms), problem.budget_t, backend, limits=limits)
    return {
        "gold": atoms_to_json(bm.gold, problem.system.inputs),
        "ap_precision": bm.ap_precision,
        "ap_recall": bm.ap_recall,
        "ap_f1": bm.ap_f1,
        "ts_precision": bm.ts_precision,
        "ts_recall": bm.ts_recall,
        "ts_f1": bm.ts_f1,
    }
