"""The SAT backend: every query on the CNF unrolling (:mod:`encoders.cnf`) with python-sat.

Each query runs one :class:`solvers.sat_session.Session` (CaDiCaL, or Glucose under a time or conflict limit). Under
a time cap every query also runs in a child process killed at the cap (:func:`solvers.limits.guarded`), so building a
large CNF or bootstrapping the solver cannot overrun it either. Certificates are read off the flip variables only.
Count, enumeration and best match go through the search that learns Min1 copies as it needs them
(:mod:`solvers.minimal_sets`, :mod:`solvers.optimise`) rather than encoding every copy up front.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from pysat.card import ITotalizer

from encoders.cnf import Encoding, add_timestep_budget, encode
from encoders.problem import Atom, Certificate, Flip, Problem
from solvers import minimal_sets, optimise
from solvers.canonical import effective_flips, flips_to_atoms, timesteps
from solvers.limits import NO_LIMITS, Limits, guarded
from solvers.results import BestMatch, OracleResult
from solvers.sat_session import DEFAULT_SOLVER, LIMITED_SOLVER, Session


def _fix(enc: Encoding, flips: Iterable[Flip]) -> list[int]:
    """Assumptions that set exactly ``flips`` (those up to t*) and no other flip."""
    chosen = set(flips)
    return [v if p in chosen else -v for p, v in enc.flips.items()]


def _live(problem: Problem, atoms: Iterable[Atom]) -> set[Flip]:
    return {f for f in effective_flips(problem, atoms) if f[0] <= problem.t_star}


# -- suff, min1, valid, subset_min ------------------------------------------------------------------------------


@guarded("suff")
def suff(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 10: one SAT call with every flip fixed and Suff assumed."""
    enc = encode(problem)
    with Session(enc, "suff", (limits or NO_LIMITS).start()) as s:
        return s.solve([*_fix(enc, _live(problem, atoms)), enc.suff])


