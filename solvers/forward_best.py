"""The DEC-025 best match on the forward pass by parametric (Dinkelbach) search: a few passes over the count's keys
(q, S[, b]) with one exact integer cost per key, then the lowest sha256 among the certificates of the best rank.

Why one scalar per key suffices. With a = |C_a|, h = |C ∩ C_a| and n = |C|, F1_AP = 2h / (a + n) is a ratio of
quantities that add along a path (h and n grow by the hits and atoms of each step's flip mask); likewise F1_TS =
2g / (|TS(C_a)| + m) with g = |TS(C) ∩ TS(C_a)| and m = |TS(C)| = Eff_t. For lambda = p / r, the largest F1_AP is
lambda exactly when the largest value of r 2h - p (a + n) over the valid certificates is 0 (Dinkelbach): if it is
positive, the certificate that reaches it has F1_AP > lambda. Whether a path is valid depends only on its key, and
the value adds along the path, so the largest value is a shortest path over the keys (the least of
p n - 2 r h per key, as the pass keeps least costs): the prefixes of a best path are best for their keys, and the
programme is exact. The secondary and tertiary criteria ride along as a lexicographic cost: (p n - 2 r h,
p' m - 2 r' g, m) with mu = p' / r' for F1_TS, packed into one int64 (each lower field signed within its own bits,
so the integer order is the lexicographic order, and costs still add). Each pass gives the least packed cost and one
path that reaches it; the next (lambda, mu) are that path's (F1_AP, F1_TS). The search stops when they are the
current ones: then the largest value is (0, 0), so lambda is the best F1_AP, mu the best F1_TS among the
certificates at that F1_AP, and the path's m the least Eff_t among those (DEC-025's first three keys). Each pass
strictly raises (lambda, mu) in lexicographic order, and there are finitely many ratios, so the search ends. It
starts from a pass without edges that finds the path of most hits, then fewest atoms: 2-3 passes in all on issue
33's seeds (a start at (0, 0) took one more).

The certificates of the best rank are then exactly the paths of least packed cost: the pass keeps only the edges on
which a path's cost is least for the key it reaches (``tight``), so they are the paths along those edges that end
in an accepting edge of that cost. Each pass keeps its edges, so the last one (the one that confirms) holds the tie
class, and its lowest digest is taken by the walk of :func:`least_digest`.

When the packed cost would not fit in 62 bits (very long horizons with many inputs), or when no hit and no shared
timestep is possible (every member then ranks by Eff_t alone, which the oracle's shortest path gives),
:func:`best_by_ratios` returns None and the caller ranks by its threshold passes or the oracle
(:func:`solvers.forward.best_match`).
"""

from __future__ import annotations

import array
import hashlib
import json
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from encoders.problem import Atom, Certificate, Flip, Problem
from solvers.canonical import canonical, flips_to_atoms, timesteps
from solvers.forward_pass import Forward, Pass, PassSettings
from solvers.limits import Clock
from solvers.results import BestMatch, prf

#: Most bits the packed lexicographic cost may take (int64, with room for the sign).
COST_BITS = 62


def agent_masks(problem: Problem, agent: Sequence[Atom], steps: int) -> np.ndarray:
    """Per step t < ``steps``, the flip mask of the agent's atoms that differ from the trace (its real flips; an
    atom that restates the trace's value flips nothing).

    >>> problem.trace[:3]  # bit i of a letter is input i
    (25, 9, 15)
    >>> agent_masks(problem, ((0, 0, 0), (1, 1, 0), (2, 1, 0)), 4).tolist()
    [1, 0, 2, 0]
    """
    mask = np.zeros(steps, dtype=np.int64)
    for t, i, v in agent:
        if t < steps and v != (problem.trace[t] >> i) & 1:
            mask[t] |= 1 << i
    return mask


