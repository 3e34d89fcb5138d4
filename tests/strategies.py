"""Hypothesis strategies for random small GF-01 problems and certificates (shared by the solver test suites).

``problems()`` draws a Mealy view (an explicit random table; random guard expressions per state with a catch-all last
edge so the view is input-complete; or a table with unreachable and absorbing states), a random base trace, a random
effect over the outputs (with ``t``/``f``/``!``/``&``/``|``), hard or normal mode, a window and a budget (or None).
``max_flips`` bounds T * |AP_in| so that the brute-force twin (2^(T*|AP_in|) flip sets) stays fast.

``as_circuit(problem)`` is the circuit twin of a table problem (the same machine, its state in binary latches);
``circuit_problems()`` draws problems on random circuits.

>>> from hypothesis import given
>>> @given(problems())
... def test_something(problem): ...
"""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
from hypothesis import strategies as st

from aig.build import Builder
from aig.model import Aig, Latch
from aig.model import And as AigAnd
from aig.view import CircuitView
from encoders.problem import Atom, Problem
from hoa.label import AliasRef, And, Const, Expr, Not, Or, Var, satisfiable
from hoa.mealy import MealyEdge, MealyView


@cache
def expressions(
    num_vars: int, offset: int = 0, max_leaves: int = 5, aliases: tuple[str, ...] = (), max_args: int = 3
) -> st.SearchStrategy[Expr]:
    """Random Boolean expressions over ``Var(offset) .. Var(offset + num_vars - 1)``, the constants and ``aliases``.

    Built once per signature (building hypothesis strategies is costly); shared by the solver and HOA tests.
    """
    leaves: list[st.SearchStrategy[Expr]] = [st.sampled_from([Const(True), Const(False)])]
    if num_vars:
        leaves.append(st.integers(offset, offset + num_vars - 1).map(Var))
    if aliases:
        leaves.append(st.sampled_from(aliases).map(AliasRef))
    return st.recursive(
        st.one_of(leaves),
        lambda kids: st.one_of(
            kids.map(Not),
            st.lists(kids, min_size=2, max_size=max_args).map(lambda xs: And(tuple(xs))),
            st.lists(kids, min_size=2, max_size=max_args).map(lambda xs: Or(tuple(xs))),
        ),
        max_leaves=max_leaves,
    )


def _random_expression(
    rng: np.random.Generator, num_vars: int, offset: int = 0, max_leaves: int = 5, max_args: int = 3
) -> Expr:
    """A random Boolean expression as :func:`expressions` makes them (leaves: the constants or ``Var(offset + k)``;
    nodes: ``!``, and ``&``/``|`` of 2..``max_args`` children; at most ``max_leaves`` leaves), drawn from ``rng``."""

    def leaf() -> Expr:
        if num_vars and rng.integers(2):
            return Var(offset + int(rng.integers(num_vars)))
        return Const(bool(rng.integers(2)))

    def build(leaves: int) -> Expr:
        if leaves == 1:
            return Not(build(1)) if rng.integers(4) == 0 else leaf()
        op = int(rng.integers(3))
        if op == 0:
            return Not(build(leaves))
        k = int(rng.integers(2, min(max_args, leaves) + 1))
        # choice over range(leaves - 1), shifted: the same draws as over arange(1, leaves), without the array
        cuts = sorted((rng.choice(leaves - 1, size=k - 1, replace=False) + 1).tolist())
        kids = tuple(build(b - a) for a, b in zip([0, *cuts], [*cuts, leaves], strict=True))
        return And(kids) if op == 1 else Or(kids)

    return build(min(max_leaves, int(rng.geometric(0.5))))  # small ones most often, as hypothesis draws them


def _table_view(rng: np.random.Generator, n_states: int, n_in: int, n_out: int) -> MealyView:
    """A random explicit Mealy table turned into a view (one edge per (next, output) class)."""
    nxt = rng.integers(0, n_states, size=(n_states, 1 << n_in))
    out = rng.integers(0, 1 << n_out, size=(n_states, 1 << n_in))
    return MealyView.from_table(_names("i", n_in), _names("o", n_out), nxt, out)


def _guard_view(rng: np.random.Generator, n_states: int, n_in: int, n_out: int) -> MealyView:
    """A random view with guard expressions over inputs and outputs; each state ends with a catch-all edge.

    The catch-all's guard mentions only outputs and is satisfiable, so every input valuation enables some edge.
    """
    signals = n_in + n_out
    edges = []
    for _ in range(n_states):
        es = [MealyEdge(_random_expression(rng, signals), int(rng.integers(n_states)))
              for _ in range(int(rng.integers(4)))]
        last = _random_expression(rng, n_out, offset=n_in, max_leaves=3)
        if not satisfiable(last):
            last = Const(True)
        es.append(MealyEdge(last, int(rng.integers(n_states))))
        edges.append(tuple(es))
    return MealyView(_names("i", n_in), _names("o", n_out), tuple(edges), initial=int(rng.integers(n_states)))


