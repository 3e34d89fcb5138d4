"""Exact counts of the forward count pass's keys (:mod:`solvers.forward`), step by step: summed in the calling
process (:class:`Counts`, the default), or, when :data:`HELPER_MIN` is set and a step is large, in a helper
process (:class:`HelperCounts`) that adds one step's counts while the caller expands the next.

Every pair a step expands carries its source key's count, to a key of the next layer (live) or to an outcome
(accepting): the next layer's counts are per-group sums of the current layer's, grouped as the pass sorted its
pairs, and each outcome's count grows by a group sum too. Counts are uint64 limb columns while narrow, Python ints
once wide (:func:`sum_columns`).

Why a process. On a large pass the sums are most of the time (issue 10's cube family, 8 inputs, T = 256: 20 s of
32 s, about 380 million wide additions), and they cannot overlap the expansion in a thread: adding Python ints holds
the interpreter lock the expansion's numpy calls need between operations. So the caller sends each step's grouping
(source indices and group starts, a few MB) down a pipe to a child that holds the counts and adds them, and asks for
the outcomes' counts at the end; the answer is the same integers, the wall time about the larger of the two halves.
The child is the caller's (killed with it, never left behind: :func:`solvers.limits.die_with_parent`), its memory
is counted in the query's (the clock's ``helpers``; a guarded query's caller reads the child's descendants), and it
runs in a session of its own, out of a terminal's Ctrl-C, which the caller answers by killing it.

>>> counts = Counts(np.ones((1, 1), dtype=np.uint64))
>>> counts.advance(np.array([0, 0, 0]), np.array([0, 2]))  # two next keys: from pairs 0-1 and pair 2
>>> counts.accept(np.array([5, 5]), np.array([0, 1]), np.array([0, 1]))  # both keys accept with outcome 5
>>> counts.result()
{5: 3}
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
from typing import Any, BinaryIO, NoReturn

import numpy as np

#: Bits per limb of the exact counts. Limbs live in uint64, so one reduction may add up to :data:`GROUP_MAX` of them
#: without overflow; larger groups are summed in parts (:func:`sum_columns`). 56 bits, not 32: 43 % fewer limbs, and
#: the sums' cost is per pair and limb; the groups of a step are small (labels family, 8 inputs: a median of 7
#: pairs, 99.9 % at most 332; docs/performance.md), so the parts cost little.
LIMB = 56
LIMB_MASK = np.uint64((1 << LIMB) - 1)
#: Most limbs one reduction adds at once (2^(64 - LIMB)).
GROUP_MAX = 1 << (64 - LIMB)
#: Limbs past which counts are kept as Python ints (see :func:`sum_columns`): about where adding wide ints costs
#: less than a gather and a sum per limb column (measured with 32-bit limbs: columns 0.48 us a pair at 96 limbs
#: against 0.9 us as ints, 2.1 us at 200 limbs against 1.2 us; a crossover near 4,000 bits).
OBJECT_LIMBS = 73
#: Pairs of one step from which the count pass hands its sums to a helper process (None: never, the default). A
#: helper buys wall time on a free core and always costs CPU: every grouping pickled, piped, unpickled and converted
#: (labels family, 8 inputs, T = 256, seed 3, idle: 47.3 s of CPU and 29.1 s of wall with a helper from 2^18 pairs
#: on, 43.5 s of CPU and 42.8 s of wall with the sums in process; docs/performance.md). The project's targets are
#: CPU on a shared machine and a step with a helper is not split into pieces (:data:`forward_pass.PIECE`), so the
#: sums stay in process unless a caller sets a threshold here (the tests do, to keep the helper's exactness, memory
#: accounting and clean-up checked).
HELPER_MIN: int | None = None
#: Exit status of a helper whose allocation failed (its data segment is capped with the query's memory limit).
_OUT_OF_MEMORY = 3


def sum_limbs(parent: np.ndarray, src: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per-group sums of exact counts: group g sums the counts ``parent[src[starts[g]:starts[g + 1]]]``.

    ``parent`` is (K, L) limbs (carries propagated) or a (K,) array of Python ints; the sums come back the same way
    (limbs normalised, Python ints once past :data:`OBJECT_LIMBS` limbs). The pass's counts are held as limb
    columns (:func:`sum_columns`); this is the same sum for callers that hold rows.

    >>> sum_limbs(np.array([[1], [2], [4]], dtype=np.uint64), np.array([0, 2, 1]), np.array([0, 2])).tolist()
    [[5], [2]]
    """
    out = sum_columns(parent if parent.dtype == object else np.ascontiguousarray(parent.T), src, starts)
    return out if out.dtype == object else np.ascontiguousarray(out.T)


