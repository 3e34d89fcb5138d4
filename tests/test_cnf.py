"""The CNF encoder: per-edge logic against the Mealy step, canonical numbering, DIMACS read back by another solver;
the log (binary) state encoding and the one-hot one agree with brute force, and the covers it is built from are
exact."""

from __future__ import annotations

import io

import numpy as np
import pytest
from brute import brute_suff, brute_valid_set
from hypothesis import given, settings
from hypothesis import strategies as st
from pysat.formula import CNF
from pysat.solvers import Solver
from strategies import certificates, problems

from encoders.cnf import edge_logic, encode
from encoders.isop import isop, table_int
from encoders.problem import Problem
from hoa.label import evaluate

#: The two state encodings of a table system (circuits ignore the choice).
STATES = ("log", "one-hot")


@settings(max_examples=150, deadline=None)
@given(problems())
def test_edge_logic_matches_the_mealy_step(problem: Problem) -> None:
    system = problem.system
    logic = edge_logic(problem)
    for q in range(system.num_states):
        for x in range(1 << system.num_inputs):
            enabled = [e for e in logic[q] if evaluate(e.enabled, x)]
            assert enabled  # the view is input-complete
            e = enabled[0]
            y = sum(evaluate(b, x) << j for j, b in enumerate(e.outputs))
            assert (e.dest, y) == system.step(q, x)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_each_flip_assignment_has_one_model_and_the_right_suff(data: st.DataObject) -> None:
    problem = data.draw(problems())
    cert = data.draw(certificates(problem))
    enc = encode(problem, states=data.draw(st.sampled_from(STATES)))
    live = {(t, i) for t, i, v in cert if t <= problem.t_star and (problem.trace[t] >> i) & 1 != v}
    with Solver(name="minisat22", bootstrap_with=enc.clauses) as s:
        assert s.solve([v if p in live else -v for p, v in enc.flips.items()])
        model = s.get_model()
        assert (enc.suff in model) == brute_suff(problem, cert)
        # A circuit: fixing the flips fixes every gate, so the model is unique (on the pool's named variables; the
        # at-most-one hints of wide steps add unnamed auxiliaries).
        named = set(enc.pool.obj2id.values())
        s.add_clause([-lit for lit in model if abs(lit) in named])
        assert not s.solve([v if p in live else -v for p, v in enc.flips.items()])


@settings(max_examples=30, deadline=None)
@given(problems(max_flips=8), st.sampled_from(STATES))
def test_dimacs_of_valid_is_read_back_and_enumerated_by_another_solver(problem: Problem, states: str) -> None:
    enc = encode(problem, with_valid=True, states=states)
    fp = io.StringIO()
    enc.write_dimacs(fp, assert_lits=[enc.valid], budget=problem.budget_t)
    text = fp.getvalue()
    assert text.startswith("c gf01 unrolling")
    cnf = CNF(from_string=text)
    n_flips = len(enc.flips)
    names = problem.system.inputs
    # flip variables are 1 .. P in (t, input) order, as the DIMACS comments say
    assert list(enc.flips.values()) == list(range(1, n_flips + 1))
    assert f"c flip 1 t=0 input={names[0]}" in text
    found = []
    with Solver(name="minisat22", bootstrap_with=cnf.clauses) as s:
        while s.solve():
            model = s.get_model()
            flips = [v for v in range(1, n_flips + 1) if model[v - 1] > 0]
            t_of = {v: divmod(v - 1, len(names)) for v in range(1, n_flips + 1)}
            found.append(sorted((t, names[i]) for t, i in (t_of[v] for v in flips)))
            s.add_clause([-v if v in flips else v for v in range(1, n_flips + 1)])
    expect = [sorted((t, names[i]) for t, i, _ in c) for c in brute_valid_set(problem, problem.budget_t)]
    assert sorted(found) == sorted(expect)


@settings(max_examples=20, deadline=None)
@given(problems())
def test_numbering_is_reproducible(problem: Problem) -> None:
    a, b = io.StringIO(), io.StringIO()
    encode(problem, with_valid=True).write_dimacs(a)
    encode(problem, with_valid=True).write_dimacs(b)
    assert a.getvalue() == b.getvalue()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_isop_covers_the_on_set_within_the_care_set_and_no_cube_is_redundant(data: st.DataObject) -> None:
    k = data.draw(st.integers(0, 6))
    points = 1 << k
    on = data.draw(st.integers(0, (1 << points) - 1))
    dc = data.draw(st.integers(0, (1 << points) - 1)) & ~on
    cubes = isop(on, dc, k)

    def cover(cs: list[tuple[int, int]]) -> int:
        return sum(1 << i for i in range(points) if any(i & m == v for m, v in cs))

    got = cover(cubes)
    assert got & on == on and got & ~(on | dc) == 0
    for j in range(len(cubes)):  # irredundant: each cube alone covers some point of the on-set
        assert cover(cubes[:j] + cubes[j + 1 :]) & on != on
    assert isop(on, dc, k) == cubes  # deterministic
    assert table_int(np.array([(on >> i) & 1 for i in range(points)], dtype=bool)) == on