def _trap_view(rng: np.random.Generator, n_states: int, n_in: int, n_out: int) -> MealyView:
    """A random table whose states split into live ones (reachable from the initial state 0), absorbing ones (every
    input stays, one output each) and unreachable ones (no edge leads to them; their own edges are random)."""
    size = 1 << n_in
    kinds = [0, *rng.integers(0, 3, size=n_states - 1).tolist()]  # 0 live, 1 absorbing, 2 unreachable
    targets = np.array([q for q in range(n_states) if kinds[q] != 2])
    nxt, out = [], []
    for q in range(n_states):
        if kinds[q] == 1:
            nxt.append([q] * size)
            out.append([int(rng.integers(1 << n_out))] * size)
            continue
        pool = targets if kinds[q] == 0 else np.arange(n_states)
        nxt.append(rng.choice(pool, size=size).tolist())
        out.append(rng.integers(0, 1 << n_out, size=size).tolist())
    return MealyView.from_table(_names("i", n_in), _names("o", n_out), nxt, out)


VIEWS = {"table": _table_view, "guard": _guard_view, "trap": _trap_view}

# Strategies made once per signature and drawn from again. Hypothesis's own strategy cache costs about 0.1 ms a
# lookup (it binds the call's arguments), and a fresh ``one_of`` or ``sampled_from`` of a list is validated again on
# its first draw: together about half of a problem's draw. The objects are those hypothesis would build (same
# classes, bounds and labels), so the same choices give the same examples.
_integers = cache(st.integers)
_sampled_from = cache(st.sampled_from)  # of tuples: a list's sample has the same elements and label
_KINDS = st.sampled_from(("table", "guard", "trap"))
_SEEDS = st.integers(0, 2**32 - 1)
_WINDOWS = st.integers(0, 3)
_BITS = st.integers(0, 1)
_NOOP = st.integers(0, 5)


@cache
def _budgets(T: int) -> st.SearchStrategy[int | None]:
    return st.one_of(st.none(), st.integers(0, T))


@cache
def _positions(T: int, n: int, max_atoms: int) -> st.SearchStrategy[list[tuple[int, int]]]:
    return st.lists(st.tuples(st.integers(0, T - 1), st.integers(0, n - 1)), max_size=max_atoms, unique=True)


@cache
def _traces(n_in: int, T: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, (1 << n_in) - 1), min_size=T, max_size=T)


