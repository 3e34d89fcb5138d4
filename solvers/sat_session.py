"""One python-sat solver over one CNF encoding, answering ``solve(assumptions)`` under a query's limits (the SAT
session every SAT-based query shares: :mod:`solvers.sat`, :mod:`solvers.minimal_sets`, :mod:`solvers.optimise`).

CaDiCaL 1.9.5 answers by default; when a query has a time or conflict limit, Glucose 4 answers instead, because
PySAT can interrupt it and give it a conflict budget (``solve_limited``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from pysat.solvers import Solver

from encoders.cnf import Encoding
from encoders.problem import Flip
from solvers.limits import Clock, Unknown

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
        # The model lists every variable's literal in order (variable v at index v - 1).
        return [p for p, v in self.enc.flips.items() if v <= len(model) and model[v - 1] > 0]

    def close(self) -> None:
        self.solver.delete()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["DEFAULT_SOLVER", "LIMITED_SOLVER", "Session"]
