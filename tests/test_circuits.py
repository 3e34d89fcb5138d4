"""Circuit systems: the Mealy view of an AIG, the project's circuit families, and what the solvers do with circuits
that no table could hold (wide inputs, many latches)."""

from __future__ import annotations

import random
import re

import pytest
from brute import brute_min1, brute_suff, brute_valid_set
from hypothesis import given, settings
from strategies import as_circuit, problems

from aig import parse
from aig.build import Builder, arbiter, counter, fifo, shift_register
from aig.view import CircuitView
from encoders.problem import Problem
from hoa.errors import Gf01Error
from hoa.label import Var
from solvers import api
from solvers.simulate import check_many


@settings(max_examples=60, deadline=None)
@given(problems(max_flips=9))
def test_the_brute_twin_sees_the_same_machine_as_table_and_circuit(problem: Problem) -> None:
    assert brute_valid_set(problem, problem.budget_t) == brute_valid_set(as_circuit(problem), problem.budget_t)


def test_view_names_outputs_bad_states_and_observed_latches() -> None:
    view = CircuitView.from_aig(fifo(2), observe=["v1"])
    assert view.inputs == ("push", "pop", "d0")
    assert view.outputs == ("empty", "full", "q0", "overflow", "v1")
    # Unnamed signals get their section letter and position.
    bare = CircuitView.from_aig(parse(b"aag 3 1 1 1 1 1\n2\n4 6 1\n4\n6\n6 2 4\n"), observe=["l0"])
    assert bare.inputs == ("i0",) and bare.outputs == ("o0", "b0", "l0") and bare.initial == 1


@pytest.mark.parametrize(("text", "observe", "message"), [
    (b"aag 2 1 1 1 0\n2\n4 2 4\n4\n", (), "latch l0 has no reset value"),
    (b"aag 1 1 0 1 0 0 1\n2\n2\n3\n", (), "invariant constraint"),
    (b"aag 1 1 0 1 0\n2\n2\ni0 x\no0 x\n", (), "the name 'x' is used twice"),
    (b"aag 2 1 1 1 0\n2\n4 2\n4\n", ("nope",), "--observe 'nope': no latch has that name (latches: l0)"),
])
def test_view_refusals(text: bytes, observe: tuple[str, ...], message: str) -> None:
    with pytest.raises(Gf01Error, match=re.escape(message)):
        CircuitView.from_aig(parse(text), observe=observe)


def test_families_follow_their_reference_models() -> None:
    rng = random.Random(3)
    for depth, width in [(1, 1), (2, 1), (3, 2)]:
        v = CircuitView.from_aig(fifo(depth, width))
        q, model = v.initial, []
        for _ in range(200):
            push, pop = rng.randint(0, 1), rng.randint(0, 1)
            d = [rng.randint(0, 1) for _ in range(width)]
            q, y = v.step(q, push | pop << 1 | sum(b << (2 + j) for j, b in enumerate(d)))
            full = len(model) == depth
            head = model[0] if model else [0] * width
            assert y == (int(not model) | int(full) << 1 | sum(b << (2 + j) for j, b in enumerate(head))
                         | int(push and full and not pop) << (2 + width))
            popped = bool(pop and model)
            if popped:
                model.pop(0)
            if push and (not full or popped):
                model.append(d)
    v, q, c = CircuitView.from_aig(counter(3)), 0, 0
    for _ in range(100):
        en, rst = rng.randint(0, 1), int(rng.random() < 0.1)
        q, y = v.step(q, en | rst << 1)
        assert y == int(c == 7 and en)
        c = 0 if rst else (c + en) % 8
    v, tok = CircuitView.from_aig(arbiter(3)), 0
    q = v.initial
    for _ in range(100):
        r = [rng.randint(0, 1) for _ in range(3)]
        q, y = v.step(q, sum(b << k for k, b in enumerate(r)))
        g = next(((tok + j) % 3 for j in range(3) if r[(tok + j) % 3]), None)
        assert y == (0 if g is None else 1 << g)
        tok = tok if g is None else (g + 1) % 3
    v, hist = CircuitView.from_aig(shift_register(4)), [0] * 4
    q = v.initial
    for _ in range(50):
        d = rng.randint(0, 1)
        q, y = v.step(q, d)
        assert y == hist[-1]
        hist = [d, *hist[:-1]]


def wide_problem(n: int = 70) -> Problem:
    """``n`` inputs (more than an int64 holds), output = AND of inputs 0, 40 and 69 one step late (a latch)."""
    b = Builder()
    xs = [b.input(f"x{i:02d}") for i in range(n)]
    hold = b.latch("hold")
    b.set_next(hold, b.all([xs[0], xs[40], xs[n - 1]]))
    b.output("o", hold)
    return Problem(CircuitView.from_aig(b.aig()), (0, 0, 0), Var(0), t_star=1, budget_t=1)


def test_a_circuit_wider_than_any_table_is_answered_by_simulation_sat_and_bdd() -> None:
    p = wide_problem()
    cert = ((0, 0, 1), (0, 40, 1), (0, 69, 1))
    assert check_many(p, [cert, cert[:2]])[0].tolist() == [True, False]
    assert brute_suff(p, cert) and brute_min1(p, cert)
    for name in ("explicit", "sat", "bdd"):
        assert api.valid(p, cert, name) and not api.valid(p, cert[:2], name)
    assert api.oracle(p, 1).certificate == cert  # default: SAT on the unrolling
    assert api.count(p, 1) == 1  # default: SAT (the search that learns Min1 copies)
    assert list(api.enumerate_certificates(p, None)) == [cert]
    assert api.subset_min(p, cert)
    # The explicit-state backends say why they cannot: 70 inputs cannot be tabulated.
    for name in ("forward", "explicit"):
        with pytest.raises(Gf01Error, match="needs explicit states; use the sat or bdd backend"):
            api.oracle(p, 1, name)


def test_many_reachable_latch_states_are_refused_by_the_forward_pass_only() -> None:
    # A 13-stage shift register reaches 8192 latch states: more than the forward pass tabulates at 4 inputs.
    b = Builder()
    xs = [b.input(f"d{i}") for i in range(4)]
    stages = [b.latch(f"s{k}") for k in range(13)]
    prev = b.xor(xs[0], xs[3])
    for s in stages:
        b.set_next(s, prev)
        prev = s
    b.output("q", b.and_(stages[-1], xs[1]))
    p = Problem(CircuitView.from_aig(b.aig()), (0,) * 15, Var(0), t_star=14, budget_t=1)
    with pytest.raises(Gf01Error, match=r"more than .* reachable latch states"):
        api.count(p, 1, "forward")
    # The effect needs a flip of d0 or d3 at step 1 (13 stages before t*) and d1 at t*: two timesteps.
    assert api.count(p, 1, "bdd") == api.count(p, 1, "sat") == 0
    assert api.count(p, 2, "bdd") == api.count(p, 2, "sat") == 2
    assert api.oracle(p, 2).certificate == ((1, 0, 1), (14, 1, 1))


def test_the_cone_of_influence_of_overflow_leaves_the_data_out() -> None:
    view = CircuitView.from_aig(fifo(3, 2))
    overflow, q0 = view.outputs.index("overflow"), view.outputs.index("q0")
    _, latches = view.cone(frozenset({overflow}))
    names = dict(view.aig.symbols)
    assert sorted(names[("l", k)] for k in latches) == ["v0", "v1", "v2"]
    _, with_data = view.cone(frozenset({q0}))
    assert {names[("l", k)] for k in with_data} >= {"m0_0", "m2_0", "v0"}
