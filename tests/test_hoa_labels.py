"""Label evaluation through the HOA reader is exact: random expressions with aliases, against truth tables."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import expressions

from hoa import parse, write
from hoa.label import AliasRef, And, Const, Expr, Not, Var, evaluate, evaluate_array, resolve, to_text


def exprs(n_aps: int, n_aliases: int) -> st.SearchStrategy[Expr]:
    """Random label expressions over APs ``0..n_aps-1`` and aliases ``a0 .. a{n_aliases-1}``."""
    return expressions(n_aps, max_leaves=8, aliases=tuple(f"a{k}" for k in range(n_aliases)), max_args=4)


def truth(expr: Expr, env: dict[str, Expr], valuation: int) -> bool:
    """Reference semantics, written independently of hoa.label: aliases looked up when met."""
    if isinstance(expr, Var):
        return bool(valuation >> expr.index & 1)
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, AliasRef):
        return truth(env[expr.name], env, valuation)
    if isinstance(expr, Not):
        return not truth(expr.arg, env, valuation)
    if isinstance(expr, And):
        return all(truth(a, env, valuation) for a in expr.args)
    return any(truth(a, env, valuation) for a in expr.args)


def full_parens(expr: Expr) -> str:
    """``expr`` with every operator parenthesised (the parser must not depend on the writer's minimal form)."""
    if isinstance(expr, Var):
        return str(expr.index)
    if isinstance(expr, Const):
        return "t" if expr.value else "f"
    if isinstance(expr, AliasRef):
        return "@" + expr.name
    if isinstance(expr, Not):
        return f"(!{full_parens(expr.arg)})"
    sep = " & " if isinstance(expr, And) else " | "
    return "(" + sep.join(full_parens(a) for a in expr.args) + ")"


@st.composite
def automata_texts(draw: st.DrawFn) -> tuple[int, list[tuple[str, Expr]], list[Expr], str, str]:
    n = draw(st.integers(1, 5))
    defs: list[tuple[str, Expr]] = []
    for k in range(draw(st.integers(0, 3))):
        # an alias may only use aliases defined before it
        defs.append((f"a{k}", draw(exprs(n, k))))
    labels = draw(st.lists(exprs(n, len(defs)), min_size=1, max_size=4))
    aps = " ".join(f'"p{i}"' for i in range(n))

    def text(render: Callable[[Expr], str]) -> str:
        alias_lines = "".join(f"Alias: @{name} {render(e)}\n" for name, e in defs)
        edges = "".join(f"[{render(e)}] 0\n" for e in labels)
        head = f"HOA: v1\nStates: 1\nStart: 0\nAP: {n} {aps}\n{alias_lines}Acceptance: 0 t\n"
        return f"{head}--BODY--\nState: 0\n{edges}--END--\n"

    return n, defs, labels, text(to_text), text(full_parens)


@settings(max_examples=100, deadline=None)
@given(automata_texts())
def test_labels_with_aliases_evaluate_exactly(case: tuple[int, list[tuple[str, Expr]], list[Expr], str, str]):
    n, defs, labels, minimal, parenthesised = case
    env = dict(defs)
    [aut] = parse(minimal)
    [aut2] = parse(parenthesised)
    assert parse(write(aut)) == [aut]
    vals = np.arange(1 << n, dtype=np.int64)
    for k, edge in enumerate(aut.states[0].edges):
        resolved = resolve(edge.label, aut.alias_map())
        resolved2 = resolve(aut2.states[0].edges[k].label, aut2.alias_map())
        expected = [truth(labels[k], env, v) for v in range(1 << n)]
        assert [evaluate(resolved, v) for v in range(1 << n)] == expected
        assert [evaluate(resolved2, v) for v in range(1 << n)] == expected
        assert evaluate_array(resolved, vals).tolist() == expected


def test_alias_chains_resolve_through_every_level():
    text = (
        'HOA: v1 AP: 3 "a" "b" "c" Alias: @a 0 Alias: @nb !1 Alias: @x @a & @nb Alias: @y @x | 2 Alias: @z !@y '
        "Acceptance: 0 t --BODY-- State: 0 [@z] 0 [@y & t] 0 [f | @x] 0 --END--"
    )
    [aut] = parse(text)
    z, y, x = (resolve(e.label, aut.alias_map()) for e in aut.states[0].edges)
    for v in range(8):
        a, b, c = v & 1, v >> 1 & 1, v >> 2 & 1
        assert evaluate(x, v) == bool(a and not b)
        assert evaluate(y, v) == bool((a and not b) or c)
        assert evaluate(z, v) == (not ((a and not b) or c))


def test_multi_literal_labels_and_constants():
    [aut] = parse('HOA: v1 AP: 4 "a" "b" "c" "d" Acceptance: 0 t --BODY-- State: 0 '
                  "[0 & !1 & 2 & !3] 0 [!0 | 1 | !2 | 3] 0 [t & f] 0 [f | t] 0 --END--")
    e0, e1, e2, e3 = (e.label for e in aut.states[0].edges)
    for v in range(16):
        assert evaluate(e0, v) == (v == 0b0101)
        assert evaluate(e1, v) == (v != 0b0101)
        assert not evaluate(e2, v)
        assert evaluate(e3, v)
