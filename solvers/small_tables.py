"""What the plain-Python paths for tiny table systems share: which systems count as tiny, and their tables as nested
lists (a list lookup is cheaper than a numpy scalar index at a few dozen cells).

The paths themselves (:mod:`solvers.small_count`, :mod:`solvers.small_oracle`, :mod:`solvers.small_check`, the
generator's and the greedy baseline's tiny searches) each answer what the numpy code answers, tie for tie; they exist
because numpy's set-up per call dwarfs the work at the generator's sizes (3-6 states, 3 inputs, T <= 12).

>>> from encoders.problem import Problem
>>> from hoa.label import Var
>>> from hoa.mealy import MealyView
>>> xor = MealyView.from_table(("a", "b"), ("o",), [[0] * 4], [[0, 1, 1, 0]])  # one state, o = a XOR b
>>> p = Problem(xor, (0,), Var(0), t_star=0)
>>> is_tiny(p), plain_tables(p)
(True, ([[0, 0, 0, 0]], [[False, True, True, False]]))
"""

from __future__ import annotations

from encoders.problem import Problem
from hoa.label import evaluate_array
from hoa.mealy import MealyView

#: Most (state, valuation) cells a tiny table has.
TINY_CELLS = 256


def is_tiny(problem: Problem) -> bool:
    """Whether ``problem``'s system is a table system of at most :data:`TINY_CELLS` cells."""
    view = problem.system
    return isinstance(view, MealyView) and view.has_tables and view.num_states << view.num_inputs <= TINY_CELLS


def plain_tables(problem: Problem) -> tuple[list[list[int]], list[list[bool]]]:
    """``(nxt, hit)`` of a table system: ``nxt[q][x]`` the next state, ``hit[q][x]`` whether the output of state q
    under valuation x satisfies the effect."""
    nxt_a, out_a = problem.system.tables  # type: ignore[attr-defined]
    hit = evaluate_array(problem.effect, out_a.ravel()).reshape(out_a.shape).tolist()
    return nxt_a.tolist(), hit


__all__ = ["TINY_CELLS", "is_tiny", "plain_tables"]
