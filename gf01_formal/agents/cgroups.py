"""Limits of a sandboxed agent's whole process tree: one control group per episode (Linux cgroups), where the machine
lets the harness make one.

The sandbox's rlimits bound each process (agents/sandbox.py): 1 GiB of address space and 300 s of CPU each, and
under a root harness 64 tasks of the episode's own uid. What they cannot bound is the tree: 64 processes of 1 GiB
each, or busy on every core at once. A control group does: the episode's program is moved into a group of its own
before it is executed (in the child, between fork and exec: everything it starts is in the group from its first
instruction on), and the group has

- ``memory``: the memory of every process of the tree together, the pages of its private /tmp included (tmpfs pages
  are charged to the group that wrote them); past it the kernel's OOM killer ends a process of the group;
- ``pids``: the tasks (processes and threads) of the tree together; past it fork() and clone() fail (EAGAIN);
- ``cpu``: a CPU rate of ``cpu_cores`` cores for the tree together (a quota per 100 ms period), so its CPU time is at
  most its wall time times that, whatever it starts.

Where: cgroup v2 (the unified hierarchy, when its ``cgroup.controllers`` offers the controller and the harness's
own group can delegate it to a child) or, failing that, cgroup v1 (one hierarchy per controller, as on machines
whose v2 mount holds no controller). Each controller is found on its own: the record says, per limit, whether it
held (:meth:`Tree.held`), and a limit that could not be set is recorded as not held (null), never claimed. Nothing
is made where /sys/fs/cgroup is not writable (an unprivileged harness without delegation, most containers): then
only the per-process limits hold, and the record says so.

Used by the subprocess agent: ``tree = Tree.make(limits)``; ``tree.open()`` before the fork, ``tree.enter()`` in
the child, ``tree.confirm(pid)`` and ``tree.closed()`` in the parent once it started, ``tree.remove()`` at the end.
Groups left by a harness that was killed (kill -9) are removed by the next harness that looks for its places.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The CPU quota's period (microseconds): the kernel's default.
PERIOD_US = 100_000
_CONTROLLERS = ("memory", "pids", "cpu")
_episodes = itertools.count()


@dataclass(frozen=True)
class TreeLimits:
    """What the whole process tree of one episode may use together."""

    memory_bytes: int
    tasks: int
    cpu_cores: float


#: What the record says of the tree's limits before the program was started (none held yet).
NOT_STARTED: dict[str, Any] = {"tree_memory_bytes": None, "tree_tasks": None, "tree_cpu_cores": None,
                               "tree_how": "none", "tree_not_held": "the program was not started"}


@dataclass(frozen=True)
class _Place:
    """Where the harness makes the groups of one controller: the directory under which a child group is made, and
    the cgroup version of that hierarchy."""

    parent: str
    version: int


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, filesystem type, options) of every cgroup mount (Linux /proc/self/mountinfo)."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((fields[4].replace("\\040", " "), tail[0], set(tail[2].split(","))))
    return out


def _own_groups() -> dict[str, str]:
    """This process's group in each hierarchy: ``"2"`` for v2, else each v1 controller's name."""
    out: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if number == "0" and not controllers:
            out["2"] = path
        for c in controllers.split(","):
            if c:
                out[c] = path
    return out


def _writable_dir(path: str) -> bool:
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


def _v2_place(controller: str, mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> _Place | None:
    """A v2 group under which a child gets ``controller``: the harness's own group when it offers the controller to
    its children (``cgroup.subtree_control``), enabling it there when allowed."""
    if "2" not in own:
        return None
    for point, kind, _ in mounts:
        if kind != "cgroup2":
            continue
        parent = os.path.join(point, own["2"].lstrip("/"))
        if not _writable_dir(parent):
            continue
        try:
            offered = Path(parent, "cgroup.controllers").read_text().split()
            enabled = Path(parent, "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if controller not in offered:
            continue
        if controller not in enabled:
            try:  # refused (EBUSY) when the group holds processes itself and is not the root: no delegation then
                Path(parent, "cgroup.subtree_control").write_text(f"+{controller}")
            except OSError:
                continue
        return _Place(parent, 2)
    return None


def _v1_place(controller: str, mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> _Place | None:
    """The v1 hierarchy of ``controller``, at the harness's own group there, when the harness may make groups in it."""
    if controller not in own:
        return None
    for point, kind, options in mounts:
        if kind == "cgroup" and controller in options:
            parent = os.path.join(point, own[controller].lstrip("/"))
            if _writable_dir(parent):
                return _Place(parent, 1)
    return None


@functools.cache
def places() -> dict[str, _Place]:
    """Where each controller's groups can be made here (found once per process); a controller missing is a limit
    that cannot hold on this machine."""
    mounts, own = _mounts(), _own_groups()
    found = {}
    for controller in _CONTROLLERS:
        place = _v2_place(controller, mounts, own) or _v1_place(controller, mounts, own)
        if place is not None:
            found[controller] = place
            _remove_stale(place.parent)
    return found


