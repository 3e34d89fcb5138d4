"""The class quotient of a problem's Mealy machine for the forward pass (:mod:`solvers.forward_pass`), and the
per-step tables the pass expands keys with: class sets as rows of 64-bit words, image tables per input letter, and
per class of the edited run the flip masks that survive the checks that class alone decides.

Two states are equivalent at step t when, for every input letter, they agree on "the effect shows now" and go to
equivalent states at t + 1 (a backward partition refinement from t* + 1, where everything is equivalent); only states
reachable at t are classified. Class ids are the ranks of the sorted signatures, so the quotient is deterministic.
A step may have any number of classes: class sets are rows of ceil(classes / 64) words.

>>> quo = quotient(problem)
>>> quo.steps, quo.sizes[:4]  # classes per step (the last step, t* + 1, has one)
(22, (1, 6, 6, 6))
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from encoders.problem import Problem
from solvers.simulate import prepare, require_tables

#: operations per letter; images class by class cost one per pair and class).
IMAGE_PAYOFF = 32
#: Largest per-letter image table of every letter (entries); past it the pair-by-pair expansion takes images class by
#: class and the count's class blocks take tables of the letters a step reaches (:meth:`Tables.combined`).
MAX_IMAGE_TABLE = 1 << 24
#: Bytes of per-letter image tables and of per-step mask tables one pass keeps for reuse (least recently used out).
TABLE_CACHE = 96 << 20
#: Largest table of new removal runs kept as class sets (bytes); past it a step keeps them as class ids.
DENSE_RUNS = 64 << 20


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
        uniq, first, inv = unique_rows(sig)
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
    # Keyed on the shape as well as the bytes (a step of any number of classes: the shape is not one byte).
    shared: dict[tuple[tuple[int, ...], bytes, bytes], tuple[np.ndarray, np.ndarray]] = {}
    for t in range(steps):
        nxt[t], hit[t] = shared.setdefault((nxt[t].shape, nxt[t].tobytes(), hit[t].tobytes()), (nxt[t], hit[t]))
    return Quotient(
        steps, letters, tuple(sizes), tuple(nxt), tuple(hit), tuple(hopeless), tuple(must), tuple(base_hit),
        int(cls[0][system.initial]),
    )


def unique_rows(sig: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(sig, axis=0, return_index=True, return_inverse=True)``: the distinct rows in lexicographic order,
    the first row of each, and each row's rank. Wide rows (one column per letter: 65,537 at 16 inputs) go by their
    bytes: numpy's unique views a row as a record of one field per column, 2 s a step at 16 inputs (the quotient of
    a 32-step problem took 90 s); here the rows are hashed, and only the distinct ones compared.

    >>> [a.tolist() for a in unique_rows(np.array([[1, 2], [0, 5], [1, 2]]))]
    [[[0, 5], [1, 2]], [1, 0], [1, 0, 1]]
    """
    if sig.shape[1] <= 64:
        uniq, first, inv = np.unique(sig, axis=0, return_index=True, return_inverse=True)
        return uniq, first, inv.ravel()
    rows = np.ascontiguousarray(sig)
    seen: dict[bytes, int] = {}
    owner = np.empty(rows.shape[0], dtype=np.int64)
    for i in range(rows.shape[0]):
        owner[i] = seen.setdefault(rows[i].tobytes(), i)
    # Lexicographic order of the distinct rows, column by column, as numpy's unique sorts them.
    first = np.array(sorted(seen.values(), key=lambda i: rows[i].tolist()), dtype=np.int64)
    rank = np.empty(rows.shape[0], dtype=np.int64)
    rank[first] = np.arange(first.size)
    return rows[first], first, rank[owner]


# -- class sets as rows of 64-bit words -----------------------------------------------------------------------------


def class_set(flags: np.ndarray, words: int) -> np.ndarray:
    """The class set ``{c : flags[c]}`` as one row of ``words`` uint64 words."""
    out = np.zeros(words, dtype=np.uint64)
    for c in np.flatnonzero(flags):
        out[c >> 6] |= np.uint64(1) << np.uint64(c & 63)
    return out


