"""AIGER 1.9 reader: ASCII (``aag``) and binary (``aig``) circuits into :class:`aig.model.Aig`.

Every error is a :class:`hoa.errors.Gf01Error` naming the file, the line (for the binary AND section, the line of
its first byte as an editor counts newlines) and the rule broken: ``c.aag:7: latch 2: reset 5 is neither 0, 1 nor
the latch's literal 6``. The rules (docs/aiger.md): header counts and ``M`` (``M = I + L + A`` in binary), literals
at most ``2M + 1``, inputs/latches/AND outputs even literals above 1, each variable defined once, every literal used
defined (or constant), binary gates ``lhs > rhs0 >= rhs1`` with their deltas inside the file, the AND gates acyclic,
symbol-table positions in range and not repeated.

>>> aig = parse(b"aag 1 1 0 1 0\\n2\\n3\\n")
>>> aig.inputs, aig.outputs
((2,), (3,))
"""

from __future__ import annotations

import os
import re

import numpy as np

from aig.model import SYMBOL_KINDS, Aig, And, Latch
from hoa.errors import Gf01Error
from hoa.files import file_name, read_bytes

#: Largest variable index accepted, and most inputs: a binary header declares its inputs (and its gates, two bytes
#: each) without a line each, so the counts are bounded outright to keep the model within memory (8 Mi variables
#: and 1 Mi inputs are far beyond the competition designs: HWMCC's largest have a few million gates).
MAX_VAR = 1 << 23
#: The longest number a line may hold: 18 digits fit a signed 64-bit integer, and are far past every bound above.
MAX_DIGITS = 18
MAX_INPUTS = 1 << 20
_LINES = {w: re.compile(rb"(?:[0-9]+" + rb"(?: [0-9]+)" * (w - 1) + rb"\n)*") for w in (1, 3)}
_SECTION = {"i": "input", "l": "latch", "o": "output", "b": "bad-state property", "c": "constraint",
            "j": "justice literal", "f": "fairness property", "a": "AND gate"}


class _Reader:
    """A cursor over the file's bytes; ``fail`` turns an offset into a line number."""

    def __init__(self, data: bytes, file: str | None) -> None:
        self.data = data
        self.pos = 0
        self.file = file

    def fail(self, message: str, at: int | None = None) -> Gf01Error:
        return Gf01Error(message, file=self.file, line=self.line_of(self.pos if at is None else at))

    def line_of(self, at: int) -> int:
        return self.data.count(b"\n", 0, at) + 1

    def raw(self, at: int) -> bytes:
        """The line that starts at ``at`` (read already), without its newline."""
        return self.data[at : self.pos].rstrip(b"\n")

    def line(self, what: str) -> tuple[list[bytes], int]:
        """The next line split on spaces, and its offset; an error naming ``what`` at the end of the file."""
        start = self.pos
        if start >= len(self.data):
            raise self.fail(f"unexpected end of file: expected {what}")
        end = self.data.find(b"\n", start)
        if end < 0:
            end = len(self.data)
        self.pos = end + 1
        return self.data[start:end].split(b" "), start

    def block(self, count: int, width: int) -> np.ndarray | None:
        """The next ``count`` lines as a (count, width) array when they all are ``width`` unsigned decimal numbers
        separated by single spaces (the fast path); None, without moving, when some line is not (the caller then
        reads line by line to name the first bad one)."""
        if count == 0:
            return np.zeros((0, width), dtype=np.int64)
        end = self.pos - 1
        for k in range(count):
            end = self.data.find(b"\n", end + 1)
            if end < 0:
                # The file's last line may lack its newline (the format allows it): it ends where the data does.
                if k < count - 1 or self.pos >= len(self.data):
                    return None
                end = len(self.data)
        chunk = self.data[self.pos : end + 1] if end < len(self.data) else self.data[self.pos :] + b"\n"
        if not _LINES[width].fullmatch(chunk) or max(len(w) for w in chunk.split()) > MAX_DIGITS:
            return None
        self.pos = end + 1
        return np.array(chunk.split(), dtype=np.int64).reshape(count, width)

    def numbers(self, what: str, count: tuple[int, ...]) -> tuple[list[int], int]:
        """The next line as ``count`` (one of the allowed counts) unsigned decimal numbers."""
        words, at = self.line(what)
        if len(words) not in count or not all(w.isdigit() and w.isascii() for w in words):
            want = " or ".join(str(c) for c in count)
            raise self.fail(f"{what}: expected {want} unsigned decimal number(s) separated by single spaces, got "
                            f"{_show(self.raw(at))}", at)
        long = next((w for w in words if len(w) > MAX_DIGITS), None)
        if long is not None:
            raise self.fail(f"{what}: a number of {len(long)} digits, more than the {MAX_DIGITS} this reader accepts "
                            f"(no literal is that large): {_show(long)}", at)
        return [int(w) for w in words], at


