"""A table system's step in binary (log) state codes, as CNF clause templates: the transition relation of
:mod:`encoders.cnf` without a variable per state.

The states reachable from the initial state get the codes 0 .. R-1 in index order, ``bits = ceil(log2 R)`` of them
a step. A step is ``bits`` next-state functions and the effect's "hit" function, each a Boolean function of the
signals (inputs 0 .. n-1, then the code bits n .. n+bits-1), read off the dense tables. Each function f becomes an
output variable v and two sets of clauses: one per cube of an irredundant cover of f ("cube -> v") and one per cube
of a cover of NOT f ("cube -> NOT v") (:func:`encoders.isop.isop`). The codes past R-1 are don't-cares: no run
reaches them (the initial code is a real one, and a real code steps to a real code), so on every run the clauses
force v to f's value and each flip assignment still has exactly one model.

Measured on issue 28's 404-state controller (3 inputs, 9 bits): 9-10 variables and 1,884 clauses a step, against
about 4,000-5,000 variables and 19,000-24,000 clauses a step one-hot (docs/encoding.md).

>>> step = log_step(problem)  # the example arbiter_priority.json: 3 bits a step, 35 next-state clauses
>>> step.bits, len(step.hit.on), sum(len(f.on) + len(f.off) for f in step.next_bits)
(3, 4, 35)
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from encoders.isop import isop, table_int
from encoders.problem import Problem
from hoa.errors import Gf01Error
from hoa.label import Expr, evaluate_array
from hoa.mealy import MealyView

#: Largest domain (2^(inputs + bits) points) tabulated for the log encoding; past it the one-hot encoding serves.
#: At 2^16 points a random 256-state, 8-input table (no structure to share) takes about 6 s of cover computation.
MAX_POINTS = 1 << 16

#: A clause body: signal ``s`` as ``s + 1`` (the literal) or ``-(s + 1)`` (its negation).
Body = tuple[int, ...]


@dataclass(frozen=True)
class FunctionClauses:
    """A Boolean function of the signals as clause bodies: ``v OR body`` for each of ``on`` forces v true where f
    is, ``NOT v OR body`` for each of ``off`` forces it false elsewhere (each body says "this cube does not hold")."""

    on: tuple[Body, ...]
    off: tuple[Body, ...]


@dataclass(frozen=True)
class LogStep:
    """One step of a table system over binary state codes (module docstring)."""

    bits: int
    codes: tuple[int, ...]  # per state, its code; -1 for a state the initial state never reaches
    initial: int  # the initial state's code
    next_bits: tuple[FunctionClauses, ...]  # bit j of the next state's code
    hit: FunctionClauses  # the effect of the step's output


_CACHE: dict[int, dict[object, LogStep | None]] = {}


def log_step(problem: Problem) -> LogStep | None:
    """The log-encoded step of ``problem``'s table system and effect, or None when it has no dense tables (too
    large, or not input-complete) or its domain passes :data:`MAX_POINTS` (computed once per view and effect, kept
    while the view lives)."""
    view = problem.system
    if problem.circuit or not isinstance(view, MealyView) or not view.has_tables:
        return None
    per_view = _CACHE.get(id(view))
    if per_view is None:
        per_view = _CACHE[id(view)] = {}
        weakref.finalize(view, _CACHE.pop, id(view), None)
    if problem.effect not in per_view:
        try:
            per_view[problem.effect] = _build(view, problem.effect)
        except Gf01Error:  # no dense tables after all (a state without an edge for some input): one-hot serves
            per_view[problem.effect] = None
    return per_view[problem.effect]


def _reachable(nxt: np.ndarray, initial: int) -> list[int]:
    seen = np.zeros(nxt.shape[0], dtype=bool)
    seen[initial] = True
    frontier = np.array([initial])
    while frontier.size:
        succ = np.unique(nxt[frontier].ravel())
        frontier = succ[~seen[succ]]
        seen[frontier] = True
    return [int(q) for q in np.flatnonzero(seen)]


def _build(view: MealyView, effect: Expr) -> LogStep | None:
    nxt, out = view.tables
    n = view.num_inputs
    states = _reachable(nxt, view.initial)
    bits = (len(states) - 1).bit_length()
    k = n + bits
    if 1 << k > MAX_POINTS:
        return None
    codes = np.full(view.num_states, -1, dtype=np.int64)
    codes[states] = np.arange(len(states))
    point = np.arange(1 << k)
    code = point >> n
    real = code < len(states)
    q = np.asarray(states)[np.where(real, code, 0)]
    x = point & ((1 << n) - 1)
    dc = table_int(~real)

    def clauses(values: np.ndarray) -> FunctionClauses:
        on = table_int(values & real)
        off = table_int(~values & real)
        return FunctionClauses(_bodies(isop(on, dc, k), k), _bodies(isop(off, dc, k), k))

    next_code = codes[nxt[q, x]]
    next_bits = tuple(clauses(((next_code >> j) & 1).astype(bool)) for j in range(bits))
    hit = clauses(evaluate_array(effect, out[q, x]))
    return LogStep(bits, tuple(int(c) for c in codes), int(codes[view.initial]), next_bits, hit)


def _bodies(cubes: list[tuple[int, int]], k: int) -> tuple[Body, ...]:
    """Each cube as the clause body that is true where the cube does not hold."""
    out = []
    for mask, value in cubes:
        out.append(tuple(-(s + 1) if (value >> s) & 1 else s + 1 for s in range(k) if (mask >> s) & 1))
    return tuple(out)


__all__ = ["MAX_POINTS", "Body", "FunctionClauses", "LogStep", "log_step"]
