"""The measurement of an import (issue 28): its time cap is a budget of the whole measurement, shared by the queries
that may end unknown, and the answers it derives instead of asking (hard mode: the oracle within B_T stands for an
empty count and for the knob's Eff_t) are those of the queries themselves."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import gf01_formal.instances.measure as measure_mod
from gf01_formal.instances.io import instance_problem
from gf01_formal.instances.measure import hard_problem
from gf01_formal.instances.sources import InstanceOptions, instance_from_hoa
from solvers import api
from solvers.limits import Limits

EXAMPLES = Path(__file__).resolve().parents[1] / "gf01_formal" / "examples"
TRACE = "r0&!r1;!r0&!r1;!r0&!r1;!r0&r1;!r0&!r1"


def test_every_bounded_query_gets_what_the_ones_before_it_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """Normal mode asks every bounded query (the hard-mode count, the knobs' oracle over M(I), the instance's count,
    the greedy certifier): none may be given more time than the budget has left when it starts (the knobs' oracle
    was given the whole budget again, so an import took budget + budget)."""
    budget = 30.0
    calls: list[tuple[str, float, float | None]] = []

    def spy(name: str, fn: Any, key: str, position: int | None = None) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            limits = args[position] if position is not None and len(args) > position else kwargs.get(key)
            calls.append((name, time.monotonic(), None if limits is None else limits.seconds))
            return fn(*args, **kwargs)
        return call

    monkeypatch.setattr(measure_mod, "exact_count", spy("count", measure_mod.exact_count, "limits"))
    monkeypatch.setattr(measure_mod, "bounded_greedy", spy("greedy", measure_mod.bounded_greedy, "limits", 1))
    monkeypatch.setattr(measure_mod.api, "oracle", spy("oracle", api.oracle, "limits"))
    opts = InstanceOptions(trace=TRACE, effect="g0", mode="normal")
    started = time.monotonic()
    inst = instance_from_hoa((EXAMPLES / "arbiter.hoa").read_text(), opts, measure=True,
                             count_limits=Limits(seconds=budget))
    assert inst.complexity is not None and inst.certification is not None
    bounded = [(name, at, secs) for name, at, secs in calls if secs is not None]
    assert {name for name, _, _ in bounded} == {"count", "oracle", "greedy"}
    for name, at, secs in bounded:
        assert (at - started) + secs <= budget, (name, at - started, secs)
    # The instance's own oracle (within B_T) is always decided: asked without a cap.
    assert any(name == "oracle" and secs is None for name, _, secs in calls)


@pytest.mark.parametrize("effect", ["g0", "g1", "g0 & g1", "!g0 & !g1"])
@pytest.mark.parametrize("budget_t", [1, 2, 5])
def test_hard_mode_answers_derived_from_the_oracle_are_the_queries_answers(effect: str, budget_t: int) -> None:
    opts = InstanceOptions(trace=TRACE, effect=effect, budget_t=budget_t)
    inst = instance_from_hoa((EXAMPLES / "arbiter.hoa").read_text(), opts, measure=True,
                             count_limits=Limits(seconds=60))
    problem = instance_problem(inst)
    cert, knobs = inst.certification, inst.complexity
    assert cert is not None and knobs is not None
    best = api.oracle(problem, budget_t)
    assert (cert.oracle_eff_t, cert.oracle_eff_a) == ((best.eff_t, best.eff_a) if best else (None, None))
    assert cert.gold_count == api.count(problem, budget_t)
    unbounded = api.oracle(hard_problem(problem), None)
    assert knobs.oracle_eff_t.raw == (None if unbounded is None else unbounded.eff_t)
    assert knobs.gold_count.raw == cert.gold_count


def test_a_spent_budget_starts_no_query_and_records_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing left, a bounded query is unknown at once (no child process forked only to be stopped)."""
    import solvers.limits as limits_mod

    def no_fork(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a query was started with no time left")

    monkeypatch.setattr(limits_mod, "_bounded", no_fork)
    opts = InstanceOptions(trace=TRACE, effect="g0", mode="normal")
    inst = instance_from_hoa((EXAMPLES / "arbiter.hoa").read_text(), opts, measure=True,
                             count_limits=Limits(seconds=0.0))
    cert, knobs = inst.certification, inst.complexity
    assert cert is not None and knobs is not None
    assert cert.gold_count is None and cert.gold_count_note == "unknown: time limit 0 s"
    assert knobs.oracle_eff_t.raw is None and knobs.oracle_eff_t.note == "unknown: time limit 0 s"
    assert cert.greedy_valid is False and cert.oracle_backend
