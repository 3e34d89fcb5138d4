"""Artifact files: canonical JSON, content hashes and atomic writes (DESIGN.md §3.6).

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

from hoa.errors import Gf01Error


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


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: readers see the old file or the whole new one, never a part."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file readable by its owner only; an artifact keeps the mode of the file it replaces,
    # or gets the usual rw-r--r--.
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as an artifact file (:func:`pretty_json`) atomically."""
    write_text_atomic(path, pretty_json(obj))


def read_json(path: str | Path) -> Any:
    """Load a JSON artifact; a missing file or bad JSON raises Gf01Error naming the file (and line/column)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as ex:
        raise Gf01Error(f"cannot read: {ex.strerror or ex}", file=str(p)) from ex
    try:
        return json.loads(text)
    except json.JSONDecodeError as ex:
        raise Gf01Error(f"invalid JSON: {ex.msg}", file=str(p), line=ex.lineno, col=ex.colno) from ex
