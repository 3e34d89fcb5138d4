"""The limits of scoring one run (``--scoring-seconds``, ``--memory``): ``gf01 evaluate``, ``gf01 serve`` and
``gf01 validate`` score a run's certificate under them, and a run whose scoring passes them is not the agent's fault.

Scoring is exact (the gold set listed, or the symbolic best match), and exact can be slow: an 800-step arbiter whose
M(I) has one member is counted in a second but was listed for minutes. So one run's scoring, every query of it (the
gold set's count and listing when the instance's scorer has not made them yet, the best match), shares one time
limit: each query's clock starts when the run's scoring starts (:func:`run_limits`), and a guarded query runs in a
child process killed shortly past the limit (:mod:`solvers.limits`: a promise, even inside one C call) where the
process may fork (else the limit is checked at each step of the query). Past it the
query raises :class:`solvers.limits.Unknown`; the callers turn that into

- ``gf01 evaluate`` (and ``gf01 campaign``): a ``harness_error`` record whose ``error`` is :func:`reason` (one line
  naming the limit); the evaluation goes on, and the same command run again plays the run again (a ``harness_error``
  is not final), with a larger ``--scoring-seconds`` if the instance needs it (the limit is not part of the run id);
- ``gf01 serve``: the browser episode's record is ``harness_error`` with that reason; loading the episode's page
  again scores it again;
- ``gf01 validate --bundle``: a record that cannot be re-scored within the limit is not proven: a note, and a
  violation under ``--official``.

>>> from gf01_formal.scoring.scores import Scorer
>>> score_within(Scorer(problem), [(20, 2, 1), (21, 2, 1)], seconds=300.0).score_c
1
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command line reads the defaults below without loading a solver (solvers/ imports them all)
    from encoders.problem import Atom
    from gf01_formal.scoring.certificates import ParsedCertificate
    from gf01_formal.scoring.scores import Scorer
    from gf01_formal.scoring.values import Scores
    from solvers.limits import Limits, Unknown

#: Default time limit of one run's scoring, wall seconds (evaluate, campaign, validate).
SCORING_SECONDS = 300.0
#: Default time limit of scoring a browser episode, wall seconds: a person waits for the end screen.
SERVE_SCORING_SECONDS = 60.0


def run_limits(seconds: float, memory: float | None = None) -> Limits:
    """Limits whose clocks all run from now: every query made under them spends the same ``seconds``, not
    ``seconds`` each (and ``memory`` MiB each). A guarded query runs in a child process (the limit a promise) where
    this one may fork safely: its main thread, in a process that may have children. In another thread (``gf01
    serve``'s requests, ``--executor threads``: a fork there can inherit a lock another thread holds) or in a
    daemonic worker (Dask's, which multiprocessing forbids children) the limits are checked at each step of the
    query instead, so one step's work can pass them."""
    return _since_type()(seconds=seconds, memory=memory, since=time.monotonic(), isolate=_may_fork())


def _may_fork() -> bool:
    import multiprocessing
    import threading

    return threading.current_thread() is threading.main_thread() and not multiprocessing.current_process().daemon


@functools.cache
def _since_type() -> Any:
    # Made on first use: solvers.limits loads every solver, and the defaults above are read by the command line.
    from solvers.limits import Clock, Limits

    @dataclass(frozen=True)
    class SinceLimits(Limits):
        """Limits whose clocks all run from ``since`` (``time.monotonic()``)."""

        since: float = 0.0

        def start(self) -> Clock:
            return Clock(self, self.since)

    return SinceLimits


def score_within(scorer: Scorer, certificate: Sequence[Atom] | ParsedCertificate, *, seconds: float,
                 memory: float | None = None) -> Scores:
    """The scores of ``certificate`` (an episode's atoms, or a parsed one as submitted) by ``scorer``, every query
    under one limit of ``seconds`` from now and ``memory`` MiB each; raises :class:`Unknown` past them. The scorer
    keeps these limits until the next call (it is one run's at a time: callers hold the instance's scorer)."""
    from gf01_formal.scoring.certificates import ParsedCertificate

    scorer.limits = run_limits(seconds, memory)
    if isinstance(certificate, ParsedCertificate):
        return scorer.score_submitted(certificate)
    return scorer.score(certificate)


#: How :func:`reason` opens the error of a run whose scoring passed its limits (:func:`passed_limits` reads it).
PASSED = "scoring passed its limits"


def reason(ex: Unknown, *, seconds: float, memory: float | None = None) -> str:
    """The one-line ``error`` of a run whose scoring passed its limits: which limit, the query, what it spent."""
    held = f"--scoring-seconds {seconds:g}" + ("" if memory is None else f", --memory {memory:g}")
    return f"{PASSED} ({held}): {ex}; not the agent's fault: a rerun plays it again"


def passed_limits(error: str | None) -> bool:
    """Whether a ``harness_error`` record's ``error`` is :func:`reason`'s: its scoring passed its limits.

    >>> passed_limits("scoring passed its limits (--scoring-seconds 1): ..."), passed_limits("worker died")
    (True, False)
    """
    return (error or "").startswith(PASSED)
