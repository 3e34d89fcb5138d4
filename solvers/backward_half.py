"""The backward half of a plain count: the steps from the switch on, counted from the last step down.

A plain count without a budget (one outcome, |TS| untracked) counts its first steps forward, summing each key's
paths in (:mod:`solvers.forward_pass`); from the switch step (:data:`MEET`, once the forward counts are
:data:`MEET_LIMBS` limbs wide) each later layer's keys are found forward without counts
(:meth:`BackwardHalf._discover`), then from the last step down each key's completions (its accepting paths to the
end) are summed from the next layer's (:meth:`BackwardHalf._complete`); the count is the sum over the switch layer
of count x completions (:meth:`solvers.forward_pass.Tally.complete`). Both expand a step by the class blocks
(:mod:`solvers.class_blocks`). Why and how exact: :meth:`BackwardHalf.count`.
"""

from __future__ import annotations

import numpy as np

from solvers import key_counts
from solvers.class_blocks import ClassBlocks, compact_codes
from solvers.layers import Layer, StepPlan, next_layer
from solvers.limits import Clock
from solvers.quotient import DENSE_RUNS, Quotient, Tables

#: A plain count without a budget counts the steps from ``MEET * steps`` on backward (:meth:`BackwardHalf.count`)
#: once its keys' counts are :data:`MEET_LIMBS` limbs wide: neither half's numbers reach the final width, and a
#: backward step has no sort. A quarter, measured on the labels family (one process, CPU of the steps, loaded):
#: 8 inputs T = 256 seed 3 best from 0.28 (31.1 s; 1/2 31.6 s, all forward 44.0 s, all backward 35.0 s); 16
#: inputs T = 32 seed 3 best from 0.1 (42.0 s; 1/4 44.8 s, 1/2 50.1 s, forward 66.2 s, backward 43.5 s); 12 inputs
#: T = 64 seed 2 (whole count) 88.2 s from step 11, 90.0 s from 1/4, 97.0 s from 1/2, 91.6 s all backward.
MEET = 0.25
#: Limbs of the layer's counts (:mod:`solvers.key_counts`) from which the backward half pays (narrower: no switch).
MEET_LIMBS = 2
#: Widest next-key code (class, class set) of a backward step: its index is a dense table of 2^MEET_BITS entries.
MEET_BITS = 24
#: Limbs of a backward step's next completions read by one gather (items of 8 x ROW_LIMBS bytes;
#: :meth:`BackwardHalf._complete`): one random read a pair fetches a key's limbs of a group. 12 inputs, a captured
#: step of 51 M pairs (CPU, loaded): 1-8 limbs 0.43-1.44 s against 0.59-1.62 s a limb at a time through the index; 2
#: and 4 alike within the noise (4 a little ahead at 6-8 limbs); items of 3 limbs are slower (numpy copies 24 bytes
#: by memmove).
ROW_LIMBS = 4
#: Largest tables of a backward step's next completions over every next code (bytes, all limbs): past it the tables
#: hold the next keys only and a dense index maps codes to them (an extra gather a pair, but tables a few times
#: smaller: the next keys are about a third of the codes at 12 inputs, a tenth at 8; the processor's last cache is
#: 32 MB). 2^20 codes: up to 4 limbs over every code; 2^19 compact codes (:data:`COMPACT`, 12 and 16 inputs): up to
#: 8 limbs, so no index gather at 12 inputs (until issue 33's eighth round the row to clip to counted against the
#: budget, and 3-4 limbs went through the index).
DENSE_AFTER = 32 << 20
#: A quiet backward step reads its next completions by compact codes (:func:`solvers.class_blocks.compact_codes`:
#: the class set without the edited run's class, whose bit ends the pair) when it reads them as rows: tables half as
#: large, dense up to 8 limbs at 12 inputs, and every pair that ends (a third) reads one row. 12 inputs T = 64 seed
#: 2, one process, loaded: completions 32.0-33.9 s against 35.3-43.5 s (docs/performance.md, eighth round); False:
#: by the full codes (tests).
COMPACT = True
#: Fewest viable masks a key (on average over a backward step's layer) for which :meth:`BackwardHalf._complete` reads
#: the next completions as rows: 12 and 16 inputs (about 165 and 200 a key) gain, 8 inputs (about 26 a key, up to 19
#: limbs) lose (labels family, T = 256, seed 3: 30.7-32.2 s against 27.0 s; docs/performance.md).
ROW_MASKS = 64

