"""The SAT backend: every query on the CNF unrolling (:mod:`encoders.cnf`) with python-sat.

CaDiCaL 1.9.5 answers by default; when a query has a time or conflict limit, Glucose 4 answers instead, because
PySAT can interrupt it and give it a conflict budget (``solve_limited``). Under a time cap every query also runs in a
child process killed at the cap (:func:`solvers.limits.guarded`), so building a large CNF or bootstrapping the
solver cannot overrun it either. Certificates are read off the flip variables only; the enumeration's blocking
clauses mention flip variables only (``enum_models`` would block on the Tseitin variables too) and block exactly one
flip assignment each, never its supersets (Min1 is not monotone).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence

from pysat.card import ITotalizer
from pysat.solvers import Solver

from encoders.cnf import Encoding, add_timestep_budget, encode
from encoders.problem import Atom, Certificate, Flip, Problem
from solvers.canonical import canonical, effective_flips, flips_to_atoms, order_key, timesteps
from solvers.limits import NO_LIMITS, Clock, Limits, Unknown, guarded
from solvers.results import BestMatch, OracleResult, best_match_among

DEFAULT_SOLVER = "cadical195"
LIMITED_SOLVER = "glucose4"


class Session:
    """One solver over one encoding, answering ``solve(assumptions)`` under a query's limits."""

    def __init__(self, enc: Encoding, query: str, clock: Clock) -> None:
        self.enc = enc
        self.query = query
        self.clock = clock
        lim = clock.limits
        self.limited = lim.seconds is not None or lim.conflicts is not None
        self.solver = Solver(name=LIMITED_SOLVER if self.limited else DEFAULT_SOLVER, bootstrap_with=enc.clauses)
        self.added = len(enc.clauses)

    def sync(self) -> None:
        """Give the solver the clauses added to the encoding since the last call."""
        if len(self.enc.clauses) > self.added:
            self.solver.append_formula(self.enc.clauses[self.added :])
            self.added = len(self.enc.clauses)

    def add(self, clause: list[int]) -> None:
        self.solver.add_clause(clause)

    def solve(self, assumptions: Iterable[int] = ()) -> bool:
        """SAT or UNSAT under ``assumptions``; raises Unknown when the limits run out first."""
        self.sync()
        self.clock.check(self.query)
        self.clock.add("sat_calls", 1)
        assumptions = list(assumptions)
        if not self.limited:
            return bool(self.solver.solve(assumptions=assumptions))
        lim = self.clock.limits
        if lim.conflicts is not None:
            left = lim.conflicts - self.clock.spent.get("conflicts", 0)
            self.solver.conf_budget(max(1, left))
        timer = None
        remaining = self.clock.remaining_seconds()
        if remaining is not None:
            timer = threading.Timer(remaining, self.solver.interrupt)
            timer.start()
        before = self.solver.accum_stats().get("conflicts", 0)
        try:
            res = self.solver.solve_limited(assumptions=assumptions, expect_interrupt=timer is not None)
        finally:
            if timer is not None:
                timer.cancel()
            self.solver.clear_interrupt()
        self.clock.add("conflicts", self.solver.accum_stats().get("conflicts", 0) - before)
        if res is None:
            timed_out = lim.seconds is not None and self.clock.elapsed() >= lim.seconds
            reason = lim.time_reason() if timed_out else f"conflict limit {lim.conflicts}"
            raise Unknown(self.query, reason, {**self.clock.spent, "seconds": round(self.clock.elapsed(), 3)})
        return bool(res)

    def model_flips(self) -> list[Flip]:
        """The flips set in the last model."""
        model = self.solver.get_model()
        true = {v for v in model if v > 0}
        return [p for p, v in self.enc.flips.items() if v in true]

    def close(self) -> None:
        self.solver.delete()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


# -- count, enumerate -------------------------------------------------------------------------------------------


def _valid_session(problem: Problem, budget_t: int | None, clock: Clock, query: str) -> tuple[Encoding, Session]:
    enc = encode(problem, with_valid=True, check=lambda: clock.check(query))
    if budget_t is not None:
        add_timestep_budget(enc, budget_t)
    s = Session(enc, query, clock)
    s.add([enc.valid])
    return enc, s


@guarded("count")
def count(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> int:
    """|M(I)| or |M_B(I)|: models of Valid (within the budget), blocked one flip assignment at a time."""
    clock = (limits or NO_LIMITS).start()
    enc, s = _valid_session(problem, budget_t, clock, "count")
    with s:
        found = 0
        while s.solve():
            flips = set(s.model_flips())
            found += 1
            s.add([-v if p in flips else v for p, v in enc.flips.items()])
    return found


@guarded("enumerate", stream=True)
def enumerate_certificates(
    problem: Problem, budget_t: int | None, limit: int | None = None, *, limits: Limits | None = None
) -> Iterator[Certificate]:
    """M(I) or M_B(I) in canonical order, lazily: layer by layer in (|TS|, |C|), each layer sorted.

    With every earlier layer blocked, the models under "at most k timesteps and at most n flips" are exactly
    layer (k, n).
    """
    clock = (limits or NO_LIMITS).start()
    enc, s = _valid_session(problem, budget_t, clock, "enumerate")
    n_in = problem.system.num_inputs
    steps = sorted(enc.timestep)
    max_k = len(steps) if budget_t is None else min(budget_t, len(steps))
    produced = 0
    with s:
        ts_tot = _at_most(s, enc, [enc.timestep[t] for t in steps], len(steps))
        fl_tot = _at_most(s, enc, list(enc.flips.values()), len(enc.flips))

        def bound(tot: ITotalizer, k: int) -> list[int]:
            return [-tot.rhs[k]] if k < len(tot.rhs) else []

        for k in range(max_k + 1):
            if not s.solve(bound(ts_tot, k)):
                continue
            for n in range(k, k * n_in + 1):
                layer = []
                while s.solve([*bound(ts_tot, k), *bound(fl_tot, n)]):
                    flips = set(s.model_flips())
                    layer.append(flips_to_atoms(problem, flips))
                    s.add([-v if p in flips else v for p, v in enc.flips.items()])
                for cert in sorted(layer, key=lambda c: order_key(problem, c)):
                    yield canonical(problem, cert)
                    produced += 1
                    if limit is not None and produced >= limit:
                        return
                if not s.solve(bound(ts_tot, k)):
                    break
        ts_tot.delete()
        fl_tot.delete()


@guarded("best_match")
def best_match(
    problem: Problem, atoms: Sequence[Atom], budget_t: int | None, *, limits: Limits | None = None
) -> BestMatch:
    """The DEC-025 best match, ranking the complete SAT enumeration of M_B(I)."""
    return best_match_among(problem, atoms, enumerate_certificates(problem, budget_t, None, limits=limits))
