"""The forward pass: one dynamic programme over t = 0 .. t* on the class quotient (:mod:`solvers.quotient`), whose
keys (q, S[, b][, extras]) are merged step by step; their counts are summed here or in a helper process
(:mod:`solvers.key_counts`), and the per-step edges are kept for the walks of :mod:`solvers.forward`.

What a key is and why the pass decides Valid for every flip set at once: :mod:`solvers.forward`'s docstring. A pass is
described by one :class:`PassSettings` value (what to count, keep and bound); a step's expansion by one
:class:`solvers.layers.StepPlan` (the step's tables, the budget's fields and the extras' increments).

This module holds the pass and its forward steps: pair by pair (:meth:`Forward._step_pairs`, any pass), or for a plain
count by class blocks (:meth:`Forward._step_blocks`, :meth:`Forward._step_narrow`), whose expansion is
:mod:`solvers.class_blocks`'; a plain count's later steps are counted backward by :mod:`solvers.backward_half`. The
layers both halves read and make are :mod:`solvers.layers`'.

>>> from solvers.limits import NO_LIMITS
>>> res = Forward(problem).run(PassSettings(3, "count", counting=True), NO_LIMITS.start())
>>> sum(res.counts)
36
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from encoders.problem import Problem
from solvers import backward_half, key_counts
from solvers.backward_half import BackwardHalf
from solvers.class_blocks import DIE, ClassBlocks
from solvers.key_counts import Counts, HelperCounts, HelperEnded
from solvers.layers import Layer, StepPlan, next_layer, take
from solvers.limits import Clock, Unknown
from solvers.quotient import Tables, has, meets, members, onehot, put, quotient

#: Candidate (key, mask) pairs expanded at once: bounds memory and the time between two clock checks; small enough
#: that a chunk's arrays stay in the processor's cache across the dozens of passes over them (1 << 20 took 20 % more
#: CPU on the cube family with 8 inputs).
CHUNK = 1 << 16
#: Fewest candidate pairs of a step for which the count pass expands by class blocks.
BLOCK_MIN = 1 << 15
#: The count pass expands by class blocks (see :meth:`Forward._step_blocks`); False: always pair by pair (tests).
BLOCKS = True
#: Live pairs a step of the class blocks holds at once while its counts are summed in this process: past them the
#: pairs so far are grouped and summed as one piece, and the pieces' groups merged at the end of the step, so a step
#: of any size needs memory for one piece (8 bytes a pair, twice while sorting) and the pieces' groups. 2^21 pairs
#: (16 MiB of codes): a step of the labels family's 8-input cells (1.5-1.9 M pairs) is one piece or two, and smaller
#: pieces sort faster (labels, 12 inputs, T = 20: CPU 15.3-15.7 s at 2^21 against 16.1-19.4 s at 2^23 and 18.2-19.2 s
#: at 2^25; at 8 inputs, T = 160, 2^21 and 2^23 alike, 2^19 5 % more; docs/performance.md).
PIECE = 1 << 21
#: A plain count without a budget sorts its class blocks' live codes as uint32 (:meth:`Forward._step_narrow`) where
#: the next class set and NARROW_SRC bits of source fit 32 bits; False: int64 codes always (tests).
NARROW = True
#: Bits of a narrow code's source (less its piece's first): a piece spans at most 2^NARROW_SRC keys.
NARROW_SRC = 16


# -- grouping -------------------------------------------------------------------------------------------------------


def factorize(cols: list[np.ndarray], widths: list[int],
               with_gid: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group equal rows of the integer columns ``cols`` (non-negative, ``widths`` bits each).

    Returns (first row index of each group in sorted order, group id per row (empty unless ``with_gid``), the
    permutation sorting the rows by group, the start of each group in that permutation). Groups are numbered in
    increasing order of the rows' values, compared column by column, so the numbering is deterministic.
    """
    n = cols[0].size
    idx_bits = max(1, int(n).bit_length())
    total = sum(widths)
    if total + idx_bits <= 63:
        packed = np.array(cols[0], dtype=np.int64)
        for col, w in zip(cols[1:], widths[1:], strict=True):
            np.left_shift(packed, w, out=packed)
            np.bitwise_or(packed, col.astype(np.int64, copy=False), out=packed)
        # One plain sort of (key, position) pairs: several times faster than argsort.
        np.left_shift(packed, idx_bits, out=packed)
        np.bitwise_or(packed, np.arange(n, dtype=np.int64), out=packed)
        packed.sort()
        perm = packed & ((1 << idx_bits) - 1)
        np.right_shift(packed, idx_bits, out=packed)
        keys = packed
    else:
        perm = np.lexsort(tuple(c.astype(np.uint64) for c in reversed(cols)))
        keys = None
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    if keys is not None:
        change = keys[1:] != keys[:-1]
    else:
        change = np.zeros(n - 1, dtype=bool)
        for c in cols:
            s = c[perm]
            change |= s[1:] != s[:-1]
    starts = np.flatnonzero(np.concatenate(([True], change)))
    if with_gid:
        gid_sorted = np.cumsum(np.concatenate(([0], change.astype(np.int64))))
        gid = np.empty(n, dtype=np.int64)
        gid[perm] = gid_sorted
    else:
        gid = np.zeros(0, dtype=np.int64)
    return perm[starts], gid, perm, starts


