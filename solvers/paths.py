"""Witness and oracle by a lexicographic layered shortest path over (state, t) on the dense Mealy tables.

Choosing input valuation x at step t costs (1 if x != tau_t else 0, popcount(x XOR tau_t)): one timestep and that
many flips. A path from (q_0, 0) that shows the effect at an effect step (t* in hard mode, the window in normal
mode) is a sufficient flip set of that cost; once the effect is seen, keeping the base inputs costs nothing, so the
cheapest sufficient set is the cheapest path to a "hit" transition. The cost pair is packed into one integer
(Eff_t * BIG + Eff_a, BIG larger than any Eff_a), so plain integer minimum is the lexicographic minimum.

A cost-minimal sufficient set is Min1 (removing an atom lowers the cost), hence valid; its Eff_t is the least of any
valid certificate, so M_B(I) is empty exactly when that least Eff_t exceeds B_T.
"""

from __future__ import annotations

import numpy as np

from encoders.problem import Problem
from solvers.canonical import flips_to_atoms
from solvers.circuit import tabulated
from solvers.limits import NO_LIMITS, Limits
from solvers.results import OracleResult
from solvers.simulate import prepare, require_tables


def oracle(problem: Problem, budget_t: int | None, limits: Limits | None = None) -> OracleResult | None:
    """The valid certificate minimising (Eff_t, Eff_a) within ``budget_t`` timesteps (None: M_B(I) is empty).

    Ties are broken deterministically: lowest (state, input valuation) index at every layer.
    """
    problem = tabulated(problem, "oracle")
    require_tables(problem, "oracle")
    clock = (limits or NO_LIMITS).start()
    prep = prepare(problem)
    system = problem.system
    nxt, out = system.tables
    n_in, n_states = system.num_inputs, system.num_states
    big = n_in * problem.horizon + 1
    inf = np.iinfo(np.int64).max // 4
    xs = np.arange(1 << n_in, dtype=np.int64)
    popcount = np.zeros(1 << n_in, dtype=np.int64)
    for i in range(n_in):
        popcount += (xs >> i) & 1
    dist = np.full(n_states, inf, dtype=np.int64)
    dist[system.initial] = 0
    preds: list[np.ndarray] = []  # per layer t: flat (q, x) index that reached each next state, -1 if none
    best = (inf, -1, -1)  # (cost, t, flat index of the hit transition)
    for t in range(problem.t_star + 1):
        clock.check("oracle")
        diff = xs ^ problem.trace[t]
        cost_x = np.where(diff != 0, big, 0) + popcount[diff]
        live = np.flatnonzero(dist < inf)
        cand = dist[live, None] + cost_x[None, :]
        flat_idx = (live[:, None] * xs.size + xs[None, :]).ravel()
        cand = cand.ravel()
        if prep.in_window[t]:
            hits = prep.effect_of(out[live].ravel())
            if hits.any():
                k = int(np.argmin(np.where(hits, cand, inf)))
                if cand[k] < best[0]:
                    best = (int(cand[k]), t, int(flat_idx[k]))
        if t == problem.t_star:
            break
        tgt = nxt[live].ravel().astype(np.int64)
        new = np.full(n_states, inf, dtype=np.int64)
        np.minimum.at(new, tgt, cand)
        is_min = cand == new[tgt]
        pred = np.full(n_states, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(pred, tgt[is_min], flat_idx[is_min])
        pred[new >= inf] = -1
        preds.append(pred)
        dist = new
    if best[1] < 0:
        return None
    cost, t_hit, flat = best
    flips = []
    t = t_hit
    while True:
        q, x = divmod(flat, xs.size)
        diff = x ^ problem.trace[t]
        flips.extend((t, i) for i in range(n_in) if diff >> i & 1)
        if t == 0:
            break
        flat = int(preds[t - 1][q])
        t -= 1
    eff_t, eff_a = divmod(cost, big)
    if budget_t is not None and eff_t > budget_t:
        return None
    return OracleResult(flips_to_atoms(problem, flips), eff_t, eff_a, True)
