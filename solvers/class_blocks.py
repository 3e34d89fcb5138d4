"""The class blocks of a plain pass: one step's (mask, key) pairs expanded a block of one class at a time, which the
forward steps of a count (:meth:`solvers.forward_pass.Forward._step_blocks`, ``_step_narrow``) and the backward half
(:mod:`solvers.backward_half`: its discovery and its completions) all consume.

The keys of a layer are sorted by class, and every key of class c expands under the same viable masks, whose letter,
edited-run successor, new removal runs and dead bits are the same for all of them: a block of (mask, key) pairs is a
few whole-array operations on the keys' class sets, with no per-pair gathers of those tables. On issue 10's cube
family with 8 inputs that halves the CPU of the pass (docs/performance.md). The image tables cover every letter, or
past :data:`solvers.quotient.MAX_IMAGE_TABLE` (16 inputs) the letters the step's viable masks reach
(:meth:`solvers.quotient.Tables.combined`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from encoders.problem import Problem
from solvers.layers import Layer, StepPlan
from solvers.limits import Clock
from solvers.quotient import Quotient, Tables

#: Candidate pairs one class block of the count pass expands at once (see :meth:`ClassBlocks.blocks`).
BLOCK = 1 << 18
#: Viable masks of one class whose image tables (``masks x bytes x 256`` words) a class block copies at once.
MASKS = 1 << 12
#: Bit 63 of a next code: the pair ends (below it, the code's fields; see :meth:`ClassBlocks.blocks`).
DIE = np.uint64(1) << np.uint64(63)


class ClassBlocks:
    """The class-block expansion of one problem's plain steps (module docstring): the step's image tables
    (:meth:`images`), the most pairs a block holds (:meth:`width`), and the blocks themselves (:meth:`blocks`)."""

    def __init__(self, problem: Problem, quo: Quotient, tables: Tables) -> None:
        self.problem = problem
        self.quo = quo
        self.tables = tables

    def images(self, plan: StepPlan, layer: Layer,
                pairs: int | None) -> tuple[np.ndarray, np.ndarray | None] | None:
        """The class blocks' image tables of step ``plan.t`` and the letters they cover (:meth:`Tables.combined`); None
        when they would not pay for themselves over ``pairs`` expanded pairs (None: always built)."""
        t, tab, letters = plan.t, plan.tab, self.quo.letters
        tau = self.problem.trace[t]
        ptr = tab.viable_ptr

        def reached() -> np.ndarray:
            # The letters the layer's classes' viable masks reach (the image tables are built for these only).
            present = np.unique(layer.q)
            present = present[ptr[present + 1] > ptr[present]]
            cm = np.concatenate([tab.viable_mask[ptr[c]:ptr[c + 1]] for c in present]) if present.size else \
                np.zeros(0, dtype=np.int64)
            return np.unique(tau ^ (cm & (letters - 1)))

        return self.tables.combined(t, tab, 1 << 62 if pairs is None else pairs, reached)

    def width(self, plan: StepPlan) -> int:
        """Most pairs of one class block of step ``plan.t`` (:meth:`blocks`): BLOCK, or one key's masks."""
        ptr = plan.tab.viable_ptr
        return max(BLOCK, min(MASKS, int((ptr[1:] - ptr[:-1]).max(initial=0))))

    def blocks(self, plan: StepPlan, layer: Layer, comb: np.ndarray, used: np.ndarray | None, idx_bits: int,
                clock: Clock, query: str, fates: bool = True, compact: bool = False, by_key: bool = False,
                ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]]:
        """The class blocks of one step of a plain pass (module docstring): per block of (mask, key) pairs of one
        class, the keys ``lo .. hi - 1``, and as (masks, keys) arrays the next codes (class, class set, bit 63
        where the pair ends, ``idx_bits`` up: the caller puts the source key or nothing below), which pairs live,
        which accept (None: none can) and |TS| after the step (None: not tracked); without ``fates`` the live pairs
        are None where no pair can accept and no budget binds (the caller reads the fates from the codes). With
        ``compact`` (``idx_bits`` 0, a step where no run shows the effect) the codes are :func:`compact_codes`'. With
        ``by_key`` the arrays are (keys, masks): each key's row of codes is two copies of whole rows of the image
        tables (a byte's tables held as (256, masks)), not one gather a pair and byte
        (:data:`solvers.backward_half.BY_KEY`). The arrays are buffers reused by the next block: the caller is done
        with them before it asks for the next."""
        t, tab, b_cap, capped, track_b = plan.t, plan.tab, plan.b_cap, plan.capped, plan.track_b
        ptr = tab.viable_ptr
        size_next = self.quo.sizes[t + 1]
        b_bits = max(1, b_cap.bit_length()) if track_b else 0
        letters = self.quo.letters
        tau = self.problem.trace[t]
        bounds = np.searchsorted(layer.q, np.arange(ptr.size))
        present = np.flatnonzero((bounds[1:] > bounds[:-1]) & (ptr[1:] > ptr[:-1]))
        chunks = comb.shape[0]
        runs = tab.new_runs[..., 0]
        # Every field of a code sits ``idx_bits`` up (the source key below it), the tables' too, so a pair's code
        # is its images' union with the source or-ed in; bit 63 (dead) stays where it is.
        shift = np.uint64(idx_bits)
        kill = ((tab.kill[0] & ~DIE) << shift) | DIE
        unsafe = (tab.unsafe[0] & ~DIE) << shift
        sets = layer.s[:, 0]
        width = self.width(plan)
        # The block's next class sets and a scratch array of the same shape: at most BLOCK pairs, or one key's masks.
        buf = (np.empty(width, dtype=np.uint64), np.empty(width, dtype=np.uint64))
        for c in present:
            viable = tab.viable_mask[ptr[c]:ptr[c + 1]] & (letters - 1)
            # Masks in parts: a part's image tables are copied (masks x bytes x 256 words; 16 inputs: 65,536 masks).
            for m0 in range(0, viable.size, MASKS):
                masks = viable[m0:m0 + MASKS]
                # By the edited run's next class: a block's rows of one next class are neighbours (the narrow codes
                # of the forward steps go to one buffer per next class); every consumer is order-free.
                masks = masks[np.argsort(tab.q_next[c, masks], kind="stable")]
                q2, hit = tab.q_next[c, masks], tab.q_hit[c, masks]
                # Per mask, the bits of a next code that end the pair: a removal run shows the effect now (bit 63)
                # or surely later, or (edited run still short of it) shares the edited run's class.
                # Per-mask columns (masks, 1), or rows (1, masks) when the blocks are (keys, masks).
                axis = (None, slice(None)) if by_key else (slice(None), None)
                dead = np.where(hit, kill, kill | (np.uint64(1) << (q2.astype(np.uint64) + shift)))[axis]
                some_hit = bool(hit.any())
                hit_col = hit[axis]
                base_hit = tab.base_hit[q2][axis]
                flips = (masks != 0).astype(np.int64)[axis]
                # (chunks, masks, 256), a copy of the cached tables, each byte's tables contiguous: a take from a
                # strided (masks, 256) view is several times slower (numpy copies it first).
                xs = tau ^ masks
                images = np.take(comb, xs if used is None else np.searchsorted(used, xs), axis=1)
                # The new removal runs and the next key's class field go into the first byte's images: one pass less
                # each (the class field's bits lie above the class set's, clear of the dead bits).
                images[0] |= (runs[c, masks][:, None]
                              | (q2.astype(np.uint64) << np.uint64(b_bits + size_next))[:, None])
                if compact:
                    # Bit by bit, so the union of the images' compact codes is the compact code of their union.
                    images[...] = compact_codes(images, q2.astype(np.uint64)[:, None], int(size_next))
                else:
                    dies = images & DIE
                    images &= ~DIE
                    images <<= shift
                    images |= dies
                    del dies
                if by_key:
                    images = np.ascontiguousarray(images.transpose(0, 2, 1))  # (chunks, 256, masks)
                per = max(1, BLOCK // masks.size)
                for lo in range(int(bounds[c]), int(bounds[c + 1]), per):
                    hi = min(lo + per, int(bounds[c + 1]))
                    clock.check(query)
                    s = sets[lo:hi]
                    shape = (hi - lo, masks.size) if by_key else (masks.size, hi - lo)
                    along = 0 if by_key else 1
                    # Into buffers reused from block to block (``take`` with ``out`` copies through a buffer unless
                    # its mode is ``clip``; every byte is in range).
                    s2 = np.take(images[0], (s & np.uint64(255)).astype(np.intp), axis=along, mode="clip",
                                 out=buf[0][:s.size * masks.size].reshape(shape))
                    scratch = buf[1][:s2.size].reshape(shape)
                    for j in range(1, chunks):
                        np.take(images[j], ((s >> np.uint64(8 * j)) & np.uint64(255)).astype(np.intp), axis=along,
                                mode="clip", out=scratch)
                        s2 |= scratch
                    if not (fates or some_hit or capped):
                        yield lo, hi, s2, None, None, None
                        continue
                    live = np.equal(np.bitwise_and(s2, dead, out=scratch), 0)
                    accept = None
                    if some_hit:
                        accept = live & hit_col & ((s2 & unsafe) == 0)
                        live &= ~hit_col
                    b2 = layer.b[lo:hi][axis[::-1]] + flips if track_b else None
                    if capped:
                        assert b2 is not None
                        within = b2 <= b_cap
                        live &= within
                        # Budget spent: the rest is the base trace, so the pair is decided now (as pair by pair does).
                        spent = live & (b2 == b_cap)
                        live &= ~spent
                        now = spent & base_hit & ((s2 & unsafe) == 0)
                        accept = now if accept is None else (accept & within) | now
                    yield lo, hi, s2, live, accept, b2


def compact_codes(codes: np.ndarray, q: np.ndarray, size_next: int) -> np.ndarray:
    """Next codes (class ``q`` above a class set of ``size_next`` bits, uint64) without the set's bit ``q``: a pair
    whose removal runs hold the edited run's class ends (the twin check), so that bit is the pair's fate, not part of
    a next key. The compact code is the class above the other ``size_next - 1`` bits, and bit 62 where bit ``q`` was
    set (a code past every next key's: a gather with ``mode="clip"`` reads the last row, kept zero). Each bit of a
    code goes to one bit, so the compact code of a union of images is the union of their compact codes; the codes of
    the pairs that live keep their order. Half the codes of a step: the backward half's tables of next completions
    are half as large, and the pairs that end (a third at 12 inputs) all read one row.

    >>> compact_codes(np.array([(1 << 3) | 0b101, (1 << 3) | 0b111], dtype=np.uint64), np.uint64(1), 3).tolist()
    [7, 4611686018427387911]
    """
    one = np.uint64(1)
    sets = codes & np.uint64((1 << size_next) - 1)
    out = sets & ((one << q) - one)
    out |= (sets >> (q + one)) << q
    out |= (codes >> np.uint64(size_next)) << np.uint64(size_next - 1)
    out |= ((sets >> q) & one) << np.uint64(62)
    return out
