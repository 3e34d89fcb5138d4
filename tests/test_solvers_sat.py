"""SAT-specific behaviour: the counter hints on wide steps, conflict and time limits, and the oracle cross-checked by
RC2 weighted MaxSAT beyond brute-force sizes (the contract itself is ``tests/backend_common.py``)."""

from __future__ import annotations

import pytest
from brute import brute_oracle, brute_valid_set
from hypothesis import given, settings
from strategies import problems

from encoders.problem import Problem
from solvers import sat


@settings(max_examples=15, deadline=None)
@given(problems(max_states=14, max_inputs=2, max_outputs=2, max_T=5, max_flips=8))
def test_wide_steps_with_counter_hints_agree_with_brute(problem: Problem) -> None:
    """More than 8 live states per step switches the one-hot hint to a sequential counter: still exact."""
    gold = brute_valid_set(problem, problem.budget_t)
    assert sat.count(problem, problem.budget_t) == len(gold)
    res = sat.oracle(problem, problem.budget_t)
    assert (res is None) == (not gold)
    if res is not None:
        assert (res.eff_t, res.eff_a) == brute_oracle(problem, problem.budget_t)


def random_table_problem(seed: int, n_states: int = 8, T: int = 16) -> Problem:
    import numpy as np

    from hoa.label import And, Var
    from hoa.mealy import MealyView

    rng = np.random.Generator(np.random.PCG64(seed))
    nxt = rng.integers(0, n_states, size=(n_states, 8))
    out = rng.integers(0, 4, size=(n_states, 8))
    view = MealyView.from_table(("a", "b", "c"), ("o", "p"), nxt, out)
    trace = tuple(int(x) for x in rng.integers(0, 8, size=T))
    return Problem(view, trace, And((Var(0), Var(1))), t_star=T - 1)


def test_conflict_and_time_limits_say_unknown_and_never_guess() -> None:
    from solvers import paths
    from solvers.limits import Limits, Unknown

    # 16 states: the 8-state table of this seed is solved by propagation alone in the log encoding (no conflict).
    p = random_table_problem(5, n_states=16)
    with pytest.raises(Unknown) as info:
        sat.oracle(p, None, limits=Limits(conflicts=1))
    assert "conflict limit 1" in info.value.reason and info.value.spent["conflicts"] >= 1
    res = sat.oracle(p, None, limits=Limits(conflicts=10**7, seconds=600))  # the limited (Glucose) path, answering
    best = paths.oracle(p, None)
    assert res is not None and best is not None and (res.eff_t, res.eff_a) == (best.eff_t, best.eff_a)
    # |M(I)| is 25871444709 here: blocking-clause counting cannot finish in 1.5 s, and must say so (whether the
    # limit strikes while encoding, between SAT calls or inside one depends on the machine's load).
    with pytest.raises(Unknown) as info:
        sat.count(p, None, limits=Limits(seconds=1.5))
    assert info.value.query == "count" and "time limit" in info.value.reason


@settings(max_examples=30, deadline=None)
@given(problems(max_states=6, max_inputs=3, max_T=8, max_flips=24))
def test_oracle_cost_matches_rc2_maxsat(problem: Problem) -> None:
    """Cross-check on larger problems than brute force allows: weighted MaxSAT (RC2) minimises BIG*Eff_t + Eff_a."""
    from pysat.examples.rc2 import RC2
    from pysat.formula import WCNF

    from encoders.cnf import add_timestep_budget, encode
    from solvers import paths

    enc = encode(problem)
    if problem.budget_t is not None:
        add_timestep_budget(enc, problem.budget_t)
    big = len(enc.flips) + 1
    wcnf = WCNF()
    for clause in [*enc.clauses, [enc.suff]]:
        wcnf.append(clause)
    for lit in enc.timestep.values():
        wcnf.append([-lit], weight=big)
    for lit in enc.flips.values():
        wcnf.append([-lit], weight=1)
    with RC2(wcnf) as rc2:
        model = rc2.compute()
        cost = None if model is None else rc2.cost
    res = sat.oracle(problem, problem.budget_t)
    ref = paths.oracle(problem, problem.budget_t)
    got = None if res is None else res.eff_t * big + res.eff_a
    assert got == cost == (None if ref is None else ref.eff_t * big + ref.eff_a)
