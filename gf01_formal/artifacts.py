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
import fcntl
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
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
    - one of the command's ``inputs`` (the same file after symlinks are resolved, or the same path when neither
      exists yet: an input the command makes, like a pilot's key, or another of its outputs): writing it would
      destroy what the command reads or writes;
    - a file another process holds the lock of (a runs file that ``evaluate``, ``campaign`` or ``serve`` writes:
      :func:`lock_exclusive`): replacing it would lose the records written so far;
    - a block device, or a character device that is neither a null-like sink (``/dev/null``, ``/dev/zero``) nor a
      terminal (:func:`device_refusal`).

    A symlink is followed (its target is written, the link stays); a FIFO, a null-like sink and a terminal are
    written through (:func:`write_text_atomic`).
    """
    shown = quote(os.fspath(path), 200, bare=True)
    _refuse_too_long(path, shown)
    target = Path(path)
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
        for source in inputs:
            if source is not None and (_same_file(st, source) if st is not None else _same_path(real, source)):
                raise Gf01Error(f"is also an input of this command ({quote(os.fspath(source), 200, bare=True)});"
                                " writing it would destroy it: give another output", file=shown)
        if st is not None:
            refusal = device_refusal(st)
            if refusal is not None:
                raise Gf01Error(refusal, file=shown)
        if st is not None and stat.S_ISREG(st.st_mode):
            check_unlocked(real, shown)
        if st is not None and not stat.S_ISREG(st.st_mode):  # a sink, terminal or FIFO, written through
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
    _refuse_too_long(path, shown)
    try:
        real = Path(os.path.realpath(path))
        if real.exists() and not real.is_dir():
            raise Gf01Error("is not a directory", file=shown)
    except OSError as ex:  # a name too long, a symlink loop
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    for name in names:
        check_output(real / name, inputs=inputs)
    return real


#: Character devices written through: the null-like sinks (mem 1:3 /dev/null, 1:5 /dev/zero), the terminals (4:N
#: virtual consoles and serial lines, 5:0 /dev/tty, 136-143:N pseudo-terminals). Every other device, a disk's block
#: device above all, is refused: ``-o`` names a file, and writing "over" a device writes into what it stands for.
_NULL_LIKE = {(1, 3), (1, 5)}
_TERMINAL_MAJORS = {4, *range(136, 144)}


def device_refusal(st: os.stat_result) -> str | None:
    """Why the device of ``st`` must not be an output, or None when it is no device or one written through."""
    if stat.S_ISBLK(st.st_mode):
        return "is a block device (a disk or a partition); give a file name to write"
    if not stat.S_ISCHR(st.st_mode):
        return None
    major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
    if (major, minor) in _NULL_LIKE or major in _TERMINAL_MAJORS or (major, minor) == (5, 0):
        return None
    return (f"is a system device ({major}:{minor}); only /dev/null-like sinks and terminals are written through: "
            "give a file name to write")


def check_unlocked(path: Path, shown: str | None = None) -> None:
    """A Gf01Error naming the holder when another writer holds the lock of the file ``path`` (a missing file, or
    one that cannot be opened to ask, is no one's)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            raise _locked(st, shown or quote(os.fspath(path), 200, bare=True)) from None
    finally:
        os.close(fd)


def _locked(st: os.stat_result, shown: str, what: str = "file") -> Gf01Error:
    holder = lock_holder(st)
    who = f"process {holder}" if holder is not None else "another process"
    return Gf01Error(f"{who} is writing this {what} (it holds the lock); wait for it to finish, or give another file",
                     file=shown)


def lock_exclusive(path: Path) -> int | None:
    """Open ``path`` (created when missing) and take an exclusive lock on it; the descriptor holds the lock until it
    is closed (or the process dies). A second writer, and every output check (:func:`check_output`,
    :func:`write_text_atomic`), gets a Gf01Error naming the holder's process id. A null-like sink or terminal
    (``-o /dev/null``) is written through unlocked; another device, a FIFO or a socket is refused: a runs file is
    read back."""
    name = quote(os.fspath(path), 200, bare=True)
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY,
                         0o644)
        except OSError as ex:
            raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=name) from None
        st = os.fstat(fd)
        refusal = device_refusal(st)
        if refusal is not None:
            os.close(fd)
            raise Gf01Error(refusal, file=name)
        if stat.S_ISCHR(st.st_mode):
            os.close(fd)
            return None
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise Gf01Error("not a regular file: a runs file is read back (to resume) and locked; give a regular "
                            "file", file=name)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise _locked(st, name, "runs file") from None
        # Another command may have replaced the file between the open and the lock (its own write holds the old
        # file's lock while it renames): the lock must be on the file the name names now.
        try:
            now = os.stat(path)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            return fd
        os.close(fd)


