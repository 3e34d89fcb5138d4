"""Lock-step simulation (check_many) against the brute-force twin, and explicit-backend corner cases (the contract
itself is ``tests/backend_common.py``)."""

from __future__ import annotations

from brute import brute_min1, brute_suff
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import certificates, problems

from encoders.problem import Problem
from hoa.label import Var
from hoa.mealy import MealyView
from solvers import explicit, paths
from solvers.simulate import check_many


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_check_many_agrees_with_brute(data: st.DataObject) -> None:
    problem = data.draw(problems())
    certs = data.draw(st.lists(certificates(problem), min_size=1, max_size=6))
    s, m = check_many(problem, certs)
    assert s.tolist() == [brute_suff(problem, c) for c in certs]
    assert m.tolist() == [brute_min1(problem, c) for c in certs]


def counter_view() -> MealyView:
    """One input ``a``, one output ``o``; the state is the parity of the a's so far, o = a and the parity is odd."""
    nxt = [[0, 1], [1, 0]]
    out = [[0, 0], [0, 1]]
    return MealyView.from_table(("a",), ("o",), nxt, out)


def test_empty_certificate_is_valid_when_the_base_run_already_shows_the_effect() -> None:
    problem = Problem(counter_view(), (1, 1, 0), Var(0), t_star=1)
    assert explicit.valid(problem, [])
    assert paths.oracle(problem, None).certificate == ()


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
    s, m = check_many(problem, certs)
    assert s.tolist() == [brute_suff(problem, c) for c in certs]
    assert m.tolist() == [brute_min1(problem, c) for c in certs]
