"""Certificates as users give them: the one parser (structural rules of docs/semantics.md), the JSON form, and the
MET-C / MET-M score of a certificate (spec §7.2).

A certificate is a JSON list of ``[t, "input", v]`` atoms. :func:`parse_certificate` keeps every structural error
instead of stopping at the first, because a malformed certificate is not an error of the tool: it is scored
suff = min1 = valid = goal = false with every reason listed, and its Eff_t and Eff_a count the atoms as submitted,
so a malformed answer never ranks above an honest one with as many atoms (docs/semantics.md). Touching more than B_T
timesteps is not a structural error: Definitions 10-12 have no budget, so such a certificate is scored by them and
flagged ``within_budget: false``.

>>> parsed = parse_certificate([[0, "a", 1], [0, "a", 0]], ["a"], horizon=4, budget_t=1)
>>> parsed.errors
('atom 1: a second atom on (t=0, a)',)
>>> parsed.eff_a
2
>>> parse_certificate([[0, "a", 1], [1, "a", 1]], ["a"], horizon=4, budget_t=1).within_budget
False
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from encoders.problem import Atom, Certificate, Problem
from gf01_formal.scoring.score import DiagnosticStatus, GoldSet, Score
from hoa.errors import Gf01Error, quote
from solvers import api
from solvers.canonical import canonical, certificate_to_json, timesteps
from solvers.limits import Limits, Unknown

if TYPE_CHECKING:
    from solvers.results import BestMatch


@dataclass(frozen=True)
class ParsedCertificate:
    """A certificate as submitted: its well-formed atoms (canonical), its structural errors, and what was submitted.

    ``eff_t`` and ``eff_a`` count the submitted atoms (distinct submitted times, submitted entries), well-formed or
    not: for a well-formed certificate they are |TS(C)| and |C|. ``within_budget`` says whether ``eff_t`` <= B_T
    (None when parsed without a budget, or malformed); it is a flag, never an error.
    """

    atoms: Certificate
    errors: tuple[str, ...] = ()
    submitted: tuple[Any, ...] = ()
    eff_t: int = 0
    eff_a: int = 0
    within_budget: bool | None = None

    @property
    def well_formed(self) -> bool:
        """No structural error."""
        return not self.errors


    @classmethod
    def of_atoms(cls, problem: Problem, atoms: Sequence[Atom]) -> ParsedCertificate:
        """An episode's certificate (always well formed: the engine commits only valid atoms), with its Eff_t, Eff_a
        and budget flag, as :func:`parse_certificate` would give them."""
        eff_t = len({a[0] for a in atoms})
        within = None if problem.budget_t is None else eff_t <= problem.budget_t
        return cls(tuple(atoms), eff_t=eff_t, eff_a=len(atoms), within_budget=within)


def parse_certificate(
    data: Any, inputs: Sequence[str], *, horizon: int, budget_t: int | None
) -> ParsedCertificate:
    """The certificate in decoded JSON ``[[t, "input", v], ...]`` with every structural error found.

    Rules: a list of 3-element lists; t an integer in [0, horizon-1]; an input name; v 0 or 1; no two atoms on one
    (t, input), whether they agree or conflict. ``budget_t`` (B_T, None: none) only sets ``within_budget``: more
    than B_T distinct timesteps is not an error. Atoms with errors are left out of ``atoms``.
    """
    if not isinstance(data, list):
        return ParsedCertificate((), (f'a certificate is a JSON list of [t, "input", v] atoms, not {_kind(data)}',))
    index = {n: i for i, n in enumerate(inputs)}
    errors: list[str] = []
    atoms: list[Atom] = []
    seen: set[tuple[int, int]] = set()
    for k, atom in enumerate(data):
        if not (isinstance(atom, list) and len(atom) == 3):
            errors.append(f'atom {k}: expected [t, "input", v], got {quote(atom, 60)}')
            continue
        t, name, v = atom
        bad = False
        if isinstance(t, bool) or not isinstance(t, int):
            errors.append(f"atom {k}: time {quote(t, 40)} is not an integer")
            bad = True
        elif not 0 <= t < horizon:
            errors.append(f"atom {k}: time {quote(t, 40)} is outside [0, {horizon - 1}]")
            bad = True
        if not isinstance(name, str) or name not in index:
            shown = ", ".join(inputs[:20]) + (f", ... ({len(inputs)} in all)" if len(inputs) > 20 else "")
            errors.append(f"atom {k}: {quote(name, 40)} is not an input (inputs: {shown})")
            bad = True
        if not isinstance(v, int) or isinstance(v, bool) or v not in (0, 1):  # 1.0 and true are not 1
            errors.append(f"atom {k}: value {quote(v, 40)} must be 0 or 1")
            bad = True
        if bad:
            continue
        key = (t, index[name])
        if key in seen:
            errors.append(f"atom {k}: a second atom on (t={t}, {name})")
            continue
        seen.add(key)
        atoms.append((t, index[name], v))
    times = {_time_key(atom, k) for k, atom in enumerate(data)}
    names = tuple(inputs)
    well = tuple(sorted(set(atoms), key=lambda a: (a[0], names[a[1]], a[2])))
    # A malformed certificate is not judged against the budget: its entries need not name times at all.
    within = None if budget_t is None or errors else len(times) <= budget_t
    return ParsedCertificate(well, tuple(errors), tuple(data), len(times), len(data), within)


def _kind(data: Any) -> str:
    return {dict: "an object", str: "a string", bool: "a Boolean", type(None): "null"}.get(type(data), "a number")


def _time_key(atom: Any, k: int) -> str:
    """The submitted time of an entry, as canonical JSON text (so 1, 1.0 and true stay distinct); an entry with no
    readable time counts as a timestep of its own."""
    if isinstance(atom, list) and atom and isinstance(atom[0], int | float | str | bool):
        return json.dumps(atom[0])
    return f"#entry {k}"


def certificate_from_json(data: Any, inputs: Sequence[str], horizon: int, *, field: str = "certificate") -> Certificate:
    """The atoms of a certificate that must be well formed (budgets aside); the first structural error raises."""
    parsed = parse_certificate(data, inputs, horizon=horizon, budget_t=None)
    if parsed.errors:
        raise Gf01Error(parsed.errors[0], field=field)
    return parsed.atoms


def certificate_text(atoms: Sequence[Atom], inputs: Sequence[str]) -> str:
    """A certificate for people: ``{(3, req, 1), (5, ack, 0)}``."""
    return "{" + ", ".join(f"({t}, {a}, {v})" for t, a, v in certificate_to_json(atoms, inputs)) + "}"


def score(
    problem: Problem,
    cert: ParsedCertificate,
    *,
    subset_min: bool = False,
    backend: str | None = None,
    limits: Limits | None = None,
) -> Score:
    """Score a parsed certificate exactly. A malformed one scores suff = min1 = valid = false; a well-formed one is
    scored by Definitions 10-12, whatever its size (an over-budget one too, flagged), and its Min1 follows Definition
    11 literally (an insufficient C may be Min1). With ``subset_min``, the SubsetMin diagnostic too (of a well-formed
    certificate): ``infeasible`` with the cap it hit when it runs out of ``limits``, never a guess."""
    if cert.errors:
        return Score.of_checks(suff=False, min1=False, eff_t=cert.eff_t, eff_a=cert.eff_a,
                               within_budget=cert.within_budget, certificate_errors=cert.errors)
    atoms = canonical(problem, cert.atoms)
    checked = api.check(problem, atoms, backend)
    s = Score.of_checks(suff=checked.suff, min1=checked.min1, eff_t=len(timesteps(atoms)), eff_a=len(atoms),
                        within_budget=cert.within_budget)
    if subset_min:
        s = s.with_diagnostic(*subset_min_diagnostic(problem, atoms, backend=backend, limits=limits))
    return s


def subset_min_diagnostic(problem: Problem, atoms: Sequence[Atom], *, backend: str | None = None,
                          limits: Limits | None = None) -> tuple[bool | None, DiagnosticStatus, str | None]:
    """The SubsetMin diagnostic of the well-formed ``atoms`` (its answer, status and note): ``exact`` with its
    answer, or ``infeasible`` with the reason when it ran out of ``limits`` (never a guess). Every diagnostic of the
    toolkit (verify's, a run's, a campaign's under its caps, validation's re-check) is decided here."""
    try:
        return api.subset_min(problem, atoms, backend, limits=limits), "exact", None
    except Unknown as ex:
        return None, "infeasible", ex.reason


def score_many(problem: Problem, certs: Sequence[ParsedCertificate]) -> list[Score]:
    """:func:`score` of many certificates of one problem at once (vectorised simulation; no diagnostics)."""
    from solvers.simulate import check_many

    well = [canonical(problem, c.atoms) for c in certs if c.well_formed]
    suff, min1 = check_many(problem, well)
    out: list[Score] = []
    k = 0
    for c in certs:
        if c.errors:
            out.append(Score.of_checks(suff=False, min1=False, eff_t=c.eff_t, eff_a=c.eff_a,
                                       within_budget=c.within_budget, certificate_errors=c.errors))
            continue
        out.append(Score.of_checks(suff=bool(suff[k]), min1=bool(min1[k]), eff_t=len(timesteps(well[k])),
                                   eff_a=len(well[k]), within_budget=c.within_budget))
        k += 1
    return out


GOLD_SETS: tuple[GoldSet, ...] = ("M", "MB")


def gold_budget(problem: Problem, gold_set: GoldSet) -> int | None:
    """The ``budget_t`` argument of the solver queries that ranges over ``gold_set`` (None: unbounded, M(I))."""
    return None if gold_set == "M" else problem.budget_t


def with_best_match(problem: Problem, s: Score, bm: BestMatch, gold_set: GoldSet) -> Score:
    """``s`` with the best match ``bm`` ranked in ``gold_set``: its AP/TS figures and its gold, null when the gold
    set is empty (``[]`` would say that the empty certificate is the gold)."""
    empty = not bm.gold and not api.check(problem, (), None).valid
    return s.with_best_match(bm.metrics(), None if empty else certificate_to_json(bm.gold, problem.system.inputs),
                             gold_set)


def best_match(
    problem: Problem, cert: ParsedCertificate, s: Score, *, gold_set: GoldSet = "M", backend: str | None = None,
    limits: Limits | None = None,
) -> Score:
    """``s`` with AP/TS precision, recall and F1 against the best-matching gold of the complete ``gold_set``
    (DEC-025).

    The gold set is M(I) by default (section 7.3), or M_B(I) with B_T = the instance's budget; either is exact and
    complete (docs/semantics.md). Only the well-formed atoms take part. May raise ``Unknown`` under ``limits``.
    """
    bm = api.best_match(problem, cert.atoms, gold_budget(problem, gold_set), backend, limits=limits)
    return with_best_match(problem, s, bm, gold_set)


def verification_record(problem: Problem, cert: ParsedCertificate, s: Score, *, measure: bool,
                        gold_set: GoldSet = "M", backend: str | None = None,
                        limits: Limits | None = None) -> dict[str, Any]:
    """``gf01 verify``'s JSON record of the score ``s`` of ``cert``, with its best match when ``measure``: when that
    runs out of ``limits``, the verdicts decided stay, its fields stay null and ``unknown`` says why (the query, the
    reason, what was spent)."""
    if not measure:
        return s.to_json()
    try:
        return best_match(problem, cert, s, gold_set=gold_set, backend=backend, limits=limits).to_json()
    except Unknown as ex:
        return {**s.to_json(), "unknown": ex.to_json()}
