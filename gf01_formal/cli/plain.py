"""What the commands share that needs no typer: the time and memory budget of one command (:class:`Deadline`) and
plain-text or JSON output (:func:`emit`, :func:`rows`). :mod:`gf01_formal.cli.common` re-exports them next to the
option declarations; the front door (:mod:`gf01_formal.cli.front`) uses them without typer.

>>> rows([("suff", True), ("kappa", [0, 1, -2, -3])])
['suff   true', 'kappa  [0, 1, -2, -3]']
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solvers.limits import Limits

#: The largest --seconds (a bound on numbers a user gives, far above any real use: past it a number is a typo, and a
#: time that large would overflow the system calls it reaches instead of being refused in one line).
MAX_SECONDS = 1e6
#: The default of --memory (MiB): a sixth of this project's reference machine (24 GiB, shared by several jobs).
DEFAULT_MEMORY = 4096.0
MAX_MEMORY = 2.0**30


class Deadline:
    """The time budget of one command (``--seconds``): every query it runs gets what is left of it; and the memory
    limit of each query (``--memory``, MiB), the same for all."""

    def __init__(self, seconds: float | None, memory: float | None = None) -> None:
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.memory = memory

    def limits(self) -> Limits | None:
        """Limits for the next query: the seconds left and the memory limit (None when the command has neither)."""
        if self.deadline is None and self.memory is None:
            return None
        from solvers.limits import Limits

        left = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        return Limits(seconds=left, memory=self.memory)


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
