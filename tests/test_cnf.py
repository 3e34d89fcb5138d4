"""The CNF encoder: per-edge logic against the Mealy step, canonical numbering, DIMACS read back by another solver."""

from __future__ import annotations

import io

from brute import brute_suff, brute_valid_set
from hypothesis import given, settings
from hypothesis import strategies as st
from pysat.formula import CNF
from pysat.solvers import Solver
from strategies import certificates, problems

from encoders.cnf import edge_logic, encode
from encoders.problem import Problem
from hoa.label import evaluate


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
    enc = encode(problem)
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
@given(problems(max_flips=8))
def test_dimacs_of_valid_is_read_back_and_enumerated_by_another_solver(problem: Problem) -> None:
    enc = encode(problem, with_valid=True)
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
