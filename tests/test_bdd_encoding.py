"""The BDD encoding (variable order, Suff, count constraints) and the exact DAG walks, on both dd libraries."""

from __future__ import annotations

import itertools

import pytest
from brute import brute_suff
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import problems

from encoders.bdd import ORDERS, budget_bdd, count_constraint, encode, flip_positions, manager, valid_bdd, var_name
from encoders.problem import Problem
from hoa.errors import Gf01Error
from hoa.label import Var
from hoa.mealy import MealyView
from solvers.bigcount import count, export, models, profile

LIBS = ("cudd", "autoref")


def _problem(names: tuple[str, ...], steps: int, t_star: int) -> Problem:
    n = len(names)
    view = MealyView.from_table(names, ("o",), next_table=[[0] * (1 << n)], out_table=[[x & 1 for x in range(1 << n)]])
    return Problem(view, (0,) * steps, Var(0), t_star)


def test_variable_order_is_time_major_with_inputs_by_name() -> None:
    problem = _problem(("r", "g", "a"), steps=5, t_star=1)
    assert flip_positions(problem) == ((0, 2), (0, 1), (0, 0), (1, 2), (1, 1), (1, 0))
    enc = encode(problem)
    assert enc.names == tuple(var_name(t, i) for t, i in flip_positions(problem))
    assert [enc.bdd.level_of_var(n) for n in enc.names] == list(range(6))
    assert enc.level_of(1, 0) == 5


def test_unknown_library_is_refused() -> None:
    with pytest.raises(Gf01Error, match="unknown BDD library"):
        manager("buddy")


@pytest.mark.parametrize("lib", LIBS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=8))
def test_suff_bdd_is_the_truth_table_of_suff(lib: str, problem: Problem) -> None:
    enc = encode(problem, lib)
    positions = enc.positions
    for mask in range(1 << len(positions)):
        flips = [p for k, p in enumerate(positions) if mask >> k & 1]
        atoms = [(t, i, 1 - ((problem.trace[t] >> i) & 1)) for t, i in flips]
        assert enc.holds(enc.suff, flips) == brute_suff(problem, atoms)
    # Budget: at most B touched steps, exactly.
    if problem.budget_t is not None:
        u = budget_bdd(enc, problem.budget_t)
        for mask in range(1 << len(positions)):
            flips = [p for k, p in enumerate(positions) if mask >> k & 1]
            assert enc.holds(u, flips) == (len({t for t, _ in flips}) <= problem.budget_t)


def _random_function(bdd, names: list[str], table: list[bool]):
    u = bdd.false
    for x, on in enumerate(table):
        if on:
            cube = bdd.true
            for i, name in enumerate(names):
                cube = cube & (bdd.var(name) if x >> i & 1 else ~bdd.var(name))
            u = u | cube
    return u


@pytest.mark.parametrize("lib", LIBS)
@settings(max_examples=60, deadline=None)
@given(table=st.lists(st.booleans(), min_size=32, max_size=32), negate=st.booleans())
def test_walks_agree_with_the_truth_table(lib: str, table: list[bool], negate: bool) -> None:
    bdd, _ = manager(lib)
    names = [f"x{i}" for i in range(5)]
    bdd.declare(*names)
    u = _random_function(bdd, names, table)
    if negate:
        u, table = ~u, [not v for v in table]
    dag = export(bdd, u, 5)
    ones = [tuple(i for i in range(5) if x >> i & 1) for x in range(32) if table[x]]
    assert count(dag) == len(ones)
    # Depth first, 1 before 0 at each level.
    assert list(models(dag)) == sorted(ones, key=lambda s: [lv not in s for lv in range(5)])
    # Profile: x = touched steps of two levels each, y = number of ones.
    want: dict[int, int] = {}
    for s in ones:
        steps = len({lv // 2 for lv in s})
        want[steps] = want.get(steps, 0) | (1 << len(s))
    got = profile(dag, [lv // 2 for lv in range(5)], lambda kind, k: (0, 1) if kind == 0 else (1, 0))
    assert got == want


@pytest.mark.parametrize("lib", LIBS)
def test_count_constraint_counts_exactly(lib: str) -> None:
    bdd, _ = manager(lib)
    names = [f"x{i}" for i in range(6)]
    bdd.declare(*names)
    units = [bdd.var(n) for n in names]
    for k in range(7):
        u = count_constraint(bdd, units, lambda c, k=k: c == k)
        for bits in itertools.product((False, True), repeat=6):
            r = bdd.let(dict(zip(names, bits, strict=True)), u)
            assert (r == bdd.true) == (sum(bits) == k)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=8))
def test_every_variable_order_gives_the_same_count(problem: Problem) -> None:
    counts = set()
    for order in ORDERS:
        enc = encode(problem, "cudd", order=order)
        v = valid_bdd(enc, budget_bdd(enc, problem.budget_t))
        counts.add(count(export(enc.bdd, v, enc.num_vars)))
    assert len(counts) == 1


def test_orders_place_variables_as_documented() -> None:
    problem = _problem(("r", "g"), steps=3, t_star=1)
    assert flip_positions(problem, "input") == ((0, 1), (1, 1), (0, 0), (1, 0))
    assert flip_positions(problem, "time-reversed") == ((1, 1), (1, 0), (0, 1), (0, 0))
    with pytest.raises(Gf01Error, match="unknown variable order"):
        flip_positions(problem, "random")
