"""Resource limits for solver queries, and the ``Unknown`` outcome when a limit runs out (DEC-019/020).

A query under ``Limits`` either answers exactly or raises ``Unknown`` saying what it spent; it never guesses.

>>> lim = Limits(seconds=0.5)
>>> clock = lim.start()
>>> clock.check("count")  # raises Unknown once 0.5 s have passed
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


class Unknown(Exception):
    """A query ran out of its limits before reaching an exact answer; ``spent`` says what it used."""

    def __init__(self, query: str, reason: str, spent: dict[str, float | int]) -> None:
        self.query = query
        self.reason = reason
        self.spent = dict(sorted(spent.items()))
        used = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.spent.items())
        super().__init__(f"{query}: unknown ({reason}; spent {used})")


@dataclass(frozen=True)
class Limits:
    """Optional caps: wall seconds, SAT conflicts (per solver call), BDD nodes. None means no cap."""

    seconds: float | None = None
    conflicts: int | None = None
    nodes: int | None = None

    def start(self) -> Clock:
        """A running clock for one query under these limits."""
        return Clock(self, time.monotonic())


@dataclass
class Clock:
    """Tracks one query's use of its limits; ``check`` raises Unknown when a cap is passed."""

    limits: Limits
    started: float
    spent: dict[str, int] = field(default_factory=dict)

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
            reason = f"time limit {lim.seconds} s"
        elif lim.conflicts is not None and self.spent.get("conflicts", 0) > lim.conflicts:
            reason = f"conflict limit {lim.conflicts}"
        elif lim.nodes is not None and nodes is not None and nodes > lim.nodes:
            reason = f"node limit {lim.nodes}"
        if reason:
            raise Unknown(query, reason, {**self.spent, "seconds": round(self.elapsed(), 3)})

    def remaining_seconds(self) -> float | None:
        """Seconds left under the time cap (None: uncapped)."""
        if self.limits.seconds is None:
            return None
        return max(0.0, self.limits.seconds - self.elapsed())


NO_LIMITS = Limits()
