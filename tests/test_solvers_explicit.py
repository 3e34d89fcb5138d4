"""The explicit backend and the shortest-path oracle against the brute-force twin on random small problems."""

from __future__ import annotations

from brute import brute_min1, brute_oracle, brute_subset_min, brute_suff, brute_valid_set
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import certificates, problems

from encoders.problem import Problem
from hoa.label import Var
from hoa.mealy import MealyView
from solvers import explicit, paths


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_check_many_agrees_with_brute(data: st.DataObject) -> None:
    problem = data.draw(problems())
    certs = data.draw(st.lists(certificates(problem), min_size=1, max_size=6))
    s, m = explicit.check_many(problem, certs)
    assert s.tolist() == [brute_suff(problem, c) for c in certs]
    assert m.tolist() == [brute_min1(problem, c) for c in certs]


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_subset_min_agrees_with_brute(data: st.DataObject) -> None:
    problem = data.draw(problems())
    cert = data.draw(certificates(problem))
    assert explicit.subset_min(problem, cert) == brute_subset_min(problem, cert)


@settings(max_examples=80, deadline=None)
@given(problems())
def test_oracle_is_optimal_and_valid(problem: Problem) -> None:
    res = paths.oracle(problem, problem.budget_t)
    best = brute_oracle(problem, problem.budget_t)
    if best is None:
        assert res is None
        return
    assert res is not None and res.optimal
    assert (res.eff_t, res.eff_a) == best
    assert res.certificate in brute_valid_set(problem, problem.budget_t)


@settings(max_examples=60, deadline=None)
@given(problems(max_flips=9))
def test_enumeration_is_exact_and_canonical(problem: Problem) -> None:
    got = list(explicit.enumerate_certificates(problem, problem.budget_t))
    assert got == brute_valid_set(problem, problem.budget_t)
    assert explicit.count(problem, problem.budget_t) == len(got)
    assert list(explicit.enumerate_certificates(problem, problem.budget_t, limit=2)) == got[:2]


def counter_view() -> MealyView:
    """One input ``a``, one output ``o``; the state is the parity of the a's so far, o = a and the parity is odd."""
    nxt = [[0, 1], [1, 0]]
    out = [[0, 0], [0, 1]]
    return MealyView.from_table(("a",), ("o",), nxt, out)


def test_empty_certificate_is_valid_when_the_base_run_already_shows_the_effect() -> None:
    problem = Problem(counter_view(), (1, 1, 0), Var(0), t_star=1)
    assert explicit.valid(problem, [])
    assert paths.oracle(problem).certificate == ()


def test_noop_atom_breaks_min1_and_late_atoms_are_irrelevant() -> None:
    problem = Problem(counter_view(), (0, 1, 0), Var(0), t_star=1)
    assert not explicit.suff(problem, [])
    assert explicit.valid(problem, [(0, 0, 1)])
    assert not explicit.min1(problem, [(0, 0, 1), (1, 0, 1)])  # (1, a, 1) restates the base value
    assert explicit.suff(problem, [(0, 0, 1), (2, 0, 1)]) and not explicit.valid(problem, [(0, 0, 1), (2, 0, 1)])


def test_check_many_matches_single_queries_on_a_larger_random_batch() -> None:
    import numpy as np

    rng = np.random.Generator(np.random.PCG64(3))
    nxt = rng.integers(0, 8, size=(8, 16))
    out = rng.integers(0, 4, size=(8, 16))
    system = MealyView.from_table(("a", "b", "c", "d"), ("o", "p"), nxt, out)
    trace = tuple(int(x) for x in rng.integers(0, 16, size=12))
    problem = Problem(system, trace, Var(1), t_star=9, mode="normal", window=2)
    certs = []
    for _ in range(200):
        k = int(rng.integers(0, 6))
        pos = rng.choice(12 * 4, size=k, replace=False)
        certs.append(tuple((int(p) // 4, int(p) % 4, int(rng.integers(0, 2))) for p in pos))
    s, m = explicit.check_many(problem, certs)
    assert s.tolist() == [brute_suff(problem, c) for c in certs]
    assert m.tolist() == [brute_min1(problem, c) for c in certs]
