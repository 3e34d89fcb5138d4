"""Artifact files: canonical JSON, content hashes and atomic writes (docs/instances.md).

Every artifact is JSON with sorted keys. Content hashes are the sha256 of the *canonical* JSON text: sorted keys,
compact separators ``(",", ":")``, UTF-8, no NaN/Infinity. Files on disk use the same key order, indented, and are
written atomically (a temporary file in the target directory, then ``os.replace``).

>>> canonical_json({"b": 1, "a": [1, 2]})
'{"a":[1,2],"b":1}'
>>> sha256_hex({"a": 1})[:12]
'015abd7f5cc5'
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hoa.errors import Gf01Error, quote
from hoa.files import read_text


def canonical_json(obj: Any) -> str:
    """The canonical JSON text of ``obj``: sorted keys, compact separators, non-ASCII kept, no NaN."""
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as ex:  # NaN/Infinity have no JSON form; an artifact must never carry them
        raise Gf01Error(f"cannot serialise to canonical JSON: {ex}") from ex


def sha256_hex(obj: Any) -> str:
    """The content hash of ``obj``: sha256 hex digest of its canonical JSON (UTF-8)."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def pretty_json(obj: Any) -> str:
    """The on-disk text of an artifact: sorted keys, two-space indent, trailing newline."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def check_output(path: str | Path) -> Path:
    """Refuse, before any work is done, an output path that cannot be written: a directory, or a file whose nearest
    existing parent is not a writable directory. Missing parent directories are created when the file is written."""
    target = Path(path)
    shown = quote(os.fspath(path), 200, bare=True)
    try:
        if target.is_dir():
            raise Gf01Error("is a directory; give a file name to write", file=shown)
        parent = target.parent
        while not parent.exists():
            if parent == parent.parent:
                break
            parent = parent.parent
        if not parent.is_dir():
            raise Gf01Error(f"cannot write: {quote(str(parent), 200, bare=True)} is not a directory", file=shown)
        if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
            raise Gf01Error("cannot write: permission denied", file=shown)
        # os.access answers yes to root everywhere, and knows nothing of read-only mounts: create (and remove) a
        # file where the output or its first missing directory will go, which is what the write will need.
        fd, probe = tempfile.mkstemp(prefix=".gf01-probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as ex:  # a name too long, a path through a file, a read-only or full file system
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    return target


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: readers see the old file or the whole new one, never a part."""
    target = Path(path)
    shown = quote(os.fspath(path), 200, bare=True)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # mkstemp creates the file readable by its owner only; an artifact keeps the mode of the file it replaces,
        # or gets the usual rw-r--r--.
        mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as ex:
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as ex:
        Path(tmp).unlink(missing_ok=True)
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as an artifact file (:func:`pretty_json`) atomically."""
    write_text_atomic(path, pretty_json(obj))


def parse_json(text: str, *, file: str | None = None) -> Any:
    """Decode JSON text; anything that is not reasonable JSON (bad syntax, nesting too deep, a number too long, a
    NaN) raises Gf01Error naming the file, with the line and column where the decoder says."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as ex:
        raise Gf01Error(f"invalid JSON: {ex.msg}", file=file, line=ex.lineno, col=ex.colno) from None
    except RecursionError:
        raise Gf01Error("invalid JSON: nested too deeply", file=file) from None
    except ValueError as ex:  # e.g. an integer of more than 4300 digits, or NaN/Infinity
        msg = "a number with more than 4300 digits" if "digits" in str(ex) else quote(str(ex), 120, bare=True)
        raise Gf01Error(f"invalid JSON: {msg}", file=file) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_json(path: str | Path) -> Any:
    """Load a JSON artifact; an unreadable file or bad JSON raises Gf01Error naming the file (and line/column)."""
    return parse_json(read_text(path), file=quote(os.fspath(path), 200, bare=True))