def onehot(classes: np.ndarray, words: int) -> np.ndarray:
    """Rows of ``words`` words with the single bit ``classes[...]`` set (shape ``classes.shape + (words,)``)."""
    if words == 1:
        # One word: the bit itself (put_along_axis costs about ten times more; 16 inputs: 0.1 s a step table).
        return np.left_shift(np.uint64(1), classes.astype(np.uint64))[..., None]
    out = np.zeros((*classes.shape, words), dtype=np.uint64)
    w = classes >> 6
    bit = np.left_shift(np.uint64(1), (classes & 63).astype(np.uint64))
    np.put_along_axis(out, w[..., None], bit[..., None], axis=-1)
    return out


def has(rows: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Whether class ``classes[k]`` is in row ``rows[k]``."""
    if rows.shape[-1] == 1:
        return ((rows[..., 0] >> classes.astype(np.uint64)) & np.uint64(1)).astype(bool)
    word = np.take_along_axis(rows, (classes >> 6)[..., None], axis=-1)[..., 0]
    return ((word >> (classes & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)


def put(rows: np.ndarray, at: np.ndarray, classes: np.ndarray) -> None:
    """Add class ``classes[k]`` to row ``rows[at[k]]`` (in place; repeated rows and classes allowed)."""
    np.bitwise_or.at(rows, (at, classes >> 6), np.left_shift(np.uint64(1), (classes & 63).astype(np.uint64)))


def members(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (row, class) pairs of the classes in ``rows``, by row then class: work in the set bits, not the width."""
    r, w = np.nonzero(rows)
    bits = np.unpackbits(rows[r, w].astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    k, b = np.nonzero(bits)
    return r[k], w[k] * 64 + b


def meets(rows: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Whether row ``rows[k]`` shares a class with the set ``words``."""
    if rows.shape[-1] == 1:
        return (rows[..., 0] & words[0]) != 0
    return (rows & words).any(axis=-1)


@dataclass(frozen=True)
class StepTables:
    """What expanding keys at one step needs: image tables per letter, and per class of the edited run the masks
    that survive the checks which depend on that class alone (CSR ``viable_ptr`` / ``viable_mask``)."""

    img: np.ndarray | None  # (letters, chunks, 256, W): image of the 8 classes of a chunk under a letter
    img_die: np.ndarray | None  # (letters, chunks, 256): some class of the chunk shows the effect under the letter
    nxt: np.ndarray  # (C, letters): the class at t + 1 (for images class by class when ``img`` is None)
    hit: np.ndarray  # (C, letters)
    # Classes of the removal runs a mask's flips create from class c (hopeless ones dropped), as class sets
    # ``new_runs`` (C, masks, W) while those fit :data:`DENSE_RUNS`, else as class ids ``new_ids`` (C * masks, inputs),
    # -1 where a flip makes none: a step of 65,536 classes would need 2^13 bytes per (class, mask) as sets.
    new_runs: np.ndarray | None
    q_next: np.ndarray  # (C, masks): the edited run's next class
    q_hit: np.ndarray  # (C, masks): the edited run shows the effect
    viable_ptr: np.ndarray  # (C + 1,)
    viable_mask: np.ndarray  # c * masks + mask for the masks of class c: viable_mask[viable_ptr[c]:viable_ptr[c + 1]]
    drop: np.ndarray  # (W,) hopeless classes at t + 1 (dropped from S)
    kill: np.ndarray  # (W,) must classes at t + 1 (a removal run there will show the effect)
    unsafe: np.ndarray  # (W,) classes at t + 1 whose base continuation shows the effect
    base_hit: np.ndarray  # (C_{t+1},) the same, per class (for the edited run)
    new_ids: np.ndarray | None = None

    def new_sets(self, cm: np.ndarray) -> np.ndarray:
        """The new removal runs' class sets (rows of W words) of the flat (class, mask) indices ``cm``."""
        if self.new_runs is not None:
            return np.take(self.new_runs.reshape(-1, self.new_runs.shape[-1]), cm, axis=0)
        assert self.new_ids is not None
        ids = np.take(self.new_ids, cm, axis=0)
        out = np.zeros((cm.size, self.drop.size), dtype=np.uint64)
        rows, cols = np.nonzero(ids >= 0)
        put(out, rows, ids[rows, cols])
        return out


class Tables:
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
        hot = onehot(n.T, words)  # (letters, C, W)
        # Byte values 2^k .. 2^(k+1) - 1 are those below 2^k with bit k added: their images are those values' images
        # and class 8j + k's (one whole-array operation per bit, not a pass over the 256 values per class; 12 inputs:
        # 0.3 s a table before).
        for c in range(chunks * 8):
            j, k = divmod(c, 8)
            half = 1 << k
            img[:, j, half:2 * half] = img[:, j, :half]
            die[:, j, half:2 * half] = die[:, j, :half]
            if c < size:
                img[:, j, half:2 * half] |= hot[:, c, None, :]
                die[:, j, half:2 * half] |= h[c, :, None]
        self._img[id(n)] = (img, die)
        self._img_bytes = _evict(self._img, self._img_bytes + img.nbytes + die.nbytes)
        return img, die

    def images_pay(self, t: int, pairs: int) -> bool:
        """Whether step ``t``'s per-letter image tables pay for themselves over ``pairs`` expanded pairs
        (:data:`IMAGE_PAYOFF`), or are built already."""
        return id(self.quo.nxt[t]) in self._img or pairs >= IMAGE_PAYOFF * self.quo.letters

    def with_images(self, t: int, tab: StepTables, pairs: int) -> StepTables:
        """``tab`` with the per-letter image tables of step ``t`` when they pay (:meth:`images_pay`)."""
        if not self.images_pay(t, pairs):
            return tab
        images = self._images(t)
        if images is None:
            return tab
        return dataclasses.replace(tab, img=images[0], img_die=images[1])

    def combined(self, t: int, tab: StepTables, pairs: int,
                 letters: Callable[[], np.ndarray]) -> tuple[np.ndarray, np.ndarray | None] | None:
        """Step ``t``'s per-letter image tables for class sets of one word, folded for the class blocks of the count
        pass (:func:`fold_images`), and the letters they cover in increasing order (None: every letter, the table's
        column is the letter); None when the classes of step ``t + 1`` do not leave bit 63 free or the tables would
        not pay for themselves over ``pairs`` expanded pairs (:data:`IMAGE_PAYOFF` per letter).

        Tables of every letter are cached (steps with the same structure share them) while they fit
        :data:`MAX_IMAGE_TABLE`; past it (16 inputs: 65,536 letters, 268 MB) the step gets tables of the letters
        ``letters()`` only (the letters its keys' viable masks reach: a few thousand at 16 inputs), built for the
        step and not kept."""
        quo = self.quo
        if self.words != 1 or quo.sizes[t + 1] > 63:
            return None
        key = (id(quo.nxt[t]), id(quo.hopeless[t + 1]))
        got = self._comb.get(key)
        if got is not None:
            self._comb.move_to_end(key)
            return got[0], None
        n, h = quo.nxt[t], quo.hit[t]
        chunks = (n.shape[0] + 7) // 8
        if quo.letters * chunks * 256 <= MAX_IMAGE_TABLE:
            if pairs < IMAGE_PAYOFF * quo.letters:
                return None
            comb = fold_images(n, h, tab.drop[0])
            self._comb[key] = (comb,)
            self._comb_bytes = _evict(self._comb, self._comb_bytes + comb.nbytes)
            return comb, None
        used = letters()
        if pairs < IMAGE_PAYOFF * used.size:
            return None
        return fold_images(n[:, used], h[:, used], tab.drop[0]), used

    def step(self, t: int) -> StepTables:
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
            dense = size * letters * words * 8 <= DENSE_RUNS
            q_next, q_hit = np.ascontiguousarray(n[:, xs]), np.ascontiguousarray(h[:, xs])
            drop, kill = class_set(quo.hopeless[t + 1], words), class_set(quo.must[t + 1], words)
            new_die = np.zeros((size, letters), dtype=bool)
            # Flip i of mask m creates the removal run of letter tau ^ m ^ 2^i, whose class is q_next[c, m ^ 2^i]:
            # in the view (C, letters >> (i + 1), 2, 2^i) of the mask axis, the masks with bit i set are the
            # half [:, :, 1] and their partners m ^ 2^i the half [:, :, 0], so each flip is one whole-array
            # operation on strided views (no gathers; 16 inputs: a step table 0.36 s -> 0.1 s).
            halves = [(size, letters >> (i + 1), 2, 1 << i) for i in range(self.n_in)]
            for shape in halves:
                new_die.reshape(shape)[:, :, 1] |= q_hit.reshape(shape)[:, :, 0]
            if dense:
                new_runs = np.zeros((size, letters, words), dtype=np.uint64)
                hot = onehot(q_next, words)
                for shape in halves:
                    new_runs.reshape(*shape, words)[:, :, 1] |= hot.reshape(*shape, words)[:, :, 0]
                del hot
                runs: np.ndarray = new_runs & ~drop
                # What the edited run's class alone decides: a new removal run shows the effect now or surely later,
                # or (edited run still short of it) the edited run is hopeless or twinned by a new removal run.
                dead = new_die | (runs & kill).any(axis=-1)
                dead |= ~q_hit & (quo.hopeless[t + 1][q_next] | has(runs, q_next))
            else:
                # The same as class ids: flip i of a mask creates the removal run in class n[c, x ^ bit i].
                runs = np.full((size, letters, self.n_in), -1, dtype=np.int64)
                ids = np.where(quo.hopeless[t + 1][q_next], -1, q_next)
                for i, shape in enumerate(halves):
                    runs.reshape(*shape, self.n_in)[:, :, 1, :, i] = ids.reshape(shape)[:, :, 0]
                some = runs >= 0
                dead = new_die | (some & quo.must[t + 1][np.maximum(runs, 0)]).any(axis=-1)
                dead |= ~q_hit & (quo.hopeless[t + 1][q_next] | (runs == q_next[..., None]).any(axis=-1))
                runs = runs.reshape(size * letters, self.n_in)
            counts = (~dead).sum(axis=1)
            ptr = np.concatenate(([0], np.cumsum(counts)))
            # Flat (class, mask) indices into the (C, masks) tables, increasing: the masks of a class in order.
            viable = np.flatnonzero(~dead).astype(np.int64)
            got = (runs, q_next, q_hit, ptr, viable, drop, kill)
            self._runs[key] = got
            self._runs_bytes = _evict(self._runs, self._runs_bytes + sum(a.nbytes for a in got))
        runs, q_next, q_hit, ptr, viable, drop, kill = got
        dense = runs.dtype == np.uint64
        return StepTables(None, None, n, h, runs if dense else None, q_next, q_hit, ptr, viable, drop, kill,
                          class_set(quo.base_hit[t + 1], words), quo.base_hit[t + 1], None if dense else runs)


def fold_images(n: np.ndarray, h: np.ndarray, drop: np.uint64) -> np.ndarray:
    """Image tables of class sets of one word over the letters of the columns of ``n`` (next classes, at most 63)
    and ``h`` (the effect shows), byte by byte: ``comb[j, i, v]`` is the set of the next classes of the classes
    ``8j + k`` for the bits k of the byte ``v`` under letter column ``i``, the classes of ``drop`` (hopeless) cleared,
    and bit 63 set when one of them shows the effect. Byte-major, so a class block takes ``comb[:, columns]`` with
    each byte's tables contiguous, in one copy. The values 2^k .. 2^(k+1) - 1 of a byte are those below 2^k with
    class 8j + k added: one whole-array operation per class bit.

    >>> fold_images(np.array([[1], [0]]), np.array([[False], [True]]), np.uint64(0))[0, 0, :4].tolist()
    [0, 2, 9223372036854775809, 9223372036854775811]
    """
    size, cols = n.shape
    chunks = (size + 7) // 8
    bits = (np.uint64(1) << n.astype(np.uint64)) & ~np.uint64(drop)
    bits |= np.where(h, np.uint64(1) << np.uint64(63), np.uint64(0))
    comb = np.empty((chunks, cols, 256), dtype=np.uint64)
    comb[:, :, 0] = 0
    for c in range(chunks * 8):
        j, k = divmod(c, 8)
        half = 1 << k
        if c < size:
            np.bitwise_or(comb[j, :, :half], bits[c, :, None], out=comb[j, :, half:2 * half])
        else:
            comb[j, :, half:2 * half] = comb[j, :, :half]
    return comb


def _evict(cache: OrderedDict, size: int) -> int:
    """Drop the least recently used entries of ``cache`` (tuples of arrays) while it holds more than
    :data:`TABLE_CACHE` bytes, keeping the newest; the bytes left."""
    while size > TABLE_CACHE and len(cache) > 1:
        _, old = cache.popitem(last=False)
        size -= sum(a.nbytes for a in old)
    return size

