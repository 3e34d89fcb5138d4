"""The Mealy view: first-enabled-edge semantics, least output completion, tables against symbolic steps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hoa.errors import Gf01Error
from hoa.label import evaluate, parse_named
from hoa.mealy import Ambiguity, MealyEdge, MealyView


def view(guards: list[list[tuple[str, int]]], inputs=("a", "b"), outputs=("o", "p")) -> MealyView:
    names = [*inputs, *outputs]
    return MealyView(
        tuple(inputs),
        tuple(outputs),
        tuple(tuple(MealyEdge(parse_named(g, names), d) for g, d in es) for es in guards),
    )


def test_first_enabled_edge_wins_and_outputs_are_least():
    v = view([[("a & o", 1), ("t", 0)], [("p | o", 0)]])
    assert v.step(0, 0b01) == (1, 0b01)  # a=1: first edge, o forced 1, p free -> 0
    assert v.step(0, 0b10) == (0, 0b00)  # a=0: second edge, outputs free -> 0
    assert v.step(1, 0) == (0, 0b10)  # o compared first: o=0 forces p=1


def test_least_output_compares_lower_output_first():
    v = view([[("o | p", 0)]])
    # candidates (o, p): (0, 1) < (1, 0) < (1, 1); the least is o=0, p=1, i.e. y = 0b10
    assert v.step(0, 0) == (0, 0b10)
    assert v._step_symbolic(0, 0) == (0, 0b10)


def test_incomplete_state_is_named_with_a_valuation():
    v = view([[("a & b", 0)]])
    assert v.first_missing() == (0, 0)
    with pytest.raises(Gf01Error, match=r"state 0 has no edge for input a=0 b=0"):
        v.check_input_complete()


def test_from_table_round_trip():
    rng = np.random.Generator(np.random.PCG64(7))
    nxt = rng.integers(0, 4, size=(4, 8))
    out = rng.integers(0, 4, size=(4, 8))
    v = MealyView.from_table(("a", "b", "c"), ("o", "p"), nxt, out)
    got_n, got_o = v.tables
    assert (got_n == nxt).all() and (got_o == out).all()
    # from_table seeds its tables; the edges it builds must compile to the same tables on their own.
    fresh = MealyView(v.inputs, v.outputs, v.edges)
    assert (fresh.tables[0] == nxt).all() and (fresh.tables[1] == out).all()
    back = MealyView.from_automaton(v.to_automaton())
    assert back.tables[0].tolist() == nxt.tolist() and back.tables[1].tolist() == out.tolist()


guard_text = st.sampled_from(["t", "a", "!a", "a & b", "a | o", "!o & p", "(a | b) & (o | !p)", "b & !p", "f"])


@settings(max_examples=150)
@given(st.lists(st.lists(st.tuples(guard_text, st.integers(0, 2)), min_size=1, max_size=3), min_size=3, max_size=3))
def test_tables_agree_with_symbolic_steps(spec):
    spec = [[*es, ("t", 0)] for es in spec]  # a catch-all edge keeps every state input-complete
    v = view(spec)
    nxt, out = v.tables
    for q in range(3):
        for x in range(4):
            assert (int(nxt[q, x]), int(out[q, x])) == v._step_symbolic(q, x)
            # and the chosen edge's guard really holds on (x, y)
            dest, y = v._step_symbolic(q, x)
            enabled = [e for e in v.edges[q] if any(evaluate(e.guard, x | (yy << 2)) for yy in range(4))]
            assert enabled[0].dest == dest and evaluate(enabled[0].guard, x | (y << 2))


def least_outcome(v: MealyView, q: int, k: int, x: int) -> tuple[int, int] | None:
    """Edge k of state q under input x, straight from the definition: its destination and least output valuation
    (outputs compared by index, 0 before 1), or None when no output valuation satisfies its guard with x."""
    e = v.edges[q][k]
    ys = [y for y in range(4) if evaluate(e.guard, x | (y << 2))]
    if not ys:
        return None
    return e.dest, min(ys, key=lambda y: [(y >> j) & 1 for j in range(2)])


@settings(max_examples=150)
@given(st.lists(st.lists(st.tuples(guard_text, st.integers(0, 2)), min_size=1, max_size=4), min_size=3, max_size=3))
def test_first_ambiguity_is_its_definition(spec):
    # The first (state, input) in order where an enabled edge's outcome differs from the first enabled edge's; the
    # other edge is the lowest such one. Computed in the tables' own pass (one sweep over the edges' outcomes).
    spec = [[*es, ("t", 0)] for es in spec]
    v = view(spec)
    want = None
    for q, x in ((q, x) for q in range(3) for x in range(4)):
        outcomes = [(k, least_outcome(v, q, k, x)) for k in range(len(v.edges[q]))]
        enabled = [(k, o) for k, o in outcomes if o is not None]
        other = next(((k, o) for k, o in enabled if o != enabled[0][1]), None)
        if other is not None:
            want = Ambiguity(q, x, enabled[0][0], other[0], enabled[0][1], other[1])
            break
    assert v.first_ambiguity() == want
    assert (v.tables[0].tolist(), v.tables[1].tolist()) == ([[v._step_symbolic(q, x)[0] for x in range(4)]
                                                              for q in range(3)],
                                                             [[v._step_symbolic(q, x)[1] for x in range(4)]
                                                              for q in range(3)])


def test_run_collects_states_and_outputs():
    v = MealyView.from_table(("a",), ("o",), next_table=[[0, 1], [1, 0]], out_table=[[0, 0], [1, 1]])
    assert v.run([1, 0, 1]) == ([0, 1, 1, 0], [0, 1, 1])


def test_absurd_state_declaration_is_an_error_not_a_hang():
    from hoa.model import Automaton

    aut = Automaton(states_declared=2_147_483_647, start=((0,),), aps=("a", "o"), controllable_ap=(1,))
    with pytest.raises(Gf01Error, match="at most"):
        MealyView.from_automaton(aut)
