"""A greedy baseline certifier: the heuristic an instance must resist (the generator's greedy-resistance target).

With full access to the system and the base trace (so it is an upper bound on what a greedy *agent* can do), it
adds one flip at a time, picking the flip that brings the outputs closest to the effect: the least Hamming distance,
over the effect steps, from y_t to a valuation satisfying e; ties go to the flip that changes the state sequence
most, then to the earliest (t, input). It never touches more than B_T timesteps, stops after B_T x |AP_in| flips,
and prunes a sufficient set to a Min1 one (dropping atoms, latest first, while the rest stays sufficient).

Cost. Each round scores every candidate flip. On a system with dense tables it does so in one backward sweep over
the steps, carrying for every state q the least effect distance and the number of states off the base run that the
rest of the current trace gives from q: a flip at t then costs one table lookup (its new state at t + 1 reads the
sweep). A round is O(T x (|Q| + |AP_in|)) work in O(|Q| + T + SWEEP_CELLS) memory, linear in T (``meter`` counts
the cells). A
circuit, or a system too large for tables, replays each candidate trace, in chunks of bounded memory: O(T^2 x
|AP_in|) work a round.

>>> # cert = greedy_certificate(problem)  # a tuple of atoms, or None when the greedy search fails
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from encoders.problem import Atom, Flip, Problem
from hoa.label import Expr, evaluate_array, variables
from solvers.canonical import flips_to_atoms
from solvers.simulate import run_many
from solvers.small_tables import TINY_CELLS


def effect_distance_table(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """For the effect e: the output variables it reads, and dist[s] = Hamming distance from sub-valuation s to e."""
    return _distance_table(problem.effect)


@functools.lru_cache(maxsize=4096)
def _distance_table(effect: Expr) -> tuple[np.ndarray, np.ndarray]:
    """:func:`effect_distance_table` of one effect, made once (read-only arrays): the generator asks the same few
    effects again and again."""
    evars, dist = _distance_arrays(effect)
    evars.setflags(write=False)
    dist.setflags(write=False)
    return evars, dist


def _distance_arrays(effect: Expr) -> tuple[np.ndarray, np.ndarray]:
    evars = np.array(sorted(variables(effect)), dtype=np.int64)
    k = len(evars)
    subs = np.arange(1 << k, dtype=np.int64)
    full = np.zeros(subs.shape, dtype=np.int64)
    for j, v in enumerate(evars):
        full |= ((subs >> j) & 1) << v
    sat = evaluate_array(effect, full)
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


#: The most trace cells (candidates x steps) one chunk of replayed candidates holds (circuits, no tables).
CHUNK_CELLS = 1 << 20


def greedy_certificate(problem: Problem, meter: Callable[[int], None] | None = None) -> tuple[Atom, ...] | None:
    """A Min1, sufficient certificate within B_T found greedily, or None when the greedy search fails. ``meter`` is
    told the work of each round (state-steps swept, or trace cells replayed)."""
    n_in = problem.system.num_inputs
    budget = problem.budget_t if problem.budget_t is not None else problem.t_star + 1
    table = effect_distance_table(problem)
    base_states, _ = (run_many(problem, [list(problem.trace)]) if problem.circuit
                      else problem.system.simulate(np.array([problem.trace], dtype=np.int64)))
    swept = not problem.circuit and problem.system.has_tables
    if swept and meter is None and _tiny(problem):
        return _tiny_certificate(problem, table)
    flips: list[Flip] = []
    for _ in range(budget * n_in):
        used = {t for t, _ in flips}
        taken = set(flips)
        cands = [
            (t, i)
            for t in range(problem.t_star + 1)
            if t in used or len(used) < budget
            for i in range(n_in)
            if (t, i) not in taken
        ]
        if not cands:
            return None
        cur = _trace_with(problem, flips)
        if swept:
            d, novelty = _swept_scores(problem, cur, cands, base_states[0], table, meter)
        else:
            d, novelty = _replayed_scores(problem, cur, cands, base_states[0], table, meter)
        k = int(np.lexsort((np.arange(len(cands)), -novelty, d))[0])
        flips.append(cands[k])
        if d[k] == 0:
            return flips_to_atoms(problem, _prune(problem, flips, table, base_states[0]))
    return None


#: Tiny systems (at most :data:`solvers.small_tables.TINY_CELLS` table cells), searched in plain Python
#: (:func:`_tiny_certificate`) up to this many flip positions.
TINY_POSITIONS = 64


def _tiny(problem: Problem) -> bool:
    view = problem.system
    return (view.num_states << view.num_inputs <= TINY_CELLS and view.num_outputs <= DISTANCE_TABLE_OUTPUTS
            and (problem.t_star + 1) * view.num_inputs <= TINY_POSITIONS)


def _tiny_certificate(problem: Problem, table: tuple[np.ndarray, np.ndarray]) -> tuple[Atom, ...] | None:
    """:func:`greedy_certificate` on a tiny table system: the same rounds, scores and ties, each candidate replayed
    in plain Python from its own step on (the numpy sweep's set-up costs more than the whole search here;
    tests/test_generator_greedy.py compares the two)."""
    view = problem.system
    nxt: list[list[int]] = view.tables[0].tolist()
    out: list[list[int]] = view.tables[1].tolist()
    evars, _ = table
    by_y = _distance_by_output(problem.effect, view.num_outputs)
    t_star, n_in = problem.t_star, view.num_inputs
    steps = t_star + 1
    effect = [False] * steps
    for t in problem.effect_steps:
        effect[t] = True
    far = len(evars) + 2  # more than any distance: no effect step yet
    base = [view.initial]
    for t in range(t_star):
        base.append(nxt[base[-1]][problem.trace[t]])

    def prefix(tr: list[int]) -> tuple[list[int], list[int], list[int]]:
        """Along ``tr``, before each step t = 0 .. t* + 1: the state, and the least distance and the number of
        states off the base run over the steps before t."""
        qs, ds, offs = [], [], []
        q, d, off = view.initial, far, 0
        for t in range(steps):
            qs.append(q)
            ds.append(d)
            offs.append(off)
            if q != base[t]:
                off += 1
            if effect[t]:
                d = min(d, by_y[out[q][tr[t]]])
            q = nxt[q][tr[t]]
        qs.append(q)
        ds.append(d)
        offs.append(off)
        return qs, ds, offs

    def score(tr: list[int], t: int, qs: list[int], ds: list[int], offs: list[int]) -> tuple[int, int]:
        """(distance, novelty) of trace ``tr``, which agrees with the prefix's trace before step t."""
        q, d, off = qs[t], ds[t], offs[t]
        for u in range(t, steps):
            if q != base[u]:
                off += 1
            x = tr[u]
            if effect[u]:
                d = min(d, by_y[out[q][x]])
            q = nxt[q][x]
        return d, off

    budget = problem.budget_t if problem.budget_t is not None else steps
    flips: list[Flip] = []
    for _ in range(budget * n_in):
        used = {t for t, _ in flips}
        taken = set(flips)
        cur = _trace_with(problem, flips)
        qs, ds, offs = prefix(cur)
        best: tuple[int, int, Flip] | None = None
        for t in range(steps):
            if t not in used and len(used) >= budget:
                continue
            for i in range(n_in):
                if (t, i) in taken:
                    continue
                cur[t] ^= 1 << i
                d, novelty = score(cur, t, qs, ds, offs)
                cur[t] ^= 1 << i
                if best is None or (d, -novelty) < best[:2]:
                    best = (d, -novelty, (t, i))
        if best is None:
            return None
        flips.append(best[2])
        if best[0] == 0:
            return flips_to_atoms(problem, _tiny_prune(problem, flips, prefix))
    return None