def lock_holder(st: os.stat_result) -> int | None:
    """The process id that holds a flock on the file of ``st``, from /proc/locks (None when it cannot be told)."""
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii") as fh:
            for line in fh:
                parts = line.split()
                # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (a blocked waiter has "->" after the number)
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == dev:
                    return int(parts[4])
    except (OSError, ValueError):
        pass
    return None


#: The longest path the kernel takes, NUL included (Linux's PATH_MAX): a longer one is refused by every system call
#: (ENAMETOOLONG), whatever it would resolve to.
PATH_MAX = 4096


def _refuse_too_long(path: str | os.PathLike[str], shown: str) -> None:
    """The kernel's own refusal of a path it would never take (ENAMETOOLONG), said before the path is resolved:
    ``os.path.realpath`` of a 10 MB argument takes a tenth of a second or more before the first system call fails.
    Characters are at most bytes, so a path refused here is longer than PATH_MAX in any encoding."""
    if len(os.fspath(path)) >= PATH_MAX:
        raise Gf01Error(f"cannot write: {os.strerror(errno.ENAMETOOLONG)}", file=shown)


def _same_path(real: Path, other: str | os.PathLike[str]) -> bool:
    """Whether ``other`` names the path ``real`` (both missing: the files the command is about to make)."""
    if len(os.fspath(other)) >= PATH_MAX:  # no file has that name: reading it fails, and says so (ENAMETOOLONG)
        return False
    try:
        return Path(os.path.realpath(other)) == real
    except (OSError, ValueError):
        return False


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


def write_text_atomic(path: str | Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` atomically: readers see the old file or the whole new one, never a part.

    A symlink is followed (its target is written; the link stays a link). An existing null-like sink, terminal or
    FIFO is written through, never replaced by a regular file (``-o /dev/null`` as root leaves the device a device);
    another device is refused (:func:`device_refusal`), and so is a FIFO without a reader rather than waited on. A
    file another process holds the lock of (a runs file being written) is refused, and the old file's lock is held
    while it is replaced. ``mode`` sets the new file's permissions (a secret's 0o600); by default it keeps the
    replaced file's, or gets rw-r--r--.
    """
    shown = quote(os.fspath(path), 200, bare=True)
    _refuse_too_long(path, shown)
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
        if mode is None:
            mode = st.st_mode & 0o777 if st is not None else 0o644
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as ex:
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    held: int | None = None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        held = _hold(target, shown)
        os.replace(tmp, target)
    except OSError as ex:
        Path(tmp).unlink(missing_ok=True)
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        if held is not None:
            os.close(held)


def _hold(target: Path, shown: str) -> int | None:
    """The exclusive lock of the file about to be replaced (its descriptor; None when there is none), or a
    Gf01Error naming the process that holds it: a runs file being written is never replaced under its writer."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError:  # missing, or unreadable (no writer of ours could have opened it either)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        st = os.fstat(fd)
        os.close(fd)
        raise _locked(st, shown) from None
    return fd


def _write_through(target: Path, text: str, st: os.stat_result, shown: str) -> None:
    """Write ``text`` into an existing device or FIFO (opened for writing, not replaced)."""
    if stat.S_ISDIR(st.st_mode):
        raise Gf01Error("is a directory; give a file name to write", file=shown)
    if stat.S_ISSOCK(st.st_mode):
        raise Gf01Error("is a socket; give a file name to write", file=shown)
    refusal = device_refusal(st)
    if refusal is not None:
        raise Gf01Error(refusal, file=shown)
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


def spec_digest(spec: Mapping[str, Any]) -> str:
    """sha256 of an agent spec's identity: its canonical JSON, except that an external program whose spec carries
    its content hash (``params.program_sha256``, :func:`gf01_formal.agents.base.program_sha256`) counts by what it
    runs, not where it lies: the command's words (and its ``--agent-output`` file) with every path cut to its file
    name. So the same program, moved, keeps its run ids, and a changed program gets new ones. Here, not in agents/,
    so that a report labels agents without loading them."""
    params = spec.get("params")
    if isinstance(params, Mapping) and isinstance(params.get("program_sha256"), str) and \
            isinstance(params.get("cmd"), str):
        import shlex

        try:
            words = shlex.split(params["cmd"])
        except ValueError:
            words = [params["cmd"]]
        cut = {"cmd": [os.path.basename(w) if "/" in w else w for w in words]}
        if isinstance(params.get("output"), str):  # --agent-output: where its log goes, not what runs
            cut["output"] = os.path.basename(params["output"])
        spec = {**spec, "params": {**params, **cut}}
    return sha256_hex(dict(spec))