@st.composite
def problems(
    draw: st.DrawFn,
    max_states: int = 4,
    max_inputs: int = 3,
    max_outputs: int = 2,
    max_T: int = 6,
    max_flips: int = 12,
    modes: tuple[str, ...] = ("hard", "normal"),
    min_T: int = 1,
    min_t_star: int = 0,
) -> Problem:
    """A random small :class:`Problem` with T * |AP_in| <= ``max_flips``.

    Hypothesis draws the sizes, the kind of system, t*, the mode, the window and the budget (so a failure shrinks to
    small sizes), and one seed from which numpy draws the system's tables or guards, the base trace and the effect:
    drawing those cell by cell through hypothesis cost some 10 ms of CPU a problem, more than most suites' checks.

    ``min_T`` and ``min_t_star`` (at most T - 1) bound T and t* from below, for a caller whose cases need them (one
    that wants a certificate over two timesteps rejects every draw with T or t* + 1 below 2: drawing only what it
    keeps saves the draws it would throw away). ``min_T`` must fit ``max_flips`` with one input."""
    n_in = draw(_integers(1, max(1, min(max_inputs, max_flips // min_T))))
    n_out = draw(_integers(1, max_outputs))
    n_states = draw(_integers(1, max_states))
    T = draw(_integers(min_T, max(min_T, min(max_T, max_flips // n_in))))
    kind = draw(_KINDS)
    rng = np.random.default_rng(draw(_SEEDS))
    system = VIEWS[kind](rng, n_states, n_in, n_out)
    trace = tuple(rng.integers(0, 1 << n_in, size=T).tolist())
    effect = _random_expression(rng, n_out, max_leaves=4)
    t_star = draw(_integers(min(min_t_star, T - 1), T - 1))
    mode = draw(_sampled_from(modes))
    window = draw(_WINDOWS)
    budget_t = draw(_budgets(T))
    return Problem(system, trace, effect, t_star, mode, window, budget_t)


@st.composite
def certificates(draw: st.DrawFn, problem: Problem, max_atoms: int = 6) -> tuple[Atom, ...]:
    """A structurally valid certificate: distinct (t, i) positions, v either the flipped or (rarely) the base value."""
    T, n = problem.horizon, problem.system.num_inputs
    positions = draw(_positions(T, n, max_atoms))
    atoms = []
    for t, i in positions:
        base = (problem.trace[t] >> i) & 1
        noop = draw(_NOOP) == 0
        atoms.append((t, i, base if noop else 1 - base))
    return tuple(sorted(atoms))


def _names(prefix: str, k: int) -> tuple[str, ...]:
    # Names whose alphabetical order differs from index order, so canonical (by-name) atom order is exercised.
    pool = {"i": ("r", "g", "a", "z", "c", "m"), "o": ("p", "e", "x", "b")}[prefix]
    return pool[:k] if k <= len(pool) else tuple(f"{prefix}{j}" for j in range(k))


def table_circuit(view: MealyView) -> CircuitView:
    """The same machine as a circuit: the state in binary latches, next state and outputs as sums of minterms."""
    nxt, out = view.tables
    n, m, s = view.num_inputs, view.num_outputs, view.num_states
    bits = (s - 1).bit_length()
    b = Builder()
    ins = [b.input(name) for name in view.inputs]
    lat = [b.latch(f"s{k}", (view.initial >> k) & 1) for k in range(bits)]
    next_terms: list[list[int]] = [[] for _ in range(bits)]
    out_terms: list[list[int]] = [[] for _ in range(m)]
    for q in range(s):
        for x in range(1 << n):
            term = b.all([lat[k] ^ (1 - ((q >> k) & 1)) for k in range(bits)]
                         + [ins[i] ^ (1 - ((x >> i) & 1)) for i in range(n)])
            for k in range(bits):
                if (int(nxt[q, x]) >> k) & 1:
                    next_terms[k].append(term)
            for j in range(m):
                if (int(out[q, x]) >> j) & 1:
                    out_terms[j].append(term)
    for k in range(bits):
        b.set_next(lat[k], b.any(next_terms[k]))
    for j, name in enumerate(view.outputs):
        b.output(name, b.any(out_terms[j]))
    return CircuitView.from_aig(b.aig())


def as_circuit(problem: Problem) -> Problem:
    """``problem`` with its table system replaced by the same machine as a circuit (the circuit twin)."""
    return dataclasses.replace(problem, system=table_circuit(problem.system))


@st.composite
def circuit_problems(draw: st.DrawFn, max_flips: int = 9, modes: tuple[str, ...] = ("hard", "normal")) -> Problem:
    """A random small problem on a random circuit (not from a table): AND gates over inputs, latches and earlier
    gates, latches with random resets and next states, outputs and bad-state properties from any signal."""
    n_in = draw(_integers(1, 3))
    n_l = draw(_integers(0, 3))
    n_a = draw(_integers(0, 10))
    avail = [0, *range(2, 2 * (n_in + n_l) + 1, 2)]

    def lit() -> int:
        return draw(_sampled_from(tuple(avail))) ^ draw(_BITS)

    ands = []
    for k in range(n_a):
        lhs = 2 * (n_in + n_l + k + 1)
        ands.append(AigAnd(lhs, lit(), lit()))
        avail.append(lhs)

    latches = tuple(Latch(2 * (n_in + k + 1), lit(), draw(_BITS)) for k in range(n_l))
    n_o, n_b = draw(_integers(0, 2)), draw(_BITS)
    if n_o + n_b == 0:
        n_o = 1
    aig = Aig(n_in + n_l + n_a, tuple(range(2, 2 * n_in + 1, 2)), latches, tuple(lit() for _ in range(n_o)),
              tuple(ands), bad=tuple(lit() for _ in range(n_b)),
              symbols=tuple((("i", i), name) for i, name in enumerate(_names("i", n_in))))
    system = CircuitView.from_aig(aig)
    T = draw(_integers(1, max(1, min(6, max_flips // n_in))))
    trace = tuple(draw(_traces(n_in, T)))
    effect = draw(expressions(system.num_outputs, max_leaves=4))
    t_star = draw(_integers(0, T - 1))
    budget_t = draw(_budgets(T))
    return Problem(system, trace, effect, t_star, draw(_sampled_from(modes)), draw(_WINDOWS), budget_t)