def best_by_ratios(fw: Forward, agent: Sequence[Atom], budget_t: int | None, clock: Clock,
                   passes: list[tuple[Fraction, Fraction]] | None = None) -> BestMatch | None:
    """The DEC-025 gold of M_B(I) for ``agent`` by Dinkelbach passes (module docstring); None when the packed cost
    does not fit :data:`COST_BITS`, or when no hit and no shared timestep is possible (then the caller's oracle
    route is cheaper). ``passes``, when given, receives the (lambda, mu) of each pass (tests)."""
    problem = fw.problem
    steps = fw.quo.steps
    n_in = problem.system.num_inputs
    size_a, ts_a = len(agent), timesteps(agent)
    agent_mask = agent_masks(problem, agent, steps)
    masks = np.arange(fw.quo.letters, dtype=np.int64)
    nonzero = (masks != 0).astype(np.int64)
    none = np.zeros_like(nonzero)
    hits_top = int(fw.popcount[agent_mask].sum())
    ts_top = sum(1 for t in ts_a if t < steps)
    m_top = steps if budget_t is None else min(budget_t, steps)
    n_top = m_top * n_in
    if not hits_top and not ts_top:
        # Every member ranks (0, 0, Eff_t): the oracle's least Eff_t and one pass under that budget are cheaper than
        # a pass over every key (the empty certificate at 4 inputs, T = 1024, seed 1: 2.1 s against 29 s of CPU).
        return None
    # Field widths from the largest |p n - 2 r h| and |p' m - 2 r' g| any path prefix reaches: lambda = p / r is
    # an F1 of a path (p <= 2 h, r <= a + n), so is mu.
    span_1 = 2 * hits_top * n_top + 2 * (size_a + n_top) * hits_top
    span_2 = 2 * ts_top * m_top + 2 * (len(ts_a) + m_top) * ts_top
    bits_m = max(1, m_top.bit_length())
    bits_2 = span_2.bit_length() + 1
    bits_1 = span_1.bit_length() + 1
    if bits_1 + bits_2 + bits_m > COST_BITS:
        return None
    unit_2 = 1 << bits_m
    shift_1 = bits_m + bits_2
    unit_1 = 1 << shift_1
    after_h = np.concatenate((np.cumsum(fw.popcount[agent_mask][::-1])[::-1][1:], [0]))
    binding = None if budget_t is None or budget_t >= steps else budget_t
    ts_steps = {t for t in ts_a if t < steps}
    lam = mu = Fraction(0)
    if hits_top:
        # A start near the best F1_AP: one pass without edges for the path of most hits, then fewest atoms (then
        # most shared timesteps, fewest timesteps), whose fields the least packed cost spells out. Among the
        # certificates of most hits, the fewest atoms give the best F1_AP, so this start is often the answer and the
        # next pass confirms it (a start at (0, 0) took one pass more on issue 33's seeds).
        fields = (max(1, m_top.bit_length()) + 1, max(1, ts_top.bit_length()) + 1, max(1, n_top.bit_length()) + 1)
        shift = np.cumsum((0, *fields))

        def start(t: int) -> np.ndarray:
            shared = nonzero if t in ts_steps else none
            return ((-fw.popcount[masks & agent_mask[t]] << shift[3]) + (fw.popcount << shift[2])
                    - (shared << shift[1]) + nonzero)

        if passes is not None:
            passes.append((Fraction(-1), Fraction(-1)))
        first = fw.run(PassSettings(binding, "best_match", costs=(start,)), clock)
        if not first.outcomes:
            return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        m, neg_g, n, neg_h = unpack(int(first.costs[:, 0].min()), fields)
        lam, mu = prf(-neg_h, size_a, n)[2], prf(-neg_g, len(ts_a), m)[2]
    while True:
        p1, r1, p2, r2 = lam.numerator, lam.denominator, mu.numerator, mu.denominator

        def cost(t: int, p1: int = p1, r1: int = r1, p2: int = p2, r2: int = r2) -> np.ndarray:
            hit = fw.popcount[masks & agent_mask[t]]
            shared = nonzero if t in ts_steps else none
            return ((p1 * fw.popcount - 2 * r1 * hit) * unit_1 + (p2 * nonzero - 2 * r2 * shared) * unit_2
                    + nonzero)

        def viable(t: int, extra: np.ndarray, cost: np.ndarray, p1: int = p1, r1: int = r1) -> np.ndarray:
            # The path found last has value 0 at (lambda, mu), so the best has r 2h - p (a + n) >= 0: a path whose
            # p n - 2 r h, less 2 r per hit the agent's flips after t could still add, exceeds -p a ends.
            c1 = (cost[:, 0] + (unit_1 >> 1)) >> shift_1
            return c1 - 2 * r1 * int(after_h[t]) <= -p1 * size_a

        if passes is not None:
            passes.append((lam, mu))
        res = fw.run(PassSettings(binding, "best_match", edges=True, costs=(cost,), tight=True, viable=viable), clock)
        if not res.outcomes:
            return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        least = int(res.costs[:, 0].min())
        ok = [(e.dst < 0) & (e.cost == least) for e in res.edges or []]  # type: ignore[operator]
        reach = reach_any(res, ok, clock)
        flips = _one_path(fw, res, reach, ok)
        h = sum(1 for t, i in flips if (agent_mask[t] >> i) & 1)
        m = len({t for t, _ in flips})
        g = len({t for t, _ in flips} & ts_steps)
        found = (prf(h, size_a, len(flips))[2], prf(g, len(ts_a), m)[2])
        if found == (lam, mu):
            break
        lam, mu = found
    gold = least_digest(fw, res, reach, ok, clock)
    ap = prf(len(set(agent) & set(gold)), size_a, len(gold))
    ts = prf(len(ts_a & timesteps(gold)), len(ts_a), len(timesteps(gold)))
    return BestMatch(canonical(problem, gold), *(float(x) for x in ap), *(float(x) for x in ts))


