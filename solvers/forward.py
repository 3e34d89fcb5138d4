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
- keys are merged by (q, S, b) and their counts added (exact: multi-limb integers, 32 bits per limb in uint64
  arrays, carries propagated each step; Python ints once wider than :data:`OBJECT_LIMBS` limbs; on a large pass
  in a helper process while the next step is expanded: :mod:`solvers.key_counts`).

Keys are numpy arrays (S as bitmasks of 64-bit words over the classes of the step), every (key, flip mask) pair is
expanded at once with image tables per input letter, and equal keys are merged by one sort. A plain count expands
a large step class by class instead: the keys of one class share their masks' tables, so a block of (mask, key)
pairs is a few whole-array operations on the keys' class sets (:meth:`_Forward._step_blocks`). The number of keys
per step depends on the machine and the budget, not on T, so count is linear in T once the key set has saturated.

Enumeration, best match and sampling keep the per-step edges of the same pass (key, mask -> next key, or an
accepting outcome) and walk them: enumeration layer by layer in canonical order (|TS|, |C|, atoms) by a depth-first
walk that tries the flip masks of a step in canonical atom order, pruned by a backward "which layers can still be
reached" pass; best match by tracking |C|, |C ∩ C_a| and |TS(C) ∩ TS(C_a)| as extra key fields, picking the best
outcome exactly with rationals and listing only the final tie class to find the lowest sha256; sampling by
unranking uniform random ranks against backward counts.

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

import dataclasses
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.random import PCG64, Generator

from encoders.problem import Atom, Certificate, Flip, Problem
from hoa.errors import Gf01Error
from solvers import explicit, key_counts, paths
from solvers.canonical import canonical, flips_to_atoms, order_key, timesteps
from solvers.circuit import tabulated
from solvers.key_counts import Counts, HelperCounts, normalise, to_int
from solvers.limits import NO_LIMITS, Clock, Limits, guarded
from solvers.results import BestMatch, OracleResult, prf
from solvers.simulate import prepare, require_tables

#: Candidate (key, mask) pairs expanded at once: bounds memory and the time between two clock checks; small enough
#: that a chunk's arrays stay in the processor's cache across the dozens of passes over them (1 << 20 took 20 % more
#: CPU on the cube family with 8 inputs).
CHUNK = 1 << 16
#: Expanded pairs per letter from which a step builds per-letter image tables (building one costs about 32
#: operations per letter; images class by class cost one per pair and class).
IMAGE_PAYOFF = 32
#: Largest per-letter image table (entries); wider alphabets take images class by class.
MAX_IMAGE_TABLE = 1 << 24
#: Bytes of per-letter image tables and of per-step mask tables one pass keeps for reuse (least recently used out).
TABLE_CACHE = 96 << 20
#: Candidate pairs one class block of the count pass expands at once (see :meth:`_Forward._step_blocks`).
BLOCK = 1 << 18
#: Fewest candidate pairs of a step for which the count pass expands by class blocks.
BLOCK_MIN = 1 << 15
#: The count pass expands by class blocks (see :meth:`_Forward._step_blocks`); False: always pair by pair (tests).
BLOCKS = True
_DIE = np.uint64(1) << np.uint64(63)


