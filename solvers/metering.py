"""Limits that meter: what a query spent (work counters, wall time, growth of the resident set), kept after it ends.

:class:`MeteredLimits` are :class:`solvers.limits.Limits` that also cap the growth of the process's resident memory
(``memory_kib``, from the query's start) and keep the clocks they start, so that the caller reads what each query
spent (a guarded query's child hands its clocks back, :meth:`MeteredLimits.absorb`). Peak memory is the growth of the
process's peak resident set (Linux ``VmHWM``, reset through ``/proc/self/clear_refs`` when the query starts); where
the platform cannot say, it is None.

This is the solver floor's part of the optional diagnostic's caps (DEC-019..023): the caps themselves and the
diagnostic run under them are the scorer's (:mod:`gf01_formal.scoring.caps`), their derivation from pilot runs the
report's (:mod:`gf01_formal.report.caps`).

>>> lim = MeteredLimits(conflicts=10)
>>> clock = lim.start()
>>> clock.add("conflicts", 3)
>>> lim.clocks[-1].spent
{'conflicts': 3}
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from solvers.limits import Clock, Limits, Unknown

#: A budget no query reaches: it makes a backend count its work (and the SAT backend use Glucose 4, which PySAT can
#: budget) without capping it.
UNBOUNDED = 1 << 62


def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak() -> int | None:
    """Reset the process's peak resident set to its current one; returns that (KiB), or None where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        return None
    return _status_kib("VmRSS")


def peak_kib() -> int | None:
    """The process's peak resident set since the last reset (KiB)."""
    return _status_kib("VmHWM")


@dataclass(frozen=True)
class MeteredLimits(Limits):
    """Limits that also cap resident-memory growth and keep the clocks they start (to read what was spent)."""

    memory_kib: int | None = None
    clocks: list[Clock] = field(default_factory=list, compare=False, repr=False)

    def start(self) -> Clock:
        clock = MeteredClock(self, time.monotonic(), baseline_kib=reset_peak())
        self.clocks.append(clock)
        return clock

    def report(self) -> list[tuple[dict[str, int], int | None, int | None]]:
        """Each clock's spent work and memory baseline, with this (child) process's peak resident set."""
        peak = peak_kib()
        return [(dict(c.spent), getattr(c, "baseline_kib", None), peak) for c in self.clocks]

    def absorb(self, report: list[tuple[dict[str, int], int | None, int | None]]) -> None:
        """Keep a guarded child's clocks as if they had run here."""
        for spent, baseline, peak in report:
            self.clocks.append(MeteredClock(self, time.monotonic(), dict(spent), baseline_kib=baseline,
                                            child_peak_kib=peak))

    def peak_growth_kib(self) -> int | None:
        """How much the last query's peak resident set grew from its start (KiB; None where unmeasurable): the
        guarded child's peak when it ran in one, else this process's."""
        clock = self.clocks[-1] if self.clocks else None
        child_peak = getattr(clock, "child_peak_kib", None)
        peak = child_peak if child_peak is not None else peak_kib()
        base = getattr(clock, "baseline_kib", None)
        return None if base is None or peak is None else max(0, peak - base)

    def spent(self) -> dict[str, int]:
        """What the last query spent, by counter name (sorted; empty when no query ran)."""
        return dict(sorted(self.clocks[-1].spent.items())) if self.clocks else {}


@dataclass
class MeteredClock(Clock):
    """A clock whose checkpoints also check the memory cap against the current resident set."""

    baseline_kib: int | None = None
    #: The peak resident set of the guarded child the clock ran in (None: it ran in this process).
    child_peak_kib: int | None = None

    def check(self, query: str, nodes: int | None = None) -> None:
        super().check(query, nodes)
        cap = getattr(self.limits, "memory_kib", None)
        if cap is not None and self.baseline_kib is not None:
            now = _status_kib("VmRSS")
            if now is not None and now - self.baseline_kib > cap:
                raise Unknown(query, f"memory limit {cap} KiB", {**self.spent, "memory_kib": now - self.baseline_kib,
                                                                  "seconds": round(self.elapsed(), 3)})
