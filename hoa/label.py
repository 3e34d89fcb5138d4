"""Boolean label expressions: the one expression type for HOA labels, Mealy guards and GF-01 effects.

A variable is an integer index whose meaning the owner decides: an AP index in an HOA automaton, a signal index
(inputs first, then outputs) in a Mealy view, an output index in an effect. Valuations are integers with bit ``i``
holding variable ``i`` (HOA's implicit-label convention: AP 0 is the least significant bit).

>>> e = parse_named("!busy & (req | t)", ["req", "busy"])
>>> evaluate(e, 0b01), evaluate(e, 0b11)
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hoa.errors import Gf01Error, quote


@dataclass(frozen=True, slots=True)
class Const:
    """``t`` or ``f``."""

    value: bool


@dataclass(frozen=True, slots=True)
class Var:
    """Variable ``index``."""

    index: int


@dataclass(frozen=True, slots=True)
class AliasRef:
    """``@name``: an HOA alias, kept unresolved so that written files keep their aliases."""

    name: str


@dataclass(frozen=True, slots=True)
class Not:
    arg: Expr


@dataclass(frozen=True, slots=True)
class And:
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    args: tuple[Expr, ...]


Expr = Const | Var | AliasRef | Not | And | Or

TRUE = Const(True)
FALSE = Const(False)


def leaves(expr: Expr) -> Iterator[Const | Var | AliasRef]:
    """The leaves of ``expr`` (constants, variables and alias references), left to right."""
    if isinstance(expr, Not):
        yield from leaves(expr.arg)
    elif isinstance(expr, And | Or):
        for a in expr.args:
            yield from leaves(a)
    else:
        yield expr


def map_leaves(expr: Expr, leaf: Callable[[Const | Var | AliasRef], Expr]) -> Expr:
    """``expr`` with every leaf ``x`` (a constant, variable or alias reference) replaced by ``leaf(x)``."""
    if isinstance(expr, Not):
        return Not(map_leaves(expr.arg, leaf))
    if isinstance(expr, And | Or):
        return type(expr)(tuple(map_leaves(a, leaf) for a in expr.args))
    return leaf(expr)


def variables(expr: Expr) -> frozenset[int]:
    """The variable indices that occur in ``expr``."""
    return frozenset(x.index for x in leaves(expr) if isinstance(x, Var))


def aliases_used(expr: Expr) -> frozenset[str]:
    """The alias names that occur in ``expr``."""
    return frozenset(x.name for x in leaves(expr) if isinstance(x, AliasRef))


def resolve(expr: Expr, aliases: Mapping[str, Expr]) -> Expr:
    """``expr`` with every ``@alias`` replaced by its (recursively resolved) definition."""

    def definition(x: Const | Var | AliasRef) -> Expr:
        if not isinstance(x, AliasRef):
            return x
        if x.name not in aliases:
            raise Gf01Error(f"undefined alias @{x.name}")
        return resolve(aliases[x.name], aliases)

    return map_leaves(expr, definition)


def rename(expr: Expr, mapping: Callable[[int], int]) -> Expr:
    """``expr`` with every variable ``i`` replaced by ``mapping(i)``."""
    return map_leaves(expr, lambda x: Var(mapping(x.index)) if isinstance(x, Var) else x)


def evaluate(expr: Expr, valuation: int) -> bool:
    """The truth value of an alias-free ``expr`` under ``valuation`` (bit ``i`` = variable ``i``)."""
    if isinstance(expr, Var):
        return bool((valuation >> expr.index) & 1)
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Not):
        return not evaluate(expr.arg, valuation)
    if isinstance(expr, And):
        return all(evaluate(a, valuation) for a in expr.args)
    if isinstance(expr, Or):
        return any(evaluate(a, valuation) for a in expr.args)
    raise Gf01Error(f"cannot evaluate unresolved alias @{expr.name}")


def evaluate_array(expr: Expr, valuations: np.ndarray) -> np.ndarray:
    """Vectorised :func:`evaluate`: a bool array, one entry per integer valuation in ``valuations``."""
    if isinstance(expr, Var):
        return ((valuations >> expr.index) & 1).astype(bool)
    if isinstance(expr, Const):
        return np.full(valuations.shape, expr.value, dtype=bool)
    if isinstance(expr, Not):
        return ~evaluate_array(expr.arg, valuations)
    if isinstance(expr, And):
        out = np.ones(valuations.shape, dtype=bool)
        for a in expr.args:
            out &= evaluate_array(a, valuations)
        return out
    if isinstance(expr, Or):
        out = np.zeros(valuations.shape, dtype=bool)
        for a in expr.args:
            out |= evaluate_array(a, valuations)
        return out
    raise Gf01Error(f"cannot evaluate unresolved alias @{expr.name}")


def restrict(expr: Expr, fixed: Mapping[int, bool]) -> Expr:
    """Partial evaluation: ``expr`` with the variables in ``fixed`` replaced by constants, then simplified."""
    if isinstance(expr, Var):
        v = fixed.get(expr.index)
        return expr if v is None else Const(v)
    if isinstance(expr, Const | AliasRef):
        return expr
    if isinstance(expr, Not):
        a = restrict(expr.arg, fixed)
        return Const(not a.value) if isinstance(a, Const) else Not(a)
    absorbing = isinstance(expr, Or)  # the constant that decides an Or (True) or an And (False)
    kept: list[Expr] = []
    for a in expr.args:
        r = restrict(a, fixed)
        if isinstance(r, Const):
            if r.value == absorbing:
                return Const(absorbing)
            continue
        kept.append(r)
    if not kept:
        return Const(not absorbing)
    if len(kept) == 1:
        return kept[0]
    return Or(tuple(kept)) if absorbing else And(tuple(kept))


def satisfiable(expr: Expr) -> bool:
    """Whether an alias-free ``expr`` has a satisfying valuation (Shannon expansion on its variables)."""
    expr = restrict(expr, {})
    if isinstance(expr, Const):
        return expr.value
    var = min(variables(expr))
    return satisfiable(restrict(expr, {var: False})) or satisfiable(restrict(expr, {var: True}))


def least_model(expr: Expr, order: Sequence[int]) -> dict[int, bool] | None:
    """The least satisfying assignment of ``order``'s variables, comparing them in that order, 0 before 1.

    Variables of ``expr`` not in ``order`` are existentially quantified. Returns None when unsatisfiable.
    """
    if not satisfiable(expr):
        return None
    model: dict[int, bool] = {}
    for v in order:
        low = restrict(expr, {v: False})
        if satisfiable(low):
            model[v], expr = False, low
        else:
            model[v], expr = True, restrict(expr, {v: True})
    return model


# ---------------------------------------------------------------------------------------------------------------
# Text: HOA label syntax (variables as integers) and named syntax (variables as identifiers, for effects)

_PREC = {Or: 1, And: 2}


def to_text(expr: Expr, name: Callable[[int], str] = str) -> str:
    """``expr`` in HOA label syntax (``!``, ``&``, ``|``, ``t``, ``f``, ``@alias``), minimally parenthesised.

    ``name`` maps a variable index to its text (default: the index itself, as HOA labels write it).
    """

    def go(e: Expr, parent: int) -> str:
        if isinstance(e, Const):
            return "t" if e.value else "f"
        if isinstance(e, Var):
            return name(e.index)
        if isinstance(e, AliasRef):
            return "@" + e.name
        if isinstance(e, Not):
            return "!" + go(e.arg, 3)
        prec = _PREC[type(e)]
        sep = " | " if isinstance(e, Or) else " & "
        text = sep.join(go(a, prec) for a in e.args)
        return f"({text})" if prec < parent else text

    return go(expr, 0)


_IDENT = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_TOKEN = re.compile(
    rf'\s*(?:(?P<ident>{_IDENT})|(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<open>")|(?P<op>[!&|()])|(?P<end>\Z)'
    r"|(?P<bad>.))",
    re.S,
)
_PLAIN = re.compile(_IDENT)
_ESCAPE = re.compile(r"\\(.)", re.S)


def name_text(name: str) -> str:
    """A name as :func:`parse_named` reads it back: bare when it is an identifier, else in double quotes with ``"``
    and ``\\`` escaped by a backslash (``err<0>`` is written ``"err<0>"``)."""
    if _PLAIN.fullmatch(name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
#: Deepest nesting of '!' and '(' accepted (the HOA parser's limit too): deeper input is refused, not a RecursionError.
MAX_DEPTH = 100


def parse_named(text: str, names: Sequence[str], *, field: str = "effect") -> Expr:
    """Parse a Boolean expression over names (``!``, ``&``, ``|``, parentheses, ``t``, ``f``).

    A name is an identifier (letters, digits, ``_``, ``.``, ``-``; not starting with a digit) or any text in double
    quotes, where ``\\"`` is a quote and ``\\\\`` a backslash (``"err<0>" | "a.b[3]"``; a quoted ``"t"`` is a name,
    never the constant). Each must be one of ``names``; it becomes ``Var(names.index(name))``. Errors name
    ``field`` and the column of the offending token; nesting deeper than :data:`MAX_DEPTH` is refused. Linear in the
    text.
    """
    index = {n: i for i, n in enumerate(names)}
    shown = quote(text)
    tokens: list[tuple[str, int]] = []
    quoted: set[int] = set()  # positions of quoted names: always names, whatever their text
    pos = 0
    while True:
        m = _TOKEN.match(text, pos)
        assert m is not None  # the pattern ends with an any-character alternative
        kind = m.lastgroup
        if kind == "end":
            break
        col = m.start(kind) + 1
        if kind == "bad":
            raise Gf01Error(f"unexpected character {text[col - 1]!r} at column {col} in {shown} (a name with "
                            'characters other than letters, digits, _ . - goes in double quotes: "err<0>")',
                            field=field)
        if kind == "open":
            raise Gf01Error(f"unterminated quoted name: the '\"' at column {col} has no closing '\"' in {shown}",
                            field=field)
        if kind == "quoted":
            body = m.group(kind)[1:-1]
            bad = [e.group() for e in _ESCAPE.finditer(body) if e.group(1) not in '"\\']
            if bad:
                raise Gf01Error(f"bad escape {bad[0]!r} in the quoted name at column {col} in {shown} (only "
                                '\\" and \\\\ are escapes)', field=field)
            if not body:
                raise Gf01Error(f"empty quoted name at column {col} in {shown}", field=field)
            quoted.add(len(tokens))
            tokens.append((_ESCAPE.sub(r"\1", body), col))
        else:
            tokens.append((m.group(kind), col))
        pos = m.end()
    tokens.append(("", len(text) + 1))
    at = 0

    depth = 0

    def op(k: int) -> str:
        """Token k as an operator: a quoted name is none, whatever its text."""
        return "" if k in quoted else tokens[k][0]

    def fail(msg: str) -> Gf01Error:
        tok, col = tokens[at]
        found = f" (found {quote(tok)})" if tok else ""
        return Gf01Error(f"{msg} at column {col} in {shown}{found}", field=field)

    def deeper() -> None:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise fail(f"expression nested deeper than {MAX_DEPTH} levels of '!' and '('")

    def disjunction() -> Expr:
        nonlocal at
        args = [conjunction()]
        while op(at) == "|":
            at += 1
            args.append(conjunction())
        return args[0] if len(args) == 1 else Or(tuple(args))

    def conjunction() -> Expr:
        nonlocal at
        args = [negation()]
        while op(at) == "&":
            at += 1
            args.append(negation())
        return args[0] if len(args) == 1 else And(tuple(args))

    def negation() -> Expr:
        nonlocal at
        tok = tokens[at][0]
        nonlocal depth
        if op(at) == "!":
            deeper()
            at += 1
            inner = Not(negation())
            depth -= 1
            return inner
        if op(at) == "(":
            deeper()
            at += 1
            inner = disjunction()
            if op(at) != ")":
                raise fail("expected ')'")
            at += 1
            depth -= 1
            return inner
        name = at in quoted
        if not name and tok in ("t", "f") and tok not in index:
            at += 1
            return Const(tok == "t")
        if name or (tok and tok not in "&|)"):
            if tok not in index:
                known = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
                raise fail(f"unknown name {quote(tok)} (expected one of {known or 'nothing'})")
            at += 1
            return Var(index[tok])
        raise fail("expected a name, 't', 'f', '!' or '('")

    expr = disjunction()
    if tokens[at][0]:
        raise fail("unexpected token")
    return expr


def conjunction_of_literals(literals: Iterable[tuple[int, bool]]) -> Expr:
    """The conjunction of ``Var(i)`` (if positive) or ``!Var(i)``; ``t`` when empty."""
    lits: list[Expr] = [Var(i) if pos else Not(Var(i)) for i, pos in literals]
    if not lits:
        return TRUE
    return lits[0] if len(lits) == 1 else And(tuple(lits))