# -- the forward pass -----------------------------------------------------------------------------------------------


#: An extra key field: its per-step increments over the flip masks, and its largest value.
Extra = tuple[Callable[[int], np.ndarray], int]


@dataclass(frozen=True)
class Edges:
    """The transitions of one step, sorted by source key then by canonical mask order.

    ``dst[k] >= 0`` is a key of the next layer; ``dst[k] < 0`` accepts with outcome ``-1 - dst[k]``.
    """

    src: np.ndarray
    mask: np.ndarray
    dst: np.ndarray
    offsets: np.ndarray  # CSR: edges of key k are offsets[k] .. offsets[k + 1]
    cost: np.ndarray | None = None  # (edges,) the first cost of the path so far (passes with ``tight`` edges only)


@dataclass
class Pass:
    """What one forward pass found: accepting outcomes (b, extras...) with their counts, the least costs of a path
    into each (one row per outcome, one column per cost), and optionally the edges."""

    outcomes: list[tuple[int, ...]]
    counts: list[int] | None
    edges: list[Edges] | None
    keys: list[int]
    costs: np.ndarray


@dataclass(frozen=True)
class PassSettings:
    """What one forward pass computes, keeps and bounds (:meth:`Forward.run`).

    ``budget``: B_T (None: none). Outcomes are (|TS|, extras...); |TS| is tracked under a budget or with
    ``track_steps`` (else it reads 0). ``counting``: exact counts per outcome; ``edges``: the transition graph.
    ``extras``: extra key fields (:data:`Extra`). ``costs``: per-step increments over the flip masks of additive path
    costs (non-negative int64); each key and each outcome keeps only the least value of each cost over the paths
    into it (a shortest path per column, exact because the costs add along a path), so costs never multiply the
    keys as extras do. ``tight`` (with ``edges`` and ``costs``): keep only the inner edges on which the first cost is
    least for the next key (the edges of shortest paths: a path is least for its outcome iff all its inner edges are
    such and its accepting edge costs the outcome's least), and every accepting edge with its cost.
    ``viable(t, extras, costs)``: which live candidates after step ``t`` (rows of their extra fields and costs) can
    still end where the caller looks (a bound on what the rest of the path can add); the others end.
    ``prune(layer)``: which keys of each next layer stay (a dominance between keys that the caller proves exact:
    no completion of a dropped key is one the caller looks for); the layer comes sorted by (q, b, S, extras...), so
    the keys of one (q, S, b) are neighbours; the edges into a dropped key go with it; passes without counts only.
    ``query`` names the query in clock checks and in an Unknown.
    """

    budget: int | None
    query: str
    counting: bool = False
    edges: bool = False
    extras: tuple[Extra, ...] = ()
    track_steps: bool = False
    costs: tuple[Callable[[int], np.ndarray], ...] = ()
    tight: bool = False
    viable: Callable[[int, np.ndarray, np.ndarray], np.ndarray] | None = None
    prune: Callable[[Layer], np.ndarray] | None = None

    def __post_init__(self) -> None:
        assert self.prune is None or not self.counting, "pruned keys would lose their counts"

    @property
    def plain(self) -> bool:
        """A plain count (no edges, extras, costs or bound): it may expand by class blocks."""
        return self.counting and not self.edges and not self.extras and not self.costs and self.viable is None


