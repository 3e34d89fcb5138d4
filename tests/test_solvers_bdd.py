"""BDD-specific behaviour on dd.cudd and dd.autoref alike: exact big-int counts, lazy enumeration, node limits.

The contract itself (every query against the brute-force twin) is ``tests/backend_common.py``, run per library by
``tests/test_backends.py``.
"""

from __future__ import annotations

import math

import pytest
from brute import brute_valid_set
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import problems

from encoders.problem import Problem
from hoa.label import Var
from hoa.mealy import MealyView
from solvers import api
from solvers.bdd import BddBackend
from solvers.limits import Limits, Unknown

LIBS = ("cudd", "autoref")


def _parity_problem(steps: int, budget: int | None) -> Problem:
    """One input; the output is the parity of all inputs so far: every odd-size flip set is valid (base even)."""
    view = MealyView.from_table(("a",), ("o",), next_table=[[0, 1], [1, 0]], out_table=[[0, 1], [1, 0]])
    return Problem(view, (0,) * steps, Var(0), steps - 1, "hard", 1, budget)


@pytest.mark.parametrize("lib", LIBS)
def test_count_is_exact_beyond_float_precision(lib: str) -> None:
    b = BddBackend(lib)
    steps, budget = 60, 41
    want = sum(math.comb(steps, k) for k in range(1, budget + 1, 2))
    assert want > 2**53 and float(want) != want
    assert b.count(_parity_problem(steps, budget), budget) == want
    assert b.count(_parity_problem(steps, None), None) == 2 ** (steps - 1)


def test_first_certificates_of_a_large_set_come_lazily_in_canonical_order() -> None:
    problem = _parity_problem(40, None)
    got = list(BddBackend().enumerate_certificates(problem, None, limit=3))
    assert got == [((k, 0, 1),) for k in range(3)]


@pytest.mark.parametrize("lib", LIBS)
def test_limits_say_unknown_never_a_wrong_answer(lib: str) -> None:
    b = BddBackend(lib)
    problem = _parity_problem(30, 7)
    with pytest.raises(Unknown) as err:
        b.count(problem, 7, limits=Limits(nodes=5))
    assert err.value.query == "count" and err.value.spent["nodes"] > 5
    with pytest.raises(Unknown):
        b.count(problem, 7, limits=Limits(seconds=0.0))
    with pytest.raises(Unknown):
        b.best_match(problem, [(0, 0, 1)], 7, limits=Limits(nodes=5))
    with pytest.raises(Unknown):
        list(b.enumerate_certificates(problem, 7, None, limits=Limits(nodes=5)))
    assert b.count(problem, 7, limits=Limits(seconds=600, nodes=10**7)) == sum(
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
        got = BddBackend().count(problem, problem.budget_t, limits=Limits(nodes=cap))
    except Unknown as err:
        assert err.spent["nodes"] > cap
    else:
        assert got == len(expected)
    try:
        listed = list(BddBackend().enumerate_certificates(problem, problem.budget_t, None, limits=Limits(nodes=cap)))
    except Unknown:
        return
    assert listed == expected