@guarded("min1")
def min1(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 11: one SAT call per atom, on the flips of C minus that atom."""
    c = list(atoms)
    enc = encode(problem)
    with Session(enc, "min1", (limits or NO_LIMITS).start()) as s:
        for k in range(len(c)):
            if s.solve([*_fix(enc, _live(problem, c[:k] + c[k + 1 :])), enc.suff]):
                return False
    return True


@guarded("valid")
def valid(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 12: Suff and Min1."""
    c = list(atoms)
    return suff(problem, c, limits=limits) and min1(problem, c, limits=limits)


@guarded("subset_min")
def subset_min(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 14 as one SAT call: Suff with every flip outside C's effective flips (up to t*) forced off.

    When every atom of C is such a flip, the clause "some flip of C is off" (behind a selector) makes the subset
    proper; otherwise dropping a no-op or late atom already makes any flip subset a proper subset of C.
    """
    c = list(atoms)
    enc = encode(problem)
    mine = _live(problem, c)
    assumptions = [enc.suff, *(-v for p, v in enc.flips.items() if p not in mine)]
    with Session(enc, "subset_min", (limits or NO_LIMITS).start()) as s:
        if len(mine) == len(c):
            if not c:
                return True
            sel = enc.pool.id(("proper-subset",))
            s.add([-sel, *(-enc.flips[p] for p in sorted(mine))])
            assumptions.append(sel)
        return not s.solve(assumptions)


# -- witness, oracle --------------------------------------------------------------------------------------------


def _shrink(s: Session, enc: Encoding, flips: list[Flip]) -> list[Flip]:
    """Remove flips one at a time while the rest stays sufficient, until no single removal keeps it sufficient.

    Sufficiency is not monotone, so after a removal every earlier flip is tried again: the fixpoint is Min1.
    """
    cur = sorted(flips)
    changed = True
    while changed:
        changed = False
        for k in range(len(cur)):
            trial = cur[:k] + cur[k + 1 :]
            if s.solve([*_fix(enc, trial), enc.suff]):
                cur, changed = trial, True
                break
    return cur


@guarded("witness")
def witness(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> Certificate | None:
    """A valid certificate within ``budget_t``: a sufficient flip set found by SAT, shrunk by singleton removal."""
    clock = (limits or NO_LIMITS).start()
    enc = encode(problem, check=lambda: clock.check("witness"))
    if budget_t is not None:
        add_timestep_budget(enc, budget_t)
    with Session(enc, "witness", clock) as s:
        if not s.solve([enc.suff]):
            return None
        return flips_to_atoms(problem, _shrink(s, enc, s.model_flips()))


def _at_most(s: Session, enc: Encoding, lits: list[int], ubound: int) -> ITotalizer:
    """An incremental totalizer over ``lits``: assuming ``-tot.rhs[k]`` bounds their sum by k (k < ubound)."""
    tot = ITotalizer(lits=lits, ubound=ubound, top_id=enc.pool.top)
    enc.pool.top = max(enc.pool.top, tot.top_id)  # later pool ids (and totalizers) must not reuse its variables
    s.sync()
    s.solver.append_formula(tot.cnf.clauses)
    return tot


@guarded("oracle")
def oracle(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> OracleResult | None:
    """The valid certificate minimising (Eff_t, Eff_a): descending SAT-UNSAT search on two totalizers.

    Eff_t is lowered until UNSAT proves the least one; then, under that bound, Eff_a likewise. The final model is a
    cost-minimal sufficient flip set, hence valid.
    """
    clock = (limits or NO_LIMITS).start()
    enc = encode(problem, check=lambda: clock.check("oracle"))
    steps = sorted(enc.timestep)
    ts_lits = [enc.timestep[t] for t in steps]
    flip_lits = list(enc.flips.values())
    with Session(enc, "oracle", clock) as s:
        ts_tot = _at_most(s, enc, ts_lits, len(ts_lits))
        base = [enc.suff]
        if budget_t is not None and budget_t < len(ts_lits):
            base.append(-ts_tot.rhs[budget_t])
        if not s.solve(base):
            return None
        best = s.model_flips()
        k_t = len(timesteps((t, i, 0) for t, i in best))
        while k_t > 0 and s.solve([*base, -ts_tot.rhs[k_t - 1]]):
            best = s.model_flips()
            k_t = len(timesteps((t, i, 0) for t, i in best))
        bound_t = [enc.suff] + ([-ts_tot.rhs[k_t]] if k_t < len(ts_lits) else [])
        k_a = len(best)
        if k_a > 0:
            fl_tot = _at_most(s, enc, flip_lits, k_a)
            while k_a > 0 and s.solve([*bound_t, -fl_tot.rhs[k_a - 1]]):
                best = s.model_flips()
                k_a = len(best)
            fl_tot.delete()
        ts_tot.delete()
    cert = flips_to_atoms(problem, best)
    return OracleResult(cert, len(timesteps(cert)), len(cert), True)


# -- count, enumerate, best match: on the search that learns Min1 (solvers.minimal_sets, solvers.optimise) ----------


def count(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> int:
    """|M(I)| or |M_B(I)| (:func:`solvers.minimal_sets.count`: enumeration, then the projected counter)."""
    return minimal_sets.count(problem, budget_t, limits=limits)


def enumerate_certificates(
    problem: Problem, budget_t: int | None, limit: int | None = None, *, limits: Limits | None = None
) -> Iterator[Certificate]:
    """M(I) or M_B(I) in canonical order, lazily (:func:`solvers.minimal_sets.enumerate_certificates`)."""
    return minimal_sets.enumerate_certificates(problem, budget_t, limit, limits=limits)


def best_match(
    problem: Problem, atoms: Sequence[Atom], budget_t: int | None, *, limits: Limits | None = None
) -> BestMatch:
    """The DEC-025 best match by SAT optimisation over M_B(I) (:func:`solvers.optimise.best_match`)."""
    return optimise.best_match(problem, atoms, budget_t, limits=limits)


__all__ = ["DEFAULT_SOLVER", "LIMITED_SOLVER", "Session", "best_match", "count", "enumerate_certificates", "min1",
           "oracle", "subset_min", "suff", "valid", "witness"]
