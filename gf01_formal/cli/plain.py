"""What the commands share that needs no typer: the time and memory budget of one command (:class:`Deadline`) and
plain-text or JSON output (:func:`emit`, :func:`rows`). :mod:`gf01_formal.cli.common` re-exports them next to the
option declarations; the front door (:mod:`gf01_formal.cli.front`) uses them without typer.

>>> rows([("suff", True), ("kappa", [0, 1, -2, -3])])
['suff   true', 'kappa  [0, 1, -2, -3]']
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from gf01_formal.cli.exits import EXIT_UNKNOWN

if TYPE_CHECKING:
    from solvers.limits import Limits

#: The largest --seconds (a bound on numbers a user gives, far above any real use: past it a number is a typo, and a
#: time that large would overflow the system calls it reaches instead of being refused in one line).
MAX_SECONDS = 1e6
#: The default of --memory (MiB): a sixth of this project's reference machine (24 GiB, shared by several jobs).
DEFAULT_MEMORY = 4096.0
MAX_MEMORY = 2.0**30
#: How often the guard of a command's loading looks at the clock and the resident memory (seconds), and how long
#: the guarded work has to take the signal before the command ends answering unknown.
WATCH_EVERY = 0.02
GRACE = 2.0
#: The least time the guard gives loading before it stops it for --seconds (seconds).
LOAD_AT_LEAST = 0.25


class Deadline:
    """The time budget of one command (``--seconds``): every query it runs gets what is left of it; and the memory
    limit of each query (``--memory``, MiB), the same for all."""

    def __init__(self, seconds: float | None, memory: float | None = None) -> None:
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.seconds = seconds
        self.memory = memory

    def limits(self) -> Limits | None:
        """Limits for the next query: the seconds left and the memory limit (None when the command has neither); an
        unknown answer names --seconds as given, not what was left of it."""
        if self.deadline is None and self.memory is None:
            return None
        from solvers.limits import Limits

        left = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        return Limits(seconds=left, memory=self.memory, given_seconds=self.seconds)

    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """Hold the work of the block (``what``: reading, checking and measuring the instance) to the command's
        limits, as its queries are: past ``--seconds``, or with this process's resident memory past ``--memory``,
        :class:`solvers.limits.Unknown` is raised in it, and raised again every 0.1 s so that code which catches
        one cannot run on. Work that does not get back to Python within :data:`GRACE` seconds (one long call into
        C) ends the command there, answering unknown (exit 3): nothing has been written yet, and outputs are only
        ever written whole. Outside the main thread (where no signal can reach) the block runs unguarded."""
        if (self.deadline is None and self.memory is None) or \
                threading.current_thread() is not threading.main_thread():
            yield
            return
        from solvers.limits import Unknown, resident_mib

        started = time.monotonic()
        state: dict[str, Any] = {"active": True, "why": None}

        def spent() -> dict[str, float | int]:
            return {"seconds": round(time.monotonic() - started, 3), "resident_mib": round(resident_mib() or 0.0, 1)}

        def why() -> str:
            return state["why"] or f"--seconds passed while {what}"

        def alarm(signum: int, frame: Any) -> None:
            if state["active"]:
                raise Unknown(what, why(), spent())

        def watch(stop: threading.Event) -> None:
            signalled: float | None = None
            while not stop.wait(WATCH_EVERY):
                now = time.monotonic()
                if state["why"] is None and self.memory is not None:
                    rss = resident_mib()
                    if rss is not None and rss > self.memory:
                        state["why"] = f"resident memory passed --memory {self.memory:g} MiB while {what}"
                if state["why"] is None and self.deadline is not None and now >= self._due(started):
                    state["why"] = f"--seconds passed while {what}"
                if state["why"] is None:
                    continue
                if signalled is None:
                    signalled = now
                    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGALRM)
                elif now - signalled > GRACE and state["active"]:
                    # The work has not come back to Python to take the signal: answer for it, and end here.
                    print(f"unknown ({why()}; spent {json.dumps(spent(), sort_keys=True)})", flush=True)
                    os._exit(EXIT_UNKNOWN)

        stop = threading.Event()
        watcher = threading.Thread(target=watch, args=(stop,), name="gf01-guard", daemon=True)
        previous = signal.signal(signal.SIGALRM, alarm)
        try:
            watcher.start()
            if self.deadline is not None:  # the timer last: an alarm from here on finds the cleanup below armed
                signal.setitimer(signal.ITIMER_REAL, self._due(started) - started, 0.1)
            yield
        finally:
            state["active"] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            stop.set()
            if watcher.is_alive():
                watcher.join()
            signal.signal(signal.SIGALRM, previous)

    def _due(self, started: float) -> float:
        """When the guard of work begun at ``started`` stops it: at the deadline, but not before
        :data:`LOAD_AT_LEAST` seconds of work (``--seconds 0`` is the queries' own unknown, not the loading's)."""
        return max(started if self.deadline is None else self.deadline, started + LOAD_AT_LEAST)


def emit(record: dict[str, Any], as_json: bool, human: Callable[[dict[str, Any]], Iterable[str]]) -> None:
    """Print ``record`` as one JSON line, or as the lines ``human`` makes of it."""
    if as_json:
        print(json.dumps(record, sort_keys=True), flush=True)
        return
    for line in human(record):
        print(line)
    sys.stdout.flush()


def rows(pairs: Iterable[tuple[str, Any]]) -> list[str]:
    """Key/value pairs as aligned lines: ``key   value``."""
    items = [(k, _text(v)) for k, v in pairs]
    width = max((len(k) for k, _ in items), default=0)
    return [f"{k.ljust(width)}  {v}" for k, v in items]


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    return "-" if v is None else str(v)