# -- the problem's class quotient -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Quotient:
    """The time-dependent class quotient of a problem's Mealy machine (module docstring), steps 0 .. t* + 1.

    Per step t <= t*: ``nxt[t][c, x]`` the class at t + 1 reached from class c under input letter x, ``hit[t][c, x]``
    whether the effect shows at t (t an effect step). Per step t <= t* + 1: ``hopeless[t]`` (no input sequence shows
    the effect from here), ``must[t]`` (every input sequence does), ``base_hit[t]`` (the base trace from t does).
    ``initial`` is the initial state's class at step 0.
    """

    steps: int
    letters: int
    sizes: tuple[int, ...]
    nxt: tuple[np.ndarray, ...]
    hit: tuple[np.ndarray, ...]
    hopeless: tuple[np.ndarray, ...]
    must: tuple[np.ndarray, ...]
    base_hit: tuple[np.ndarray, ...]
    initial: int

    @property
    def words(self) -> int:
        """64-bit words of a class set (the widest step)."""
        return max(1, (max(self.sizes) + 63) // 64)


def quotient(problem: Problem) -> Quotient:
    """The class quotient of ``problem`` (needs the dense Mealy tables)."""
    require_tables(problem, "forward")
    system = problem.system
    nxt_tab, out_tab = system.tables
    nxt_tab = nxt_tab.astype(np.int64)
    n_states, letters = nxt_tab.shape
    steps = problem.t_star + 1
    prep = prepare(problem)
    effect = prep.effect_of(out_tab)
    # Forward reachability (states a run can be in at step t); it stops changing after a few steps.
    reach = [np.zeros(n_states, dtype=bool)]
    reach[0][system.initial] = True
    for _ in range(steps):
        prev = reach[-1]
        if len(reach) >= 2 and np.array_equal(prev, reach[-2]):
            reach.append(prev)
            continue
        nr = np.zeros(n_states, dtype=bool)
        nr[nxt_tab[prev].ravel()] = True
        reach.append(nr)
    # Backward partition refinement: class ids are the ranks of the sorted signatures (deterministic).
    cls: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * (steps + 1)
    last = np.full(n_states, -1, dtype=np.int64)
    last[reach[steps]] = 0
    cls[steps] = last
    nxt: list[np.ndarray] = [np.empty(0)] * steps
    hit: list[np.ndarray] = [np.empty(0)] * steps
    sizes = [0] * (steps + 1)
    sizes[steps] = 1
    for t in range(steps - 1, -1, -1):
        same_input = (
            t + 1 < steps
            and bool(prep.in_window[t]) == bool(prep.in_window[t + 1])
            and np.array_equal(reach[t], reach[t + 1])
            and (t + 2 > steps or np.array_equal(cls[t + 1], cls[t + 2]))
        )
        if same_input:
            # Same reachable states, window flag and next-step classes: the refinement gives the same result.
            cls[t], nxt[t], hit[t], sizes[t] = cls[t + 1], nxt[t + 1], hit[t + 1], sizes[t + 1]
            continue
        idx = np.flatnonzero(reach[t])
        h = effect[idx] & bool(prep.in_window[t])
        nc = cls[t + 1][nxt_tab[idx]]
        sig = np.concatenate([h.astype(np.int64), nc], axis=1)
        uniq, first, inv = np.unique(sig, axis=0, return_index=True, return_inverse=True)
        c = np.full(n_states, -1, dtype=np.int64)
        c[idx] = inv.ravel()
        cls[t] = c
        sizes[t] = len(uniq)
        nxt[t] = np.ascontiguousarray(nc[first])
        hit[t] = np.ascontiguousarray(h[first])
    hopeless: list[np.ndarray] = [np.empty(0, dtype=bool)] * (steps + 1)
    must: list[np.ndarray] = [np.empty(0, dtype=bool)] * (steps + 1)
    base_hit: list[np.ndarray] = [np.empty(0, dtype=bool)] * (steps + 1)
    hopeless[steps] = np.ones(1, dtype=bool)
    must[steps] = np.zeros(1, dtype=bool)
    base_hit[steps] = np.zeros(1, dtype=bool)
    for t in range(steps - 1, -1, -1):
        n, h = nxt[t], hit[t]
        hopeless[t] = (~h & hopeless[t + 1][n]).all(axis=1)
        must[t] = (h | must[t + 1][n]).all(axis=1)
        # Share equal arrays between steps, so per-step tables keyed on them are built once.
        if np.array_equal(hopeless[t], hopeless[t + 1]):
            hopeless[t] = hopeless[t + 1]
        if np.array_equal(must[t], must[t + 1]):
            must[t] = must[t + 1]
        x = problem.trace[t]
        base_hit[t] = h[:, x] | base_hit[t + 1][n[:, x]]
    # Share equal tables between steps: the class ids of a saturated quotient cycle through a few permutations, so
    # steps far apart have equal tables in distinct arrays, and the per-table caches of the pass key on identity.
    shared: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
    for t in range(steps):
        nxt[t], hit[t] = shared.setdefault(nxt[t].tobytes() + hit[t].tobytes() + bytes(nxt[t].shape[:1]),
                                           (nxt[t], hit[t]))
    return Quotient(
        steps, letters, tuple(sizes), tuple(nxt), tuple(hit), tuple(hopeless), tuple(must), tuple(base_hit),
        int(cls[0][system.initial]),
    )


# -- class sets as rows of 64-bit words -----------------------------------------------------------------------------


def _mask(flags: np.ndarray, words: int) -> np.ndarray:
    """The class set ``{c : flags[c]}`` as one row of ``words`` uint64 words."""
    out = np.zeros(words, dtype=np.uint64)
    for c in np.flatnonzero(flags):
        out[c >> 6] |= np.uint64(1) << np.uint64(c & 63)
    return out


def _onehot(classes: np.ndarray, words: int) -> np.ndarray:
    """Rows of ``words`` words with the single bit ``classes[...]`` set (shape ``classes.shape + (words,)``)."""
    out = np.zeros((*classes.shape, words), dtype=np.uint64)
    w = classes >> 6
    bit = np.left_shift(np.uint64(1), (classes & 63).astype(np.uint64))
    np.put_along_axis(out, w[..., None], bit[..., None], axis=-1)
    return out


def _has(rows: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Whether class ``classes[k]`` is in row ``rows[k]``."""
    if rows.shape[-1] == 1:
        return ((rows[..., 0] >> classes.astype(np.uint64)) & np.uint64(1)).astype(bool)
    word = np.take_along_axis(rows, (classes >> 6)[..., None], axis=-1)[..., 0]
    return ((word >> (classes & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)


def _meets(rows: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Whether row ``rows[k]`` shares a class with the set ``words``."""
    if rows.shape[-1] == 1:
        return (rows[..., 0] & words[0]) != 0
    return (rows & words).any(axis=-1)


@dataclass(frozen=True)
class _StepTables:
    """What expanding keys at one step needs: image tables per letter, and per class of the edited run the masks
    that survive the checks which depend on that class alone (CSR ``viable_ptr`` / ``viable_mask``)."""

    img: np.ndarray | None  # (letters, chunks, 256, W): image of the 8 classes of a chunk under a letter
    img_die: np.ndarray | None  # (letters, chunks, 256): some class of the chunk shows the effect under the letter
    nxt: np.ndarray  # (C, letters): the class at t + 1 (for images class by class when ``img`` is None)
    hit: np.ndarray  # (C, letters)
    new_runs: np.ndarray  # (C, masks, W): classes of the removal runs a mask's flips create from class c
    q_next: np.ndarray  # (C, masks): the edited run's next class
    q_hit: np.ndarray  # (C, masks): the edited run shows the effect
    viable_ptr: np.ndarray  # (C + 1,)
    viable_mask: np.ndarray  # c * masks + mask for the masks of class c: viable_mask[viable_ptr[c]:viable_ptr[c + 1]]
    drop: np.ndarray  # (W,) hopeless classes at t + 1 (dropped from S)
    kill: np.ndarray  # (W,) must classes at t + 1 (a removal run there will show the effect)
    unsafe: np.ndarray  # (W,) classes at t + 1 whose base continuation shows the effect
    base_hit: np.ndarray  # (C_{t+1},) the same, per class (for the edited run)


class _Tables:
    """Per-step tables of a quotient; the costly ones are shared between steps with the same structure and letter."""

    def __init__(self, quo: Quotient, problem: Problem) -> None:
        self.quo = quo
        self.problem = problem
        self.words = quo.words
        self.n_in = problem.system.num_inputs
        # Bounded caches (least recently used out): a pass over T steps with a new base letter at each step must not
        # keep T sets of tables (12 inputs: about 1 MiB per letter for the masks, 16 MiB per image table).
        self._img: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._comb: OrderedDict[tuple[int, int], tuple[np.ndarray]] = OrderedDict()
        self._comb_bytes = 0
        self._runs: OrderedDict[tuple[int, ...], tuple[np.ndarray, ...]] = OrderedDict()
        self._img_bytes = self._runs_bytes = 0
        d = np.arange(quo.letters, dtype=np.int64)
        self.popcount = np.zeros(quo.letters, dtype=np.int64)
        for i in range(self.n_in):
            self.popcount += (d >> i) & 1

    def _images(self, t: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Per-letter image tables over bytes of a class set, or None when they would be too large (then images
        are taken class by class)."""
        n, h = self.quo.nxt[t], self.quo.hit[t]
        got = self._img.get(id(n))
        if got is not None:
            self._img.move_to_end(id(n))
            return got
        size, letters, words = n.shape[0], self.quo.letters, self.words
        chunks = (size + 7) // 8
        if letters * chunks * 256 * words > MAX_IMAGE_TABLE:
            return None
        img = np.zeros((letters, chunks, 256, words), dtype=np.uint64)
        die = np.zeros((letters, chunks, 256), dtype=bool)
        values = np.arange(256)
        onehot = _onehot(n.T, words)  # (letters, C, W)
        for c in range(size):
            j, k = divmod(c, 8)
            sel = ((values >> k) & 1).astype(bool)
            img[:, j, sel, :] |= onehot[:, c, None, :]
            die[:, j, sel] |= h[c, :, None]
        self._img[id(n)] = (img, die)
        self._img_bytes = _evict(self._img, self._img_bytes + img.nbytes + die.nbytes)
        return img, die

    def has_images(self, t: int) -> bool:
        """Whether step ``t``'s per-letter image tables are built already."""
        return id(self.quo.nxt[t]) in self._img

    def with_images(self, t: int, tab: _StepTables, pairs: int) -> _StepTables:
        """``tab`` with the per-letter image tables of step ``t`` when they pay for themselves over ``pairs``
        expanded pairs (:data:`IMAGE_PAYOFF`), or when they are built already."""
        n = self.quo.nxt[t]
        if id(n) not in self._img and pairs < IMAGE_PAYOFF * self.quo.letters:
            return tab
        images = self._images(t)
        if images is None:
            return tab
        return dataclasses.replace(tab, img=images[0], img_die=images[1])

    def combined(self, t: int, tab: _StepTables) -> np.ndarray | None:
        """Step ``t``'s per-letter image tables for class sets of one word, folded for the class blocks of the count
        pass: ``comb[x, j, v]`` is the image under letter ``x`` of the classes ``8j ..`` whose bits are the byte
        ``v``, hopeless classes cleared, and bit 63 set when one of them shows the effect; None when the classes of
        step ``t + 1`` do not leave bit 63 free or the image tables would be too large."""
        quo = self.quo
        if self.words != 1 or quo.sizes[t + 1] > 63:
            return None
        key = (id(quo.nxt[t]), id(quo.hopeless[t + 1]))
        got = self._comb.get(key)
        if got is not None:
            self._comb.move_to_end(key)
            return got[0]
        images = self._images(t)
        if images is None:
            return None
        img, die = images
        comb = (img[..., 0] & ~tab.drop[0]) | (die.astype(np.uint64) << np.uint64(63))
        self._comb[key] = (comb,)
        self._comb_bytes = _evict(self._comb, self._comb_bytes + comb.nbytes)
        return comb

    def step(self, t: int) -> _StepTables:
        """The tables of step ``t`` (built once per distinct structure, base letter and next-step flags)."""
        quo, words, letters = self.quo, self.words, self.quo.letters
        n, h = quo.nxt[t], quo.hit[t]
        tau = self.problem.trace[t]
        key = (id(n), tau, id(quo.hopeless[t + 1]), id(quo.must[t + 1]))
        got = self._runs.get(key)
        if got is not None:
            self._runs.move_to_end(key)
        if got is None:
            masks = np.arange(letters, dtype=np.int64)
            xs = tau ^ masks
            size = n.shape[0]
            new_runs = np.zeros((size, letters, words), dtype=np.uint64)
            new_die = np.zeros((size, letters), dtype=bool)
            for i in range(self.n_in):
                has = ((masks >> i) & 1).astype(bool)
                xi = xs[has] ^ (1 << i)
                new_runs[:, has, :] |= _onehot(n[:, xi], words)
                new_die[:, has] |= h[:, xi]
            q_next, q_hit = np.ascontiguousarray(n[:, xs]), np.ascontiguousarray(h[:, xs])
            drop, kill = _mask(quo.hopeless[t + 1], words), _mask(quo.must[t + 1], words)
            runs = new_runs & ~drop
            # What the edited run's class alone decides: a new removal run shows the effect now or surely later,
            # or (edited run still short of it) the edited run is hopeless or twinned by a new removal run.
            dead = new_die | (runs & kill).any(axis=-1)
            dead |= ~q_hit & (quo.hopeless[t + 1][q_next] | _has(runs, q_next))
            counts = (~dead).sum(axis=1)
            ptr = np.concatenate(([0], np.cumsum(counts)))
            # Flat (class, mask) indices into the (C, masks) tables, increasing: the masks of a class in order.
            viable = np.flatnonzero(~dead).astype(np.int64)
            got = (runs, q_next, q_hit, ptr, viable, drop, kill)
            self._runs[key] = got
            self._runs_bytes = _evict(self._runs, self._runs_bytes + sum(a.nbytes for a in got))
        runs, q_next, q_hit, ptr, viable, drop, kill = got
        return _StepTables(None, None, n, h, runs, q_next, q_hit, ptr, viable, drop, kill,
                           _mask(quo.base_hit[t + 1], words), quo.base_hit[t + 1])


def _evict(cache: OrderedDict, size: int) -> int:
    """Drop the least recently used entries of ``cache`` (tuples of arrays) while it holds more than
    :data:`TABLE_CACHE` bytes, keeping the newest; the bytes left."""
    while size > TABLE_CACHE and len(cache) > 1:
        _, old = cache.popitem(last=False)
        size -= sum(a.nbytes for a in old)
    return size


# -- grouping -------------------------------------------------------------------------------------------------------


def _factorize(cols: list[np.ndarray], widths: list[int],
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


@dataclass
class _Layer:
    """Live keys (edited run not yet showing the effect) before one step."""

    q: np.ndarray  # (K,) class
    s: np.ndarray  # (K, W) removal-run class set
    b: np.ndarray  # (K,) timesteps used
    extra: np.ndarray  # (K, E) extra fields
    cost: np.ndarray  # (K, M) least additive costs of a path into the key (see ``_Forward.run``'s ``costs``)

    @property
    def size(self) -> int:
        return int(self.q.size)


@dataclass(frozen=True)
class _Edges:
    """The transitions of one step, sorted by source key then by canonical mask order.

    ``dst[k] >= 0`` is a key of the next layer; ``dst[k] < 0`` accepts with outcome ``-1 - dst[k]``.
    """

    src: np.ndarray
    mask: np.ndarray
    dst: np.ndarray
    offsets: np.ndarray  # CSR: edges of key k are offsets[k] .. offsets[k + 1]
    cost: np.ndarray | None = None  # (edges,) the first cost of the path so far (passes with ``tight`` edges only)


@dataclass
class _Pass:
    """What one forward pass found: accepting outcomes (b, extras...) with their counts, the least costs of a path
    into each (one row per outcome, one column per cost), and optionally the edges."""

    outcomes: list[tuple[int, ...]]
    counts: list[int] | None
    edges: list[_Edges] | None
    keys: list[int]
    costs: np.ndarray


class _Forward:
    """The forward programme over one problem (module docstring)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.quo = quotient(problem)
        self.tables = _Tables(self.quo, problem)
        #: Row buffers of the expanded pairs, reused from step to step (fresh arrays each step cost page faults).
        self._buffers: dict[str, np.ndarray] = {}
        n = problem.system.num_inputs
        names = problem.system.inputs
        rank = {i: r for r, i in enumerate(sorted(range(n), key=lambda i: names[i]))}
        masks = np.arange(self.quo.letters, dtype=np.int64)
        ov = np.zeros_like(masks)
        for i in range(n):
            ov |= ((masks >> i) & 1) << (n - 1 - rank[i])
        #: Canonical position of each mask among a step's masks: atoms by input name, more atoms first (see
        #: :func:`enumerate_certificates`); sorting masks by it gives the depth-first order "1 before 0".
        self.mask_order = np.argsort(np.argsort(-ov, kind="stable"), kind="stable")
        self.popcount = self.tables.popcount

    def run(
        self,
        budget: int | None,
        extras: Sequence[Extra] = (),
        *,
        counting: bool,
        edges: bool,
        clock: Clock,
        query: str,
        track_steps: bool = False,
        costs: Sequence[Callable[[int], np.ndarray]] = (),
        tight: bool = False,
        viable: Callable[[int, np.ndarray, np.ndarray], np.ndarray] | None = None,
    ) -> _Pass:
        """One forward pass: counts per outcome (``counting``) and/or the transition graph (``edges``).

        Outcomes are (|TS|, extras...); |TS| is tracked under a budget or with ``track_steps`` (else it reads 0).
        ``costs``: per-step increments over the flip masks of additive path costs (non-negative int64); each key
        and each outcome keeps only the least value of each cost over the paths into it (a shortest path per
        column, exact because the costs add along a path), so costs never multiply the keys as extras do.
        ``tight`` (with ``edges`` and ``costs``): keep only the inner edges on which the first cost is least for the
        next key (the edges of shortest paths: a path is least for its outcome iff all its inner edges are such and
        its accepting edge costs the outcome's least), and every accepting edge with its cost.
        ``viable(t, extras, costs)``: which live candidates after step ``t`` (rows of their extra fields and costs)
        can still end where the caller looks (a bound on what the rest of the path can add); the others end.
        """
        quo, words = self.quo, self.quo.words
        steps = quo.steps
        if budget is not None and budget >= steps and counting and not edges:
            budget = None  # a budget of every step binds nothing (B_T = T is the import default)
        track_b = budget is not None or track_steps
        b_cap = (steps if budget is None else min(budget, steps)) if track_b else 0
        widths_extra = [max(1, int(top).bit_length()) for _, top in extras]
        tops = np.array([top for _, top in extras], dtype=np.int64)
        layer = _Layer(
            np.array([quo.initial], dtype=np.int64),
            np.zeros((1, words), dtype=np.uint64),
            np.zeros(1, dtype=np.int64),
            np.zeros((1, len(extras)), dtype=np.int64),
            np.zeros((1, len(costs)), dtype=np.int64),
        )
        empty = np.zeros(0, dtype=np.int64)
        if bool(quo.hopeless[0][quo.initial]):
            layer = _take(layer, empty)
        # A plain count (no edges, extras, costs or bound) expands by class blocks where the step allows it.
        plain = BLOCKS and counting and not edges and not extras and not costs and viable is None
        outcome_ids: dict[tuple[int, ...], int] = {}
        outcome_costs: dict[int, np.ndarray] = {}
        step_edges: list[_Edges] = []
        keys_seen: list[int] = []
        # The keys' counts, row for row with the layer's keys; once a step is large, in a helper process that adds
        # them while the next step is expanded (solvers.key_counts).
        counts: Counts | HelperCounts | None = \
            Counts(np.ones((layer.size, 1), dtype=np.uint64)) if counting else None

        def hand_over(pairs: int) -> None:
            """From a step of ``pairs`` pairs on, the counts are added by a helper process (if one can start)."""
            nonlocal counts
            if isinstance(counts, Counts) and key_counts.HELPER_MIN is not None and pairs >= key_counts.HELPER_MIN:
                try:
                    counts = HelperCounts(counts)
                except OSError:  # no interpreter to start (an embedded one): the sums stay here
                    return
                clock.helpers.append(counts.pid)

        def accepted(ocols: list[np.ndarray], src: np.ndarray,
                     with_gid: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            """Group a step's accepting pairs (outcome columns ``ocols``, source keys ``src``) by outcome and add
            their counts to the outcomes'; the groups' outcome ids, and the grouping as :func:`_factorize` gives
            it."""
            first, gid, perm, starts = _factorize(ocols, [max(1, b_cap.bit_length()), *widths_extra],
                                                  with_gid=with_gid)
            ids = np.array([outcome_ids.setdefault(tuple(int(c[row]) for c in ocols), len(outcome_ids))
                            for row in first], dtype=np.int64)
            if counts is not None:
                counts.accept(ids, src[perm], starts)
            return ids, gid, perm, starts

        try:
            for t in range(steps):
                clock.check(query, layer.size if clock.limits.nodes is not None else None)
                keys_seen.append(layer.size)
                tab = self.tables.step(t)
                blocks = self._step_blocks(t, tab, layer, b_cap, budget is not None, track_b, clock, query) if plain \
                    else None
                if blocks is not None:
                    nxt, acc_b, acc_src, src, starts = blocks
                    hand_over(acc_src.size + src.size)
                    if acc_src.size:
                        accepted([acc_b], acc_src, False)
                    if counts is not None:
                        counts.advance(src, starts)
                    layer = nxt
                    continue
                incs = [inc(t) for inc, _ in extras]
                cost_incs = [inc(t) for inc in costs]
                # Chunks of keys with at most CHUNK candidate pairs (one key's masks always fit).
                per = np.cumsum(tab.viable_ptr[layer.q + 1] - tab.viable_ptr[layer.q])
                pairs = int(per[-1]) if per.size else 0
                tab = self.tables.with_images(t, tab, pairs)
                buf = self._rows(pairs, words, len(extras), len(costs), edges)
                lo = kept = 0
                while lo < layer.size:
                    base = per[lo - 1] if lo else 0
                    hi = max(lo + 1, int(np.searchsorted(per, base + CHUNK, side="right")))
                    clock.check(query)
                    kept = self._expand(t, tab, layer, lo, hi, b_cap, budget is not None, track_b, incs, cost_incs,
                                        buf, kept)
                    lo = hi
                # Views of the buffers: whatever outlives the step below is copied out of them.
                cand = {name: a[:kept] for name, a in buf.items()}
                hand_over(kept)
                if extras:
                    # An extra past its top ends the candidate: a caller's bound (see best_match), never reached
                    # otherwise.
                    over = (cand["extra"] > tops).any(axis=1)
                    if over.any():
                        cand["accept"] = cand["accept"] & ~over
                        cand["live"] = cand["live"] & ~over
                if viable is not None and cand["live"].any():
                    cand["live"] = cand["live"] & viable(t, cand["extra"], cand["cost"])
                # Accepting transitions: outcome (b, extras...).
                acc = cand["accept"]
                acc_idx = np.flatnonzero(acc)
                out_code = np.full(acc.size if edges else 0, -1, dtype=np.int64)
                if acc_idx.size:
                    ocols = [cand["b"][acc_idx]] + [cand["extra"][acc_idx, e] for e in range(len(extras))]
                    ids, gid, perm, starts = accepted(ocols, cand["src"][acc_idx], edges)
                    if edges:
                        out_code[acc_idx] = ids[gid]
                    if costs:
                        least = np.minimum.reduceat(cand["cost"][acc_idx][perm], starts, axis=0)
                        for g in range(ids.size):
                            o = int(ids[g])
                            got = outcome_costs.get(o)
                            outcome_costs[o] = least[g] if got is None else np.minimum(got, least[g])
                # Live transitions: the next layer.
                live = np.flatnonzero(cand["live"])
                clock.check(query)
                if live.size:
                    # Often every candidate lives (counting without a budget): then no copies of the live rows.
                    every = live.size == acc.size
                    cols = [cand["q"] if every else cand["q"][live]]
                    widths = [max(1, int(quo.sizes[t + 1] - 1).bit_length())]
                    if track_b:
                        cols.append(cand["b"] if every else cand["b"][live])
                        widths.append(max(1, b_cap.bit_length()))
                    for e in range(len(extras)):
                        cols.append(cand["extra"][live, e])
                        widths.append(widths_extra[e])
                    size_next = quo.sizes[t + 1]
                    for w in range(words):
                        cols.append(cand["s"][:, w] if every else cand["s"][live, w])
                        widths.append(max(0, min(64, size_next - 64 * w)))
                    first, gid, perm, starts = _factorize(cols, widths, with_gid=edges)
                    rows = live[first]
                    nxt = _Layer(cand["q"][rows], cand["s"][rows], cand["b"][rows], cand["extra"][rows],
                                 np.minimum.reduceat(cand["cost"][live][perm], starts, axis=0) if costs
                                 else np.zeros((rows.size, 0), dtype=np.int64))
                    if counts is not None:
                        counts.advance((cand["src"] if every else cand["src"][live])[perm], starts)
                    del cols, perm
                else:
                    gid = empty
                    nxt = _take(layer, empty)
                    if counts is not None:
                        counts.advance(empty, empty)
                if edges:
                    keep = acc | cand["live"]
                    if tight and live.size:
                        keep[live] = cand["cost"][live, 0] == nxt.cost[gid, 0]
                    dst = np.full(acc.size, 0, dtype=np.int64)
                    dst[acc_idx] = -1 - out_code[acc_idx]
                    dst[live] = gid
                    src, mask, dst = cand["src"][keep], cand["mask"][keep], dst[keep]
                    order = np.lexsort((self.mask_order[mask], src))
                    src, mask, dst = src[order], mask[order], dst[order]
                    offsets = np.searchsorted(src, np.arange(layer.size + 1))
                    cost = cand["cost"][keep, 0][order] if tight else None
                    step_edges.append(_Edges(src, mask, dst, offsets, cost))
                # This step's pairs are not needed any more: free them before the next step's are built.
                del cand, acc, acc_idx, out_code, live, gid
                layer = nxt
            outcome_counts = counts.result() if counts is not None else {}
        finally:
            if isinstance(counts, HelperCounts):
                counts.close()
                clock.helpers.remove(counts.pid)
        outcomes = sorted(outcome_ids, key=outcome_ids.__getitem__)
        totals = [outcome_counts.get(i, 0) for i in range(len(outcomes))] if counting else None
        least_costs = np.array([outcome_costs[i] for i in range(len(outcomes))], dtype=np.int64).reshape(
            len(outcomes), len(costs)) if costs else np.zeros((len(outcomes), 0), dtype=np.int64)
        return _Pass(outcomes, totals, step_edges if edges else None, keys_seen, least_costs)

    def _expand(
        self, t: int, tab: _StepTables, layer: _Layer, lo: int, hi: int, b_cap: int, capped: bool, track_b: bool,
        incs: list[np.ndarray], cost_incs: list[np.ndarray], out: dict[str, np.ndarray], at: int,
    ) -> int:
        """The surviving (key, mask) pairs of keys ``lo .. hi - 1``, their fate and their next key, written to the
        rows ``at ..`` of ``out`` (see :meth:`_rows`); the end of the rows written."""
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
        s2 = np.take(tab.new_runs.reshape(-1, words), cm, axis=0)
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
        else:
            for r in range(tab.nxt.shape[0]):
                mem = np.flatnonzero((s[:, r >> 6] >> np.uint64(r & 63)) & np.uint64(1))
                if mem.size:
                    s2[mem] |= _onehot(tab.nxt[r, x[mem]], words)
                    dead[mem] |= tab.hit[r, x[mem]]
        s2 &= ~tab.drop
        dead |= _meets(s2, tab.kill)
        hit = np.take(tab.q_hit, cm)
        q2 = np.take(tab.q_next, cm)
        # Still short of the effect: a removal run must not share the edited run's class.
        dead |= ~hit & _has(s2, q2)
        safe = ~_meets(s2, tab.unsafe)
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
        self, t: int, tab: _StepTables, layer: _Layer, b_cap: int, capped: bool, track_b: bool, clock: Clock,
        query: str,
    ) -> tuple[_Layer, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """One step of a plain count by class blocks: the next layer, the (timesteps, source key) of each accepting
        pair, and the live pairs' source keys grouped by next key (sources, group starts: the next layer's counts
        are the groups' sums); None when the step does not allow it (class sets wider than 63 bits, image tables
        too large, or a key code wider than 63 bits), and the pair-by-pair expansion takes the step.

        The keys of a layer are sorted by class, and every key of class c expands under the same viable masks,
        whose letter, edited-run successor, new removal runs and dead bits are the same for all of them: a block of
        (mask, key) pairs is a few whole-array operations on the keys' class sets, with no per-pair gathers of
        those tables. On issue 10's cube family with 8 inputs that halves the CPU of the pass (docs/performance.md).
        Next keys are packed as (class, timesteps, class set, source) in one int64 and grouped by one sort, in the
        order :func:`_factorize` gives, so either expansion may take any step.
        """
        ptr = tab.viable_ptr
        pairs = int((ptr[layer.q + 1] - ptr[layer.q]).sum())
        if pairs < BLOCK_MIN or (not self.tables.has_images(t) and pairs < IMAGE_PAYOFF * self.quo.letters):
            return None  # few pairs: a block per class costs more than it saves; images would not pay (with_images)
        comb = self.tables.combined(t, tab)
        size_next = self.quo.sizes[t + 1]
        b_bits = max(1, b_cap.bit_length()) if track_b else 0
        idx_bits = max(1, layer.size.bit_length())
        q_bits = max(1, int(size_next - 1).bit_length())
        if comb is None or q_bits + b_bits + size_next + idx_bits > 63:
            return None
        letters, chunks = self.quo.letters, comb.shape[1]
        tau = self.problem.trace[t]
        runs = tab.new_runs[..., 0]
        kill, unsafe = tab.kill[0] | _DIE, tab.unsafe[0]
        bounds = np.searchsorted(layer.q, np.arange(ptr.size))
        sets = layer.s[:, 0]
        codes: list[np.ndarray] = []
        acc_b: list[np.ndarray] = []
        acc_src: list[np.ndarray] = []
        for c in np.flatnonzero((bounds[1:] > bounds[:-1]) & (ptr[1:] > ptr[:-1])):
            masks = tab.viable_mask[ptr[c]:ptr[c + 1]] & (letters - 1)
            q2, hit = tab.q_next[c, masks], tab.q_hit[c, masks]
            # Per mask, the bits of a next class set that end the pair: a removal run shows the effect now (bit 63)
            # or surely later, or (edited run still short of it) shares the edited run's class.
            dead = np.where(hit, kill, kill | (np.uint64(1) << q2.astype(np.uint64)))[:, None]
            some_hit = bool(hit.any())
            hit_col = hit[:, None]
            base_hit = tab.base_hit[q2][:, None]
            flips = (masks != 0).astype(np.int64)[:, None]
            images = comb[tau ^ masks]  # (masks, chunks, 256), a copy of the cached tables
            # The new removal runs and the next key's class field go into the first byte's images: one pass less
            # each (the class field's bits lie above the class set's, clear of the dead bits).
            images[:, 0] |= runs[c, masks][:, None] | (q2.astype(np.uint64) << np.uint64(b_bits + size_next))[:, None]
            per = max(1, BLOCK // masks.size)
            for lo in range(int(bounds[c]), int(bounds[c + 1]), per):
                hi = min(lo + per, int(bounds[c + 1]))
                clock.check(query)
                s = sets[lo:hi]
                s2 = np.take(images[:, 0], (s & np.uint64(255)).astype(np.intp), axis=1)
                for j in range(1, chunks):
                    s2 |= np.take(images[:, j], ((s >> np.uint64(8 * j)) & np.uint64(255)).astype(np.intp), axis=1)
                live = (s2 & dead) == 0
                accept = None
                if some_hit:
                    accept = live & hit_col & ((s2 & unsafe) == 0)
                    live &= ~hit_col
                b2 = layer.b[lo:hi][None, :] + flips if track_b else None
                if capped:
                    assert b2 is not None
                    within = b2 <= b_cap
                    live &= within
                    # Budget spent: the rest is the base trace, so the pair is decided now (see _expand).
                    spent = live & (b2 == b_cap)
                    live &= ~spent
                    now = spent & base_hit & ((s2 & unsafe) == 0)
                    accept = now if accept is None else (accept & within) | now
                src = np.arange(lo, hi, dtype=np.int64)
                if accept is not None and accept.any():
                    acc_src.append(np.broadcast_to(src, accept.shape)[accept])
                    acc_b.append(b2[accept] if b2 is not None else np.zeros(int(accept.sum()), dtype=np.int64))
                # Live pairs have bit 63 clear: their codes read as non-negative int64.
                code = s2.view(np.int64)
                if b2 is not None:
                    code |= b2 << size_next
                code <<= idx_bits
                code |= src
                codes.append(code[live])
        empty = np.zeros(0, dtype=np.int64)
        accepted = (np.concatenate(acc_b), np.concatenate(acc_src)) if acc_src else (empty, empty)
        packed = np.concatenate(codes) if codes else empty
        if not packed.size:
            return _take(layer, empty), *accepted, empty, empty
        packed.sort()
        keys = packed >> idx_bits
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        src = packed & ((1 << idx_bits) - 1)
        del packed
        kept = keys[starts]
        rows = kept.size
        nxt = _Layer(
            kept >> (b_bits + size_next),
            (kept & ((1 << size_next) - 1)).astype(np.uint64)[:, None],
            (kept >> size_next) & ((1 << b_bits) - 1) if track_b else np.zeros(rows, dtype=np.int64),
            np.zeros((rows, 0), dtype=np.int64),
            np.zeros((rows, 0), dtype=np.int64),
        )
        return nxt, *accepted, src, starts

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


def _take(layer: _Layer, rows: np.ndarray) -> _Layer:
    return _Layer(layer.q[rows], layer.s[rows], layer.b[rows], layer.extra[rows], layer.cost[rows])


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
    fw = _Forward(problem)
    res = fw.run(budget_t, counting=True, edges=False, clock=clock, query="count")
    assert res.counts is not None
    return sum(res.counts)


@guarded("profile")
def profile(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> dict[str, object]:
    """The count with what the pass used: ``{"count", "keys_max", "keys_total", "classes_max"}`` (for benchmarks)."""
    clock = (limits or NO_LIMITS).start()
    problem = tabulated(problem, "profile")
    fw = _Forward(problem)
    res = fw.run(budget_t, counting=True, edges=False, clock=clock, query="count")
    assert res.counts is not None
    return {"count": sum(res.counts), "keys_max": max(res.keys, default=0), "keys_total": sum(res.keys),
            "classes_max": max(fw.quo.sizes)}


def _reach_bits(fw: _Forward, edges: list[_Edges], accept_bits: Callable[[int, np.ndarray], np.ndarray],
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
    fw = _Forward(problem)
    steps = fw.quo.steps
    top = steps if budget_t is None else min(budget_t, steps)
    produced = 0
    n_in = problem.system.num_inputs
    for k in range(top + 1):
        res = fw.run(k, counting=False, edges=True, clock=clock, query="enumerate")
        assert res.edges is not None
        final_b = [o[0] for o in res.outcomes]
        if k not in final_b:
            continue
        width = k * n_in + 1

        def acc_bits(t: int, idx: np.ndarray, res: _Pass = res, k: int = k, width: int = width) -> np.ndarray:
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


def _walk(fw: _Forward, res: _Pass, reach: list[np.ndarray], k: int, n: int, clock: Clock) -> Iterator[list[Flip]]:
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


def _counts_to_go(fw: _Forward, res: _Pass, clock: Clock, query: str) -> list[np.ndarray]:
    """Backward: per key, the number of accepted completions (multi-limb, (K, L)), per step."""
    edges = res.edges
    assert edges is not None
    out: list[np.ndarray] = [np.zeros((0, 1), dtype=np.uint64)] * (len(edges) + 1)
    nxt = np.zeros((0, 1), dtype=np.uint64)
    for t in range(len(edges) - 1, -1, -1):
        clock.check(query)
        e = edges[t]
        n_src = e.offsets.size - 1
        depth = nxt.shape[1]
        vals = np.zeros((e.dst.size, depth), dtype=np.uint64)
        inner = e.dst >= 0
        vals[inner] = nxt[e.dst[inner]]
        vals[~inner, 0] = 1
        cur = np.zeros((n_src, depth), dtype=np.uint64)
        if e.dst.size:
            # Edges are sorted by source: segment sums.
            has = np.flatnonzero(np.diff(e.offsets) > 0)
            cur[has] = np.add.reduceat(vals, e.offsets[has], axis=0)
        out[t] = normalise(cur) if n_src else cur
        nxt = out[t]
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
    fw = _Forward(problem)
    res = fw.run(budget_t, counting=False, edges=True, clock=clock, query="sample")
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


def _unrank(fw: _Forward, res: _Pass, togo: list[np.ndarray], rank: int, clock: Clock) -> list[Flip]:
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

    For a fixed number of hits h = |C ∩ C_a| and of shared timesteps g = |TS(C) ∩ TS(C_a)|, the rank of a gold C
    (F1_AP desc, F1_TS desc, Eff_t asc) is the lexicographic order of (|C|, |TS(C)|) when h > 0 (F1_AP falls with
    |C|, F1_TS with |TS|) and the order of |TS(C)| alone when h = 0 (F1_AP is 0 whatever |C|). Both are additive
    along a path, so the first pass keeps h and g as key fields (at most |C_a| + 1 values each) and only the least
    (|C|, |TS|) and the least |TS| of the paths into each key, as shortest paths do: its memory is that of a count,
    whatever B_T; it runs under a falling threshold on F1_AP (paths that cannot reach it end) until a pass finds
    an outcome at or above it. The best rank R* follows from the outcomes exactly (rationals). The last pass lists
    the final tie class only (budget |TS| = R*'s Eff_t, paths that can no longer reach a goal of rank R* end) and
    keeps its edges to walk the certificates of rank R* and find the lowest sha256 of the canonical JSON.
    """
    agent = list(atoms)
    clock = (limits or NO_LIMITS).start()
    problem = tabulated(problem, "best_match")
    if agent and (budget_t is None or len(timesteps(agent)) <= budget_t) and explicit.valid(problem, agent,
                                                                                           limits=limits):
        # F1_AP = 1 exactly when the gold is C_a itself: a valid agent certificate within the budget is its own gold.
        return BestMatch(canonical(problem, agent), 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    fw = _Forward(problem)
    steps = fw.quo.steps
    size_a = len(agent)
    ts_a = timesteps(agent)
    agent_mask = np.zeros(steps, dtype=np.int64)
    for t, i, v in agent:
        if t < steps and v != (problem.trace[t] >> i) & 1:
            agent_mask[t] |= 1 << i
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

    def fields(tops: tuple[int, int]) -> list[Extra]:
        out: list[Extra] = []
        if hits_top:
            out.append((hit_inc, tops[0]))
        if ts_top:
            out.append((ts_inc, tops[1]))
        return out

    def rank(h: int, g: int, c: int, b: int) -> tuple[Fraction, Fraction, int]:
        return (-prf(h, size_a, c)[2], -prf(g, len(ts_a), b)[2], b)

    # Pass 1: least (|C|, |TS|) packed as |C| * wide + |TS|, and least |TS|, per key (q, S[, b], h, g). F1_AP ranks
    # first, so a pass under a threshold theta drops every path whose F1_AP cannot reach theta: after step t it
    # has h hits and at least |C| atoms, at most x <= (the agent's flips after t) more hits, each an atom, so its
    # F1_AP is at most 2 (h + x) / (|C_a| + |C| + x), largest at the largest x (as |C| >= h). Every path of
    # F1_AP >= theta is kept with its costs, so when the pass finds an outcome of F1_AP >= theta, R* is the best
    # outcome found, exactly. Otherwise the next theta is the best F1_AP found (achievable, so that pass decides),
    # or half the last when none had hits, and 0 (no threshold: every path) below an eighth of the first.
    costs = [lambda t: fw.popcount * wide + nonzero, lambda t: nonzero]
    binding = None if budget_t is None or budget_t >= steps else budget_t
    after_h = np.concatenate((np.cumsum(fw.popcount[agent_mask][::-1])[::-1][1:], [0]))

    def reaches(theta: Fraction) -> Callable[[int, np.ndarray, np.ndarray], np.ndarray]:
        def cut(t: int, extra: np.ndarray, cost: np.ndarray) -> np.ndarray:
            x, c = after_h[t], cost[:, 0] // wide
            return 2 * (extra[:, 0] + x) * theta.denominator >= theta.numerator * (size_a + c + x)
        return cut

    theta = Fraction(2 * hits_top, size_a + hits_top) if hits_top else Fraction(0)
    floor = theta / 8
    while True:
        first = fw.run(binding, fields((hits_top, ts_top)), counting=False, edges=False, clock=clock,
                       query="best_match", costs=costs, viable=reaches(theta) if theta else None)
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

    res = fw.run(b_star, fields((top_h, int(goals[:, 1].max()))), counting=False, edges=True, clock=clock,
                 query="best_match", costs=[costs[0] if packed else costs[1]], tight=True, viable=viable)
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
    reach = _reach_any(res, ok, clock)
    gold = _least_digest(fw, res, reach, ok, clock)
    ap = prf(len(set(agent) & set(gold)), size_a, len(gold))
    ts = prf(len(ts_a & timesteps(gold)), len(ts_a), len(timesteps(gold)))
    return BestMatch(canonical(problem, gold), *(float(x) for x in ap), *(float(x) for x in ts))


def _reach_any(res: _Pass, ok: list[np.ndarray], clock: Clock) -> list[np.ndarray]:
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


def _least_digest(fw: _Forward, res: _Pass, reach: list[np.ndarray], ok: list[np.ndarray], clock: Clock) -> Certificate:
    """The member of lowest sha256 (of its canonical JSON) among the paths ending in an accepting edge marked in
    ``ok``: depth first, pruned by ``reach``. Steps come in order and the atoms of a step in input-name order, so a
    path's JSON grows by one step's text per edge: each frame keeps the hash state of its prefix and a member costs
    one copy, its last step's text and a digest."""
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

    best: bytes | None = None
    best_path: list[tuple[int, int]] = []
    # Frames: step, key, next edge position, hash state of the prefix, whether the prefix has an atom.
    stack: list[list] = [[0, 0, int(edges[0].offsets[0]), hashlib.sha256(b"["), False]]
    path: list[tuple[int, int]] = []
    seen = 0
    while stack:
        frame = stack[-1]
        t, key, pos, state, some = frame
        e = edges[t]
        if pos >= e.offsets[key + 1]:
            stack.pop()
            if path:
                path.pop()
            continue
        frame[2] = pos + 1
        dst = int(e.dst[pos])
        if (dst < 0 and not ok[t][pos]) or (dst >= 0 and not reach[t + 1][dst]):
            continue
        mask = int(e.mask[pos])
        if mask:
            state = state.copy()
            state.update(b"," + text(t, mask) if some else text(t, mask))
        if dst >= 0:
            stack.append([t + 1, dst, int(edges[t + 1].offsets[dst]), state, some or bool(mask)])
            path.append((t, mask))
            continue
        seen += 1
        if seen % 1024 == 0:
            clock.check("best_match")
        if not mask:
            state = state.copy()
        state.update(b"]")
        digest = state.digest()
        if best is None or digest < best:
            best, best_path = digest, [*path, (t, mask)]
    n_in = problem.system.num_inputs
    return flips_to_atoms(problem, [(t, i) for t, mask in best_path for i in range(n_in) if (mask >> i) & 1])


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
