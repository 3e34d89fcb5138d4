"""A greedy baseline certifier: the heuristic an instance must resist (the generator's greedy-resistance target).

With full access to the system and the base trace (so it is an upper bound on what a greedy *agent* can do), it
adds one flip at a time, picking the flip that brings the outputs closest to the effect: the least Hamming distance,
over the effect steps, from y_t to a valuation satisfying e; ties go to the flip that changes the state sequence
most, then to the earliest (t, input). It never touches more than B_T timesteps, stops after B_T x |AP_in| flips,
and prunes a sufficient set to a Min1 one (dropping atoms, latest first, while the rest stays sufficient).

>>> # cert = greedy_certificate(problem)  # a tuple of atoms, or None when the greedy search fails
"""

from __future__ import annotations

import numpy as np

from encoders.problem import Atom, Flip, Problem
from hoa.label import evaluate_array, variables
from solvers.canonical import flips_to_atoms
from solvers.simulate import run_many


def effect_distance_table(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """For the effect e: the output variables it reads, and dist[s] = Hamming distance from sub-valuation s to e."""
    evars = np.array(sorted(variables(problem.effect)), dtype=np.int64)
    k = len(evars)
    subs = np.arange(1 << k, dtype=np.int64)
    full = np.zeros(subs.shape, dtype=np.int64)
    for j, v in enumerate(evars):
        full |= ((subs >> j) & 1) << v
    sat = evaluate_array(problem.effect, full)
    if not sat.any():
        return evars, np.full(subs.shape, k + 1, dtype=np.int64)
    xor = subs[:, None] ^ subs[sat][None, :]
    pop = np.zeros(xor.shape, dtype=np.int64)
    for j in range(k):
        pop += (xor >> j) & 1
    return evars, pop.min(axis=1)


def _scores(problem: Problem, traces: list[list[int]] | np.ndarray, base_states: np.ndarray,
            table) -> tuple[np.ndarray, np.ndarray]:
    evars, dist = table
    steps = list(problem.effect_steps)
    sub = np.zeros((len(traces), len(steps)), dtype=np.int64)
    if problem.circuit:
        states, bits = run_many(problem, traces)
        for j, v in enumerate(evars):
            sub |= bits[:, steps, v].astype(np.int64) << j
    else:
        states, outs = problem.system.simulate(np.asarray(traces, dtype=np.int64))
        for j, v in enumerate(evars):
            sub |= ((outs[:, steps] >> v) & 1) << j
    d = dist[sub].min(axis=1)
    novelty = (states[:, : problem.t_star + 1] != base_states[None, : problem.t_star + 1]).sum(axis=1)
    return d, novelty


def _trace_with(problem: Problem, flips: list[Flip]) -> list[int]:
    # Python integers: a circuit may have more inputs than an int64 holds.
    tr = list(problem.trace)
    for t, i in flips:
        tr[t] ^= 1 << i
    return tr


def greedy_certificate(problem: Problem) -> tuple[Atom, ...] | None:
    """A Min1, sufficient certificate within B_T found greedily, or None when the greedy search fails."""
    n_in = problem.system.num_inputs
    budget = problem.budget_t if problem.budget_t is not None else problem.t_star + 1
    table = effect_distance_table(problem)
    base_states, _ = (run_many(problem, [list(problem.trace)]) if problem.circuit
                      else problem.system.simulate(np.array([problem.trace], dtype=np.int64)))
    flips: list[Flip] = []
    for _ in range(budget * n_in):
        used = {t for t, _ in flips}
        cands = [
            (t, i)
            for t in range(problem.t_star + 1)
            for i in range(n_in)
            if (t, i) not in flips and (t in used or len(used) < budget)
        ]
        if not cands:
            return None
        cur = _trace_with(problem, flips)
        traces: list[list[int]] | np.ndarray
        if problem.circuit:  # Python integers: a circuit may have more inputs than an int64 holds
            traces = [list(cur) for _ in cands]
            for k, (t, i) in enumerate(cands):
                traces[k][t] ^= 1 << i
        else:
            traces = np.repeat(np.asarray(cur, dtype=np.int64)[None, :], len(cands), axis=0)
            for k, (t, i) in enumerate(cands):
                traces[k, t] ^= 1 << i
        d, novelty = _scores(problem, traces, base_states[0], table)
        k = int(np.lexsort((np.arange(len(cands)), -novelty, d))[0])
        flips.append(cands[k])
        if d[k] == 0:
            return flips_to_atoms(problem, _prune(problem, flips, table, base_states[0]))
    return None


def _prune(problem: Problem, flips: list[Flip], table, base_states: np.ndarray) -> list[Flip]:
    """Drop flips (latest first) while the rest stays sufficient, until no single flip can be dropped."""
    kept = sorted(flips)
    changed = True
    while changed:
        changed = False
        for f in sorted(kept, reverse=True):
            rest = [g for g in kept if g != f]
            d, _ = _scores(problem, [_trace_with(problem, rest)], base_states, table)
            if d[0] == 0:
                kept, changed = rest, True
                break
    return kept
