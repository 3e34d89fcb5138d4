"""The forward backend: exact count, canonical enumeration, best match and uniform samples of M(I) / M_B(I) by one
forward dynamic programme over t = 0 .. t*, whose cost grows linearly in T.

Why a forward pass decides Valid for every flip set at once. A certificate C is a set of flips at t <= t*; for each
flip c = (t_c, i) the single-removal run of C - {c} equals the edited run of C before t_c, reads the edited input
with bit i toggled at t_c, and reads exactly the edited run's inputs after t_c. So walking forward, step by step,
with the inputs x_t = tau_t XOR d_t (d_t the flip mask of step t), it is enough to know

- q: the edited run's state;
- S: the set of states of the removal runs created so far (they all read x_t from now on, so two removal runs in the
  same state behave alike and a set suffices), none of which has shown the effect yet;
- b: the timesteps used (only under a budget).

A removal run that shows the effect makes Suff(C - {c}) true: the path is dead. A flip made after the edited run
has shown the effect is dead too (its removal run shares that prefix). While the edited run has not shown the effect,
a removal run in the edited run's state is its twin from then on, so the path can never be valid. Once the edited
run shows the effect, no flip may follow, so the rest of the run is the base trace and the path is valid exactly when
no removal run shows the effect on that base continuation: it is decided on the spot. Each flip set is one path, so
the number of valid paths is |M_B(I)|.

Four exact reductions keep the number of keys small:

- states are replaced by their class at step t: two states are equivalent when, for every input letter, they agree
  on "the effect shows now" and go to equivalent states at t + 1 (a backward partition refinement from t* + 1, where
  everything is equivalent); only states reachable at t are classified. Whether a run shows the effect from now on
  under any input sequence depends only on its class, so the programme runs on classes;
- a removal-run class from which no input sequence can show the effect is dropped from S (it can never kill the
  path); a class from which every input sequence shows it kills the path at once; an edited-run class that can never
  show it kills the path;
- under a budget, a path that has spent it is decided at once (the rest is the base trace: valid iff the edited
  run's base continuation shows the effect and no removal run's does), so only keys with budget left are kept;
- keys are merged by (q, S, b) and their counts added (exact: multi-limb integers, 56 bits per limb in uint64
  arrays, carries propagated each step; Python ints once wider than :data:`OBJECT_LIMBS` limbs; on a large pass
  in a helper process while the next step is expanded: :mod:`solvers.key_counts`).

Keys are numpy arrays (S as bitmasks of 64-bit words over the classes of the step), every (key, flip mask) pair is
expanded at once with image tables per input letter, and equal keys are merged by one sort. A plain count expands
a large step class by class instead: the keys of one class share their masks' tables, so a block of (mask, key)
pairs is a few whole-array operations on the keys' class sets. The number of keys per step depends on the machine
and the budget, not on T, so count is linear in T once the key set has saturated.

Enumeration, best match and sampling keep the per-step edges of the same pass (key, mask -> next key, or an
accepting outcome) and walk them: enumeration layer by layer in canonical order (|TS|, |C|, atoms) by a depth-first
walk that tries the flip masks of a step in canonical atom order, pruned by a backward "which layers can still be
reached" pass; best match by a parametric (Dinkelbach) search on F1_AP and F1_TS over the count's keys, one
packed lexicographic cost per key (:mod:`solvers.forward_best`), walking the tie class of its last pass to find the
lowest sha256; sampling by unranking uniform random ranks against backward counts.

Modules of one concern each: the quotient and its per-step tables (:mod:`solvers.quotient`); the pass, its forward
steps and the wiring of the count's helper process (:mod:`solvers.forward_pass`, :mod:`solvers.key_counts`); the
layers both halves of a count share (:mod:`solvers.layers`), a plain step's class blocks (:mod:`solvers.class_blocks`)
and a plain count's backward half (:mod:`solvers.backward_half`); the best match's search and digest walk
(:mod:`solvers.forward_best`); the queries and the walks over the pass's edges (this module).

suff, min1, valid, subset_min, witness and oracle are the explicit backend's (simulation, a DP restricted to C's
flips, the layered shortest path): they are already linear in T.

On a circuit the pass runs on the table of its reachable latch states (:func:`solvers.circuit.tabulated`) when they
are few, and says it needs explicit states otherwise.

>>> count(problem, 3)
36
>>> sample(problem, 2, k=2, seed=7)
[((20, 4, 0), (21, 0, 0), (21, 1, 0), (21, 2, 1)), ((20, 4, 0), (21, 0, 0), (21, 1, 0), (21, 3, 1))]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction

import numpy as np
from numpy.random import PCG64, Generator

from encoders.problem import Atom, Certificate, Flip, Problem
from hoa.errors import Gf01Error
from solvers import explicit, paths
from solvers.canonical import canonical, flips_to_atoms, order_key, timesteps
from solvers.circuit import tabulated
from solvers.forward_best import agent_masks, best_by_ratios, least_digest, reach_any
from solvers.forward_pass import CHUNK, Edges, Extra, Forward, Pass, PassSettings
from solvers.key_counts import sum_limbs, to_int
from solvers.layers import Layer
from solvers.limits import NO_LIMITS, Clock, Limits, guarded
from solvers.quotient import Quotient, quotient
from solvers.results import BestMatch, OracleResult, prf

# -- queries --------------------------------------------------------------------------------------------------------


def suff(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 10, by simulation (the explicit backend's)."""
    return explicit.suff(problem, atoms, limits=limits)


