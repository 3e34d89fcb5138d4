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

import errno
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable
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


def check_output(path: str | Path, *, inputs: Iterable[str | os.PathLike[str] | None] = (),
                 reread: bool = False) -> Path:
    """Refuse, before any work is done, an output path that cannot be written, or must not be (docs/outputs.md):

    - a directory, or a file whose nearest existing parent is not a writable directory (missing parent directories
      are created when the file is written);
    - a socket; a FIFO when ``reread`` (a runs file is read back to resume and locked, which a FIFO cannot be);
    - one of the command's ``inputs`` (the same file after symlinks are resolved): writing it would destroy what
      the command reads.

    A symlink is followed (its target is written, the link stays) and a device or FIFO is written through
    (:func:`write_text_atomic`), so neither is refused here.
    """
    target = Path(path)
    shown = quote(os.fspath(path), 200, bare=True)
    try:
        real = Path(os.path.realpath(target))
        if real.is_dir():
            raise Gf01Error("is a directory; give a file name to write", file=shown)
        st = _stat(real)
        if st is not None and stat.S_ISSOCK(st.st_mode):
            raise Gf01Error("is a socket; give a file name to write", file=shown)
        if st is not None and stat.S_ISFIFO(st.st_mode) and reread:
            raise Gf01Error("is a FIFO: a runs file is read back (to resume) and locked; give a regular file",
                            file=shown)
        if st is not None:
            for source in inputs:
                if source is not None and _same_file(st, source):
                    raise Gf01Error(f"is also an input of this command ({quote(os.fspath(source), 200, bare=True)});"
                                    " writing it would destroy it: give another output", file=shown)
        if st is not None and not stat.S_ISREG(st.st_mode):  # a device or FIFO, written through: no file is made
            if not os.access(real, os.W_OK):
                raise Gf01Error("cannot write: permission denied", file=shown)
            return target
        parent = real.parent
        while not parent.exists():
            if parent == parent.parent:
                break
            parent = parent.parent
        if not parent.is_dir():
            raise Gf01Error(f"cannot write: {quote(str(parent), 200, bare=True)} is not a directory", file=shown)
        if not os.access(parent, os.W_OK | os.X_OK) or (st is not None and not os.access(real, os.W_OK)):
            raise Gf01Error("cannot write: permission denied", file=shown)
        # os.access answers yes to root everywhere, and knows nothing of read-only mounts: create (and remove) a
        # file where the output or its first missing directory will go, which is what the write will need.
        fd, probe = tempfile.mkstemp(prefix=".gf01-probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as ex:  # a name too long, a path through a file, a read-only or full file system, a symlink loop
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    return target


def check_output_dir(path: str | Path, *, inputs: Iterable[str | os.PathLike[str] | None] = (),
                     names: Iterable[str] = ()) -> Path:
    """The directory ``path`` resolved (a symlink, dangling or not, is followed: its target is the directory),
    refused when it is an existing non-directory, when it cannot be written, or when one of ``names`` in it (the
    files the command writes there) is one of its ``inputs``."""
    shown = quote(os.fspath(path), 200, bare=True)
    try:
        real = Path(os.path.realpath(path))
        if real.exists() and not real.is_dir():
            raise Gf01Error("is not a directory", file=shown)
    except OSError as ex:  # a name too long, a symlink loop
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    for name in names:
        check_output(real / name, inputs=inputs)
    return real


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _same_file(st: os.stat_result, other: str | os.PathLike[str]) -> bool:
    try:
        o = os.stat(other)
    except (OSError, ValueError):  # a missing input is the reader's error, reported there
        return False
    return (st.st_dev, st.st_ino) == (o.st_dev, o.st_ino)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: readers see the old file or the whole new one, never a part.

    A symlink is followed (its target is written; the link stays a link). An existing device or FIFO is written
    through, never replaced by a regular file (``-o /dev/null`` as root leaves the device a device); a FIFO without
    a reader is refused rather than waited on.
    """
    shown = quote(os.fspath(path), 200, bare=True)
    try:
        target = Path(os.path.realpath(path))
        st = _stat(target)
    except OSError as ex:
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_through(target, text, st, shown)
        return
    directory = target.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # mkstemp creates the file readable by its owner only; an artifact keeps the mode of the file it replaces,
        # or gets the usual rw-r--r--.
        mode = st.st_mode & 0o777 if st is not None else 0o644
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


def _write_through(target: Path, text: str, st: os.stat_result, shown: str) -> None:
    """Write ``text`` into an existing device or FIFO (opened for writing, not replaced)."""
    if stat.S_ISDIR(st.st_mode):
        raise Gf01Error("is a directory; give a file name to write", file=shown)
    if stat.S_ISSOCK(st.st_mode):
        raise Gf01Error("is a socket; give a file name to write", file=shown)
    try:
        # Non-blocking open: a FIFO nobody reads is an error now, not a hang.
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as ex:
        if ex.errno == errno.ENXIO:
            raise Gf01Error("is a FIFO that nobody reads; start its reader first", file=shown) from None
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    try:
        os.set_blocking(fd, True)
        view = memoryview(text.encode("utf-8"))
        while view:
            view = view[os.write(fd, view):]
    except OSError as ex:
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    finally:
        os.close(fd)


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