def unpack(value: int, widths: Sequence[int]) -> list[int]:
    """The signed fields of a packed integer, lowest first: each of ``widths`` bits (sign included), the last one
    taking the rest."""
    out = []
    for w in widths:
        half = 1 << (w - 1)
        field = ((value + half) & ((1 << w) - 1)) - half
        out.append(field)
        value = (value - field) >> w
    out.append(value)
    return out


def _one_path(fw: Forward, res: Pass, reach: list[np.ndarray], ok: list[np.ndarray]) -> list[Flip]:
    """The flips of one path that ends in an accepting edge marked in ``ok`` (the first such edge at each step)."""
    edges = res.edges
    assert edges is not None and reach[0].size and reach[0][0], "no path reaches the least cost"
    n_in = fw.problem.system.num_inputs
    flips: list[Flip] = []
    key = 0
    for t, e in enumerate(edges):
        lo, hi = int(e.offsets[key]), int(e.offsets[key + 1])
        dst = e.dst[lo:hi]
        good = ok[t][lo:hi].copy()
        inner = dst >= 0
        if reach[t + 1].size:
            good[inner] = reach[t + 1][dst[inner]]
        pos = lo + int(np.flatnonzero(good)[0])
        mask = int(e.mask[pos])
        flips.extend((t, i) for i in range(n_in) if (mask >> i) & 1)
        if e.dst[pos] < 0:
            return flips
        key = int(e.dst[pos])
    raise AssertionError("the path did not end in an accepting edge")


def reach_any(res: Pass, ok: list[np.ndarray], clock: Clock) -> list[np.ndarray]:
    """Backward: per key, whether some accepting edge marked in ``ok`` (per step, per edge) is reachable."""
    edges = res.edges
    assert edges is not None
    reach: list[np.ndarray] = [np.zeros(0, dtype=bool)] * (len(edges) + 1)
    nxt = np.zeros(0, dtype=bool)
    for t in range(len(edges) - 1, -1, -1):
        clock.check("best_match")
        e = edges[t]
        val = ok[t].copy()
        inner = e.dst >= 0
        val[inner] = nxt[e.dst[inner]]
        cur = np.zeros(e.offsets.size - 1, dtype=bool)
        np.logical_or.at(cur, e.src, val)
        reach[t] = cur
        nxt = cur
    return reach


