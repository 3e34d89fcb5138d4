"""Reading user files as text: one reader, so every command reports a missing, unreadable, binary or non-UTF-8 file
(and one too large to read safely) with the same one-line message naming the file. The path ``-`` is standard input
(``ltlsynt ... | gf01 oracle - --trace ...``), read to its end, bounded as a file is.

>>> read_text("missing.hoa")
Traceback (most recent call last):
hoa.errors.Gf01Error: missing.hoa: cannot read: No such file or directory
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from typing import BinaryIO

from hoa.errors import Gf01Error, quote

#: Largest input file read (bytes). Parsing keeps a few objects per token: a 48 MB one-line HOA file peaks near
#: 2 GB, so four times that would exhaust a laptop; refuse it with a clear message instead.
MAX_INPUT_BYTES = 64 << 20
#: The path that names standard input, and how messages name it.
STDIN = "-"
STDIN_NAME = "<stdin>"


def file_name(path: str | os.PathLike[str]) -> str:
    """``path`` as error messages name it (cut to 200 characters)."""
    if os.fspath(path) == STDIN:
        return STDIN_NAME
    return quote(os.fspath(path), 200, bare=True)


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for reading in binary, refused (Gf01Error naming it) unless it is a regular file: a FIFO
    would block the command forever, a device may never end. The open itself never blocks."""
    name = file_name(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as ex:
        raise Gf01Error(f"cannot read: {ex.strerror or ex}", file=name) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise Gf01Error("is a directory, not a file", file=name)
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            raise Gf01Error(f"is {kind}, not a regular file: give a file", file=name)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the file at ``path`` (for binary formats such as AIGER's ``.aig``); Gf01Error naming the file
    when it cannot be read, is not a regular file, or is larger than ``limit``."""
    name = file_name(path)
    if os.fspath(path) == STDIN:
        return _read_stdin(limit)
    with open_regular(path) as fh:
        try:
            # A buffer the size of the file, not of the limit: read(limit) would reserve the limit up front.
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(min(size, limit) + 1)
            if limit >= len(data) > size:  # the file grew while being read
                data += fh.read(limit + 1 - len(data))
        except OSError as ex:
            raise Gf01Error(f"cannot read: {ex.strerror or ex}", file=name) from None
    if len(data) > limit:
        raise Gf01Error(f"larger than the {limit >> 20} MiB an input file may have", file=name)
    return data


def _read_stdin(limit: int) -> bytes:
    """Standard input to its end (at most ``limit`` bytes), refused when it is a terminal: a command waiting for a
    file typed by hand is a user's mistake, not a use."""
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None:
        raise Gf01Error("cannot read: there is no standard input", file=STDIN_NAME)
    try:
        if os.isatty(stream.fileno()):
            raise Gf01Error("standard input is a terminal: pipe the file in (e.g. ltlsynt ... | gf01 ... -)",
                            file=STDIN_NAME)
    except (OSError, ValueError):
        pass  # no descriptor (a test's captured stream): read what it holds
    try:
        data = stream.read(limit + 1)
    except OSError as ex:
        raise Gf01Error(f"cannot read: {ex.strerror or ex}", file=STDIN_NAME) from None
    if len(data) > limit:
        raise Gf01Error(f"larger than the {limit >> 20} MiB an input file may have", file=STDIN_NAME)
    return data


def read_text(path: str | os.PathLike[str], *, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the file at ``path``; Gf01Error naming the file when it cannot be read as such."""
    return _decode(read_bytes(path, limit=limit), file_name(path))


def iter_lines(path: str | os.PathLike[str], *, limit: int = MAX_INPUT_BYTES) -> Iterator[str]:
    """The lines of the text file at ``path``, each with its newline (the last one may lack it), read one at a time:
    memory holds one line, whatever the file's size, and a line is never read past ``limit`` bytes (a longer one is
    a Gf01Error naming it, not a buffer as large as the file). Only a newline ends a line (JSON text may hold
    U+2028)."""
    name = file_name(path)
    with open_regular(path) as fh:
        offset = 0
        for number, raw in enumerate(iter(lambda: fh.readline(limit + 1), b""), start=1):
            if len(raw) > limit:
                raise Gf01Error(f"a line longer than the {limit >> 20} MiB a line may have", file=name, line=number)
            yield _decode(raw, name, line=number, offset=offset)
            offset += len(raw)


def _decode(data: bytes, name: str, *, line: int | None = None, offset: int = 0) -> str:
    nul = data.find(b"\0")
    if nul >= 0:
        raise Gf01Error(f"binary data (a NUL byte at offset {offset + nul}), not text", file=name, line=line)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as ex:
        raise Gf01Error(f"not UTF-8 text ({ex.reason} at byte {offset + ex.start})", file=name, line=line) from None
