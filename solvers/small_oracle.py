"""The oracle of a tiny table system in plain Python: :func:`solvers.paths.oracle`'s layered shortest path, step for
step and tie for tie, without its numpy set-up per call (the generator's sizes: 3-6 states, 3 inputs, T <= 12, where
the arrays hold a few dozen cells and the set-up is most of the cost).

The same walk as :mod:`solvers.paths`: choosing input valuation x at step t costs Eff_t * BIG + Eff_a (one
timestep when x differs from tau_t, popcount(x XOR tau_t) flips); layer by layer over the live states in increasing
order and the valuations in increasing order, the first strictly cheaper hit transition at an effect step is the
best, and each next state keeps the lowest (state, valuation) index among its cheapest predecessors. Scanning in
that order and keeping only strict improvements is exactly numpy's first-minimum ``argmin`` and its ``minimum.at``
over the tied indices, so the certificate is the one :func:`solvers.paths.oracle` returns
(tests/test_small_oracle.py compares them).
"""

from __future__ import annotations

from encoders.problem import Problem
from hoa.mealy import MealyView
from solvers.canonical import flips_to_atoms
from solvers.results import OracleResult
from solvers.small_tables import is_tiny, plain_tables

#: Most cells x steps of a walk for which the plain walk beats numpy's (the cells a step: :data:`TINY_CELLS`).
MAX_WORK = 1 << 14


def applies(problem: Problem) -> bool:
    """Whether ``problem`` is a table system small enough for :func:`oracle`."""
    view = problem.system
    return is_tiny(problem) and (view.num_states << view.num_inputs) * (problem.t_star + 1) <= MAX_WORK


def oracle(problem: Problem, budget_t: int | None) -> OracleResult | None:
    """:func:`solvers.paths.oracle` of a problem :func:`applies` accepts (the same result, certificate included)."""
    view: MealyView = problem.system  # type: ignore[assignment]
    nxt, hit = plain_tables(problem)
    n_in, n_states = view.num_inputs, view.num_states
    width = 1 << n_in
    big = n_in * problem.horizon + 1
    popcount = [bin(d).count("1") for d in range(width)]
    effect_steps = set(problem.effect_steps)
    inf = None
    dist: list[int | None] = [inf] * n_states
    dist[view.initial] = 0
    preds: list[list[int]] = []  # per layer t: the (q, x) index that reached each next state, -1 if none
    best_cost, best_t, best_flat = -1, -1, -1
    for t in range(problem.t_star + 1):
        tau = problem.trace[t]
        cost_x = [(big if x != tau else 0) + popcount[x ^ tau] for x in range(width)]
        last = t == problem.t_star
        in_window = t in effect_steps
        new: list[int | None] = [inf] * n_states
        pred = [-1] * n_states
        for q in range(n_states):
            d = dist[q]
            if d is None:
                continue
            row_hit, row_nxt, base = hit[q], nxt[q], q * width
            for x in range(width):
                c = d + cost_x[x]
                if in_window and row_hit[x] and (best_t < 0 or c < best_cost):
                    best_cost, best_t, best_flat = c, t, base + x
                if not last:
                    r = row_nxt[x]
                    old = new[r]
                    if old is None or c < old:
                        new[r], pred[r] = c, base + x
        if last:
            break
        preds.append(pred)
        dist = new
    if best_t < 0:
        return None
    flips = []
    t, flat = best_t, best_flat
    while True:
        q, x = divmod(flat, width)
        diff = x ^ problem.trace[t]
        flips.extend((t, i) for i in range(n_in) if diff >> i & 1)
        if t == 0:
            break
        flat = preds[t - 1][q]
        t -= 1
    eff_t, eff_a = divmod(best_cost, big)
    if budget_t is not None and eff_t > budget_t:
        return None
    return OracleResult(flips_to_atoms(problem, flips), eff_t, eff_a, True)
