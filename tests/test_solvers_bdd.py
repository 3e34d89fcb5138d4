"""The bdd backend against the brute-force twin, on dd.cudd and dd.autoref alike (one suite, both libraries)."""

from __future__ import annotations

import math

import pytest
from brute import (
    brute_best_match,
    brute_min1,
    brute_subset_min,
    brute_suff,
    brute_valid,
    brute_valid_set,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import certificates, problems

from encoders.problem import Problem
from hoa.label import Var
from hoa.mealy import MealyView
from solvers import api
from solvers import bdd as B
from solvers.canonical import order_key
from solvers.limits import Limits, Unknown

LIBS = ("cudd", "autoref")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("lib", LIBS)
@SETTINGS
@given(problem=problems(max_flips=10))
def test_count_and_enumeration_match_brute(lib: str, problem: Problem) -> None:
    for budget in sorted({problem.budget_t, None}, key=lambda b: -1 if b is None else b):
        expected = brute_valid_set(problem, budget)
        assert B.count(problem, budget, lib=lib) == len(expected)
        got = list(B.enumerate_certificates(problem, budget, lib=lib))
        assert got == expected
        assert got == sorted(got, key=lambda c: order_key(problem, c))
        assert list(B.enumerate_certificates(problem, budget, limit=2, lib=lib)) == expected[:2]
        first = B.oracle(problem, budget, lib=lib)
        assert B.witness(problem, budget, lib=lib) == (expected[0] if expected else None)
        if expected:
            assert first is not None and first.optimal
            assert (first.eff_t, first.eff_a) == (len({a[0] for a in expected[0]}), len(expected[0]))
        else:
            assert first is None


@pytest.mark.parametrize("lib", LIBS)
@SETTINGS
@given(data=st.data())
def test_certificate_checks_match_brute(lib: str, data: st.DataObject) -> None:
    problem = data.draw(problems(max_flips=10))
    cert = data.draw(certificates(problem))
    assert B.suff(problem, cert, lib=lib) == brute_suff(problem, cert)
    assert B.min1(problem, cert, lib=lib) == brute_min1(problem, cert)
    assert B.valid(problem, cert, lib=lib) == brute_valid(problem, cert)
    assert B.subset_min(problem, cert, lib=lib) == brute_subset_min(problem, cert)


@pytest.mark.parametrize("lib", LIBS)
@SETTINGS
@given(data=st.data())
def test_best_match_matches_brute(lib: str, data: st.DataObject) -> None:
    problem = data.draw(problems(max_flips=10))
    # Half the time the agent plays a valid certificate (or a perturbed one), so high F1 values are exercised.
    golds = brute_valid_set(problem, problem.budget_t)
    if golds and data.draw(st.booleans()):
        cert = data.draw(st.sampled_from(golds))
        cert = cert[: data.draw(st.integers(0, len(cert)))]
    else:
        cert = data.draw(certificates(problem))
    got = B.best_match(problem, cert, problem.budget_t, lib=lib)
    want = brute_best_match(problem, cert, problem.budget_t)
    assert got == api.BestMatch(**{f: getattr(want, f) for f in want.__dataclass_fields__})


def _parity_problem(steps: int, budget: int | None) -> Problem:
    """One input; the output is the parity of all inputs so far: every odd-size flip set is valid (base even)."""
    view = MealyView.from_table(("a",), ("o",), next_table=[[0, 1], [1, 0]], out_table=[[0, 1], [1, 0]])
    return Problem(view, (0,) * steps, Var(0), steps - 1, "hard", 1, budget)


@pytest.mark.parametrize("lib", LIBS)
def test_count_is_exact_beyond_float_precision(lib: str) -> None:
    steps, budget = 60, 41
    want = sum(math.comb(steps, k) for k in range(1, budget + 1, 2))
    assert want > 2**53 and float(want) != want
    assert B.count(_parity_problem(steps, budget), budget, lib=lib) == want
    assert B.count(_parity_problem(steps, None), None, lib=lib) == 2 ** (steps - 1)


def test_first_certificates_of_a_large_set_come_lazily_in_canonical_order() -> None:
    problem = _parity_problem(40, None)
    got = list(B.enumerate_certificates(problem, None, limit=3))
    assert got == [((k, 0, 1),) for k in range(3)]


@pytest.mark.parametrize("lib", LIBS)
def test_limits_say_unknown_never_a_wrong_answer(lib: str) -> None:
    problem = _parity_problem(30, 7)
    with pytest.raises(Unknown) as err:
        B.count(problem, 7, Limits(nodes=5), lib=lib)
    assert err.value.query == "count" and err.value.spent["nodes"] > 5
    with pytest.raises(Unknown):
        B.count(problem, 7, Limits(seconds=0.0), lib=lib)
    with pytest.raises(Unknown):
        B.best_match(problem, [(0, 0, 1)], 7, Limits(nodes=5), lib=lib)
    with pytest.raises(Unknown):
        list(B.enumerate_certificates(problem, 7, None, Limits(nodes=5), lib=lib))
    assert B.count(problem, 7, Limits(seconds=600, nodes=10**7), lib=lib) == sum(
        math.comb(30, k) for k in range(1, 8, 2)
    )


def test_api_dispatches_to_the_bdd_backend() -> None:
    problem = _parity_problem(6, 3)
    assert api.count(problem, 3, backend="bdd") == math.comb(6, 1) + math.comb(6, 3)
    assert api.best_match(problem, [(5, 0, 1)], 3, backend="bdd").gold == ((5, 0, 1),)
    assert api.witness(problem, 3, backend="bdd") == ((0, 0, 1),)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=10), cap=st.integers(1, 400))
def test_under_a_node_cap_the_answer_is_exact_or_unknown(problem: Problem, cap: int) -> None:
    expected = brute_valid_set(problem, problem.budget_t)
    try:
        got = B.count(problem, problem.budget_t, Limits(nodes=cap))
    except Unknown as err:
        assert err.spent["nodes"] > cap
    else:
        assert got == len(expected)
    try:
        listed = list(B.enumerate_certificates(problem, problem.budget_t, None, Limits(nodes=cap)))
    except Unknown:
        return
    assert listed == expected
