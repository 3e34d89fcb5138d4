"""The flips that cannot change a problem's effect: its cone of influence on a circuit, taken step by step.

A flip that changes no output the effect reads, at any effect step, is removable from every certificate, so it is in
no valid one (Min1). The SAT searches fix such flips off from the start (fewer models, no Min1 copy for them) and the
projected counter counts without them; both stay exact.

>>> dead_flips(problem)  # a table system: no structure to read
frozenset()
"""

from __future__ import annotations

from collections.abc import Iterable

from encoders.problem import Flip, Problem
from hoa.label import variables


def dead_flips(problem: Problem) -> frozenset[Flip]:
    """Flip positions that cannot change the effect, hence are in no valid certificate (a flip that changes nothing
    is removable): on a circuit, input i at step t is dead unless it reaches an output of the effect exactly e - t
    steps later for some effect step e >= t (the cone of influence taken step by step: the combinational support of
    the effect's outputs, then of the next-state functions of the latches in it, and so on). On a table system,
    none (no structure to read)."""
    if not problem.circuit:
        return frozenset()
    view = problem.system
    a = view.aig  # type: ignore[union-attr]
    n_i = len(a.inputs)
    first = n_i + len(a.latches) + 1

    def support(roots: Iterable[int]) -> tuple[frozenset[int], frozenset[int]]:
        """The inputs and latches (indices) the variables ``roots`` read within one step."""
        seen: set[int] = set()
        stack = list(roots)
        ins, lats = set(), set()
        while stack:
            var = stack.pop()
            if var in seen or var == 0:
                continue
            seen.add(var)
            if var >= first:
                g = a.ands[var - first]
                stack += [g.rhs0 >> 1, g.rhs1 >> 1]
            elif var > n_i:
                lats.add(var - n_i - 1)
            else:
                ins.add(var - 1)
        return frozenset(ins), frozenset(lats)

    outs = sorted(variables(problem.effect))
    ins, lats = support(view.out_lits[j] >> 1 for j in outs)  # type: ignore[union-attr]
    reach = [ins]  # reach[d]: inputs that reach the effect's outputs exactly d steps later
    for _ in range(problem.t_star):
        ins, lats = support(a.latches[k].next >> 1 for k in sorted(lats))
        reach.append(ins)
    effect_steps = list(problem.effect_steps)
    dead = set()
    for t in range(problem.t_star + 1):
        live = set().union(*(reach[e - t] for e in effect_steps if e >= t))
        dead.update((t, i) for i in range(n_i) if i not in live)
    return frozenset(dead)


__all__ = ["dead_flips"]
