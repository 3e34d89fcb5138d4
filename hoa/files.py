"""Reading user files as text: one reader, so every command reports a missing, unreadable, binary or non-UTF-8 file
(and one too large to read safely) with the same one-line message naming the file.

>>> read_text("missing.hoa")  # doctest: +SKIP
Gf01Error: missing.hoa: cannot read: No such file or directory
"""

from __future__ import annotations

import os
from pathlib import Path

from hoa.errors import Gf01Error, quote

#: Largest input file read (bytes). Parsing keeps a few objects per token: a 48 MB one-line HOA file peaks near
#: 2 GB, so four times that would exhaust a laptop; refuse it with a clear message instead.
MAX_INPUT_BYTES = 64 << 20


def read_bytes(path: str | os.PathLike[str], *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the file at ``path`` (for binary formats such as AIGER's ``.aig``); Gf01Error naming the file
    when it cannot be read or is larger than ``limit``."""
    name = file_name(path)
    try:
        with Path(path).open("rb") as fh:
            data = fh.read(limit + 1)
    except IsADirectoryError:
        raise Gf01Error("is a directory, not a file", file=name) from None
    except OSError as ex:
        raise Gf01Error(f"cannot read: {ex.strerror or ex}", file=name) from None
    if len(data) > limit:
        raise Gf01Error(f"larger than the {limit >> 20} MiB an input file may have", file=name)
    return data


def file_name(path: str | os.PathLike[str]) -> str:
    """``path`` as error messages name it (cut to 200 characters)."""
    return quote(os.fspath(path), 200, bare=True)


def read_text(path: str | os.PathLike[str], *, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the file at ``path``; Gf01Error naming the file when it cannot be read as such."""
    name = file_name(path)
    data = read_bytes(path, limit=limit)
    nul = data.find(b"\0")
    if nul >= 0:
        raise Gf01Error(f"binary data (a NUL byte at offset {nul}), not text", file=name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as ex:
        raise Gf01Error(f"not UTF-8 text ({ex.reason} at byte {ex.start})", file=name) from None
