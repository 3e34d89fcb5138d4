"""|M_B(I)| by an exact projected model counter: Ganak (through ``pyganak``, the optional ``count`` extra) on the full
Valid encoding of the unrolling, projected on the flip variables.

The Valid CNF is a circuit (every gate a Tseitin equivalence), so each flip assignment has exactly one extension on
the gate variables; the timestep budget's sequential counter has auxiliary variables that are not functions of the
flips, which is why the count is projected (the sampling set is the flip variables) rather than plain. Ganak's
answer is exact (an arbitrary-precision int); it cannot be interrupted, so the query that calls it runs guarded
(:func:`solvers.limits.guarded`: under a time or memory cap in a child process killed at the cap).

>>> from encoders.problem import Problem
>>> from hoa.label import Var
>>> from hoa.mealy import MealyView
>>> xor = MealyView.from_table(("a", "b"), ("o",), [[0] * 4], [[0, 1, 1, 0]])  # one state, o = a XOR b
>>> count(Problem(xor, (0,), Var(0), t_star=0), None) if available() else 2  # flip a, or flip b (not both)
2
"""

from __future__ import annotations

import importlib.util

from encoders.cnf import add_timestep_budget, encode
from encoders.problem import Problem
from solvers.cone import dead_flips
from solvers.limits import NO_LIMITS, Clock, Limits, guarded

#: What a user installs to get the counter (the message of an ``unknown`` count that needed it).
INSTALL = "install the count extra for an exact projected count: pip install 'gf01-formal[count]'"


def available() -> bool:
    """Whether pyganak can be imported."""
    return importlib.util.find_spec("pyganak") is not None


def count_valid(problem: Problem, budget_t: int | None, clock: Clock) -> int:
    """|M(I)| or |M_B(I)| by Ganak on the Valid encoding (every Min1 copy), projected on the flip variables."""
    import pyganak

    enc = encode(problem, with_valid=True, check=lambda: clock.check("count"))
    if budget_t is not None:
        add_timestep_budget(enc, budget_t)
    clock.check("count")
    counter = pyganak.Counter(verbose=0, seed=0)
    counter.new_vars(enc.pool.top)
    counter.add_clauses(enc.clauses)
    counter.add_clause([enc.valid])
    # Flips that cannot change the effect are in no valid set (exact, and fewer variables for the counter).
    counter.add_clauses([-enc.flips[p]] for p in sorted(dead_flips(problem)))
    counter.set_sampling_set(sorted(enc.flips.values()))
    clock.add("projected_counts", 1)
    return int(counter.count())


@guarded("count")
def count(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> int:
    """|M(I)| or |M_B(I)| by the projected counter alone (no enumeration first)."""
    return count_valid(problem, budget_t, (limits or NO_LIMITS).start())


__all__ = ["INSTALL", "available", "count", "count_valid"]