def min1(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 11, by simulation of the single removals (the explicit backend's)."""
    return explicit.min1(problem, atoms, limits=limits)


def valid(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 12, by simulation (the explicit backend's)."""
    return explicit.valid(problem, atoms, limits=limits)


def subset_min(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 14 by the forward DP restricted to C's flips (the explicit backend's)."""
    return explicit.subset_min(problem, atoms, limits=limits)


def witness(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> Certificate | None:
    """A valid certificate within ``budget_t``: the oracle's (layered shortest path), or None when there is none."""
    res = paths.oracle(problem, budget_t, limits)
    return None if res is None else res.certificate


def oracle(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> OracleResult | None:
    """The (Eff_t, Eff_a)-least valid certificate by the layered shortest path of :mod:`solvers.paths`."""
    return paths.oracle(problem, budget_t, limits)


@guarded("count")
def count(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> int:
    """|M(I)| (``budget_t`` None) or |M_B(I)|, exactly, by one forward pass (cost linear in T).

    Under ``limits`` the clock is checked between chunks of at most :data:`CHUNK` expanded pairs; ``nodes`` caps
    the live keys of a step.
    """
    clock = (limits or NO_LIMITS).start()
    problem = tabulated(problem, "count")
    fw = Forward(problem)
    res = fw.run(PassSettings(budget_t, "count", counting=True), clock)
    assert res.counts is not None
    return sum(res.counts)


@guarded("profile")
def profile(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> dict[str, object]:
    """The count with what the pass used: ``{"count", "keys_max", "keys_total", "classes_max"}`` (for benchmarks)."""
    clock = (limits or NO_LIMITS).start()
    problem = tabulated(problem, "profile")
    fw = Forward(problem)
    res = fw.run(PassSettings(budget_t, "count", counting=True), clock)
    assert res.counts is not None
    return {"count": sum(res.counts), "keys_max": max(res.keys, default=0), "keys_total": sum(res.keys),
            "classes_max": max(fw.quo.sizes)}


def _reach_bits(fw: Forward, edges: list[Edges], accept_bits: Callable[[int, np.ndarray], np.ndarray],
                width: int, clock: Clock, query: str) -> list[np.ndarray]:
    """Backward over the edges: per key, a bitset (uint64, or Python ints when ``width`` > 64) of reachable
    remainders, where an accepting edge contributes ``accept_bits(outcome, mask)`` and an inner edge its target's
    set shifted by the mask's flip count."""
    big = width > 64
    dtype = object if big else np.uint64
    reach: list[np.ndarray] = [np.empty(0, dtype=dtype)] * (len(edges) + 1)
    nxt = np.zeros(0, dtype=dtype)
    for t in range(len(edges) - 1, -1, -1):
        clock.check(query)
        e = edges[t]
        n_src = e.offsets.size - 1
        val = np.zeros(e.dst.size, dtype=dtype)
        inner = e.dst >= 0
        if inner.any():
            shift = fw.popcount[e.mask[inner]]
            src_vals = nxt[e.dst[inner]]
            val[inner] = [int(v) << int(s) for v, s in zip(src_vals, shift, strict=True)] if big else (
                src_vals << shift.astype(np.uint64))
        acc = ~inner
        if acc.any():
            val[acc] = accept_bits(t, np.flatnonzero(acc))
        cur = np.zeros(n_src, dtype=dtype)
        if big:
            for k in range(e.dst.size):
                cur[e.src[k]] = cur[e.src[k]] | val[k]
        else:
            np.bitwise_or.at(cur, e.src, val)
        reach[t] = cur
        nxt = cur
    return reach


@guarded("enumerate", stream=True)
def enumerate_certificates(
    problem: Problem, budget_t: int | None, limit: int | None = None, *, limits: Limits | None = None
) -> Iterator[Certificate]:
    """M(I) or M_B(I) in canonical order (|TS|, |C|, atoms by (t, input name)), lazily; at most ``limit``.

    Layer |TS| = k comes from a forward pass with budget k (so the first certificates of a huge M(I) cost only
    passes with small budgets); a backward pass marks, per key, the flip counts n with which layer (k, n) can still
    be completed; then each non-empty layer is walked depth first, the masks of a step in canonical order (atoms
    by input name, a mask before its prefixes), which is the canonical order of certificates of equal size.
    """
    if limit is not None and limit <= 0:
        return
    clock = (limits or NO_LIMITS).start()
    problem = tabulated(problem, "enumerate")
    fw = Forward(problem)
    steps = fw.quo.steps
    top = steps if budget_t is None else min(budget_t, steps)
    produced = 0
    n_in = problem.system.num_inputs
    # The layers |TS| = k that hold a member, once an empty layer follows a full one (or three are empty): one pass
    # under the whole budget names them, so a long horizon whose members are all small does not pay a pass per
    # empty layer up to t*, while a --limit on a huge M(I) still pays only the small budgets' passes.
    layers: set[int] | None = None
    for k in range(top + 1):
        if layers is not None and k not in layers:
            continue
        res = fw.run(PassSettings(k, "enumerate", edges=True), clock)
        assert res.edges is not None
        final_b = [o[0] for o in res.outcomes]
        if k not in final_b:
            if layers is None and k < top and (produced > 0 or k >= 2):
                layers = {o[0] for o in fw.run(PassSettings(top, "enumerate", track_steps=True), clock).outcomes}
            continue
        width = k * n_in + 1

        def acc_bits(t: int, idx: np.ndarray, res: Pass = res, k: int = k, width: int = width) -> np.ndarray:
            e = res.edges[t]  # type: ignore[index]
            outc = -1 - e.dst[idx]
            pops = fw.popcount[e.mask[idx]]
            fb = np.array([res.outcomes[o][0] for o in outc], dtype=np.int64)
            if width > 64:
                return np.array([(1 << int(p)) if f == k else 0 for p, f in zip(pops, fb, strict=True)],
                                dtype=object)
            return np.where(fb == k, np.left_shift(np.uint64(1), pops.astype(np.uint64)), np.uint64(0))

        reach = _reach_bits(fw, res.edges, acc_bits, width, clock, "enumerate")
        if reach[0].size == 0:
            continue
        root = int(reach[0][0])
        for n in range(width):
            if not (root >> n) & 1:
                continue
            for flips in _walk(fw, res, reach, k, n, clock):
                yield flips_to_atoms(problem, flips)
                produced += 1
                if limit is not None and produced >= limit:
                    return


def _walk(fw: Forward, res: Pass, reach: list[np.ndarray], k: int, n: int, clock: Clock) -> Iterator[list[Flip]]:
    """Depth-first over the edges: the paths ending in an outcome with |TS| = k and exactly n flips, in order."""
    edges = res.edges
    assert edges is not None
    n_in = fw.problem.system.num_inputs
    # Frames: (step, key, flips so far, next edge position).
    stack: list[list] = [[0, 0, 0, edges[0].offsets[0]]]
    path: list[list[Flip]] = [[]]
    visited = 0
    while stack:
        frame = stack[-1]
        t, key, used, pos = frame
        e = edges[t]
        end = e.offsets[key + 1]
        if pos >= end:
            stack.pop()
            path.pop()
            continue
        frame[3] = pos + 1
        visited += 1
        if visited % 4096 == 0:
            clock.check("enumerate")
        mask = int(e.mask[pos])
        used2 = used + int(fw.popcount[mask])
        if used2 > n:
            continue
        dst = int(e.dst[pos])
        flips = [(t, i) for i in range(n_in) if (mask >> i) & 1]
        if dst < 0:
            if res.outcomes[-1 - dst][0] == k and used2 == n:
                yield [f for part in path for f in part] + flips
            continue
        if not (int(reach[t + 1][dst]) >> (n - used2)) & 1:
            continue
        stack.append([t + 1, dst, used2, edges[t + 1].offsets[dst]])
        path.append(flips)


def _counts_to_go(fw: Forward, res: Pass, clock: Clock, query: str) -> list[np.ndarray]:
    """Backward: per key, the number of accepted completions (multi-limb (K, L), or (K,) Python ints once wide:
    :func:`solvers.key_counts.sum_limbs`), per step."""
    edges = res.edges
    assert edges is not None
    out: list[np.ndarray] = [np.zeros((0, 1), dtype=np.uint64)] * (len(edges) + 1)
    nxt = np.zeros((0, 1), dtype=np.uint64)
    for t in range(len(edges) - 1, -1, -1):
        clock.check(query)
        e = edges[t]
        n_src = e.offsets.size - 1
        # An accepting edge completes one certificate: it reads an extra row holding 1.
        if nxt.dtype == object:
            parent = np.append(nxt, np.array([1], dtype=object))
        else:
            one = np.zeros((1, nxt.shape[1]), dtype=np.uint64)
            one[0, 0] = 1
            parent = np.concatenate([nxt, one])
        src = np.where(e.dst >= 0, e.dst, nxt.shape[0])
        # Edges are sorted by source: segment sums over the sources that have edges.
        has = np.flatnonzero(np.diff(e.offsets) > 0)
        sums = sum_limbs(parent, src, e.offsets[has])
        if sums.dtype == object:
            cur = np.zeros(n_src, dtype=object)
        else:
            cur = np.zeros((n_src, sums.shape[1]), dtype=np.uint64)
        cur[has] = sums
        out[t] = cur
        nxt = cur
    return out


def _uniform_below(rng: Generator, n: int) -> int:
    """A uniform integer in [0, n) from ``rng`` (rejection sampling on whole 32-bit words, exact for big n)."""
    bits = n.bit_length()
    words = (bits + 31) // 32
    while True:
        draw = 0
        for w in rng.integers(0, 1 << 32, size=words, dtype=np.uint64):
            draw = (draw << 32) | int(w)
        draw >>= words * 32 - bits
        if draw < n:
            return draw


@guarded("sample")
def sample(
    problem: Problem, budget_t: int | None, k: int, seed: int, *, limits: Limits | None = None
) -> list[Certificate]:
    """``k`` certificates of M_B(I) (``budget_t`` None: M(I)) drawn uniformly at random without replacement.

    The result is a uniformly random k-subset of M_B(I), returned in canonical order; all of M_B(I) when
    ``k >= |M_B(I)|``. Deterministic for a seed: ranks are drawn from ``Generator(PCG64(seed))`` (exact for counts
    beyond 2^64) and unranked against the backward counts of the forward pass's transition graph.
    """
    if k < 0:
        raise Gf01Error(f"a sample needs k >= 0 certificates, got {k}", field="sample")
    clock = (limits or NO_LIMITS).start()
    problem = tabulated(problem, "sample")
    fw = Forward(problem)
    res = fw.run(PassSettings(budget_t, "sample", edges=True), clock)
    togo = _counts_to_go(fw, res, clock, "sample")
    total = to_int(togo[0], 0) if togo[0].shape[0] else 0
    rng = Generator(PCG64(seed))
    if k >= total:
        ranks = list(range(total))
    else:
        chosen: set[int] = set()
        while len(chosen) < k:
            chosen.add(_uniform_below(rng, total))
        ranks = sorted(chosen)
    out = [flips_to_atoms(problem, _unrank(fw, res, togo, r, clock)) for r in ranks]
    return sorted(out, key=lambda c: order_key(problem, c))


def _unrank(fw: Forward, res: Pass, togo: list[np.ndarray], rank: int, clock: Clock) -> list[Flip]:
    """The certificate of index ``rank`` in the edge order of the transition graph."""
    edges = res.edges
    assert edges is not None
    n_in = fw.problem.system.num_inputs
    flips: list[Flip] = []
    key = 0
    for t in range(len(edges)):
        clock.check("sample")
        e = edges[t]
        for pos in range(int(e.offsets[key]), int(e.offsets[key + 1])):
            dst = int(e.dst[pos])
            weight = 1 if dst < 0 else to_int(togo[t + 1], dst)
            if rank < weight:
                mask = int(e.mask[pos])
                flips.extend((t, i) for i in range(n_in) if (mask >> i) & 1)
                if dst < 0:
                    return flips
                key = dst
                break
            rank -= weight
        else:
            raise AssertionError("rank beyond the count")
    raise AssertionError("no accepting edge on the unranked path")


@guarded("best_match")
def best_match(
    problem: Problem, atoms: Sequence[Atom], budget_t: int | None, *, limits: Limits | None = None
) -> BestMatch:
    """The DEC-025 gold of M_B(I) for the agent's ``atoms`` (docs/semantics.md), exactly, from forward passes.

    A valid agent certificate within the budget is its own gold. Otherwise the parametric search of
    :mod:`solvers.forward_best` (a few passes over the count's keys with one packed lexicographic cost, the last
    one's tight edges holding the tie class), or, where that cost would not fit in an int64, the threshold passes
    of :func:`_best_by_thresholds`; then the lowest sha256 of the tie class.
    """
    agent = list(atoms)
    clock = (limits or NO_LIMITS).start()
    problem = tabulated(problem, "best_match")
    if agent and (budget_t is None or len(timesteps(agent)) <= budget_t) and explicit.valid(problem, agent,
                                                                                           limits=limits):
        # F1_AP = 1 exactly when the gold is C_a itself: a valid agent certificate within the budget is its own gold.
        return BestMatch(canonical(problem, agent), 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    fw = Forward(problem)
    found = best_by_ratios(fw, agent, budget_t, clock)
    return found if found is not None else _best_by_thresholds(fw, agent, budget_t, clock, limits)


def _best_by_thresholds(fw: Forward, agent: list[Atom], budget_t: int | None, clock: Clock,
                        limits: Limits | None) -> BestMatch:
    """The best match by threshold passes (issue 33's earlier rounds; used where the packed cost of
    :mod:`solvers.forward_best` is wider than an int64).

    For a fixed number of hits h = |C ∩ C_a| and of shared timesteps g = |TS(C) ∩ TS(C_a)|, the rank of a gold C
    (F1_AP desc, F1_TS desc, Eff_t asc) is the lexicographic order of (|C|, |TS(C)|) when h > 0 (F1_AP falls with
    |C|, F1_TS with |TS|) and the order of |TS(C)| alone when h = 0 (F1_AP is 0 whatever |C|). Both are additive
    along a path, so the first pass keeps h and g as key fields (at most |C_a| + 1 values each) and only the least
    (|C|, |TS|) and the least |TS| of the paths into each key, as shortest paths do; it runs under a falling
    threshold on F1_AP (paths that cannot reach it end) until a pass finds an outcome at or above it, and drops
    keys that another key of the same (q, S[, b]) dominates. With nothing to hit (the empty certificate) R* is the
    oracle's least Eff_t and no such pass runs. The last pass lists the final tie class only (budget |TS| = R*'s
    Eff_t, paths that can no longer reach a goal of rank R* end) and keeps its edges for the walk.
    """
    problem = fw.problem
    steps = fw.quo.steps
    size_a = len(agent)
    ts_a = timesteps(agent)
    agent_mask = agent_masks(problem, agent, steps)
    masks = np.arange(fw.quo.letters, dtype=np.int64)
    nonzero = (masks != 0).astype(np.int64)
    hits_top = int(fw.popcount[agent_mask].sum())
    ts_top = sum(1 for t in ts_a if t < steps)
    top_b = steps if budget_t is None else min(budget_t, steps)
    wide = top_b + 1

    def hit_inc(t: int) -> np.ndarray:
        return fw.popcount[masks & agent_mask[t]]

    def ts_inc(t: int) -> np.ndarray:
        return nonzero if t in ts_a else np.zeros_like(nonzero)

    def fields(tops: tuple[int, int]) -> tuple[Extra, ...]:
        out: list[Extra] = []
        if hits_top:
            out.append((hit_inc, tops[0]))
        if ts_top:
            out.append((ts_inc, tops[1]))
        return tuple(out)

    def rank(h: int, g: int, c: int, b: int) -> tuple[Fraction, Fraction, int]:
        return (-prf(h, size_a, c)[2], -prf(g, len(ts_a), b)[2], b)

    # Pass 1: least (|C|, |TS|) packed as |C| * wide + |TS|, and least |TS|, per key (q, S[, b], h, g). F1_AP ranks
    # first, so the pass runs under a threshold theta on it (below): after step t a path with h hits and at least
    # |C| atoms gains at most x <= (the agent's flips after t) more hits, each an atom, so its F1_AP is at most
    # 2 (h + x) / (|C_a| + |C| + x), largest at the largest x (as |C| >= h); a path below theta ends. Every path of
    # F1_AP >= theta is kept with its costs (or one that ranks at least as high on every completion), so when the
    # pass finds an outcome of F1_AP >= theta, R* is the best outcome found, exactly.
    costs = (lambda t: fw.popcount * wide + nonzero, lambda t: nonzero)
    binding = None if budget_t is None or budget_t >= steps else budget_t
    after_h = np.concatenate((np.cumsum(fw.popcount[agent_mask][::-1])[::-1][1:], [0]))

    def reaches(theta: Fraction) -> Callable[[int, np.ndarray, np.ndarray], np.ndarray]:
        def cut(t: int, extra: np.ndarray, cost: np.ndarray) -> np.ndarray:
            x, c = after_h[t], cost[:, 0] // wide
            return 2 * (extra[:, 0] + x) * theta.denominator >= theta.numerator * (size_a + c + x)
        return cut

    if not hits_top and not ts_top:
        # No hit and no shared timestep is possible: every member ranks (0, 0, Eff_t), so R* is the least Eff_t of
        # M_B(I), the oracle's (a least sufficient set is valid by itself): a shortest path, no pass.
        found_oracle = explicit.oracle(problem, budget_t, limits=limits)
        if found_oracle is None:
            return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        best = rank(0, 0, 0, found_oracle.eff_t)
    else:
        # Passes under a falling threshold theta on F1_AP, starting at the best F1_AP conceivable, 2H / (|C_a| + H)
        # (H the agent's real flips); after a pass that finds no outcome at or above theta, the next theta is the
        # best F1_AP it found (achievable, so that pass decides), or half the last when it found no hit, and none
        # (every path) below an eighth of the first. Under a threshold a key (q, S[, b], h, g) is dropped when a key
        # of the same (q, S[, b]) dominates it (at least its hits and shared timesteps, one more, and at most its
        # least (|C|, |TS|)): it has the same completions, each ranking at least as high (see _undominated).
        theta = Fraction(2 * hits_top, size_a + hits_top) if hits_top else Fraction(0)
        floor = theta / 8
        while True:
            prune = _undominated(0) if theta else None if hits_top else _undominated(1)
            first = fw.run(PassSettings(binding, "best_match", extras=fields((hits_top, ts_top)), costs=costs,
                                        viable=reaches(theta) if theta else None, prune=prune), clock)
            found = max((prf(o[1], size_a, least_cb // wide)[2] for o, least_cb in zip(first.outcomes,
                                                                                       first.costs[:, 0].tolist(),
                                                                                       strict=True) if hits_top),
                        default=Fraction(0))
            if not theta or found >= theta:
                break
            theta = found if found else (theta / 2 if theta / 2 >= floor else Fraction(0))
        if not first.outcomes:
            return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        ranked = []
        for o, (least_cb, least_b) in zip(first.outcomes, first.costs.tolist(), strict=True):
            h = o[1] if hits_top else 0
            g = o[-1] if ts_top else 0
            c, b = divmod(least_cb, wide) if h else (0, least_b)
            ranked.append(rank(h, g, c, b))
        best = min(ranked)
    # Pass 2: the tie class of R*. A certificate of rank R* ends in an outcome (h, g) and is a least path of it:
    # least (|C|, |TS|) when h > 0, least |TS| when h = 0 (then F1_AP = 0 whatever |C|); so the pass keeps the edges
    # of least paths only (``tight``). The goals (h, g, least cost) of rank R* follow from R* itself: F1_AP =
    # 2h / (|C_a| + |C|) fixes |C| for each h, F1_TS fixes which g fit |TS| = Eff_t of R*. Every member has
    # |TS| = Eff_t, a budget (paths end as soon as it is spent), and a path after step t ends unless some goal
    # (h*, g*, cost*) is still in reach: h <= h* <= h + the agent's flips after t, likewise g, and its cost plus the
    # least the missing hits and timesteps add (an atom, a timestep each) at most cost*. Both bounds are exact (they
    # only drop paths that cannot have rank R*) and leave few keys.
    f_ap, f_ts, b_star = -best[0], -best[1], best[2]
    packed = f_ap > 0
    goal_list = []
    for h in range(hits_top + 1):
        for g in range(ts_top + 1):
            if prf(g, len(ts_a), b_star)[2] != f_ts or (h > 0) != packed:
                continue
            if not packed:
                goal_list.append((0, g, b_star))
                continue
            c = Fraction(2 * h) / f_ap - size_a
            if c.denominator == 1 and c >= h:
                goal_list.append((h, g, int(c) * wide + b_star))
    goals = np.array(goal_list, dtype=np.int64).reshape(-1, 3)
    top_h = int(goals[:, 0].max())
    ts_steps = np.zeros(steps, dtype=np.int64)
    ts_steps[[t for t in ts_a if t < steps]] = 1
    after_g = np.concatenate((np.cumsum(ts_steps[::-1])[::-1][1:], [0]))

    def viable(t: int, extra: np.ndarray, cost: np.ndarray) -> np.ndarray:
        h = extra[:, 0] if hits_top else np.zeros(len(cost), dtype=np.int64)
        g = extra[:, -1] if ts_top else np.zeros(len(cost), dtype=np.int64)
        keep = np.zeros(len(cost), dtype=bool)
        for gh, gg, gc in goals.tolist():
            dh, dg = gh - h, gg - g
            least = cost[:, 0] + (dh * wide if packed else 0) + dg
            keep |= (dh >= 0) & (dh <= after_h[t]) & (dg >= 0) & (dg <= after_g[t]) & (least <= gc)
        return keep

    res = fw.run(PassSettings(b_star, "best_match", edges=True, extras=fields((top_h, int(goals[:, 1].max()))),
                              costs=(costs[0] if packed else costs[1],), tight=True, viable=viable,
                              prune=_undominated(0)), clock)
    least = res.costs[:, 0]

    def winner(o: tuple[int, ...], cost: int) -> bool:
        h = o[1] if hits_top else 0
        g = o[-1] if ts_top else 0
        c, b = divmod(cost, wide) if packed else (0, cost)
        return rank(h, g, c, b) == best

    target = np.array([winner(o, int(cost)) for o, cost in zip(res.outcomes, least, strict=True)], dtype=bool)
    ok: list[np.ndarray] = []
    for e in res.edges or []:
        assert e.cost is not None
        outc = np.where(e.dst < 0, -1 - e.dst, 0)
        ok.append((e.dst < 0) & target[outc] & (e.cost == least[outc]) if target.size else np.zeros(e.dst.size, bool))
    reach = reach_any(res, ok, clock)
    gold = least_digest(fw, res, reach, ok, clock)
    ap = prf(len(set(agent) & set(gold)), size_a, len(gold))
    ts = prf(len(ts_a & timesteps(gold)), len(ts_a), len(timesteps(gold)))
    return BestMatch(canonical(problem, gold), *(float(x) for x in ap), *(float(x) for x in ts))


def _undominated(column: int) -> Callable[[Layer], np.ndarray]:
    """Which keys of a layer (sorted by (q, b, S, extras), as a pass with ``prune`` gives it) stay: a key is dropped
    when a key of the same (q, S, b) has each extra field (hits, shared timesteps: more is better) at least its own,
    one of them larger, and the least cost ``column`` (less is better) at most its own. The two have the same
    completions, and each completion ranks at least as high after the other key (docs/solvers.md, "Best match"),
    so the best rank survives; dominance is a strict order, so every dropped key is dominated by a kept one."""

    def keep(layer: Layer) -> np.ndarray:
        n = layer.size
        if not layer.extra.shape[1]:
            return np.ones(n, dtype=bool)  # no extra field: one key per (q, S, b)
        change = (layer.q[1:] != layer.q[:-1]) | (layer.b[1:] != layer.b[:-1])
        for w in range(layer.s.shape[1]):
            change |= layer.s[1:, w] != layer.s[:-1, w]
        gid = np.concatenate(([0], np.cumsum(change)))
        cost = layer.cost[:, column]
        span = int(cost.max()) + 1
        if layer.extra.shape[1] == 1:
            # One field, in increasing order within a group: a key is dominated when the least cost after it in
            # its group is at most its own. Lifting each group's costs above the next group's makes one running
            # minimum from the end over all the keys restart at each group.
            val = (cost + gid * span)[::-1]
            after = np.concatenate(([np.iinfo(np.int64).max], np.minimum.accumulate(val)[:-1]))[::-1]
            return after > cost + gid * span
        # Two fields: each group's costs as a dense (h, g) grid, suffix minima over h and over g (the least cost of
        # a key of the group with at least (h, g)); a few thousand groups at a time bound the grids' memory.
        h, g = layer.extra[:, 0], layer.extra[:, 1]
        tops = (int(h.max()) + 2, int(g.max()) + 2)
        per = max(1, (1 << 20) // (tops[0] * tops[1]))
        bounds = np.searchsorted(gid, np.arange(0, int(gid[-1]) + 1 + per, per))
        out = np.empty(n, dtype=bool)
        for k in range(bounds.size - 1):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            if lo == hi:
                continue
            g0 = gid[lo:hi] - gid[lo]
            grid = np.full((int(g0[-1]) + 1, *tops), np.iinfo(np.int64).max, dtype=np.int64)
            grid[g0, h[lo:hi], g[lo:hi]] = cost[lo:hi]
            grid = np.minimum.accumulate(grid[:, ::-1], axis=1)[:, ::-1]
            grid = np.minimum.accumulate(grid[:, :, ::-1], axis=2)[:, :, ::-1]
            better = np.minimum(grid[g0, h[lo:hi] + 1, g[lo:hi]], grid[g0, h[lo:hi], g[lo:hi] + 1])
            out[lo:hi] = better > cost[lo:hi]
        return out

    return keep


__all__ = [
    "CHUNK",
    "Quotient",
    "best_match",
    "count",
    "enumerate_certificates",
    "min1",
    "oracle",
    "profile",
    "quotient",
    "sample",
    "subset_min",
    "suff",
    "valid",
    "witness",
]