class Tally:
    """What a pass has found so far: the outcomes (numbered as found), their least costs, and the exact counts of the
    layer's keys, row for row, with the outcomes' counts; once a step is large the counts are added by a helper
    process while the next step is expanded (:mod:`solvers.key_counts`). :meth:`close` always."""

    def __init__(self, counting: bool, keys: int, outcome_widths: list[int], clock: Clock) -> None:
        self.ids: dict[tuple[int, ...], int] = {}
        self.least: dict[int, np.ndarray] = {}
        self.counts: Counts | HelperCounts | None = \
            Counts(np.ones((keys, 1), dtype=np.uint64)) if counting else None
        self._widths = outcome_widths
        self._clock = clock

    def hand_over(self, pairs: int) -> None:
        """From a step of ``pairs`` pairs on, the counts are added by a helper process (if one can start)."""
        if (isinstance(self.counts, Counts) and key_counts.HELPER_MIN is not None
                and pairs >= key_counts.HELPER_MIN):
            try:
                self.counts = HelperCounts(self.counts)
            except OSError:  # no interpreter to start (an embedded one): the sums stay here
                return
            self._clock.helpers.append(self.counts.pid)

    def accept(self, ocols: list[np.ndarray], src: np.ndarray,
               with_gid: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Group a step's accepting pairs (outcome columns ``ocols``, source keys ``src``) by outcome and add their
        counts to the outcomes'; the groups' outcome ids, and the grouping as :func:`factorize` gives it."""
        first, gid, perm, starts = factorize(ocols, self._widths, with_gid=with_gid)
        ids = np.array([self.ids.setdefault(tuple(int(c[row]) for c in ocols), len(self.ids)) for row in first],
                       dtype=np.int64)
        if self.counts is not None:
            self.counts.accept(ids, src[perm], starts)
        return ids, gid, perm, starts

    def lower(self, ids: np.ndarray, least: np.ndarray) -> None:
        """Outcome ``ids[g]``'s least costs are at most ``least[g]``."""
        for g in range(ids.size):
            o = int(ids[g])
            got = self.least.get(o)
            self.least[o] = least[g] if got is None else np.minimum(got, least[g])

    def advance(self, src: np.ndarray, starts: np.ndarray) -> None:
        """The next layer's counts: key g sums the keys ``src[starts[g]:starts[g + 1]]``."""
        if self.counts is not None:
            self.counts.advance(src, starts)

    def piece_sums(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
        """Group sums of the layer's counts, the counts left as they are, when they are summed in this process
        (a step expanded in pieces, :data:`PIECE`); None when a helper holds them."""
        return self.counts.sums if isinstance(self.counts, Counts) else None

    def replace(self, columns: np.ndarray) -> None:
        """The next layer's counts, summed piece by piece (:meth:`piece_sums`)."""
        assert isinstance(self.counts, Counts)
        self.counts.replace(columns)

    def wide(self, limbs: int) -> bool:
        """Whether the layer's counts are in this process and at least ``limbs`` limbs wide."""
        return isinstance(self.counts, Counts) and (self.counts.columns.dtype == object
                                                   or self.counts.columns.shape[0] >= limbs)

    def complete(self, completions: np.ndarray) -> None:
        """The rest of a plain count from the layer on: key k has ``completions[k]`` accepting completions
        (:meth:`solvers.backward_half.BackwardHalf.count`), so the one outcome (|TS| untracked) gains the sum of
        count times completions; the count is done."""
        assert isinstance(self.counts, Counts)
        total = key_counts.dot(self.counts.columns, completions)
        if total:
            o = self.ids.setdefault((0,), len(self.ids))
            self.counts.outcomes[o] = self.counts.outcomes.get(o, 0) + total

    def result(self) -> dict[int, int]:
        """The outcomes' counts (outcome id -> count), empty when not counting."""
        return self.counts.result() if self.counts is not None else {}

    def close(self) -> None:
        """Stop the helper process, if one was started."""
        if isinstance(self.counts, HelperCounts):
            self.counts.close()
            self._clock.helpers.remove(self.counts.pid)


class Forward:
    """The forward programme over one problem (module docstring)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.quo = quotient(problem)
        self.tables = Tables(self.quo, problem)
        #: Row buffers of the expanded pairs, reused from step to step (fresh arrays each step cost page faults).
        self._buffers: dict[str, np.ndarray] = {}
        #: The live codes of a class-block step (see :meth:`_step_blocks`), reused likewise.
        self._piece = np.empty(0, dtype=np.int64)
        #: The class-block expansion of a plain step, shared by the forward steps and the backward half.
        self.blocks = ClassBlocks(problem, self.quo, self.tables)
        #: The steps of a plain count from the switch on, counted backward (it keeps its tables step to step).
        self.backward = BackwardHalf(self.quo, self.tables, self.blocks)
        n = problem.system.num_inputs
        names = problem.system.inputs
        rank = {i: r for r, i in enumerate(sorted(range(n), key=lambda i: names[i]))}
        masks = np.arange(self.quo.letters, dtype=np.int64)
        ov = np.zeros_like(masks)
        for i in range(n):
            ov |= ((masks >> i) & 1) << (n - 1 - rank[i])
        #: Canonical position of each mask among a step's masks: atoms by input name, more atoms first (see
        #: :func:`solvers.forward.enumerate_certificates`); sorting masks by it gives the depth-first order "1
        #: before 0".
        self.mask_order = np.argsort(np.argsort(-ov, kind="stable"), kind="stable")
        self.popcount = self.tables.popcount

    def run(self, settings: PassSettings, clock: Clock) -> Pass:
        """One forward pass as ``settings`` says: counts per outcome and/or the transition graph."""
        quo, words = self.quo, self.quo.words
        steps = quo.steps
        budget = settings.budget
        if budget is not None and budget >= steps and settings.counting and not settings.edges:
            budget = None  # a budget of every step binds nothing (B_T = T is the import default)
        track_b = budget is not None or settings.track_steps
        b_cap = (steps if budget is None else min(budget, steps)) if track_b else 0
        extras, costs = settings.extras, settings.costs
        layer = Layer(
            np.array([quo.initial], dtype=np.int64),
            np.zeros((1, words), dtype=np.uint64),
            np.zeros(1, dtype=np.int64),
            np.zeros((1, len(extras)), dtype=np.int64),
            np.zeros((1, len(costs)), dtype=np.int64),
        )
        if bool(quo.hopeless[0][quo.initial]):
            layer = take(layer, np.zeros(0, dtype=np.int64))
        plain = BLOCKS and settings.plain
        # From this step on the count may go backward (plain, no budget: one outcome, |TS| untracked).
        meet = max(backward_half.MEET * steps, self.backward.meet_from()) if plain and not track_b else steps
        step_edges: list[Edges] = []
        keys_seen: list[int] = []
        tally = Tally(settings.counting, layer.size,
                      [max(1, b_cap.bit_length()), *(max(1, int(top).bit_length()) for _, top in extras)], clock)
        try:
            for t in range(steps):
                clock.check(settings.query, layer.size if clock.limits.nodes is not None else None)
                keys_seen.append(layer.size)
                if t >= meet and tally.wide(backward_half.MEET_LIMBS):
                    sizes, completions = self.backward.count(t, layer, clock, settings.query)
                    keys_seen += sizes
                    tally.complete(completions)
                    break
                plan = StepPlan(t, self.tables.step(t), b_cap, budget is not None, track_b)
                blocks = self._step_blocks(plan, layer, clock, settings.query, tally.piece_sums()) if plain else None
                if blocks is not None:
                    nxt, acc_b, acc_src, src, starts, summed = blocks
                    if summed is None:
                        tally.hand_over(acc_src.size + src.size)
                    if acc_src.size:
                        tally.accept([acc_b], acc_src, False)
                    if summed is None:
                        tally.advance(src, starts)
                    else:
                        tally.replace(summed)
                    layer = nxt
                    continue
                plan = dataclasses.replace(plan, incs=tuple(inc(t) for inc, _ in extras),
                                           cost_incs=tuple(inc(t) for inc in costs))
                layer, edges = self._step_pairs(plan, layer, settings, tally, clock)
                if edges is not None:
                    step_edges.append(edges)
            outcome_counts = tally.result()
        except HelperEnded as ex:
            raise Unknown(settings.query, str(ex), {**clock.spent, "seconds": round(clock.elapsed(), 3)}) from None
        finally:
            tally.close()
        outcomes = sorted(tally.ids, key=tally.ids.__getitem__)
        totals = [outcome_counts.get(i, 0) for i in range(len(outcomes))] if settings.counting else None
        least_costs = np.array([tally.least[i] for i in range(len(outcomes))], dtype=np.int64).reshape(
            len(outcomes), len(costs)) if costs else np.zeros((len(outcomes), 0), dtype=np.int64)
        return Pass(outcomes, totals, step_edges if settings.edges else None, keys_seen, least_costs)

    def _step_pairs(self, plan: StepPlan, layer: Layer, settings: PassSettings, tally: Tally,
                    clock: Clock) -> tuple[Layer, Edges | None]:
        """One step pair by pair: the next layer, and the step's edges when the pass keeps them."""
        words, t, query = self.quo.words, plan.t, settings.query
        extras, edges = settings.extras, settings.edges
        empty = np.zeros(0, dtype=np.int64)
        # Chunks of keys with at most CHUNK candidate pairs, fewer when class sets are wider than 8 words (their rows
        # are the chunk's memory); one key's masks always fit.
        chunk = CHUNK * 8 // max(8, words)
        per = np.cumsum(plan.tab.viable_ptr[layer.q + 1] - plan.tab.viable_ptr[layer.q])
        pairs = int(per[-1]) if per.size else 0
        plan = dataclasses.replace(plan, tab=self.tables.with_images(t, plan.tab, pairs))
        if (settings.plain and isinstance(tally.counts, Counts) and pairs > PIECE
                and (key_counts.HELPER_MIN is None or pairs < key_counts.HELPER_MIN)):
            return self._pairs_in_pieces(plan, layer, tally, clock, query, per, chunk), None
        buf = self._rows(pairs, words, len(extras), len(settings.costs), edges)
        kept = 0
        for lo, hi in _key_chunks(per, chunk):
            clock.check(query)
            kept = self._expand(plan, layer, lo, hi, buf, kept)
        # Views of the buffers: whatever outlives the step below is copied out of them.
        cand = {name: a[:kept] for name, a in buf.items()}
        tally.hand_over(kept)
        if extras:
            # An extra past its top ends the candidate: a caller's bound (see best_match), never reached otherwise.
            over = (cand["extra"] > np.array([top for _, top in extras], dtype=np.int64)).any(axis=1)
            if over.any():
                cand["accept"] = cand["accept"] & ~over
                cand["live"] = cand["live"] & ~over
        if settings.viable is not None and cand["live"].any():
            cand["live"] = cand["live"] & settings.viable(t, cand["extra"], cand["cost"])
        # Accepting transitions: outcome (b, extras...).
        acc = cand["accept"]
        acc_idx = np.flatnonzero(acc)
        out_code = np.full(acc.size if edges else 0, -1, dtype=np.int64)
        if acc_idx.size:
            ocols = [cand["b"][acc_idx]] + [cand["extra"][acc_idx, e] for e in range(len(extras))]
            ids, gid, perm, starts = tally.accept(ocols, cand["src"][acc_idx], edges)
            if edges:
                out_code[acc_idx] = ids[gid]
            if settings.costs:
                tally.lower(ids, np.minimum.reduceat(cand["cost"][acc_idx][perm], starts, axis=0))
        # Live transitions: the next layer.
        live = np.flatnonzero(cand["live"])
        clock.check(query)
        if live.size:
            # Often every candidate lives (counting without a budget): then no copies of the live rows.
            every = live.size == acc.size
            cols, widths = self._key_columns(plan, *(cand[k] if every else cand[k][live] for k in ("q", "s", "b")))
            # The extras before the class set, or last when keys are pruned: then the keys of one (q, S, b) come
            # together, in increasing order of the extras.
            at = len(cols) if settings.prune is not None else len(cols) - words
            cols[at:at] = [cand["extra"][live, e] for e in range(len(extras))]
            widths[at:at] = [max(1, int(top).bit_length()) for _, top in extras]
            first, gid, perm, starts = factorize(cols, widths, with_gid=edges)
            rows = live[first]
            nxt = Layer(cand["q"][rows], cand["s"][rows], cand["b"][rows], cand["extra"][rows],
                        np.minimum.reduceat(cand["cost"][live][perm], starts, axis=0) if settings.costs
                        else np.zeros((rows.size, 0), dtype=np.int64))
            tally.advance((cand["src"] if every else cand["src"][live])[perm], starts)
            del cols, perm
        else:
            gid = empty
            nxt = take(layer, empty)
            tally.advance(empty, empty)
        keep = acc | cand["live"] if edges else None
        if edges and settings.tight and live.size:
            keep[live] = cand["cost"][live, 0] == nxt.cost[gid, 0]
        if settings.prune is not None and nxt.size:
            stay = settings.prune(nxt)
            if edges and live.size:
                keep[live] &= stay[gid]
                gid = (np.cumsum(stay) - 1)[gid]
            nxt = take(nxt, np.flatnonzero(stay))
        if not edges:
            return nxt, None
        dst = np.full(acc.size, 0, dtype=np.int64)
        dst[acc_idx] = -1 - out_code[acc_idx]
        dst[live] = gid
        src, mask, dst = cand["src"][keep], cand["mask"][keep], dst[keep]
        order = np.lexsort((self.mask_order[mask], src))
        src, mask, dst = src[order], mask[order], dst[order]
        offsets = np.searchsorted(src, np.arange(layer.size + 1))
        cost = cand["cost"][keep, 0][order] if settings.tight else None
        return nxt, Edges(src, mask, dst, offsets, cost)

    def _pairs_in_pieces(self, plan: StepPlan, layer: Layer, tally: Tally, clock: Clock, query: str,
                         per: np.ndarray, chunk: int) -> Layer:
        """A plain count's step pair by pair in pieces (its counts in this process): every :data:`PIECE` expanded
        pairs or so are grouped by next key and their counts summed (:meth:`_pair_piece`), and at the end of the
        step the pieces' next keys are grouped again and their sums added, as the class blocks do; the next layer,
        its counts handed to ``tally``. The memory is one piece's rows and the pieces' groups, not the step's
        pairs."""
        sums = tally.piece_sums()
        assert sums is not None
        # A piece's rows: PIECE pairs and one more chunk of keys, or one key's masks (a chunk holds at least one key).
        most = int(np.diff(per, prepend=0).max())
        buf = self._rows(min(int(per[-1]), PIECE + max(chunk, most)), self.quo.words, 0, 0, False)
        parts: list[tuple[Layer, np.ndarray]] = []
        kept = 0
        for lo, hi in _key_chunks(per, chunk):
            clock.check(query)
            kept = self._expand(plan, layer, lo, hi, buf, kept)
            if kept >= PIECE or hi >= layer.size:
                parts.append(self._pair_piece(plan, {name: a[:kept] for name, a in buf.items()}, tally, sums))
                kept = 0
        if len(parts) == 1:
            tally.replace(parts[0][1])
            return parts[0][0]
        keys = Layer(*(np.concatenate([getattr(part, f) for part, _ in parts])
                       for f in ("q", "s", "b", "extra", "cost")))
        first, _, perm, starts = factorize(*self._key_columns(plan, keys.q, keys.s, keys.b), with_gid=False)
        tally.replace(key_counts.sum_columns(key_counts.side_by_side([c for _, c in parts]), perm, starts))
        return take(keys, first)

    def _pair_piece(self, plan: StepPlan, cand: dict[str, np.ndarray], tally: Tally,
                    sums: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[Layer, np.ndarray]:
        """One piece of expanded pairs (rows as :meth:`_expand` writes them): its accepting pairs' counts added to
        their outcomes, and its next keys (sorted as :func:`factorize` sorts them) with their summed counts."""
        acc = np.flatnonzero(cand["accept"])
        if acc.size:
            tally.accept([cand["b"][acc]], cand["src"][acc], False)
        live = np.flatnonzero(cand["live"])
        first, _, perm, starts = factorize(*self._key_columns(plan, cand["q"][live], cand["s"][live], cand["b"][live]),
                                           with_gid=False)
        rows = live[first]
        nxt = Layer(cand["q"][rows], cand["s"][rows], cand["b"][rows], np.zeros((rows.size, 0), dtype=np.int64),
                    np.zeros((rows.size, 0), dtype=np.int64))
        return nxt, sums(cand["src"][live][perm], starts)

    def _key_columns(self, plan: StepPlan, q: np.ndarray, s: np.ndarray,
                     b: np.ndarray) -> tuple[list[np.ndarray], list[int]]:
        """The columns and widths by which a step groups its next keys: class, |TS| when tracked, class set (a pass
        with extras inserts theirs, :meth:`_step_pairs`)."""
        size_next = int(self.quo.sizes[plan.t + 1])
        cols, widths = [q], [max(1, (size_next - 1).bit_length())]
        if plan.track_b:
            cols.append(b)
            widths.append(max(1, plan.b_cap.bit_length()))
        cols += [s[:, w] for w in range(self.quo.words)]
        widths += [max(0, min(64, size_next - 64 * w)) for w in range(self.quo.words)]
        return cols, widths

    def _expand(self, plan: StepPlan, layer: Layer, lo: int, hi: int, out: dict[str, np.ndarray], at: int) -> int:
        """The surviving (key, mask) pairs of keys ``lo .. hi - 1``, their fate and their next key, written to the
        rows ``at ..`` of ``out`` (see :meth:`_rows`); the end of the rows written."""
        t, tab, b_cap, capped, track_b = plan.t, plan.tab, plan.b_cap, plan.capped, plan.track_b
        incs, cost_incs = plan.incs, plan.cost_incs
        words, letters = self.quo.words, self.quo.letters
        q = layer.q[lo:hi]
        first = tab.viable_ptr[q]
        per = tab.viable_ptr[q + 1] - first
        src = np.repeat(np.arange(lo, hi, dtype=np.int64), per)
        # Each pair's place among the step's viable (class, mask) pairs: its key's first one plus its rank there.
        cm = tab.viable_mask[np.arange(src.size, dtype=np.int64) + np.repeat(first - (np.cumsum(per) - per), per)]
        mask = cm & (letters - 1)
        if track_b:
            b2 = layer.b[src] + (mask != 0)
            if capped:
                ok = np.flatnonzero(b2 <= b_cap)
                src, cm, mask, b2 = src[ok], cm[ok], mask[ok], b2[ok]
        else:
            b2 = np.zeros(src.size, dtype=np.int64)
        x = self.problem.trace[t] ^ mask
        s = np.take(layer.s, src, axis=0)
        s2 = tab.new_sets(cm)
        dead = np.zeros(src.size, dtype=bool)
        if tab.img is not None and tab.img_die is not None:
            # Flat indices into the (letters, chunks, 256) tables: one gather per byte of the class set.
            chunks = tab.img.shape[1]
            img, die = tab.img.reshape(-1, words), tab.img_die.reshape(-1)
            row = x * (chunks * 256)
            for j in range(chunks):
                byte = (s[:, j >> 3] >> np.uint64(8 * (j & 7))) & np.uint64(255)
                pos = row + byte.astype(np.int64)
                s2 |= np.take(img, pos, axis=0)
                dead |= np.take(die, pos)
                row += 256
        elif words > 1:
            # Wide class sets: images of the members the sets hold, not a pass over every class of the step.
            pair, cls = members(s)
            put(s2, pair, tab.nxt[cls, x[pair]])
            dead[pair[tab.hit[cls, x[pair]]]] = True
        else:
            for r in range(tab.nxt.shape[0]):
                mem = np.flatnonzero((s[:, r >> 6] >> np.uint64(r & 63)) & np.uint64(1))
                if mem.size:
                    s2[mem] |= onehot(tab.nxt[r, x[mem]], words)
                    dead[mem] |= tab.hit[r, x[mem]]
        s2 &= ~tab.drop
        dead |= meets(s2, tab.kill)
        hit = np.take(tab.q_hit, cm)
        q2 = np.take(tab.q_next, cm)
        # Still short of the effect: a removal run must not share the edited run's class.
        dead |= ~hit & has(s2, q2)
        safe = ~meets(s2, tab.unsafe)
        accept = hit & ~dead & safe
        live = ~hit & ~dead
        if capped:
            # Budget spent: no flip can follow, the rest is the base trace, so the path is decided now (valid iff
            # the edited run's base continuation shows the effect and no removal run's does).
            spent = live & (b2 == b_cap)
            accept |= spent & tab.base_hit[q2] & safe
            live &= ~spent
        keep = np.flatnonzero(accept | live)
        end = at + keep.size
        np.take(q2, keep, out=out["q"][at:end])
        np.take(s2, keep, axis=0, out=out["s"][at:end])
        np.take(b2, keep, out=out["b"][at:end])
        np.take(accept, keep, out=out["accept"][at:end])
        np.take(live, keep, out=out["live"][at:end])
        src = np.take(src, keep, out=out["src"][at:end])
        mask = mask[keep]
        if "mask" in out:
            out["mask"][at:end] = mask
        if incs:
            ex = np.take(layer.extra, src, axis=0, out=out["extra"][at:end])
            for e, inc in enumerate(incs):
                ex[:, e] += inc[mask]
        if cost_incs:
            cost = np.take(layer.cost, src, axis=0, out=out["cost"][at:end])
            for m, inc in enumerate(cost_incs):
                cost[:, m] += inc[mask]
        return end

    def _step_blocks(
        self, plan: StepPlan, layer: Layer, clock: Clock, query: str,
        sums: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    ) -> tuple[Layer, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None] | None:
        """One step of a plain count by class blocks: the next layer, the (timesteps, source key) of each accepting
        pair, and the live pairs' source keys grouped by next key (sources, group starts: the next layer's counts
        are the groups' sums); None when the step does not allow it (class sets wider than 63 bits, image tables
        that would not pay for themselves, or a key code wider than 63 bits), and the pair-by-pair expansion takes
        the step. The image tables cover every letter, or past :data:`quotient.MAX_IMAGE_TABLE` (16 inputs) the
        letters the step's viable masks reach (:meth:`quotient.Tables.combined`).

        With ``sums`` (the layer's group sums, :meth:`Tally.piece_sums`) a step of more than :data:`PIECE` live
        pairs is grouped and summed piece by piece, and the pieces' groups are merged: then the last field is the
        next layer's counts (and the sources and starts are empty), else None. The counts are the same integers
        (sums commute), the memory one piece's.

        Why class blocks pay: :mod:`solvers.class_blocks`. Next keys are packed as (class, timesteps, class set,
        source) in one int64 and grouped by one sort, in the order :func:`factorize` gives, so either expansion may
        take any step.
        """
        t, tab, b_cap, track_b = plan.t, plan.tab, plan.b_cap, plan.track_b
        ptr = tab.viable_ptr
        pairs = int((ptr[layer.q + 1] - ptr[layer.q]).sum())
        if pairs < BLOCK_MIN:
            return None  # few pairs: a block per class costs more than it saves
        size_next = self.quo.sizes[t + 1]
        b_bits = max(1, b_cap.bit_length()) if track_b else 0
        idx_bits = max(1, layer.size.bit_length())
        q_bits = max(1, int(size_next - 1).bit_length())
        if q_bits + b_bits + size_next + idx_bits > 63 or tab.new_runs is None:
            return None
        got = self.blocks.images(plan, layer, pairs)
        if got is None:
            return None  # images would not pay (or class sets wider than 63 bits): the pair-by-pair expansion
        if NARROW and sums is not None and not track_b and size_next + NARROW_SRC <= 32:
            return self._step_narrow(plan, layer, got, clock, query, sums)
        width = self.blocks.width(plan)
        held = 0  # live codes in ``self._piece[:held]``
        if self._piece.size < PIECE + width:
            self._piece = np.empty(PIECE + width, dtype=np.int64)
        pieces: list[tuple[np.ndarray, np.ndarray]] = []  # (next keys, their counts) of each piece summed so far
        acc_b: list[np.ndarray] = []
        acc_src: list[np.ndarray] = []
        for lo, hi, s2, live, accept, b2 in self.blocks.blocks(plan, layer, *got, idx_bits, clock, query):
            assert live is not None
            src = np.arange(lo, hi, dtype=np.int64)
            if accept is not None and accept.any():
                acc_src.append(np.broadcast_to(src, accept.shape)[accept])
                acc_b.append(b2[accept] if b2 is not None else np.zeros(int(accept.sum()), dtype=np.int64))
            # Live pairs have bit 63 clear: their codes read as non-negative int64.
            code = s2.view(np.int64)
            if b2 is not None:
                code |= b2 << (size_next + idx_bits)
            code |= src
            live = live.ravel()
            n_live = int(np.count_nonzero(live))
            if held + n_live > self._piece.size:  # a whole step in one piece (sums not in this process)
                self._piece = np.concatenate((self._piece[:held], np.empty(held + n_live + width, dtype=np.int64)))
            np.compress(live, code.ravel(), out=self._piece[held:held + n_live])
            held += n_live
            if sums is not None and held >= PIECE:
                kept, src, starts = _group(self._piece[:held], idx_bits)
                pieces.append((kept, sums(src, starts)))
                held = 0
        empty = np.zeros(0, dtype=np.int64)
        accepted = (np.concatenate(acc_b), np.concatenate(acc_src)) if acc_src else (empty, empty)
        if pieces:
            assert sums is not None
            if held:
                kept, src, starts = _group(self._piece[:held], idx_bits)
                pieces.append((kept, sums(src, starts)))
            keys, counts = _merge_pieces(pieces)
            return next_layer(keys, b_bits, size_next, track_b), *accepted, empty, empty, counts
        if not held:
            return take(layer, empty), *accepted, empty, empty, None
        kept, src, starts = _group(self._piece[:held], idx_bits)
        return next_layer(kept, b_bits, size_next, track_b), *accepted, src, starts, None

    def _step_narrow(self, plan: StepPlan, layer: Layer, got: tuple[np.ndarray, np.ndarray | None], clock: Clock,
                     query: str, sums: Callable[[np.ndarray, np.ndarray], np.ndarray],
                     ) -> tuple[Layer, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """:meth:`_step_blocks` with 32-bit codes (no budget, counts in this process, class sets of at most
        32 - :data:`NARROW_SRC` classes): a live pair's code is its next class set above its source less the
        piece's first source, in one buffer per next class (a block's rows of one next class are neighbours,
        :meth:`ClassBlocks.blocks`); a piece (:data:`PIECE` live codes, or sources spanning 2^NARROW_SRC keys)
        sorts each buffer as uint32 (half the int64 sort) and sums its groups; the pieces' groups are merged as
        there."""
        t = plan.t
        size_next = int(self.quo.sizes[t + 1])
        low = np.uint64((1 << (size_next + NARROW_SRC)) - 1)
        span = 1 << NARROW_SRC
        field = np.uint64(NARROW_SRC + size_next)
        buckets: dict[int, list[np.ndarray]] = {}
        pieces: list[tuple[np.ndarray, np.ndarray]] = []
        acc_src: list[np.ndarray] = []
        first = held = 0

        def flush() -> None:
            # Each next class's codes sorted alone; the classes in increasing order, so the piece's next keys (class
            # above class set) come out increasing, and one sum over the piece's sources.
            keys, srcs, starts = [], [], []
            at = 0
            for q in sorted(buckets):
                codes = np.concatenate(buckets[q])
                codes.sort()
                sets = codes >> np.uint32(NARROW_SRC)
                begin = np.concatenate(([0], np.flatnonzero(sets[1:] != sets[:-1]) + 1))
                keys.append(sets[begin].astype(np.int64) | (q << size_next))
                srcs.append(codes & np.uint32(span - 1))
                starts.append(begin + at)
                at += codes.size
            buckets.clear()
            src = np.concatenate(srcs).astype(np.int64)
            src += first
            pieces.append((np.concatenate(keys), sums(src, np.concatenate(starts))))

        for lo, hi, s2, live, accept, _ in self.blocks.blocks(plan, layer, *got, NARROW_SRC, clock, query):
            assert live is not None
            if accept is not None and accept.any():
                acc_src.append(np.broadcast_to(np.arange(lo, hi, dtype=np.int64), accept.shape)[accept])
            # Every row of a block has one next class (the code's field above the class set).
            row_q = ((s2[:, 0] & ~DIE) >> field).astype(np.int64)
            cut = np.concatenate(([0], np.flatnonzero(row_q[1:] != row_q[:-1]) + 1, [row_q.size]))
            # The block's keys in parts of at most 2^NARROW_SRC (a block of few masks holds more keys).
            for a in range(lo, hi, span):
                b = min(a + span, hi)
                if held and (held >= PIECE or b - first > span):
                    flush()
                    held = 0
                if not held:
                    first = a
                code = s2[:, a - lo:b - lo] & low
                code |= np.arange(a - first, b - first, dtype=np.uint64)
                alive = live[:, a - lo:b - lo]
                for r0, r1 in itertools.pairwise(cut):
                    kept = np.compress(alive[r0:r1].ravel(), code[r0:r1].ravel()).astype(np.uint32)
                    if kept.size:
                        buckets.setdefault(int(row_q[r0]), []).append(kept)
                        held += kept.size
        if held:
            flush()
        empty = np.zeros(0, dtype=np.int64)
        accepted = (np.zeros(sum(a.size for a in acc_src), dtype=np.int64),
                    np.concatenate(acc_src)) if acc_src else (empty, empty)
        if not pieces:
            return take(layer, empty), *accepted, empty, empty, None
        keys, counts = _merge_pieces(pieces)
        return next_layer(keys, 0, size_next, False), *accepted, empty, empty, counts

    def _rows(self, rows: int, words: int, n_extra: int, n_cost: int, with_mask: bool) -> dict[str, np.ndarray]:
        """Buffers for at least ``rows`` expanded pairs (fields as :meth:`_expand` writes them; ``mask`` when
        ``with_mask``: the edges need it), reused while their shapes fit."""
        shapes = {"q": ((), np.int64), "s": ((words,), np.uint64), "b": ((), np.int64), "accept": ((), np.bool_),
                  "live": ((), np.bool_), "src": ((), np.int64), "extra": ((n_extra,), np.int64),
                  "cost": ((n_cost,), np.int64)}
        if with_mask:
            shapes["mask"] = ((), np.int64)
        buf = self._buffers
        if (set(buf) != set(shapes) or any(buf[k].shape[1:] != shape for k, (shape, _) in shapes.items())
                or next(iter(buf.values())).shape[0] < rows):
            buf.clear()  # the old buffers go before the new ones are made
            size = rows + rows // 4
            buf.update({k: np.empty((size, *shape), dtype=dtype) for k, (shape, dtype) in shapes.items()})
        return buf


def _key_chunks(per: np.ndarray, chunk: int) -> Iterator[tuple[int, int]]:
    """The layer's keys in chunks ``lo .. hi - 1`` of at most ``chunk`` candidate pairs each (a chunk holds at least
    one key, however many masks it has), ``per`` the running total of the keys' pairs.

    >>> list(_key_chunks(np.cumsum([2, 2, 5, 1]), 4))
    [(0, 2), (2, 3), (3, 4)]
    """
    lo = 0
    while lo < per.size:
        base = per[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(per, base + chunk, side="right")))
        yield lo, hi
        lo = hi


def _merge_pieces(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """A step summed piece by piece (each piece: its distinct next keys, increasing, and their count columns): the
    step's distinct next keys, increasing, and their counts, equal keys of different pieces adding their sums.

    >>> keys, counts = _merge_pieces([(np.array([1, 4]), np.array([[2, 3]], dtype=np.uint64)),
    ...                               (np.array([4, 7]), np.array([[5, 1]], dtype=np.uint64))])
    >>> keys.tolist(), counts.tolist()
    ([1, 4, 7], [[2, 8, 1]])
    """
    if len(pieces) == 1:
        return pieces[0]
    keys = np.concatenate([k for k, _ in pieces])
    order = np.argsort(keys)
    keys = keys[order]
    starts = np.concatenate(([0], np.flatnonzero(keys[1:] != keys[:-1]) + 1))
    return keys[starts], key_counts.sum_columns(key_counts.side_by_side([n for _, n in pieces]), order, starts)


def _group(packed: np.ndarray, idx_bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Live pairs' codes (next key above ``idx_bits`` bits of source key) grouped by next key, in place: the next
    keys in increasing order, the source keys sorted by next key (``packed`` itself), and the start of each key's
    group among them."""
    packed.sort()
    keys = packed >> idx_bits
    # Group starts without a copy of the whole step's flags (only the few starts are concatenated).
    starts = np.concatenate(([0], np.flatnonzero(keys[1:] != keys[:-1]) + 1))
    kept = keys[starts]
    del keys
    return kept, np.bitwise_and(packed, (1 << idx_bits) - 1, out=packed), starts
