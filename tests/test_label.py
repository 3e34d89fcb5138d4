"""Label expressions: exact evaluation against truth tables, partial evaluation, least models, named parsing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import expressions

from hoa.errors import Gf01Error
from hoa.label import (
    And,
    Const,
    Not,
    Or,
    Var,
    evaluate,
    evaluate_array,
    least_model,
    name_text,
    parse_named,
    restrict,
    satisfiable,
    to_text,
)

NVARS = 5


def exprs(max_leaves: int = 12):
    return expressions(NVARS, max_leaves=max_leaves)


def truth(expr, val: int) -> bool:
    """Independent reference: Python's own operators on a dict of bits."""
    if isinstance(expr, Var):
        return bool(val >> expr.index & 1)
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Not):
        return not truth(expr.arg, val)
    vals = [truth(a, val) for a in expr.args]
    return all(vals) if isinstance(expr, And) else any(vals)


@settings(max_examples=300)
@given(exprs())
def test_evaluate_matches_truth_table(e):
    table = [truth(e, v) for v in range(1 << NVARS)]
    assert [evaluate(e, v) for v in range(1 << NVARS)] == table
    assert evaluate_array(e, np.arange(1 << NVARS)).tolist() == table
    assert satisfiable(e) == any(table)


@settings(max_examples=200)
@given(exprs(), st.dictionaries(st.integers(0, NVARS - 1), st.booleans()))
def test_restrict_is_partial_evaluation(e, fixed):
    r = restrict(e, fixed)
    for v in range(1 << NVARS):
        if all(bool(v >> i & 1) == b for i, b in fixed.items()):
            assert evaluate(r, v) == evaluate(e, v)


@settings(max_examples=200)
@given(exprs())
def test_least_model_is_lexicographically_least(e):
    order = [3, 1, 4]
    got = least_model(e, order)
    models = sorted(
        {tuple(bool(v >> i & 1) for i in order) for v in range(1 << NVARS) if truth(e, v)}
    )
    if not models:
        assert got is None
    else:
        assert tuple(got[i] for i in order) == models[0]


@settings(max_examples=200)
@given(exprs())
def test_named_text_round_trip(e):
    names = ["a", "b", "c.d", "e_1", "f-2"]
    text = to_text(e, lambda i: names[i])
    back = parse_named(text, names)
    for v in range(1 << NVARS):
        assert evaluate(back, v) == evaluate(e, v)


def test_precedence_not_and_or():
    e = parse_named("a | b & !c", ["a", "b", "c"])
    for a, b, c in itertools.product([0, 1], repeat=3):
        assert evaluate(e, a | b << 1 | c << 2) == bool(a or (b and not c))


@pytest.mark.parametrize(
    "text, needle",
    [("a & ", "expected a name"), ("a & zz", "unknown name 'zz'"), ("(a", "expected ')'"), ("a b", "unexpected"),
     ("a $ b", "unexpected character")],
)
def test_parse_named_errors(text, needle):
    with pytest.raises(Gf01Error, match="effect") as err:
        parse_named(text, ["a", "b"])
    assert needle in str(err.value)


@settings(max_examples=200)
@given(exprs(), st.lists(st.text(min_size=1, max_size=6), min_size=NVARS, max_size=NVARS, unique=True))
def test_any_names_round_trip_through_name_text(e, names):
    """SYNTCOMP/AIGER symbols (``err<0>``, ``a.b[3]``, even ``"`` or ``\\``) are written quoted and read back."""
    text = to_text(e, lambda i: name_text(names[i]))
    back = parse_named(text, names)
    for v in range(1 << NVARS):
        assert evaluate(back, v) == evaluate(e, v)


def test_a_quoted_name_is_always_a_name():
    names = ["err<0>", "a.b[3]", "t", "|", 'q"\\', "x"]
    assert parse_named('"err<0>" & !"a.b[3]"', names) == And((Var(0), Not(Var(1))))
    assert parse_named('"t"', ["t0", "t"]) == Var(1) and parse_named("t", ["t0"]) == Const(True)
    assert parse_named('"|" | ("x")', names) == Or((Var(3), Var(5)))
    assert parse_named('"q\\"\\\\"', names) == Var(4)
    assert [name_text(n) for n in names] == ['"err<0>"', '"a.b[3]"', "t", '"|"', '"q\\"\\\\"', "x"]


@pytest.mark.parametrize(
    "text, needle",
    [('"err<0>', "unterminated quoted name: the '\"' at column 1"), ('x & "a', "at column 5"),
     ('"a\\x"', "bad escape '\\\\x'"), ('""', "empty quoted name at column 1"),
     ("err<0>", "goes in double quotes"), ('"nope"', "unknown name 'nope'"), ('"x" "x"', "unexpected token")],
)
def test_bad_quoting_is_one_line_naming_the_column(text, needle):
    with pytest.raises(Gf01Error, match="effect") as err:
        parse_named(text, ["x", "err<0>"])
    assert needle in str(err.value) and "\n" not in str(err.value)