def least_digest(fw: Forward, res: Pass, reach: list[np.ndarray], ok: list[np.ndarray], clock: Clock) -> Certificate:
    """The member of lowest sha256 (of its canonical JSON) among the paths ending in an accepting edge marked in
    ``ok``, pruned by ``reach``.

    The paths are followed step by step as whole arrays: the frontier is every prefix that can still end in a
    member (a key and the last flip event of the prefix), and a step's edges with a flip add one event each (step,
    mask, parent event), so the steps without a flip, most of a long horizon, cost array operations and no Python.
    Steps come in order and the atoms of a step in input-name order, so a member's JSON is its events' texts in
    order: each event keeps the hash state of its prefix (made once, from its parent's; the last child takes it
    over without a copy, and it is let go then) and a member costs a closing bracket and a digest."""
    edges = res.edges
    assert edges is not None
    assert reach[0].size and reach[0][0], "the best rank's tie class is empty"
    problem = fw.problem
    names = problem.system.inputs
    order = sorted(range(len(names)), key=lambda i: names[i])
    texts: dict[tuple[int, int], bytes] = {}

    def text(t: int, mask: int) -> bytes:
        # One step's atoms as the canonical JSON shows them: sorted by input name, each with its flipped value.
        got = texts.get((t, mask))
        if got is None:
            got = ",".join(json.dumps([t, names[i], 1 - ((problem.trace[t] >> i) & 1)], separators=(",", ":"))
                           for i in order if (mask >> i) & 1).encode()
            texts[(t, mask)] = got
        return got

    # Flip events: (step, mask, parent event; -1 for none), numbered as made; parents come first.
    ev_t: list[np.ndarray] = []
    ev_mask: list[np.ndarray] = []
    ev_parent: list[np.ndarray] = []
    made = 0
    members: list[np.ndarray] = []  # the last event of each member (-1: the member without flips)
    fr_key = np.zeros(1, dtype=np.int64)
    fr_ev = np.full(1, -1, dtype=np.int64)
    for t, e in enumerate(edges):
        clock.check("best_match")
        if not fr_key.size:
            break
        lo, hi = e.offsets[fr_key], e.offsets[fr_key + 1]
        per = hi - lo
        row = np.repeat(np.arange(fr_key.size, dtype=np.int64), per)
        pos = np.arange(row.size, dtype=np.int64) + np.repeat(lo - (np.cumsum(per) - per), per)
        dst = e.dst[pos]
        inner = dst >= 0
        use = np.where(inner, reach[t + 1][np.maximum(dst, 0)] if reach[t + 1].size else False, ok[t][pos])
        row, pos, dst, inner = row[use], pos[use], dst[use], inner[use]
        mask = e.mask[pos]
        ev = fr_ev[row]
        flip = np.flatnonzero(mask != 0)
        if flip.size:
            ev_t.append(np.full(flip.size, t, dtype=np.int64))
            ev_mask.append(mask[flip])
            ev_parent.append(ev[flip])
            ev = ev.copy()
            ev[flip] = made + np.arange(flip.size, dtype=np.int64)
            made += flip.size
        members.append(ev[~inner])
        fr_key, fr_ev = dst[inner], ev[inner]
    empty = np.zeros(0, dtype=np.int64)
    all_t = np.concatenate(ev_t) if ev_t else empty
    all_mask = np.concatenate(ev_mask) if ev_mask else empty
    all_parent = np.concatenate(ev_parent) if ev_parent else empty
    ends = np.concatenate(members) if members else empty
    # Per event: how many child events it has (its hash state is kept until the last of them is made, which takes
    # it over without a copy) and how many members end at it; index 0 counts the member without flips.
    children = array.array("i", np.bincount(all_parent + 1, minlength=made + 1)[1:].astype(np.int32).tobytes())
    ending = np.bincount(ends + 1, minlength=made + 1)
    letters = fw.quo.letters
    bodies: dict[int, tuple[bytes, bytes]] = {}
    best: bytes | None = hashlib.sha256(b"[]").digest() if ending[0] else None
    best_ev = -1
    ending = ending[1:] > 0
    root = hashlib.sha256(b"[")
    states: list = [None] * made
    # Events in order (parents first), a slice of them as Python ints at a time (not all at once: memory).
    for lo in range(0, made, 1 << 16):
        clock.check("best_match")
        hi = min(made, lo + (1 << 16))
        cells = (all_t[lo:hi] * letters + all_mask[lo:hi]).tolist()
        for k, cell, par, closes in zip(range(lo, hi), cells, all_parent[lo:hi].tolist(), ending[lo:hi].tolist(),
                                        strict=True):
            body = bodies.get(cell)
            if body is None:
                got = text(*divmod(cell, letters))
                body = bodies[cell] = (got, b"," + got)
            if par < 0:
                state = root.copy()
                state.update(body[0])
            else:
                children[par] -= 1
                if children[par]:
                    state = states[par].copy()
                else:
                    state, states[par] = states[par], None
                state.update(body[1])
            if closes:
                if children[k]:
                    closed = state.copy()
                    closed.update(b"]")
                    digest = closed.digest()
                else:
                    state.update(b"]")
                    digest = state.digest()
                if best is None or digest < best:
                    best, best_ev = digest, k
            if children[k]:
                states[k] = state
    assert best is not None, "the best rank's tie class is empty"
    flips: list[Flip] = []
    n_in = problem.system.num_inputs
    k = best_ev
    while k >= 0:
        flips[:0] = [(int(all_t[k]), i) for i in range(n_in) if (int(all_mask[k]) >> i) & 1]
        k = int(all_parent[k])
    return flips_to_atoms(problem, flips)
