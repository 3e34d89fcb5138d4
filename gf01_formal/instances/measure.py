"""Measurement and certification of an instance by exact solver queries: the complexity knobs (DEC-058), the window
w(I) they give (DEC-014b), and the certified facts (base outcome, optimal valid certificate, |M_B(I)|, greedy).

The circularity "w(I) depends on z(I), z(I) on oracle Eff_t and |M_B(I)|, and those on w(I) in normal mode" is cut
by measuring every knob on the *hard-mode* problem at t* (same system, trace, effect, t* and B_T), which does not
depend on the window; the instance's own (normal-mode) oracle and count go into its certification.

>>> m = measure(problem, window=None)
>>> m.window, m.certification.gold_count
(2, 6)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import cast

from encoders.problem import Atom, Certificate, Problem
from gf01_formal.instances.complexity import knobs, window_for
from gf01_formal.instances.greedy import greedy_certificate
from gf01_formal.instances.model import Certification, Complexity
from solvers import api, small_check, small_count, small_oracle
from solvers.canonical import certificate_to_json, timesteps
from solvers.limits import GRACE, Limits, Unknown, guarded
from solvers.results import OracleResult


def hard_problem(problem: Problem) -> Problem:
    """The hard-mode problem at t* with the same system, trace, effect and budgets (where the knobs are measured)."""
    return replace(problem, mode="hard", window=1)


def exact_count(
    problem: Problem,
    *,
    backend: str | None = None,
    limits: Limits | None = None,
    max_positions: int | None = None,
) -> tuple[int | None, str | None]:
    """|M_B(I)| exactly, or (None, reason) when the count was not run (too many flip positions) or hit its limits.

    ``max_positions`` is a static, deterministic guard: (t* + 1) x |AP_in| flip positions at most.
    """
    positions = (problem.t_star + 1) * problem.system.num_inputs
    if max_positions is not None and positions > max_positions:
        return None, f"not counted: {positions} flip positions exceed count_max_positions {max_positions}"
    if _spent(limits):
        return None, f"unknown: {limits.time_reason()}"  # type: ignore[union-attr]  # (_spent: not None)
    if (backend or api.default_backend("count", problem)) == "forward" and limits is None:
        # The forward count of a tiny instance by its plain DP: the same answer without the numpy pass's fixed cost
        # of about 10 ms a call. Under limits the pass answers: it meets a node cap on its own keys, and a time or
        # memory cap in a guarded child.
        tiny = small_count.count(problem, problem.budget_t)
        if tiny is not None:
            return tiny, None
    try:
        return api.count(problem, problem.budget_t, backend, limits=limits), None
    except Unknown as ex:
        return None, f"unknown: {ex.reason}"


def oracle(problem: Problem, budget_t: int | None, backend: str | None = None) -> OracleResult | None:
    """``api.oracle(problem, budget_t, backend)`` (no limits); on a tiny table system with the explicit backend, by
    its plain-Python walk (:mod:`solvers.small_oracle`: the same result without the numpy set-up per call)."""
    if (backend or api.default_backend("oracle", problem)) == "explicit" and small_oracle.applies(problem):
        return small_oracle.oracle(problem, budget_t)
    return api.oracle(problem, budget_t, backend)


def _spent(limits: Limits | None) -> bool:
    """Whether ``limits`` leave no time at all: the query is then unknown without being started (a guarded query
    would fork a child only to have it stop, and be killed a grace period later)."""
    return limits is not None and limits.seconds is not None and limits.seconds <= 0


@dataclass(frozen=True)
class QuerySettings:
    """How a measurement asks its exact queries: the oracle's and the count's backends (None: each query's default),
    the count's limits and the most flip positions it counts (:func:`exact_count`)."""

    oracle_backend: str | None = None
    count_backend: str | None = None
    count_limits: Limits | None = None
    count_max_positions: int | None = None

    def count(self, problem: Problem) -> tuple[int | None, str | None]:
        """:func:`exact_count` of ``problem`` with these settings."""
        return exact_count(problem, backend=self.count_backend, limits=self.count_limits,
                           max_positions=self.count_max_positions)


_DEFAULTS = QuerySettings()  # each query's default backend, no limits


def measure_complexity(
    problem: Problem,
    queries: QuerySettings = _DEFAULTS,
    *,
    hard_eff_t: int | None = None,
    hard_count: tuple[int | None, str | None] | None = None,
    oracle_limits: Limits | None = None,
) -> Complexity:
    """The knobs of ``problem`` measured in hard mode at t* (the count as in :func:`exact_count`).

    ``hard_eff_t`` and ``hard_count`` pass already-known hard-mode answers, so no query is asked twice.
    ``oracle_limits`` bound the knob's oracle (over M(I), no budget: 70 s on a SYNTCOMP design at T = 16, issue 28);
    past them the knob is unknown, with the reason in its note.
    """
    hard = hard_problem(problem)
    oracle_note = None
    if hard_eff_t is None and _spent(oracle_limits):
        oracle_note = f"unknown: {oracle_limits.time_reason()}"  # type: ignore[union-attr]  # (_spent: not None)
    elif hard_eff_t is None:
        try:
            res = api.oracle(hard, None, queries.oracle_backend, limits=oracle_limits)
            hard_eff_t = res.eff_t if res is not None else None
        except Unknown as ex:
            oracle_note = f"unknown: {ex.reason}"
    gold, note = hard_count or queries.count(hard)
    return knobs(**_sizes(problem), oracle_eff_t=hard_eff_t, gold_count=gold, oracle_note=oracle_note,
                 count_note=note)


def _sizes(problem: Problem) -> dict[str, int]:
    """The knobs that need no query: the system's sizes, T and t*."""
    view = problem.system
    # A circuit's knobs: its state space 2^latches (capped at 2^62: the knob saturates at 16 states anyway) and its
    # AND gates in place of Mealy edges (docs/aiger.md).
    states = 1 << min(view.num_latches, 62) if problem.circuit else view.num_states
    return {"states": states, "inputs": view.num_inputs, "outputs": view.num_outputs,
            "transitions": view.num_ands if problem.circuit else view.num_edges, "horizon": problem.horizon,
            "t_star": problem.t_star}


def possible_windows(problem: Problem, queries: QuerySettings, hard_eff_t: int | None) -> range:
    """The windows w(I) that :func:`measure_complexity` can give ``problem`` once its hard-mode count is known.

    Every other knob is known here; the count's knob is log2 |M_B| / 10 clamped to [0, 1] when |M_B| >= 1, and left
    out of z(I) when the count is not run (the static position guard, decided here) or is unknown (only under node
    limits). z(I) and the window grow with the count's knob, so the windows lie between those of its extremes. The
    generator checks a normal-mode candidate at these windows before the count (the count costs more than every
    other query of a small candidate): one whose every possible window rejects it for the same reason is rejected
    with that reason, exactly as after the count.
    """
    sizes = _sizes(problem)
    positions = (problem.t_star + 1) * problem.system.num_inputs
    if queries.count_max_positions is not None and positions > queries.count_max_positions:
        golds: tuple[int | None, ...] = (None,)
    else:
        golds = (1, 1 << 10) + ((None,) if queries.count_limits is not None else ())
    ws = [window_for(**sizes, oracle_eff_t=hard_eff_t, gold_count=g) for g in golds]
    return range(min(ws), max(ws) + 1)


def within_budget(problem: Problem, atoms: Iterable[Atom]) -> bool:
    """Whether a certificate touches at most B_T distinct timesteps."""
    return problem.budget_t is None or len(timesteps(atoms)) <= problem.budget_t


def base_shows_effect(problem: Problem) -> bool:
    """Whether the base run already shows the effect: the empty certificate is valid (the oracle's Eff_t is 0), so
    the instance asks for nothing (a trivial instance, which an import warns about)."""
    return _suff(problem, ())


def _suff(problem: Problem, atoms: Certificate) -> bool:
    """``api.suff`` (the explicit backend), by plain simulation on a tiny table (:mod:`solvers.small_check`)."""
    return small_check.suff(problem, atoms) if small_check.applies(problem) else api.suff(problem, atoms)


def _valid(problem: Problem, atoms: Certificate) -> bool:
    """``api.valid`` (the explicit backend), by plain simulation on a tiny table (:mod:`solvers.small_check`)."""
    return small_check.valid(problem, atoms) if small_check.applies(problem) else api.valid(problem, atoms)


def greedy_result(problem: Problem) -> tuple[Certificate | None, bool]:
    """The full-access greedy certifier's certificate and whether the exact checker finds it valid within B_T."""
    cert = greedy_certificate(problem)
    return cert, cert is not None and within_budget(problem, cert) and _valid(problem, cert)


@guarded("greedy")
def _greedy_within(problem: Problem, *, limits: Limits | None = None) -> tuple[Certificate | None, bool]:
    return greedy_result(problem)


def bounded_greedy(problem: Problem, limits: Limits | None) -> tuple[Certificate | None, bool]:
    """:func:`greedy_result` within the time ``limits`` leave (a guarded child killed at the cap): the greedy
    certifier simulates many candidate traces, which on a circuit of a thousand gates took 43 s of a 5 s import
    budget (issue 28). Past the cap it is recorded as not found: (None, False)."""
    if limits is None or limits.seconds is None:
        return greedy_result(problem)
    if _spent(limits):
        return None, False
    try:
        return _greedy_within(problem, limits=Limits(seconds=limits.seconds))
    except Unknown:
        return None, False


#: An answer already known to a caller: the oracle's (None: proven empty) or the greedy baseline's.
_UNSET = object()


def certify(
    problem: Problem,
    queries: QuerySettings = _DEFAULTS,
    *,
    known_count: tuple[int | None, str | None] | None = None,
    known_oracle: OracleResult | object | None = _UNSET,
    known_greedy: tuple[Certificate | None, bool] | None = None,
    deadline: Callable[[], Limits | None] | None = None,
    done: Callable[[], None] | None = None,
) -> Certification:
    """Exact facts about ``problem`` as stored: base outcome, optimal valid certificate, |M_B(I)|, greedy result.

    ``known_count`` passes an already-computed (count, note) for the same problem and budget; ``known_oracle`` the
    answer of ``api.oracle(problem, problem.budget_t, queries.oracle_backend)`` and ``known_greedy`` that of
    :func:`greedy_result` (neither reads B_A, so a problem without it asked the same query), so that no query is
    asked twice; ``deadline``, when given, is asked for the limits of the count and of the greedy certifier as each
    starts (what a shared budget has left), in place of ``queries.count_limits``; ``done`` is called after each of
    the four queries (oracle, count, greedy, base run), for a progress display.
    """
    tick = done or (lambda: None)
    limits_now = deadline or (lambda: queries.count_limits)
    names = problem.system.inputs
    best = (api.oracle(problem, problem.budget_t, queries.oracle_backend) if known_oracle is _UNSET
            else cast("OracleResult | None", known_oracle))
    tick()
    gold, note = known_count or exact_count(problem, backend=queries.count_backend, limits=limits_now(),
                                            max_positions=queries.count_max_positions)
    tick()
    greedy, greedy_ok = known_greedy or bounded_greedy(problem, limits_now())
    tick()
    base = _suff(problem, ())
    tick()
    return Certification(
        base_achieves_effect=base,
        oracle_certificate=certificate_to_json(best.certificate, names) if best else None,
        oracle_eff_t=best.eff_t if best else None,
        oracle_eff_a=best.eff_a if best else None,
        oracle_backend=queries.oracle_backend or api.default_backend("oracle", problem),
        gold_count=gold,
        gold_count_note=note,
        gold_count_backend=queries.count_backend or api.default_backend("count", problem),
        greedy_valid=greedy_ok,
        greedy_certificate=certificate_to_json(greedy, names) if greedy is not None else None,
    )


#: The queries :func:`measure` asks (what its ``progress`` counts to).
MEASURE_QUERIES = 6


@dataclass(frozen=True)
class Measured:
    """What :func:`measure` found: the knobs, the window the instance uses, and its certification."""

    complexity: Complexity
    window: int
    certification: Certification


def measure(
    problem: Problem,
    *,
    window: int | None,
    count_limits: Limits | None = None,
    count_max_positions: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Measured:
    """Measure the knobs, settle the window (``window``, or w(I) when None) and certify the instance with it.

    The time cap of ``count_limits`` is a budget of the whole measurement, not of each query: every query that may
    end unknown (the counts, the knobs' oracle over M(I), the greedy certifier) gets what the ones before it left,
    and one that finds nothing left is recorded as unknown without being started. The certification's oracle (the
    instance's optimal certificate within B_T, which an instance records exactly) always runs to its answer.

    No query is asked twice, or asked at all when an answer already known decides it: in hard mode the instance's
    oracle (its window plays no part) runs first; its "none within B_T" is an exact |M_B(I)| of 0, and its
    certificate gives the knob's Eff_t over M(I) (a valid certificate with fewer timesteps would be within B_T too),
    so the knobs' unbudgeted oracle runs only when none is found within B_T; the hard-mode count is the knob and, in
    hard mode, the instance's |M_B(I)|.
    ``progress`` is told ``(queries answered, MEASURE_QUERIES)`` after each of the six steps (the hard-mode count,
    in hard mode with the oracle; the knobs' oracle; then :func:`certify`'s four), asked or known.
    """
    started = time.monotonic()
    answered = 0

    def tick() -> None:
        nonlocal answered
        answered += 1
        if progress is not None:
            progress(answered, MEASURE_QUERIES)

    def left() -> Limits | None:
        if count_limits is None or count_limits.seconds is None:
            return count_limits
        given = count_limits.seconds if count_limits.given_seconds is None else count_limits.given_seconds
        # A guarded query may run GRACE past its cap before it is killed: its cap ends that much earlier, so that
        # the measurement ends within its budget.
        return replace(count_limits, seconds=max(0.0, count_limits.seconds - GRACE - (time.monotonic() - started)),
                       given_seconds=given)

    hard = hard_problem(problem)
    known_oracle: OracleResult | object | None = _UNSET
    hard_eff_t = None
    if problem.mode == "hard":
        # The instance's own oracle first (its window plays no part in hard mode): it is always decided, and it
        # decides an empty M_B(I) and the knob's Eff_t, so the budget goes to the queries it leaves open.
        known_oracle = best = api.oracle(problem, problem.budget_t)
        hard_eff_t = None if best is None else best.eff_t
        count = (0, None) if best is None else exact_count(hard, limits=left(), max_positions=count_max_positions)
    else:
        count = exact_count(hard, limits=left(), max_positions=count_max_positions)
    tick()
    complexity = measure_complexity(problem, hard_count=count, hard_eff_t=hard_eff_t, oracle_limits=left())
    tick()
    w = complexity.window if window is None else window
    final = replace(problem, window=w)
    cert = certify(final, QuerySettings(count_limits=left(), count_max_positions=count_max_positions),
                   known_count=count if problem.mode == "hard" else None, known_oracle=known_oracle,
                   deadline=left, done=tick)
    return Measured(complexity, w, cert)