#: The discovery (:meth:`BackwardHalf._discover`, whose marks are order-free) expands its class blocks as (keys,
#: masks) (:meth:`solvers.class_blocks.ClassBlocks.blocks`' ``by_key``): a key's codes are copies of whole rows of
#: the image tables, not a gather a pair and byte. False: (masks, keys), as the other consumers (tests).
BY_KEY = True


class BackwardHalf:
    """The backward half over one problem's quotient (module docstring): where it may start (:meth:`meet_from`) and
    the completions of a layer's keys (:meth:`count`). It keeps its tables of next completions from step to step."""

    def __init__(self, quo: Quotient, tables: Tables, blocks: ClassBlocks) -> None:
        self.quo = quo
        self.tables = tables
        self.blocks = blocks
        #: The tables of next completions (:meth:`_after_table`), reused from step to step.
        self._after: list[np.ndarray] = []

    def meet_from(self) -> int:
        """The first step from which every step of a plain count can be counted backward (:meth:`count`):
        class sets of one word, next-key codes of at most :data:`MEET_BITS` bits, dense new-run tables (class
        blocks); ``steps`` when none."""
        quo = self.quo
        if quo.words != 1:
            return quo.steps
        first = quo.steps
        for u in range(quo.steps - 1, -1, -1):
            size_next = int(quo.sizes[u + 1])
            if (size_next > 63 or max(1, (size_next - 1).bit_length()) + size_next > MEET_BITS
                    or int(quo.sizes[u]) * quo.letters * 8 > DENSE_RUNS):
                break
            first = u
        return first

    def count(self, t0: int, layer: Layer, clock: Clock, query: str) -> tuple[list[int], np.ndarray]:
        """The steps ``t0 ..`` of a plain count without a budget, counted backward: each next layer's keys are found
        forward without counts (:meth:`_discover`), then from the last step down each key's completions (its
        accepting paths to the end) are summed from the next layer's (:meth:`_complete`). The sizes of the layers
        ``t0 + 1 ..`` and the completions of ``layer``'s keys as limb columns (:mod:`solvers.key_counts`).

        Exact: the count is the sum over the layer's keys of (paths into the key) x (its completions), and each
        completion is a path the forward pass would have extended pair by pair. Why: the forward counts grow by
        about log2(masks) bits a step, so past the middle their sums cost most of a long pass (labels family, 8
        inputs, T = 256: 19 limbs a pair at the end); counted from both ends each half's numbers are half as wide,
        and a backward step needs no sort (a dense index of the next keys, sums over a key's masks in place)."""
        steps = self.quo.steps

        def layer_at(t: int) -> Layer:
            # The layers past t0 are kept as their keys' codes (8 bytes a key; 16 inputs: 330 k keys a step).
            return layer if t == t0 else next_layer(codes[t - t0 - 1], 0, int(self.quo.sizes[t]), False)

        codes: list[np.ndarray] = []
        for t in range(t0, steps):
            if t > t0:
                clock.check(query, codes[-1].size if clock.limits.nodes is not None else None)
            codes.append(self._discover(self._plain_plan(t), layer_at(t), clock, query))
        completions = np.zeros((1, codes[-1].size), dtype=np.uint64)  # past the last step nothing accepts
        for t in range(steps - 1, t0 - 1, -1):
            completions = self._complete(self._plain_plan(t), layer_at(t), codes[t - t0], completions, clock, query)
        return [c.size for c in codes[:-1]], completions

    def _plain_plan(self, t: int) -> StepPlan:
        return StepPlan(t, self.tables.step(t), 0, False, False)

    def _code_top(self, t: int) -> tuple[int, int]:
        """The classes of step ``t + 1`` and one past the largest next-key code (class above class set) there."""
        size_next = int(self.quo.sizes[t + 1])
        return size_next, 1 << (max(1, (size_next - 1).bit_length()) + size_next)

    def _discover(self, plan: StepPlan, layer: Layer, clock: Clock, query: str) -> np.ndarray:
        """The next layer of a plain step without counts, as its keys' codes (class above class set, increasing):
        the live pairs' next keys marked in a dense table."""
        size_next, top = self._code_top(plan.t)
        seen = np.zeros(top + 1, dtype=bool)
        got = self.blocks.images(plan, layer, None)
        assert got is not None
        quiet = self._quiet(plan.t)
        for _, _, s2, live, _, _ in self.blocks.blocks(plan, layer, *got, 0, clock, query, fates=not quiet,
                                                       by_key=BY_KEY):
            seen[s2.view(np.int64) if live is None else np.where(live, s2.view(np.int64), top)] = True
        kept = np.flatnonzero(seen[:top])
        if quiet:
            # Every pair was marked: those that end (a removal run in the edited run's class, or in a class that
            # surely shows the effect) are the keys whose class set holds their class or meets that set.
            sets = kept & ((1 << size_next) - 1)
            ends = ((sets >> (kept >> size_next)) & 1).astype(bool) | ((sets & int(plan.tab.kill[0])) != 0)
            kept = kept[~ends]
        return kept

    def _quiet(self, t: int) -> bool:
        """Whether no run shows the effect at step ``t``: then a pair of that step that ends has a next code no
        live pair has (its class in its class set, or a class set meeting the must classes), and the backward
        steps need not mask it out (:meth:`_discover`, :meth:`_complete`)."""
        return not bool(self.quo.hit[t].any())

    def _complete(self, plan: StepPlan, layer: Layer, nxt: np.ndarray, after: np.ndarray, clock: Clock,
                  query: str) -> np.ndarray:
        """The completions of ``layer``'s keys at step ``plan.t`` as limb columns: per key, its accepting pairs and
        the completions ``after`` (limb columns) of the next keys of its live pairs (``nxt``: the next layer's
        codes, :meth:`_discover`). Keys of many masks (:data:`ROW_MASKS`) read the next completions as rows
        (:meth:`_complete_rows`), others a limb column at a time (:meth:`_complete_columns`)."""
        ptr = plan.tab.viable_ptr
        pairs = int((ptr[layer.q + 1] - ptr[layer.q]).sum())
        if pairs >= ROW_MASKS * layer.size:
            return self._complete_rows(plan, layer, nxt, after, clock, query)
        return self._complete_columns(plan, layer, nxt, after, clock, query)

    def _complete_rows(self, plan: StepPlan, layer: Layer, nxt: np.ndarray, after: np.ndarray, clock: Clock,
                       query: str) -> np.ndarray:
        """:meth:`_complete` with the next layer's completions held as rows of at most :data:`ROW_LIMBS` limbs (one
        random read fetches a key's limbs of a group at once, a gather of 8-64-byte items), in tables over every
        next code while those fit :data:`DENSE_AFTER` bytes (a pair's code is its row: no index gather), else over
        the next keys with a dense index of the codes; a code no next key has reads a row of zeros. In a quiet step
        the codes are compact (:data:`COMPACT`): half as many rows, and a pair that ends reads the last, clipped."""
        size_next, top = self._code_top(plan.t)
        quiet = self._quiet(plan.t)
        compact = COMPACT and quiet
        if compact:
            # Half the codes: rows of the live codes only, and every pair that ends reads row ``top`` (clipped).
            top >>= 1
            nxt = compact_codes(nxt.view(np.uint64), (nxt >> size_next).view(np.uint64), size_next).view(np.int64)
        limbs = after.shape[0]
        dense = top * 8 * (1 << max(0, limbs - 1).bit_length()) <= DENSE_AFTER  # (and one row to clip to)
        index = None
        if not dense:
            index = np.full(top + 1, nxt.size, dtype=np.int32 if nxt.size < 2**31 else np.int64)
            index[nxt] = np.arange(nxt.size)
        groups = []  # (first limb, limbs, table as items of that many limbs)
        for g0 in range(0, limbs, ROW_LIMBS):
            # Items of 1, 2, 4 or 8 limbs (numpy copies items of 8, 16, 32 and 64 bytes fastest): a group's width
            # rounded up, its extra limbs zero (their sums add zeros to the next group's columns).
            n = min(ROW_LIMBS, limbs - g0)
            w = 1 << (n - 1).bit_length()
            if dense:
                table = self._after_table(g0 // ROW_LIMBS, top + 1, w)
                table[nxt, :n] = after[g0:g0 + n].T
            else:
                table = np.zeros((nxt.size + 1, w), dtype=np.uint64)  # row nxt.size: a dead pair's, 0
                table[:-1, :n] = after[g0:g0 + n].T
            groups.append((g0, w, table.view(np.dtype((np.void, 8 * w))).reshape(-1)))
        padded = max((g0 + w for g0, w, _ in groups), default=limbs)
        out = np.zeros((layer.size, padded + 1), dtype=np.uint64)  # rows: a key's limbs, one to carry into
        got = self.blocks.images(plan, layer, None)
        assert got is not None
        width = self.blocks.width(plan)
        vals = np.empty(width * max((w for _, w, _ in groups), default=1), dtype=np.uint64)
        limb = np.uint64(key_counts.LIMB)
        for lo, hi, s2, live, accept, _ in self.blocks.blocks(plan, layer, *got, 0, clock, query, fates=not quiet,
                                                              compact=compact):
            # A pair that ends reads a row of zeros: its code is marked dead (row ``top``), past every row (compact
            # codes: clipped to row ``top``), or (a quiet step) no next key's.
            code = s2.view(np.int64) if live is None else np.where(live, s2.view(np.int64), top)
            rows_of = code if index is None else np.take(index, code, mode="clip")
            part = out[lo:hi]
            if accept is not None:
                part[:, 0] += accept.sum(axis=0, dtype=np.uint64)
            # A key's masks in rows of at most GROUP_MAX: each row sum fits 64 bits; its top bits go a limb up.
            for r0 in range(0, rows_of.shape[0], key_counts.GROUP_MAX):
                rows = rows_of[r0:r0 + key_counts.GROUP_MAX]
                for g0, w, items in groups:
                    got_rows = np.take(items, rows, mode="clip", out=vals[:rows.size * w].view(items.dtype)
                                       .reshape(rows.shape))
                    total = got_rows.view(np.uint64).reshape(*rows.shape, w).sum(axis=0)
                    part[:, g0:g0 + w] += total & key_counts.LIMB_MASK
                    part[:, g0 + 1:g0 + w + 1] += total >> limb
            for lv in range(limbs):
                part[:, lv + 1] += part[:, lv] >> limb
                part[:, lv] &= key_counts.LIMB_MASK
        if dense:
            for g0, w, _ in groups:
                self._after_table(g0 // ROW_LIMBS, top + 1, w)[nxt] = 0  # clean for the next step
        # Limbs past ``limbs`` (a narrow last group's padding) are zero: the carries went into limb ``limbs``.
        cols = np.ascontiguousarray(out[:, :limbs + 1].T)
        return cols if cols[-1].any() or limbs == 0 else cols[:-1]

    def _complete_columns(self, plan: StepPlan, layer: Layer, nxt: np.ndarray, after: np.ndarray, clock: Clock,
                          query: str) -> np.ndarray:
        """:meth:`_complete` a limb column at a time: the next keys' limb columns, a dense index of their codes, one
        gather a pair and limb (few masks a key: 8 inputs)."""
        _, top = self._code_top(plan.t)
        index = np.full(top + 1, nxt.size, dtype=np.int32 if nxt.size < 2**31 else np.int64)
        index[nxt] = np.arange(nxt.size)
        limbs = after.shape[0]
        padded = np.zeros((limbs, nxt.size + 1), dtype=np.uint64)  # column nxt.size: a dead pair's, 0
        padded[:, :-1] = after
        out = np.zeros((limbs + 1, layer.size), dtype=np.uint64)
        got = self.blocks.images(plan, layer, None)
        assert got is not None
        vals = np.empty(self.blocks.width(plan), dtype=np.uint64)
        quiet = self._quiet(plan.t)
        for lo, hi, s2, live, accept, _ in self.blocks.blocks(plan, layer, *got, 0, clock, query, fates=not quiet):
            # A pair that ends reads column nxt.size (0): its code is marked dead, or (a quiet step) no next key's.
            gid = np.take(index, s2.view(np.int64) if live is None else np.where(live, s2.view(np.int64), top))
            part = out[:, lo:hi]
            if accept is not None:
                part[0] += accept.sum(axis=0, dtype=np.uint64)
            # A key's masks in rows of at most GROUP_MAX: each row sum fits 64 bits; its top bits go a limb up.
            for r0 in range(0, gid.shape[0], key_counts.GROUP_MAX):
                rows = gid[r0:r0 + key_counts.GROUP_MAX]
                for lv in range(limbs):
                    got_lv = np.take(padded[lv], rows, mode="clip", out=vals[:rows.size].reshape(rows.shape))
                    total = got_lv.sum(axis=0)
                    part[lv] += total & key_counts.LIMB_MASK
                    part[lv + 1] += total >> np.uint64(key_counts.LIMB)
            key_counts.carry_columns(part)
        return out if out[-1].any() or limbs == 0 else out[:-1]

    def _after_table(self, g: int, rows: int, w: int) -> np.ndarray:
        """Group ``g``'s table of a backward step's next completions (:meth:`_complete`): ``rows`` rows of ``w``
        limbs, zero but where the step writes; kept from step to step (fresh tables of 16 MB cost page faults)."""
        while len(self._after) <= g:
            self._after.append(np.zeros((0, 0), dtype=np.uint64))
        table = self._after[g]
        if table.shape != (rows, w):
            table = self._after[g] = np.zeros((rows, w), dtype=np.uint64)
        return table
