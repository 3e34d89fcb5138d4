"""The query API: every backend against the brute-force twin, non-monotone cases, limits, and dispatch errors."""

from __future__ import annotations

import dataclasses

import pytest
from brute import brute_best_match, brute_oracle, brute_subset_min, brute_valid, brute_valid_set
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import certificates, problems

from encoders.problem import Problem
from hoa.errors import Gf01Error
from hoa.label import Var
from hoa.mealy import MealyView
from solvers import api
from solvers.limits import Limits, Unknown

BACKENDS = list(api.BACKENDS)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_all_backends_agree_with_brute(data: st.DataObject) -> None:
    problem = data.draw(problems(max_flips=9))
    cert = data.draw(certificates(problem))
    budget = problem.budget_t
    gold = brute_valid_set(problem, budget)
    best = brute_oracle(problem, budget)
    match = dataclasses.asdict(brute_best_match(problem, cert, budget))
    for b in BACKENDS:
        assert api.valid(problem, cert, b) == brute_valid(problem, cert), b
        assert api.subset_min(problem, cert, b) == brute_subset_min(problem, cert), b
        assert api.count(problem, budget, b) == len(gold), b
        assert list(api.enumerate_certificates(problem, budget, None, b)) == gold, b
        w = api.witness(problem, budget, b)
        assert (w in gold) if gold else w is None, b
        res = api.oracle(problem, budget, b)
        assert (None if res is None else (res.eff_t, res.eff_a)) == best, b
        assert dataclasses.asdict(api.best_match(problem, cert, budget, b)) == match, b


def parity_problem() -> Problem:
    """One step, inputs a, b, c, d (all 0 in tau); output o = a XOR b XOR c (d is ignored); effect o at t* = 0."""
    nxt = [[0] * 16]
    out = [[bin(x & 0b111).count("1") & 1 for x in range(16)]]
    return Problem(MealyView.from_table(("a", "b", "c", "d"), ("o",), nxt, out), (0,), Var(0), t_star=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_monotone_sufficiency(backend: str) -> None:
    """Suff is not monotone in C, so Min1 (singleton removal) is weaker than subset-minimality."""
    p = parity_problem()
    a, b, c, d = (0, 0, 1), (0, 1, 1), (0, 2, 1), (0, 3, 1)
    # The pattern: Suff(C) true, Suff(C - {d}) true, Suff(C - {d, a}) false.
    assert api.suff(p, [a, d], backend) and api.suff(p, [a], backend) and not api.suff(p, [], backend)
    assert not api.min1(p, [a, d], backend) and api.valid(p, [a], backend)
    # Min1 holds for {a, b, c} (every pair has even parity), yet its proper subset {a} is sufficient.
    assert api.valid(p, [a, b, c], backend) and not api.subset_min(p, [a, b, c], backend)
    assert api.subset_min(p, [a], backend)
    # A restated base value changes nothing and breaks Min1.
    assert api.suff(p, [a, (0, 1, 0)], backend) and not api.min1(p, [a, (0, 1, 0)], backend)
    # Blocking supersets of a found certificate would lose {a, b, c}: M(I) holds it and its subsets {a}, {b}, {c}.
    expected = [(a,), (b,), (c,), (a, b, c)]
    assert list(api.enumerate_certificates(p, None, None, backend)) == expected
    assert api.count(p, None, backend) == 4
    assert list(api.enumerate_certificates(p, None, 3, backend)) == expected[:3]


def test_limits_answer_unknown_never_a_guess() -> None:
    p = parity_problem()
    for b in BACKENDS:
        with pytest.raises(Unknown) as info:
            api.count(p, None, b, Limits(seconds=0.0))
        assert info.value.query in ("count", "enumerate") and "time limit" in info.value.reason
    with pytest.raises(Unknown):
        api.oracle(p, None, "sat", Limits(seconds=0.0))


def test_unknown_backend_and_unanswered_queries() -> None:
    p = parity_problem()
    with pytest.raises(Gf01Error, match="unknown backend 'nope'"):
        api.suff(p, [], "nope")
    with pytest.raises(Gf01Error, match="backend explicit does not answer oracle"):
        api.oracle(dataclasses.replace(p, system=wide_view(), trace=(0,)), None, "explicit")


def wide_view() -> MealyView:
    """21 inputs: too many for the dense tables the explicit oracle needs."""
    from hoa.mealy import MealyEdge

    return MealyView(tuple(f"i{k}" for k in range(21)), ("o",), ((MealyEdge(Var(21), 0),),))