def sum_columns(parent: np.ndarray, src: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """:func:`sum_limbs` on counts held as limb columns: ``parent`` is (L, K) limbs (carries propagated, a limb added
    when needed) while the counts are at most :data:`OBJECT_LIMBS` limbs wide, and a (K,) array of Python ints
    beyond; the (L, G) or (G,) sums come back the same way.

    Every expanded pair's count is its source key's count, so the pairs carry only the source's index and the counts
    are read once per pair, sorted by group. A limb column of a layer's keys is a few hundred KB, within the
    processor's cache, so gathering it once per pair and summing per group costs a few nanoseconds a pair and limb:
    on the labels family with 8 inputs at T = 256 (1.4 M pairs a step, counts to 1,030 bits, 33 limbs) about a third
    of adding the pairs' counts as Python ints (docs/performance.md). Past about 130 limbs the ints are cheaper.

    >>> sum_columns(np.array([[1, 2, 4]], dtype=np.uint64), np.array([0, 2, 1]), np.array([0, 2])).tolist()
    [[5, 2]]
    """
    if parent.dtype == object:
        if src.size == 0:
            return np.zeros(0, dtype=object)
        return np.add.reduceat(parent[src], starts)
    if src.size == 0:
        return np.zeros((parent.shape[0], 0), dtype=np.uint64)
    idx = src.astype(np.intp, copy=False)
    sizes = np.diff(starts, append=src.size)
    if int(sizes.max()) > GROUP_MAX:
        # Groups too large for one reduction: sum parts of at most GROUP_MAX pairs, carries propagated, then the parts.
        parts = np.repeat(sizes, -(-sizes // GROUP_MAX))
        first = np.repeat(starts, -(-sizes // GROUP_MAX))
        group_first = np.concatenate(([0], np.cumsum(-(-sizes // GROUP_MAX))[:-1]))
        offset = (np.arange(parts.size) - np.repeat(group_first, -(-sizes // GROUP_MAX))) * GROUP_MAX
        partial = sum_columns(parent, src, first + offset)
        if partial.dtype == object:
            return np.add.reduceat(partial, group_first)
        return sum_columns(partial, np.arange(parts.size), group_first)
    out = np.empty((parent.shape[0], starts.size), dtype=np.uint64)
    for lv in range(parent.shape[0]):
        out[lv] = np.add.reduceat(np.take(parent[lv], idx), starts)
    out = normalise_columns(out)
    return out if out.shape[0] <= OBJECT_LIMBS else _wide(out)


def _wide(cols: np.ndarray) -> np.ndarray:
    """Limb columns (L, K) as a (K,) array of Python ints."""
    wide = np.zeros(cols.shape[1], dtype=object)
    for lv in range(cols.shape[0]):
        wide += cols[lv].astype(object) << (LIMB * lv)
    return wide


def side_by_side(parts: list[np.ndarray]) -> np.ndarray:
    """Counts of several groupings (each as :func:`sum_columns` returns them) as one: the groups of ``parts[0]``,
    then those of ``parts[1]``, ...; limb columns padded to the widest, or Python ints if any part has them.

    >>> side_by_side([np.array([[1, 2]], dtype=np.uint64), np.array([[3], [4]], dtype=np.uint64)]).tolist()
    [[1, 2, 3], [0, 0, 4]]
    """
    if any(p.dtype == object for p in parts):
        return np.concatenate([p if p.dtype == object else _wide(p) for p in parts])
    top = max(p.shape[0] for p in parts)
    return np.concatenate([np.pad(p, ((0, top - p.shape[0]), (0, 0))) for p in parts], axis=1)


def normalise(limbs: np.ndarray) -> np.ndarray:
    """Limbs (K, L) with their carries propagated (a limb added when the top one overflows).

    >>> normalise(np.array([[1 << 57]], dtype=np.uint64)).tolist()
    [[0, 2]]
    """
    return np.ascontiguousarray(normalise_columns(np.ascontiguousarray(limbs.T)).T)


def normalise_columns(cols: np.ndarray) -> np.ndarray:
    """Limb columns (L, K) with their carries propagated (a limb added when the top one overflows)."""
    for lv in range(cols.shape[0] - 1):
        carry = cols[lv] >> np.uint64(LIMB)
        if carry.any():
            cols[lv] &= LIMB_MASK
            cols[lv + 1] += carry
    top = cols[-1] >> np.uint64(LIMB)
    if top.any():
        cols[-1] &= LIMB_MASK
        return normalise_columns(np.concatenate([cols, top[None, :]], axis=0))
    return cols


def carry_columns(cols: np.ndarray) -> None:
    """Limb columns (L, K) with the carries of all but the top limb propagated, in place (the top limb takes them:
    the caller leaves it room)."""
    for lv in range(cols.shape[0] - 1):
        carry = cols[lv] >> np.uint64(LIMB)
        cols[lv] &= LIMB_MASK
        cols[lv + 1] += carry


def dot(cols: np.ndarray, other: np.ndarray) -> int:
    """The sum over keys of the products of two layers' counts, each as limb columns (L, K) or (K,) Python ints.

    >>> dot(np.array([[2, 3]], dtype=np.uint64), np.array([[0, 1], [1, 0]], dtype=np.uint64))
    144115188075855875
    """
    a = cols if cols.dtype == object else _wide(cols)
    b = other if other.dtype == object else _wide(other)
    return int((a * b).sum()) if a.size else 0


def to_int(limbs: np.ndarray, k: int) -> int:
    """The Python int of row ``k`` of multi-limb counts (K, L) (or of a (K,) array of Python ints).

    >>> to_int(np.array([[0, 2]], dtype=np.uint64), 0)
    144115188075855872
    """
    if limbs.dtype == object:
        return int(limbs[k])
    return sum(int(v) << (LIMB * lv) for lv, v in enumerate(limbs[k]))


def column_int(cols: np.ndarray, k: int) -> int:
    """The Python int of key ``k`` of counts held as limb columns (L, K) (or a (K,) array of Python ints)."""
    if cols.dtype == object:
        return int(cols[k])
    return sum(int(v) << (LIMB * lv) for lv, v in enumerate(cols[:, k]))


class Counts:
    """The counts of one layer's keys and of the outcomes so far, in this process."""

    def __init__(self, limbs: np.ndarray, outcomes: dict[int, int] | None = None) -> None:
        #: The layer's counts as limb columns (L, K), or (K,) Python ints once wide (:func:`sum_columns`).
        self.columns = limbs if limbs.dtype == object else np.ascontiguousarray(limbs.T)
        self.outcomes: dict[int, int] = dict(outcomes or {})

    @property
    def limbs(self) -> np.ndarray:
        """The layer's counts as rows (K, L) of limbs, or (K,) Python ints (what the constructor takes)."""
        return self.columns if self.columns.dtype == object else np.ascontiguousarray(self.columns.T)

    def accept(self, ids: np.ndarray, src: np.ndarray, starts: np.ndarray) -> None:
        """Add to outcome ``ids[g]`` the counts of the keys ``src[starts[g]:starts[g + 1]]``."""
        sums = sum_columns(self.columns, src, starts)
        for g, o in enumerate(ids.tolist()):
            self.outcomes[o] = self.outcomes.get(o, 0) + column_int(sums, g)

    def advance(self, src: np.ndarray, starts: np.ndarray) -> None:
        """Replace the layer's counts by the next layer's: key g sums the keys ``src[starts[g]:starts[g + 1]]``."""
        self.columns = sum_columns(self.columns, src, starts)

    def sums(self, src: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """The group sums :meth:`advance` would make the next layer's counts, the layer's counts left as they are
        (a step expanded in pieces sums each piece's groups; :meth:`replace` then takes the merged sums)."""
        return sum_columns(self.columns, src, starts)

    def replace(self, columns: np.ndarray) -> None:
        """The next layer's counts, summed by the caller (:meth:`sums`)."""
        self.columns = columns

    def result(self) -> dict[int, int]:
        """The outcomes' counts (outcome id -> count)."""
        return self.outcomes

    def close(self) -> None:
        """Nothing to release in this process."""


class HelperEnded(Exception):
    """The helper process was ended by a signal from outside (kill -9, the system's out-of-memory killer): the
    count cannot go on, and no bug of ours ended it; the pass answers ``unknown`` (:mod:`solvers.forward_pass`).

    >>> str(HelperEnded(9))
    'helper process ended: signal 9'
    """

    def __init__(self, signal: int) -> None:
        self.signal = signal
        super().__init__(f"helper process ended: signal {signal}")


def _narrow(a: np.ndarray) -> np.ndarray:
    # Indices below 2^31 travel as int32: half the bytes down the pipe.
    return a.astype(np.int32) if a.size and int(a.max()) < 2**31 else a


class HelperCounts:
    """The same interface, the counts held and added by a helper process (module docstring); ``close`` always."""

    def __init__(self, start: Counts) -> None:
        # Here, not at the top: a small query (one verify) never starts a helper and need not import these.
        import subprocess

        from solvers.limits import die_with_parent

        parent = os.getpid()
        # The file itself, not ``-m solvers...``: the helper needs numpy only, and the package may not be on the
        # path of a fresh interpreter (a script that put it on its own sys.path). A session of its own: a terminal's
        # Ctrl-C goes to the caller alone, which answers it and kills the helper (it must not die first, mid-step,
        # and turn the interruption into a failed count).
        self._proc = subprocess.Popen([sys.executable, "-P", os.path.abspath(__file__)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                      preexec_fn=lambda: die_with_parent(parent))
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._to: BinaryIO = self._proc.stdin
        self._from: BinaryIO = self._proc.stdout
        self._grow_pipe()
        # Ready once its imports are done: from here on its memory (an interpreter with numpy) is the query's, and
        # a helper that cannot start leaves the sums in this process.
        try:
            ready = pickle.load(self._from)
        except (EOFError, pickle.UnpicklingError):
            ready = None
        if ready != "ready":
            self.close()
            raise OSError("the count's helper process did not start")
        self._send(("init", start.limbs, start.outcomes))

    @property
    def pid(self) -> int:
        """The helper's process id."""
        return self._proc.pid

    def _grow_pipe(self) -> None:
        # A step's grouping is a few MB: with the default 64 KiB pipe the two processes would take turns every
        # 64 KiB. Linux only (F_SETPIPE_SZ), best effort.
        try:
            import fcntl

            fcntl.fcntl(self._to.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except (ImportError, OSError):
            pass

    def _send(self, msg: tuple[Any, ...]) -> None:
        try:
            pickle.dump(msg, self._to, protocol=pickle.HIGHEST_PROTOCOL)
            self._to.flush()
        except BrokenPipeError:
            self._failed()

    def _failed(self) -> NoReturn:
        code = self._proc.wait()
        if code < 0:
            raise HelperEnded(-code)
        err = self._proc.stderr.read().decode("utf-8", "replace").strip() if self._proc.stderr else ""
        if code == _OUT_OF_MEMORY:
            raise MemoryError("the count's helper process ran out of memory")
        last = err.splitlines()[-1] if err else f"exit status {code}"
        raise RuntimeError(f"the count's helper process failed: {last}")

    def accept(self, ids: np.ndarray, src: np.ndarray, starts: np.ndarray) -> None:
        """As :meth:`Counts.accept`, in the helper."""
        self._send(("accept", ids, _narrow(src), _narrow(starts)))

    def advance(self, src: np.ndarray, starts: np.ndarray) -> None:
        """As :meth:`Counts.advance`, in the helper."""
        self._send(("advance", _narrow(src), _narrow(starts)))

    def result(self) -> dict[int, int]:
        """The outcomes' counts, once the helper has added every step sent."""
        self._send(("result",))
        try:
            got: dict[int, int] = pickle.load(self._from)
        except (EOFError, pickle.UnpicklingError):
            self._failed()
        return got

    def close(self) -> None:
        """Stop the helper if it still runs, and reap it."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for fh in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if fh is not None:
                with contextlib.suppress(OSError):  # a pipe whose reader is gone: nothing left to flush
                    fh.close()


def serve(inp: BinaryIO, out: BinaryIO) -> None:
    """The helper's loop: messages from the caller's :class:`HelperCounts` in order, until ``result``."""
    pickle.dump("ready", out)
    out.flush()
    _, limbs, outcomes = pickle.load(inp)  # ("init", ...): the counts handed over
    counts = Counts(limbs, outcomes)
    while True:
        msg = pickle.load(inp)
        kind = msg[0]
        if kind == "accept":
            counts.accept(msg[1], msg[2], msg[3])
        elif kind == "advance":
            counts.advance(msg[1], msg[2])
        else:
            pickle.dump(counts.result(), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
            return


def _main() -> None:
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except MemoryError:
        os._exit(_OUT_OF_MEMORY)
    except EOFError:
        os._exit(1)  # the caller closed the pipe before asking for the result: it has given up on the count


if __name__ == "__main__":
    _main()
