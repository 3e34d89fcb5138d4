"""Resource limits for solver queries, and the ``Unknown`` outcome when a limit runs out (DEC-019/020).

A query under ``Limits`` either answers exactly or raises ``Unknown`` saying what it spent; it never guesses.

The time cap is a promise: under ``Limits(seconds=s)`` a query answers or raises Unknown within s + 1 s, even when
the time goes into a library call that cannot be interrupted (one CUDD operation, one CaDiCaL call, a big numpy
sort). Queries that can spend long in such calls are decorated with :func:`guarded`: under a time cap they run in a
forked child process that the caller kills (and reaps) :data:`GRACE` seconds after the cap; the child checks the same
limits cooperatively, so it normally answers or raises Unknown itself first.

Memory is a limit like time: under ``Limits(memory=m)`` (MiB of resident memory of the process running the query
and of its helper processes) a guarded query runs in a forked child too; the caller reads the resident sets of the
child and its descendants every :data:`POLL` seconds and kills it past ``m`` (Unknown "memory limit"), the child
checks it cooperatively at every clock check (its own and its helpers' resident sets), and an
allocation that fails in the child (its data segment is capped at ``m`` MiB beyond what it inherited) is Unknown
as well, never a crash.

>>> lim = Limits(seconds=0.5)
>>> clock = lim.start()
>>> clock.check("count")  # raises Unknown once 0.5 s have passed
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

#: Seconds a guarded query's child may run past its time cap before the caller kills it.
GRACE = 0.5
#: Seconds between two readings of a guarded child's resident memory under a memory limit.
POLL = 0.02
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: Exit codes of a child killed for a resource from outside (the negated signal numbers).
_RESOURCE_KILLS = frozenset(-int(getattr(signal, name)) for name in ("SIGKILL", "SIGXCPU") if hasattr(signal, name))


#: This process's ``/proc/PID/statm``, open, and the pid it was opened for: a query's every check reads it, and a read
#: of an open file costs about 5 us against about 40 us for an open, read and close. A forked child has another pid
#: (and the parent's open file would describe the parent), so it opens its own.
_own_statm: tuple[int, int] | None = None


def resident_mib(pid: int | str = "self") -> float | None:
    """The resident memory of process ``pid`` in MiB (Linux ``/proc/PID/statm``), None where it cannot be read.

    >>> 0 < resident_mib() < 2**20
    True
    """
    global _own_statm
    try:
        if pid != "self":
            with open(f"/proc/{pid}/statm", "rb") as fh:
                return int(fh.read().split()[1]) * _PAGE / 2**20
        me = os.getpid()
        if _own_statm is None or _own_statm[0] != me:
            _own_statm = (me, os.open(f"/proc/{me}/statm", os.O_RDONLY | os.O_CLOEXEC))
        return int(os.pread(_own_statm[1], 256, 0).split()[1]) * _PAGE / 2**20
    except (OSError, IndexError, ValueError):
        return None


def tree_resident_mib(pid: int) -> float | None:
    """The resident memory of process ``pid`` and of all its descendants in MiB (a guarded query's helper processes
    count in its memory), None where ``pid``'s cannot be read. Pages a forked child still shares count in both: an
    upper bound."""
    own = resident_mib(pid)
    if own is None:
        return None
    total, todo = own, [str(pid)]
    while todo:
        proc = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{proc}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{proc}/task/{task}/children", "rb") as fh:
                    kids = fh.read().split()
            except OSError:
                continue
            for kid in kids:
                todo.append(kid.decode())
                total += resident_mib(kid.decode()) or 0.0
    return total


class Unknown(Exception):
    """A query ran out of its limits before reaching an exact answer; ``spent`` says what it used."""

    def __init__(self, query: str, reason: str, spent: dict[str, float | int]) -> None:
        self.query = query
        self.reason = reason
        self.spent = dict(sorted(spent.items()))
        used = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.spent.items())
        super().__init__(f"{query}: unknown ({reason}; spent {used})")

    def to_json(self) -> dict[str, Any]:
        """The query, the reason and what was spent, as a JSON object (a command's answer under ``--json``)."""
        return {"query": self.query, "reason": self.reason, "spent": self.spent}

    def __reduce__(self) -> tuple[Any, tuple[str, str, dict[str, float | int]]]:
        # Picklable with its fields, so a guarded query's child can send it back.
        return (Unknown, (self.query, self.reason, self.spent))


@dataclass(frozen=True)
class Limits:
    """Optional caps: wall seconds, SAT conflicts (per solver call), BDD nodes, resident memory of the query's
    process in MiB. None means no cap.

    ``isolate``: a :func:`guarded` query under a seconds or memory cap runs in a child process (the cap is then a
    promise). False runs it in the calling process with the caps checked at every clock check only: no process per
    query (about 17 ms each), but a memory cap may be passed by what one step of the query allocates.
    """

    seconds: float | None = None
    conflicts: int | None = None
    nodes: int | None = None
    memory: float | None = None
    isolate: bool = True
    #: The time limit as its user gave it, when ``seconds`` is what was left of it as the query began (a command's
    #: ``--seconds`` shared by its queries): the Unknown's reason names it, so ``--seconds 120`` is reported as
    #: ``time limit 120 s``, not as the remainder. None: ``seconds`` is the limit as given.
    given_seconds: float | None = None

    def time_reason(self) -> str:
        """The ``reason`` of an Unknown past the time cap: the limit as given."""
        seconds = self.seconds if self.given_seconds is None else self.given_seconds
        return f"time limit {seconds:.3g} s"

    def start(self) -> Clock:
        """A running clock for one query under these limits."""
        return Clock(self, time.monotonic())

    def report(self) -> Any:
        """What a guarded child sends back about the work it did under these limits (None: nothing to keep)."""
        return None

    def absorb(self, report: Any) -> None:
        """Take in a guarded child's :meth:`report`: the caller's copy of the limits never saw the child's clocks."""


@dataclass
class Clock:
    """Tracks one query's use of its limits; ``check`` raises Unknown when a cap is passed."""

    limits: Limits
    started: float
    spent: dict[str, int] = field(default_factory=dict)
    #: Process ids of the query's helper processes (:mod:`solvers.key_counts`): their memory is the query's too.
    helpers: list[int] = field(default_factory=list)

    def resident(self) -> float:
        """MiB resident in this process and the query's helpers."""
        return (resident_mib() or 0.0) + sum(resident_mib(pid) or 0.0 for pid in self.helpers)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def add(self, what: str, amount: int) -> None:
        """Record ``amount`` more of resource ``what`` (e.g. "conflicts", "nodes", "sat_calls")."""
        self.spent[what] = self.spent.get(what, 0) + amount

    def check(self, query: str, nodes: int | None = None) -> None:
        """Raise Unknown if the time cap, the conflict cap or (given the current ``nodes``) the node cap is passed."""
        lim = self.limits
        if nodes is not None:
            self.spent["nodes"] = max(self.spent.get("nodes", 0), nodes)
        reason = None
        if lim.seconds is not None and self.elapsed() > lim.seconds:
            reason = lim.time_reason()
        elif lim.conflicts is not None and self.spent.get("conflicts", 0) > lim.conflicts:
            reason = f"conflict limit {lim.conflicts}"
        elif lim.nodes is not None and nodes is not None and nodes > lim.nodes:
            reason = f"node limit {lim.nodes}"
        elif lim.memory is not None and self.resident() > lim.memory:
            reason = memory_reason(lim.memory)
        if reason:
            raise Unknown(query, reason, {**self.spent, "seconds": round(self.elapsed(), 3)})

    def remaining_seconds(self) -> float | None:
        """Seconds left under the time cap (None: uncapped)."""
        if self.limits.seconds is None:
            return None
        return max(0.0, self.limits.seconds - self.elapsed())


NO_LIMITS = Limits()


def memory_reason(mib: float) -> str:
    """The ``reason`` of an Unknown past a memory limit of ``mib`` MiB."""
    return f"memory limit {mib:g} MiB"


# -- the time cap as a promise: guarded queries run in a child process --------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])
_IN_CHILD = False


@functools.cache
def _can_fork() -> bool:
    # multiprocessing is imported on the first capped query, not with this module: a query without a time or memory
    # cap (one certificate's check) does not pay for it.
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def guarded(query: str, *, stream: bool = False) -> Callable[[F], F]:
    """Decorator for a query taking ``limits=``: under a time cap, run it in a child killed at the cap + GRACE.

    ``stream``: the query returns an iterator (enumeration); its items come through a pipe as the child finds them.
    Without a time cap, or inside a guarded child already, the query runs in the calling process.
    """

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            limits = kwargs.get("limits")
            capped = limits is not None and limits.isolate and (limits.seconds is not None or
                                                                limits.memory is not None)
            if _IN_CHILD or not capped or not _can_fork():
                # (Without fork, e.g. on Windows, the query relies on its cooperative clock checks alone.)
                return fn(*args, **kwargs)
            if stream:
                return _bounded_iter(query, limits, fn, args, kwargs)
            return _bounded(query, limits, fn, args, kwargs)

        return call  # type: ignore[return-value]

    return wrap


def _load_prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` on Linux, else None. Loaded once, at import: a child calls it between fork and exec, where
    loading a library could deadlock on a lock another thread of the parent held at the fork."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux ``PR_SET_PDEATHSIG``), and exit at once if
    the parent, pid ``parent``, is gone already (it died before the signal was armed).

    Call it first thing in the child: a guarded query's process, a pool worker's initializer, or a program's
    ``Popen(preexec_fn=...)`` between fork and exec (the signal survives exec; it calls only what was loaded at
    import). The kernel's "parent" is the *thread* that started the child: the signal also comes when that thread
    ends, so a thread must not end before the children it started. Elsewhere than Linux only the check is made.
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _cap_data(mib: float) -> None:
    """Cap this process's data segment at what it has now plus ``mib`` MiB: past it an allocation fails (numpy's
    MemoryError) instead of the machine running out; the resident set can only be smaller than the data it maps."""
    import resource

    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            data_kib = next(int(line.split()[1]) for line in fh if line.startswith("VmData:"))
        cap = data_kib * 1024 + int(mib * 2**20)
        resource.setrlimit(resource.RLIMIT_DATA, (cap, resource.getrlimit(resource.RLIMIT_DATA)[1]))
    except (OSError, StopIteration, ValueError):
        pass  # no /proc or no such limit: the caller's readings of the resident set still apply


def _child(conn: Any, fn: Callable[..., Any], args: tuple, kwargs: dict, stream: bool, parent: int) -> None:
    global _IN_CHILD
    _IN_CHILD = True
    die_with_parent(parent)
    limits = kwargs["limits"]
    if limits.memory is not None:
        _cap_data(limits.memory)
    try:
        if stream:
            for item in fn(*args, **kwargs):
                conn.send(("item", item, None))
            msg: tuple[str, Any, Any] = ("end", None, None)
        else:
            msg = ("ok", fn(*args, **kwargs), None)
    except MemoryError:
        msg = ("raise", Unknown(getattr(fn, "__name__", "query"), memory_reason(limits.memory or 0.0),
                                {"rss_mib": round(resident_mib() or 0.0, 1)}), None)
    except BaseException as ex:  # every outcome goes back to the caller, which re-raises it
        msg = ("raise", ex, None)
    # What the query spent travels with its answer (or its Unknown): the caller meters the child's work.
    msg = (msg[0], msg[1], kwargs["limits"].report())
    try:
        conn.send(msg)
    except Exception as ex:  # an unpicklable answer is reported, not lost
        conn.send(("raise", RuntimeError(f"the query's answer could not be sent back: {ex}"), None))
    conn.close()


def _start_child(fn: Callable[..., Any], args: tuple, kwargs: dict, stream: bool) -> tuple[Any, Any]:
    # fork: the child shares the caller's problem, tables and solver state without pickling them.
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args, kwargs, stream, os.getpid()), daemon=True)
    proc.start()
    send.close()
    return proc, recv


def _stop(proc: Any, recv: Any) -> None:
    """Kill the child if it still runs, and always reap it."""
    if proc.is_alive():
        proc.kill()
    proc.join()
    recv.close()


def _timed_out(query: str, limits: Limits, started: float) -> Unknown:
    return Unknown(query, limits.time_reason(), {"seconds": round(time.monotonic() - started, 3)})


def _receive(query: str, proc: Any, recv: Any, limits: Limits, started: float) -> tuple[str, Any, Any]:
    seconds, memory = limits.seconds, limits.memory
    while True:
        left = 3600.0 if seconds is None else started + seconds + GRACE - time.monotonic()
        # In slices: one poll of a huge timeout overflows the system call; under a memory limit, short slices
        # between readings of the child's resident set.
        if recv.poll(min(max(0.0, left), 3600.0, POLL if memory is not None else 3600.0)):
            break
        if memory is not None:
            rss = tree_resident_mib(proc.pid)
            if rss is not None and rss > memory:
                proc.kill()
                raise Unknown(query, memory_reason(memory), {"rss_mib": round(rss, 1),
                                                             "seconds": round(time.monotonic() - started, 3)})
        if seconds is not None and time.monotonic() >= started + seconds + GRACE:
            raise _timed_out(query, limits, started)
    try:
        return recv.recv()
    except EOFError:
        proc.join()
        if proc.exitcode in _RESOURCE_KILLS:
            # Killed from outside for a resource (ulimit -t sends SIGXCPU, then SIGKILL; the out-of-memory killer
            # sends SIGKILL): a limit the query ran out of, as its own caps would be, not a bug (issue 28: an exit 70).
            name = signal.Signals(-proc.exitcode).name
            raise Unknown(query, f"the solver process was killed by {name} (a resource limit from outside: "
                          "ulimit, or the system out of memory)",
                          {"seconds": round(time.monotonic() - started, 3)}) from None
        raise RuntimeError(f"{query}: the solver process ended without an answer (exit code {proc.exitcode})") from None


def _bounded(query: str, limits: Limits, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    started = time.monotonic()
    proc, recv = _start_child(fn, args, kwargs, False)
    try:
        kind, value, report = _receive(query, proc, recv, limits, started)
    finally:
        _stop(proc, recv)
    if report is not None:
        kwargs["limits"].absorb(report)
    if kind == "raise":
        raise value
    return value


def _bounded_iter(query: str, limits: Limits, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Iterator[Any]:
    started = time.monotonic()
    proc, recv = _start_child(fn, args, kwargs, True)
    try:
        while True:
            kind, value, report = _receive(query, proc, recv, limits, started)
            if report is not None:
                kwargs["limits"].absorb(report)
            if kind == "item":
                yield value
            elif kind == "end":
                return
            else:
                raise value
    finally:
        _stop(proc, recv)
