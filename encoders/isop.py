"""Irredundant sums of products of Boolean functions given as truth tables (Minato-Morreale), for CNF templates.

A function of ``k`` variables is a Python int of ``2^k`` bits: bit ``i`` is its value at the point whose variable
``v`` is bit ``v`` of ``i``. :func:`isop` takes an interval ``on <= f <= on | dc`` and returns cubes whose union
contains every point of ``on`` and no point outside ``on | dc``, none of them redundant (Minato, "Fast generation of
prime-irredundant covers from binary decision diagrams", 1993, on truth tables instead of BDDs). The CNF encoder
writes "f(s) -> v" as one clause per cube of f and "NOT f(s) -> NOT v" as one per cube of NOT f, so ``v`` equals f
at every point that is not a don't-care, without auxiliary variables.

>>> isop(0b1000, 0, 2)  # x0 AND x1
[(3, 3)]
"""

from __future__ import annotations

import numpy as np

#: A cube: (mask of the variables it fixes, their values); (0, 0) is the cube of every point.
Cube = tuple[int, int]


def table_int(values: np.ndarray) -> int:
    """The truth table whose bit ``i`` is ``values[i]`` (a bool array of length 2^k)."""
    packed = np.packbits(np.asarray(values, dtype=np.uint8), bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


def isop(on: int, dc: int, k: int) -> list[Cube]:
    """An irredundant cover of ``on`` within ``on | dc`` (truth tables of ``k`` variables), in a deterministic order:
    the recursion splits on the highest variable first and lists its 0-cubes, its 1-cubes, then the cubes free of it.
    """
    memo: dict[tuple[int, int, int], tuple[tuple[Cube, ...], int]] = {}

    def rec(lo: int, hi: int, n: int) -> tuple[tuple[Cube, ...], int]:
        """Cubes and the function they cover, ``lo <= cover <= hi``, over the ``n`` lowest variables."""
        if lo == 0:
            return (), 0
        full = (1 << (1 << n)) - 1
        if hi == full:
            return ((0, 0),), full
        key = (lo, hi, n)
        got = memo.get(key)
        if got is not None:
            return got
        half = 1 << (n - 1)
        mask = (1 << half) - 1
        bit = 1 << (n - 1)
        lo0, lo1, hi0, hi1 = lo & mask, lo >> half, hi & mask, hi >> half
        # Points that only a cube fixing the variable to 0 (to 1) can cover, then what both halves still need.
        c0, r0 = rec(lo0 & ~hi1, hi0, n - 1)
        c1, r1 = rec(lo1 & ~hi0, hi1, n - 1)
        cs, rs = rec((lo0 & ~r0) | (lo1 & ~r1), hi0 & hi1, n - 1)
        cubes = (*((m | bit, v) for m, v in c0), *((m | bit, v | bit) for m, v in c1), *cs)
        got = (cubes, (r0 | rs) | ((r1 | rs) << half))
        memo[key] = got
        return got

    return list(rec(on, on | dc, k)[0])


__all__ = ["Cube", "isop", "table_int"]