def _remove_stale(parent: str) -> None:
    """Remove the groups a harness that was killed (kill -9: no cleanup) left under ``parent``: those named after a
    process that no longer exists."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        parts = name.split("-")
        if len(parts) == 4 and name.startswith("gf01-agent-") and parts[2].isdigit() and \
                not os.path.exists(f"/proc/{parts[2]}"):
            _remove(os.path.join(parent, name))


def _files(controller: str, version: int, limits: TreeLimits) -> list[tuple[str, str]]:
    """The files that set ``controller``'s limit, in the order they are written."""
    if controller == "memory":
        if version == 2:
            return [("memory.max", str(limits.memory_bytes)), ("memory.swap.max", "0")]
        return [("memory.limit_in_bytes", str(limits.memory_bytes))]
    if controller == "pids":
        return [("pids.max", str(limits.tasks))]
    quota = max(1000, int(limits.cpu_cores * PERIOD_US))
    if version == 2:
        return [("cpu.max", f"{quota} {PERIOD_US}")]
    return [("cpu.cfs_period_us", str(PERIOD_US)), ("cpu.cfs_quota_us", str(quota))]


class Tree:
    """The control groups of one episode's process tree (one per controller in v1, one in all in v2)."""

    def __init__(self, limits: TreeLimits, dirs: dict[str, str], why: dict[str, str]) -> None:
        self.limits = limits
        self.dirs = dirs  # controller -> the group's directory (several controllers may share one, in v2)
        self.why = why  # controller -> why it does not hold
        self._made = list(dict.fromkeys(dirs.values()))  # every group made, removed at the end
        self._fds: list[int] = []

    @classmethod
    def make(cls, limits: TreeLimits) -> Tree:
        """The groups of a new episode, each controller's limit set (:meth:`held` says which could be)."""
        found = places()
        name = f"gf01-agent-{os.getpid()}-{next(_episodes)}"
        dirs: dict[str, str] = {}
        why: dict[str, str] = {}
        for controller in _CONTROLLERS:
            place = found.get(controller)
            if place is None:
                why[controller] = "no writable cgroup hierarchy offers it"
                continue
            path = os.path.join(place.parent, name)
            try:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path, 0o755)
                for file, value in _files(controller, place.version, limits):
                    try:
                        Path(path, file).write_text(value)
                    except OSError as ex:
                        if file != "memory.swap.max":  # no swap accounting: nothing to swap to is fine
                            raise ex
            except OSError as ex:
                why[controller] = f"cannot make or set its group ({ex.strerror or ex})"
                if path not in dirs.values():
                    _remove(path)
                continue
            dirs[controller] = path
        return cls(limits, dirs, why)

    def held(self) -> dict[str, Any]:
        """What the record says (``agent_meta.sandbox_limits``): each tree limit's value where it held, else null,
        and how (or why not)."""
        how = sorted({f"cgroup v{2 if Path(d, 'cgroup.controllers').exists() else 1} {c}"
                      for c, d in self.dirs.items()})
        return {"tree_memory_bytes": self.limits.memory_bytes if "memory" in self.dirs else None,
                "tree_tasks": self.limits.tasks if "pids" in self.dirs else None,
                "tree_cpu_cores": self.limits.cpu_cores if "cpu" in self.dirs else None,
                "tree_how": ", ".join(how) if how else "none",
                **({"tree_not_held": "; ".join(f"{c}: {w}" for c, w in sorted(self.why.items()))}
                   if self.why else {})}

    def open(self) -> None:
        """Open each group's ``cgroup.procs`` for writing, before the fork: the child then only writes to them."""
        self._fds = []
        for d in dict.fromkeys(self.dirs.values()):
            with contextlib.suppress(OSError):
                self._fds.append(os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC))

    def enter(self) -> None:
        """Move the calling process into every group (in the child between fork and exec: a write per group, no
        allocation a lock of another thread could hold)."""
        me = str(os.getpid()).encode()
        for fd in self._fds:
            with contextlib.suppress(OSError):  # the parent sees it (confirm) and records the limit as not held
                os.write(fd, me)

    def confirm(self, pid: int) -> None:
        """Keep as held only the groups the started program ``pid`` is in (its move happens in the child, which
        cannot report a failure: the parent looks)."""
        for controller, path in list(self.dirs.items()):
            try:
                inside = str(pid) in Path(path, "cgroup.procs").read_text().split()
            except OSError:
                inside = False
            if not inside:
                del self.dirs[controller]
                self.why[controller] = "the program could not be moved into its group"

    def closed(self) -> None:
        """Close what :meth:`open` opened (in the parent, once the child is started)."""
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    def remove(self) -> None:
        """End whatever is left in the groups (the sandbox's PID namespace normally took it all) and remove them."""
        self.closed()
        for path in self._made:
            _remove(path)
        self._made = []

    def peak_memory(self) -> int | None:
        """The most memory the tree used at once (bytes), where the kernel says."""
        path = self.dirs.get("memory")
        if path is None:
            return None
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            with contextlib.suppress(OSError, ValueError):
                return int(Path(path, name).read_text())
        return None


def _remove(path: str) -> None:
    """Kill what is left in the group at ``path`` and remove it; waits up to 2 s for the killed to leave it."""
    deadline = time.monotonic() + 2.0
    while os.path.isdir(path):
        try:
            pids = Path(path, "cgroup.procs").read_text().split()
        except OSError:
            pids = []
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(int(pid), 9)
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as ex:
            if ex.errno not in (errno.EBUSY, errno.ENOTEMPTY) or time.monotonic() > deadline:
                return
        time.sleep(0.02)