@functools.lru_cache(maxsize=4096)
def _distance_by_output(effect: Expr, n_outputs: int) -> list[int]:
    """The effect distance of every valuation of ``n_outputs`` outputs (the tiny search's lookup table)."""
    evars, dist = _distance_table(effect)
    sub = np.zeros(1 << n_outputs, dtype=np.int64)
    ys = np.arange(1 << n_outputs, dtype=np.int64)
    for j, v in enumerate(evars):
        sub |= ((ys >> v) & 1) << j
    return dist[sub].tolist()  # type: ignore[no-any-return]


def _tiny_prune(problem: Problem, flips: list[Flip],
                prefix: Callable[[list[int]], tuple[list[int], list[int], list[int]]]) -> list[Flip]:
    """:func:`_prune` with the tiny search's simulation."""
    steps = problem.t_star + 1

    return _drop_while_sufficient(flips, lambda rest: prefix(_trace_with(problem, rest))[1][steps] == 0)


def _drop_while_sufficient(flips: list[Flip], sufficient: Callable[[list[Flip]], bool]) -> list[Flip]:
    """Drop flips (latest first) while the rest stays sufficient, until no single flip can be dropped.

    >>> _drop_while_sufficient([(0, 0), (1, 0), (2, 1)], lambda rest: (1, 0) in rest)
    [(1, 0)]
    """
    kept = sorted(flips)
    changed = True
    while changed:
        changed = False
        for f in sorted(kept, reverse=True):
            rest = [g for g in kept if g != f]
            if sufficient(rest):
                kept, changed = rest, True
                break
    return kept


#: The most state-step cells (|Q| x steps) the sweep precomputes at a time.
SWEEP_CELLS = 1 << 18
#: Most outputs for which the sweep tabulates the effect distance of every output valuation.
DISTANCE_TABLE_OUTPUTS = 12