def _show(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    return repr(text if len(text) <= 60 else text[:57] + "...")


def parse(data: bytes | str, *, file: str | None = None) -> Aig:
    """The circuit in ``data`` (the bytes of an ``aag`` or ``aig`` file); Gf01Error on any rule broken."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    r = _Reader(data, file)
    words, at = r.line("the header 'aag M I L O A' or 'aig M I L O A'")
    kind = words[0]
    if kind not in (b"aag", b"aig"):
        raise r.fail(f"header: the file must start with 'aag' (ASCII) or 'aig' (binary), not {_show(kind)}", at)
    if not 6 <= len(words) <= 10 or not all(w.isdigit() and w.isascii() for w in words[1:]):
        raise r.fail("header: expected 'M I L O A' and optionally 'B C J F', unsigned decimal numbers separated by "
                     f"single spaces, got {_show(r.raw(at))}", at)
    nums = [int(w) for w in words[1:]] + [0] * (10 - len(words))
    m, n_i, n_l, n_o, n_a, n_b, n_c, n_j, n_f = nums
    binary = kind == b"aig"
    if m > MAX_VAR:
        raise r.fail(f"header: M = {m} exceeds the {MAX_VAR} variables this reader accepts", at)
    if n_i > MAX_INPUTS:
        raise r.fail(f"header: I = {n_i} exceeds the {MAX_INPUTS} inputs this reader accepts", at)
    if binary and m != n_i + n_l + n_a:
        raise r.fail(f"header: a binary file needs M = I + L + A, here {m} != {n_i} + {n_l} + {n_a}", at)
    if m < n_i + n_l + n_a:
        raise r.fail(f"header: M = {m} is less than I + L + A = {n_i + n_l + n_a}", at)
    # Every ASCII item takes a line; a header that promises more lines than the file has is refused before the
    # lists are built (binary inputs and AND gates take no line, binary latches and the rest do).
    lines_needed = n_l + n_o + n_b + n_c + 2 * n_j + n_f + (0 if binary else n_i + n_a)
    if lines_needed > data.count(b"\n", r.pos) + 1:
        raise r.fail(f"header: it declares {lines_needed} more lines than the file has", at)
    p = _Parts(r, 2 * m + 1)
    if binary:
        inputs = np.arange(2, 2 * n_i + 1, 2, dtype=np.int64)
        p.defined.append((inputs >> 1, "input", -1))
    else:
        inputs = p.section("i", n_i, define=True)
    latches = _latches(r, p, n_i, n_l, binary)
    outputs = p.section("o", n_o)
    bad = p.section("b", n_b)
    constraints = p.section("c", n_c)
    sizes = []
    for k in range(n_j):
        (size,), at = r.numbers(f"justice property {k} size", (1,))
        if size == 0:
            raise r.fail(f"justice property {k}: it must have at least one literal", at)
        sizes.append(size)
    if sum(sizes) > data.count(b"\n", r.pos) + 1:
        raise r.fail("justice properties: their sizes declare more lines than the file has")
    justice_flat = p.section("j", sum(sizes))
    fairness = p.section("f", n_f)
    if binary:
        ands = _binary_ands(r, n_i + n_l, n_a)
        p.defined.append((ands[:, 0] >> 1, "AND gate", -1))
    else:
        ands = p.section("a", n_a, width=3, define=True)
    symbols = _symbols(r, (n_i, n_l, n_o, n_b, n_c, n_j, n_f))
    comments: list[str] = []
    if r.pos < len(data):
        words, at = r.line("a comment")
        if words != [b"c"]:
            raise r.fail(f"expected a symbol ('i0 name'), the comment line 'c' or the end of the file, got "
                         f"{_show(r.raw(at))}", at)
        comments = data[r.pos :].decode("utf-8", "replace").splitlines()
    p.check_definitions(m)
    if not binary:
        _check_acyclic(r, ands, p)
    justice, k = [], 0
    for size in sizes:
        justice.append(tuple(int(x) for x in justice_flat[k : k + size]))
        k += size
    return Aig(
        m,
        tuple(inputs.tolist()),
        latches,
        tuple(outputs.tolist()),
        tuple(And(*g) for g in ands.tolist()),
        tuple(bad.tolist()),
        tuple(constraints.tolist()),
        tuple(justice),
        tuple(fairness.tolist()),
        tuple(sorted(symbols.items(), key=_symbol_key)),
        tuple(comments),
    )


class _Parts:
    """The sections read so far, their definitions and uses, checked together once the whole file is read."""

    def __init__(self, r: _Reader, top: int) -> None:
        self.r = r
        self.top = top
        # (variables, section name, offset of the section's first line or -1 for binary-implicit definitions)
        self.defined: list[tuple[np.ndarray, str, int]] = []
        self.used: list[tuple[np.ndarray, str, int]] = []

    def at_item(self, start: int, k: int) -> int:
        """The offset of the k-th line from ``start``."""
        pos = start
        for _ in range(k):
            pos = self.r.data.find(b"\n", pos) + 1
        return pos

    def section(self, kind: str, count: int, width: int = 1, define: bool = False) -> np.ndarray:
        """``count`` lines of ``width`` literals: definitions (first column when ``define``) and uses."""
        r = self.r
        name = _SECTION[kind]
        start = r.pos
        arr = r.block(count, width)
        if arr is None:  # some line is malformed: read line by line to name it
            for k in range(count):
                r.numbers(f"{name} {k}", (width,))
            raise AssertionError("a malformed line was not found")  # pragma: no cover
        big = np.flatnonzero((arr > self.top).any(axis=1))
        if big.size:
            k = int(big[0])
            lit = int(arr[k][arr[k] > self.top][0])
            raise r.fail(f"{name} {k}: literal {lit} exceeds 2M + 1 = {self.top}", self.at_item(start, k))
        if define:
            lhs = arr[:, 0]
            bad = np.flatnonzero((lhs & 1) | (lhs < 2))
            if bad.size:
                k = int(bad[0])
                raise r.fail(f"{name} {k}: literal {int(lhs[k])} must be even and at least 2 (a positive variable)",
                             self.at_item(start, k))
            self.defined.append((lhs >> 1, name, start))
            uses = arr[:, 1:]
        else:
            uses = arr
        if uses.size:
            self.used.append((uses, name, start))
        return arr if width > 1 else arr[:, 0]

    def check_definitions(self, m: int) -> None:
        """Each variable defined once; every literal used is constant or defined."""
        r = self.r
        # Sized by the largest variable the file mentions, not by M: a header may declare a huge M and use little.
        top = max([0, *(int(v.max()) for v, _, _ in self.defined if v.size),
                   *(int(u.max()) >> 1 for u, _, _ in self.used if u.size)])
        owner = np.full(top + 1, -1, dtype=np.int64)
        for s, (vars_, name, start) in enumerate(self.defined):
            seen = owner[vars_]
            clash = np.flatnonzero(seen >= 0)
            if clash.size == 0:
                u, counts = np.unique(vars_, return_counts=True)
                twice = u[counts > 1]
                if twice.size == 0:
                    owner[vars_] = s
                    continue
                k = int(np.flatnonzero(vars_ == twice[0])[1])
            else:
                k = int(clash[0])
            at = self.at_item(start, k) if start >= 0 else None
            raise r.fail(f"{name} {k}: variable {int(vars_[k])} is defined twice", at)
        for uses, name, start in self.used:
            undefined = (uses > 1) & (owner[uses >> 1] < 0)
            rows = np.flatnonzero(undefined.any(axis=1) if uses.ndim > 1 else undefined)
            if rows.size:
                k = int(rows[0])
                row = uses[k] if uses.ndim > 1 else uses[k : k + 1]
                lit = int(row[(row > 1) & (owner[row >> 1] < 0)][0])
                raise r.fail(f"{name} {k}: literal {lit} uses variable {lit >> 1}, which is neither an input, a latch "
                             "nor an AND gate", self.at_item(start, k) if start >= 0 else None)


def _latches(r: _Reader, p: _Parts, n_i: int, n_l: int, binary: bool) -> tuple[Latch, ...]:
    """Latch lines: ``lit next [reset]`` (ASCII) or ``next [reset]`` (binary, the literal implicit)."""
    latches = []
    lits, nexts = [], []
    start = r.pos
    for k in range(n_l):
        what = f"latch {k}"
        if binary:
            nums_l, at = r.numbers(what, (1, 2))
            lit = 2 * (n_i + k + 1)
        else:
            nums_l, at = r.numbers(what, (2, 3))
            lit = nums_l.pop(0)
            if lit & 1 or lit < 2:
                raise r.fail(f"{what}: literal {lit} must be even and at least 2 (a positive variable)", at)
        for x in (lit, nums_l[0]):
            if x > p.top:
                raise r.fail(f"{what}: literal {x} exceeds 2M + 1 = {p.top}", at)
        reset = nums_l[1] if len(nums_l) > 1 else 0
        if reset not in (0, 1, lit):
            raise r.fail(f"{what}: reset {reset} is neither 0, 1 nor the latch's literal {lit}", at)
        latches.append(Latch(lit, nums_l[0], reset))
        lits.append(lit)
        nexts.append(nums_l[0])
    p.defined.append((np.array(lits, dtype=np.int64) >> 1, "latch", start))
    if nexts:
        p.used.append((np.array(nexts, dtype=np.int64), "latch", start))
    return tuple(latches)


def _symbol_key(item: tuple[tuple[str, int], str]) -> tuple[int, int]:
    (kind, pos), _ = item
    return SYMBOL_KINDS.index(kind), pos


def _binary_ands(r: _Reader, first: int, n_a: int) -> np.ndarray:
    """The binary AND section: per gate, two 7-bit little-endian varints ``lhs - rhs0`` and ``rhs0 - rhs1``.

    Decoded at once with numpy: a varint ends at each byte below 0x80, so the section is the first ``2 * n_a`` such
    bytes from here.
    """
    out = np.zeros((n_a, 3), dtype=np.int64)
    out[:, 0] = 2 * (first + 1 + np.arange(n_a, dtype=np.int64))
    if n_a == 0:
        return out
    raw = np.frombuffer(r.data, dtype=np.uint8, offset=r.pos)
    ends = np.flatnonzero(raw < 0x80)[: 2 * n_a]
    if ends.size < 2 * n_a:
        k = ends.size // 2
        raise r.fail(f"AND gate {k} (literal {2 * (first + k + 1)}): the binary AND section ends inside its deltas",
                     r.pos + (int(ends[-1]) + 1 if ends.size else 0))
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    long = np.flatnonzero(lengths > 5)
    if long.size:
        k = int(long[0]) // 2
        raise r.fail(f"AND gate {k} (literal {2 * (first + k + 1)}): a delta longer than 5 bytes",
                     r.pos + int(starts[long[0]]))
    section = raw[: int(ends[-1]) + 1].astype(np.int64)
    shift = 7 * (np.arange(section.size) - np.repeat(starts, lengths))
    values = np.add.reduceat((section & 0x7F) << shift, starts)
    d0, d1 = values[0::2], values[1::2]
    lhs = out[:, 0]
    bad = np.flatnonzero((d0 == 0) | (d0 > lhs) | (d1 > lhs - d0))
    if bad.size:
        k = int(bad[0])
        raise r.fail(f"AND gate {k} (literal {int(lhs[k])}): deltas {int(d0[k])}, {int(d1[k])} break "
                     "lhs > rhs0 >= rhs1 >= 0", r.pos + int(starts[2 * k]))
    out[:, 1] = lhs - d0
    out[:, 2] = lhs - d0 - d1
    r.pos += int(ends[-1]) + 1
    return out


def _symbols(r: _Reader, counts: tuple[int, ...]) -> dict[tuple[str, int], str]:
    """Symbol lines ``<kind><position> <name>`` up to the comment line ``c`` or the end of the file."""
    data = r.data
    symbols: dict[tuple[str, int], str] = {}
    while r.pos < len(data):
        start = r.pos
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        raw = data[start:end]
        if raw == b"c":
            return symbols
        kind = chr(raw[0]) if raw else ""
        head, sep, name = raw.partition(b" ")
        digits = head[1:]
        if kind not in SYMBOL_KINDS or not sep or not digits.isdigit() or not digits.isascii():
            raise r.fail(f"symbol table: expected '<kind><position> <name>' with kind one of "
                         f"{', '.join(SYMBOL_KINDS)}, or the comment line 'c', got {_show(raw)}", start)
        pos = int(digits)
        count = counts[SYMBOL_KINDS.index(kind)]
        if pos >= count:
            raise r.fail(f"symbol table: {_SECTION[kind]} {pos} does not exist (the header declares {count})", start)
        try:
            text = name.decode("utf-8")
        except UnicodeDecodeError as ex:
            msg = f"symbol table: the name of {_SECTION[kind]} {pos} is not UTF-8 ({ex.reason})"
            raise r.fail(msg, start) from None
        if not text or text.strip() != text or any(not c.isprintable() for c in text):
            raise r.fail(f"symbol table: the name of {_SECTION[kind]} {pos} is empty, has surrounding spaces or "
                         f"unprintable characters: {_show(name)}", start)
        if (kind, pos) in symbols:
            raise r.fail(f"symbol table: {_SECTION[kind]} {pos} is named twice", start)
        symbols[(kind, pos)] = text
        r.pos = end + 1
    return symbols


def _check_acyclic(r: _Reader, ands: np.ndarray, p: _Parts) -> None:
    """The AND gates form no cycle (an ASCII file may list them in any order); the error names a gate on one.

    Gates whose inputs all have smaller variables (the usual order) cannot be on a cycle; a depth-first search
    looks at the rest.
    """
    if ands.size == 0 or bool((ands[:, 0] > ands[:, 1:].max(axis=1)).all()):
        return
    gate = {int(g[0]) >> 1: k for k, g in enumerate(ands)}
    state: dict[int, int] = {}  # 1: on the stack, 2: done
    for root in gate:
        if root in state:
            continue
        stack = [(root, 0)]
        state[root] = 1
        while stack:
            var, k = stack.pop()
            if k == 2:
                state[var] = 2
                continue
            stack.append((var, k + 1))
            kid = int(ands[gate[var], 1 + k]) >> 1
            if kid in gate:
                s = state.get(kid)
                if s == 1:
                    row = gate[var]
                    start = p.defined[-1][2]
                    raise r.fail(f"AND gate {row} (literal {int(ands[row, 0])}): combinational cycle through "
                                 f"variable {kid}", p.at_item(start, row))
                if s is None:
                    state[kid] = 1
                    stack.append((kid, 0))


def parse_file(path: str | os.PathLike[str]) -> Aig:
    """The circuit in the ``.aag`` or ``.aig`` file at ``path`` (the header says which, not the extension)."""
    name = file_name(path)
    return parse(read_bytes(path), file=name)


__all__ = ["MAX_INPUTS", "MAX_VAR", "parse", "parse_file"]
