"""Suff and Valid of one certificate on a tiny table system by plain-Python simulation: the explicit backend's answer
(Definitions 10-12) without its numpy set-up per call (the generator's sizes: a few states, 3 inputs, T <= 12, where
one certificate's |C| + 1 runs are a few dozen table lookups).

Each run is the base trace with the atoms written in, simulated to t*; it shows the effect when the output at some
effect step satisfies it. Valid(C) is Suff(C) and no run of C minus one atom showing it.
"""

from __future__ import annotations

from collections.abc import Sequence

from encoders.problem import Atom, Problem
from solvers.small_tables import is_tiny, plain_tables


def applies(problem: Problem) -> bool:
    """Whether ``problem`` is a table system small enough for :func:`suff` and :func:`valid`."""
    return is_tiny(problem)


def suff(problem: Problem, atoms: Sequence[Atom]) -> bool:
    """Definition 10: the run of the base trace with ``atoms`` written in shows the effect."""
    nxt, hit = plain_tables(problem)
    return _shows(problem, nxt, hit, list(atoms))


def valid(problem: Problem, atoms: Sequence[Atom]) -> bool:
    """Definition 12: Suff(C) and, for every atom c, not Suff(C - {c})."""
    nxt, hit = plain_tables(problem)
    c = list(atoms)
    return _shows(problem, nxt, hit, c) and not any(
        _shows(problem, nxt, hit, c[:k] + c[k + 1 :]) for k in range(len(c)))


def _shows(problem: Problem, nxt: list[list[int]], hit: list[list[bool]], atoms: list[Atom]) -> bool:
    trace = list(problem.trace[: problem.t_star + 1])
    for t, i, v in atoms:
        if t <= problem.t_star:  # (a later atom cannot change the effect)
            trace[t] = (trace[t] & ~(1 << i)) | (v << i)
    steps = problem.effect_steps
    q = problem.system.initial
    for t, x in enumerate(trace):
        if t in steps and hit[q][x]:
            return True
        q = nxt[q][x]
    return False
