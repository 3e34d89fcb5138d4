"""The writer on random valid automata: ``parse(write(a)) == [a]`` for any automaton in the parser's normal form."""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import expressions

from hoa import parse, write
from hoa.label import And, Expr, Not, Or
from hoa.model import AccAnd, AccConst, AccExpr, AccOr, AccSet, Automaton, Edge, State


def normal(expr: Expr | AccExpr) -> Expr | AccExpr:
    """The parser's normal form of a label or an acceptance condition: nested operators of one kind flattened
    (``(a & b) & c`` is ``a & b & c``)."""
    if isinstance(expr, Not):
        return Not(normal(expr.arg))
    if isinstance(expr, And | Or | AccAnd | AccOr):
        args: list[Expr | AccExpr] = []
        for a in (normal(x) for x in expr.args):
            args.extend(a.args if type(a) is type(expr) else (a,))  # type: ignore[union-attr]
        return type(expr)(tuple(args))  # type: ignore[arg-type]
    return expr


def labels(n_aps: int, aliases: tuple[str, ...]) -> st.SearchStrategy[Expr]:
    """Random labels in the parser's normal form."""
    return expressions(n_aps, max_leaves=6, aliases=aliases).map(normal)


@cache
def acceptance(sets: int) -> st.SearchStrategy[AccExpr]:
    """Random acceptance conditions in normal form over ``sets`` sets."""
    leaves: list[st.SearchStrategy[AccExpr]] = [st.builds(AccConst, st.booleans())]
    if sets:
        leaves.append(st.builds(AccSet, st.sampled_from(["Inf", "Fin"]), st.integers(0, sets - 1), st.booleans()))
    return st.recursive(
        st.one_of(leaves),
        lambda sub: st.one_of(
            st.builds(AccAnd, st.lists(sub, min_size=2, max_size=3).map(tuple)),
            st.builds(AccOr, st.lists(sub, min_size=2, max_size=3).map(tuple)),
        ),
        max_leaves=5,
    ).map(normal)


NAMES = st.text(st.sampled_from('ab"\\ /*n\n@é'), max_size=6)


@st.composite
def automata(draw: st.DrawFn) -> Automaton:
    n_aps = draw(st.integers(0, 3))
    aps = tuple(f"p{i}{draw(NAMES)}" for i in range(n_aps))
    aps = tuple(dict.fromkeys(aps))  # distinct names
    n_aps = len(aps)
    alias_names: list[str] = []
    aliases = []
    for k in range(draw(st.integers(0, 2))):
        aliases.append((f"al{k}", draw(labels(n_aps, tuple(alias_names)))))
        alias_names.append(f"al{k}")
    sets = draw(st.integers(0, 3))
    n_states = draw(st.integers(1, 4))
    accsig = st.none() | st.lists(st.integers(0, sets - 1), max_size=3).map(tuple) if sets else st.none()
    dests = st.lists(st.integers(0, n_states - 1), min_size=1, max_size=2).map(tuple)
    states = []
    for q in draw(st.permutations(range(n_states))):
        style = draw(st.sampled_from(["edge", "state", "implicit"] if n_aps <= 2 else ["edge", "state"]))
        if style == "implicit":
            edges = tuple(Edge(draw(dests), None, draw(accsig)) for _ in range(1 << n_aps))
            label = None
        else:
            label = draw(labels(n_aps, tuple(alias_names))) if style == "state" else None
            edge_label = (lambda: None) if style == "state" else (lambda: draw(labels(n_aps, tuple(alias_names))))
            edges = tuple(Edge(draw(dests), edge_label(), draw(accsig)) for _ in range(draw(st.integers(0, 3))))
        name = draw(st.none() | NAMES)
        states.append(State(q, name, label, draw(accsig), edges))
    starts = tuple(draw(st.lists(st.lists(st.integers(0, n_states - 1), min_size=1, max_size=2).map(tuple),
                                 max_size=2)))
    headers = tuple(
        (h, tuple(draw(st.lists(st.sampled_from(["1", "t", "f", "id-x", '"s\\"q"', "0"]), max_size=3))))
        for h in draw(st.lists(st.sampled_from(["x-tool", "Upper", "spot-extra"]), unique=True, max_size=2))
    )
    return Automaton(
        states_declared=draw(st.none() | st.just(n_states)),
        start=starts,
        aps=aps,
        aliases=tuple(aliases),
        acc_sets=sets,
        acceptance=draw(acceptance(sets)),
        acc_name=draw(st.none() | st.tuples(st.sampled_from(["Buchi", "parity", "x"]),
                                             st.lists(st.sampled_from(["min", "t", 3, 0]), max_size=3).map(tuple))),
        tool=draw(st.none() | st.lists(NAMES, min_size=1, max_size=2).map(tuple)),
        name=draw(st.none() | NAMES),
        properties=tuple(draw(st.lists(st.sampled_from(["colored", "!foo", "bar", "stutter-invariant"]),
                                       unique=True, max_size=3))),
        controllable_ap=draw(st.none() | st.lists(st.integers(0, n_aps - 1), max_size=2).map(tuple))
        if n_aps else draw(st.none() | st.just(())),
        headers=headers,
        states=tuple(states),
    )


@settings(max_examples=100, deadline=None)
@given(automata())
def test_random_automata_round_trip(aut: Automaton):
    text = write(aut)
    assert parse(text) == [aut]
    assert write(parse(text)[0]) == text


@settings(max_examples=25, deadline=None)
@given(st.lists(automata(), min_size=1, max_size=3))
def test_streams_of_written_automata_read_back_in_order(auts: list[Automaton]):
    assert parse("".join(write(a) for a in auts)) == auts
