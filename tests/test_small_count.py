"""The plain-Python count of tiny instances (solvers/small_count.py, issue 33 item 4) against the brute-force twin (and
the plain-Python oracle, solvers/small_oracle.py, on the same draws) and the forward backend's numpy pass, its
hand-over to the pass past its key bound, and its use by the generator's exact count
(gf01_formal/instances/measure.py)."""

from __future__ import annotations

import dataclasses

import pytest
from brute import brute_count, brute_valid_set
from hypothesis import HealthCheck, given, settings
from numpy.random import PCG64, Generator
from strategies import problems

from encoders.problem import Problem
from gf01_formal.instances import measure
from hoa.label import And, Not, Or, Var
from hoa.mealy import MealyView
from solvers import forward, small_count, small_oracle
from solvers.limits import Limits


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=11, max_states=5))
def test_count_matches_the_brute_twin(problem: Problem) -> None:
    """And the plain-Python oracle of the same tiny tables (solvers/small_oracle.py) gives the least (Eff_t, Eff_a)
    of the same brute-force sets: one draw and one brute-force listing serve both twins."""
    within, full = brute_valid_set(problem, problem.budget_t), brute_valid_set(problem, None)
    got = small_count.count(problem, problem.budget_t)
    assert got is not None  # every drawn system is a table of at most 5 states and 3 inputs
    assert got == len(within)
    assert small_count.count(problem, None) == len(full)
    for budget, golds in ((problem.budget_t, within), (None, full)):
        best = small_oracle.oracle(problem, budget)
        least = min(((len({a[0] for a in c}), len(c)) for c in golds), default=None)
        assert (None if best is None else (best.eff_t, best.eff_a)) == least


def peer_sized(seed: int, T: int) -> Problem:
    """A random Mealy table at the generator's peer sizes (3 inputs, 2 outputs, 3-6 states), a random trace, a random
    two-output effect, t*, mode, window and B_T."""
    rng = Generator(PCG64(seed))
    n_states = int(rng.integers(3, 7))
    nxt = rng.integers(0, n_states, size=(n_states, 8))
    out = rng.integers(0, 4, size=(n_states, 8))
    view = MealyView.from_table(("a", "b", "c"), ("x", "y"), nxt, out)
    trace = tuple(int(x) for x in rng.integers(0, 8, size=T))
    effect = [Var(0), Not(Var(1)), And((Var(0), Var(1))), Or((Var(0), Not(Var(1))))][int(rng.integers(0, 4))]
    t_star = int(rng.integers(0, T))
    mode = "hard" if rng.random() < 0.5 else "normal"
    budget = None if rng.random() < 0.2 else int(rng.integers(1, t_star + 2))
    return Problem(view, trace, effect, t_star, mode, int(rng.integers(0, 4)), budget)


@pytest.mark.parametrize("seed", range(40))
def test_count_matches_the_numpy_pass_at_the_peer_sizes(seed: int) -> None:
    problem = peer_sized(seed, 12)
    assert small_count.count(problem, problem.budget_t) == forward.count(problem, problem.budget_t)


@pytest.mark.parametrize("seed", range(40))
def test_count_matches_the_brute_twin_at_the_peer_sizes(seed: int) -> None:
    problem = peer_sized(1000 + seed, 4)  # 12 flip positions: the brute twin's reach
    assert small_count.count(problem, problem.budget_t) == brute_count(problem, problem.budget_t)


def test_past_the_key_bound_the_numpy_pass_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = next(p for p in (peer_sized(s, 12) for s in range(100)) if forward.count(p, p.budget_t) > 5)
    expected = forward.count(problem, problem.budget_t)
    monkeypatch.setattr(small_count, "MAX_KEYS", 1)
    assert small_count.count(problem, problem.budget_t) is None
    assert measure.exact_count(problem) == (expected, None)
    monkeypatch.setattr(small_count, "MAX_KEYS", 4096)
    assert small_count.count(problem, problem.budget_t) == expected
    monkeypatch.setattr(small_count, "MAX_WORK", 8)
    assert small_count.count(problem, problem.budget_t) is None
    assert measure.exact_count(problem) == (expected, None)


def test_systems_past_its_sizes_are_not_tiny() -> None:
    problem = peer_sized(3, 6)
    wide = MealyView.from_table(tuple("abcde"), ("x", "y"), [[0] * 32], [[1] * 32])
    assert small_count.applies(problem)
    assert not small_count.applies(dataclasses.replace(problem, system=wide, trace=(0,) * 6))
    assert small_count.count(dataclasses.replace(problem, system=wide, trace=(0,) * 6), None) is None


def test_exact_count_takes_the_tiny_path_only_for_the_forward_backend_without_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    problem = peer_sized(7, 10)
    expected = forward.count(problem, problem.budget_t)
    calls: list[int] = []
    real = small_count.count

    def spy(p: Problem, budget: int | None) -> int | None:
        calls.append(1)
        return real(p, budget)

    monkeypatch.setattr(small_count, "count", spy)
    assert measure.exact_count(problem) == (expected, None)
    assert measure.exact_count(problem, backend="forward") == (expected, None)
    assert len(calls) == 2
    assert measure.exact_count(problem, backend="bdd") == (expected, None)
    assert measure.exact_count(problem, backend="forward", limits=Limits(nodes=10**6)) == (expected, None)
    assert measure.exact_count(problem, limits=Limits(seconds=600)) == (expected, None)
    assert len(calls) == 2