def test_the_404_state_controller_at_12_steps_has_a_cnf_under_50k_variables() -> None:
    """Issue 28's target, at half its 24 steps: one-hot it took 3.08 M variables and 14.1 M clauses at 24 steps,
    1.27 M and 5.8 M at 12; 404 states need 9 bits a step. The bounds are the target's halved (24 steps: 100 k
    variables, 2 M clauses; the log encoding took 7,987 and 1.31 M there, 2,041 and 313 k here): both counts grow
    linearly in the steps, so a one-hot fallback fails both bounds here as at 24 steps, in a quarter of the CPU (the
    encoding and its DIMACS text: 2.6 s, not 10.5 s)."""
    from backend_common import arbiter_view

    from hoa.label import parse_named

    view = arbiter_view()
    problem = Problem(view, (7,) * 12, parse_named("g_2", view.outputs), 11)
    enc = encode(problem, with_valid=True)
    assert enc.log is not None and enc.log.bits == 9
    assert enc.pool.top < 50_000 and len(enc.clauses) < 1_000_000
    fp = io.StringIO()
    enc.write_dimacs(fp, assert_lits=[enc.valid])
    lines = fp.getvalue().splitlines()
    assert "state_bits=9" in lines[0]
    # The main run's code bits are named for steps 1 .. t* (step 0 is the initial code, a constant).
    assert sorted({int(w.split()[3][2:]) for w in lines if w.startswith("c state ")}) == list(range(1, 12))


def test_log_codes_number_the_reachable_states_only() -> None:
    """Unreachable states get no code, so 5 states of which 2 are reachable need 1 bit; one reachable state none."""
    from encoders.state_code import log_step
    from hoa.label import Var
    from hoa.mealy import MealyView

    nxt = [[3, 1], [3, 3], [0, 0], [1, 1], [2, 4]]  # from 1: only 1 and 3
    out = [[0, 1], [1, 0], [0, 0], [0, 1], [1, 1]]
    view = MealyView.from_table(("a",), ("o",), nxt, out, initial=1)
    step = log_step(Problem(view, (0, 1, 1), Var(0), 2))
    assert step is not None and step.bits == 1 and step.codes == (-1, 0, -1, 1, -1) and step.initial == 0
    alone = MealyView.from_table(("a",), ("o",), [[0, 0]], [[0, 1]])
    step = log_step(Problem(alone, (0, 0), Var(0), 1))
    assert step is not None and step.bits == 0
    for trace, want in (((0, 0), False), ((0, 1), True)):
        enc = encode(Problem(alone, trace, Var(0), 1))
        with Solver(name="minisat22", bootstrap_with=enc.clauses) as s:
            assert s.solve([-v for v in enc.flips.values()])
            assert (enc.suff in s.get_model()) == want


def test_one_hot_is_used_where_the_log_domain_is_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_POINTS points (2^(inputs + state bits)) the log encoding is not tabulated and the one-hot one
    serves; at the bound itself the log one does. The bound is lowered to 2^7 for the test: a table past the real
    2^16 (say 300 states x 8 inputs) costs some 25 s of CPU to build and compile, the same code path as these."""
    from encoders import state_code

    assert state_code.MAX_POINTS < (1 << (8 + 9))  # a 300-state, 8-input table is past the real bound
    monkeypatch.setattr(state_code, "MAX_POINTS", 1 << 7)
    at_bound = encode(_random_table(states=8, inputs=4))  # 3 state bits + 4 inputs: 2^7 points
    assert at_bound.log is not None and at_bound.log.bits == 3
    past = encode(_random_table(states=9, inputs=4))  # 4 state bits + 4 inputs: 2^8 points
    assert past.log is None and past.compiled is not None


def _random_table(states: int, inputs: int) -> Problem:
    from hoa.label import Var
    from hoa.mealy import MealyView

    rng = np.random.Generator(np.random.PCG64(states))
    nxt = rng.integers(0, states, size=(states, 1 << inputs))
    out = rng.integers(0, 2, size=(states, 1 << inputs))
    view = MealyView.from_table(tuple(f"i{k}" for k in range(inputs)), ("o",), nxt, out)
    return Problem(view, (0, 1, 0), Var(0), 2)


def test_an_unknown_state_encoding_is_refused() -> None:
    problem = _random_table(states=2, inputs=1)
    with pytest.raises(ValueError, match="states must be"):
        encode(problem, states="unary")