def _swept_scores(problem: Problem, cur: list[int], cands: list[Flip], base: np.ndarray, table,
                  meter: Callable[[int], None] | None) -> tuple[np.ndarray, np.ndarray]:
    """The (distance, novelty) of every candidate flip of ``cur``, as :func:`_scores` gives them, by one backward
    sweep over the steps (the module docstring). ``cands`` are in step order, as the caller makes them."""
    view = problem.system
    evars, dist = table
    nxt, out = view.tables
    n_q, t_star = view.num_states, problem.t_star
    far = np.int64(len(evars) + 2)  # more than any distance: "no effect step here or later"
    xs = np.asarray(cur, dtype=np.int64)
    states, outs = view.simulate(xs[None, :])
    states, outs = states[0], outs[0]
    effect = np.zeros(problem.horizon, dtype=bool)
    effect[list(problem.effect_steps)] = True

    def by_bits(y: np.ndarray) -> np.ndarray:
        sub = np.zeros(y.shape, dtype=np.int64)
        for j, v in enumerate(evars):
            sub |= ((y >> v) & 1) << j
        return dist[sub]

    if view.num_outputs <= DISTANCE_TABLE_OUTPUTS:
        # One lookup per output valuation instead of a few array operations per effect variable at every use.
        by_y = by_bits(np.arange(1 << view.num_outputs, dtype=np.int64))

        def distance(y: np.ndarray) -> np.ndarray:
            return by_y[y]
    else:
        distance = by_bits

    # Along the current run: the least distance at the effect steps before t, and the states off the base run at
    # steps 0..t (a flip at t changes neither).
    here = np.where(effect, distance(outs), far)
    before = np.concatenate(([far], np.minimum.accumulate(here)[:-1]))
    off = np.cumsum(states[: t_star + 1] != base[: t_star + 1])
    # Every candidate's own step at once: its state at t + 1 and its distance at t.
    ts = np.array([t for t, _ in cands], dtype=np.int64)
    flipped = xs[ts] ^ (np.int64(1) << np.array([i for _, i in cands], dtype=np.int64))
    q_next = nxt[states[ts], flipped].astype(np.int64)
    at_t = np.where(effect[ts], distance(out[states[ts], flipped]), far)
    bounds = np.searchsorted(ts, np.arange(t_star + 2))  # candidates of step u: bounds[u]:bounds[u + 1]
    later_d_of = np.empty(len(cands), dtype=np.int64)
    later_n_of = np.empty(len(cands), dtype=np.int64)
    # later_d[q] / later_n[q]: from state q at step u + 1 under the rest of cur, the least distance at the effect
    # steps in (u, t*] and the number of steps in (u, t*] whose state is off the base run.
    later_d = np.full(n_q, far, dtype=np.int64)
    later_n = np.zeros(n_q, dtype=np.int64)
    every = np.arange(n_q)[:, None]
    width = max(1, SWEEP_CELLS // n_q)
    hi = t_star + 1
    while hi > 0:
        lo = max(0, hi - width)
        # The transitions of every state under cur[lo:hi], what they output and whether the state is off the base.
        step_next = nxt[:, xs[lo:hi]].astype(np.int64)
        step_d = np.where(effect[None, lo:hi], distance(out[:, xs[lo:hi]]), far)
        step_off = (every != base[None, lo:hi]).astype(np.int64)
        for u in range(hi - 1, lo - 1, -1):
            k0, k1 = bounds[u], bounds[u + 1]
            if k1 > k0:
                later_d_of[k0:k1] = later_d[q_next[k0:k1]]
                later_n_of[k0:k1] = later_n[q_next[k0:k1]]
            j = u - lo
            nq = step_next[:, j]
            later_d = np.minimum(step_d[:, j], later_d[nq])
            later_n = step_off[:, j] + later_n[nq]
        hi = lo
    d = np.minimum(np.minimum(before[ts], at_t), later_d_of)
    novelty = off[ts] + later_n_of
    if meter is not None:
        meter((t_star + 1) * (n_q + problem.system.num_inputs))
    return d, novelty


def _replayed_scores(problem: Problem, cur: list[int], cands: list[Flip], base: np.ndarray, table,
                     meter: Callable[[int], None] | None) -> tuple[np.ndarray, np.ndarray]:
    """The (distance, novelty) of every candidate flip of ``cur`` by replaying each candidate trace, in chunks of
    at most :data:`CHUNK_CELLS` cells (a circuit, or a system without tables)."""
    size = max(1, CHUNK_CELLS // max(1, problem.horizon))
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for lo in range(0, len(cands), size):
        chunk = cands[lo : lo + size]
        traces: list[list[int]] | np.ndarray
        if problem.circuit:  # Python integers: a circuit may have more inputs than an int64 holds
            traces = [list(cur) for _ in chunk]
            for k, (t, i) in enumerate(chunk):
                traces[k][t] ^= 1 << i
        else:
            traces = np.repeat(np.asarray(cur, dtype=np.int64)[None, :], len(chunk), axis=0)
            for k, (t, i) in enumerate(chunk):
                traces[k, t] ^= 1 << i
        parts.append(_scores(problem, traces, base, table))
        if meter is not None:
            meter(len(chunk) * problem.horizon)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _prune(problem: Problem, flips: list[Flip], table, base_states: np.ndarray) -> list[Flip]:
    """:func:`_drop_while_sufficient` with the sweep's scores."""
    return _drop_while_sufficient(
        flips, lambda rest: _scores(problem, [_trace_with(problem, rest)], base_states, table)[0][0] == 0)
