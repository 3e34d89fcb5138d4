"""The finite-horizon BDD encoding of a GF-01 problem over flip variables: Suff, Valid, budget and count constraints.

Variables. One flip variable ``f{t}_{i}`` per step ``t <= t*`` and input ``i`` (flips after t* never belong to a
valid certificate, so they are not encoded: a model sets them to 0). The order is time-major, and inside a step the
inputs go by name: the variable at level ``t * n + r`` is input ``sorted(names)[r]`` at step ``t``. That is the
canonical atom order ``(t, input name)``, so a depth-first walk that tries 1 before 0 meets equal-size certificates
in canonical order. Numbering depends only on the problem, never on hash order.

Suff. Built backward step by step without state variables: ``W_t(q)`` is "from state q at step t, the flips at
steps >= t make the effect happen"; ``W_t(q)`` is a decision tree over the step-t flip variables whose leaves are
``W_{t+1}(next(q, x))`` (or true when the effect holds at step t under ``x``), with ``x = tau_t XOR f_t``. Since the
step-t variables sit above every variable of ``W_{t+1}``, each tree node is a single ITE on a top variable.

Valid. ``Suff AND_p (f_p -> not Suff|_{f_p=0})``: for a flip in C, removing it is the cofactor f_p = 0. The terms
are conjoined latest position first (measured 60-450x faster than forward order when the encoder was written).

Circuits. On a circuit system Suff is built forward instead, composing the AND gates over the flip variables step
by step (:func:`_encode_circuit`): no state variables and no state enumeration; Valid is the same.

>>> enc = encode(problem)
>>> valid = valid_bdd(enc)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from encoders.problem import Flip, Problem
from hoa.errors import Gf01Error
from hoa.label import And, Const, Expr, Not, Or, Var, evaluate_array, variables
from hoa.mealy import MAX_TABLE_INPUTS

#: BDD libraries, best first: CUDD (C, complement edges) and dd's pure-Python autoref.
LIBS = ("cudd", "autoref")

Tick = Callable[[Callable[[], int]], None]
"""A progress callback between BDD operations; it may raise to stop the construction.

It gets a function that returns the manager's live node count (not the count itself: counting walks CUDD's unique
table, so a callback without a node cap should not call it).
"""


def _no_tick(nodes: Callable[[], int]) -> None:
    return None


def manager(lib: str | None = None) -> tuple[Any, str]:
    """A fresh BDD manager and its library name: ``dd.cudd`` with dynamic reordering off, else ``dd.autoref``.

    ``lib=None`` takes CUDD when its extension imports, else autoref. Reordering is off because sifting cost 3-190x
    for 10-20 % fewer nodes on these encodings, and because the canonical enumeration needs the fixed order.
    """
    if lib not in (None, *LIBS):
        raise Gf01Error(f"unknown BDD library {lib!r} (choose from {', '.join(LIBS)})")
    if lib in (None, "cudd"):
        try:
            import dd.cudd as cudd
        except ImportError:
            if lib == "cudd":
                raise Gf01Error("dd.cudd is not available in this installation; use lib='autoref'") from None
        else:
            bdd = cudd.BDD(initial_cache_size=CUDD_INITIAL_CACHE)
            bdd.configure(reordering=False, max_memory=cudd_memory_bound())
            return bdd, "cudd"
    import dd.autoref as autoref

    bdd = autoref.BDD()
    bdd.configure(reordering=False)
    return bdd, "autoref"


#: Slots of a new CUDD manager's computed table, a quarter of CUDD's default 2^18 (CUDD grows it while its hit rate
#: is high). Every query builds a fresh manager, and zeroing the default table's 8 MiB cost about 15 ms of CPU (most
#: of it system time) per manager: more than a small query's whole encoding (docs/performance.md, "Solvers and the
#: command line").
CUDD_INITIAL_CACHE = 1 << 16
#: Share of the memory left to the process that a CUDD manager may take (the rest: Python, numpy, the encoding).
CUDD_SHARE = 0.75
#: The message of the ValueError dd raises when CUDD refuses a node past its memory bound.
CUDD_OUT_OF_MEMORY = "`DdNode *node` is `NULL` pointer"


def cudd_memory_bound() -> int:
    """Bytes a CUDD manager may use: :data:`CUDD_SHARE` of what the data segment's limit leaves this process (a
    guarded query's child under a memory limit has one, :func:`solvers.limits.guarded`), else of the physical memory.

    Past the bound CUDD refuses the node and dd raises ValueError (:data:`CUDD_OUT_OF_MEMORY`), which the BDD backend
    answers as Unknown. Unbounded, CUDD allocated until malloc failed, printed ``CUDD: unable to allocate ...`` on
    stderr and ended the process (exit 1): a crash, and a library's raw line on the user's terminal (issue 28).
    """
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_DATA)
    if soft != resource.RLIM_INFINITY:
        try:
            with open("/proc/self/status", encoding="ascii") as fh:
                used = next(int(line.split()[1]) for line in fh if line.startswith("VmData:")) * 1024
        except (OSError, StopIteration, ValueError):
            used = 0
        return max(1 << 20, int(CUDD_SHARE * (soft - used)))
    return int(CUDD_SHARE * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def var_name(t: int, i: int) -> str:
    """The flip variable of input ``i`` at step ``t``."""
    return f"f{t}_{i}"


#: Variable orders: "time" (the default and the only one the enumeration walks accept), and two measured
#: alternatives kept for the order benchmark (docs/encoding.md): "input" (input-major) and "time-reversed".
ORDERS = ("time", "input", "time-reversed")


def inputs_by_name(problem: Problem) -> tuple[int, ...]:
    """Input indices sorted by input name (the canonical atom order inside a step)."""
    names = problem.system.inputs
    return tuple(sorted(range(len(names)), key=lambda i: names[i]))


def flip_positions(problem: Problem, order: str = "time") -> tuple[Flip, ...]:
    """The flips ``(t, i)`` with ``t <= t*``, in variable-level order (default: time-major, inputs by name)."""
    ranked = inputs_by_name(problem)
    steps = range(problem.t_star + 1)
    if order == "time":
        return tuple((t, i) for t in steps for i in ranked)
    if order == "input":
        return tuple((t, i) for i in ranked for t in steps)
    if order == "time-reversed":
        return tuple((t, i) for t in reversed(steps) for i in ranked)
    raise Gf01Error(f"unknown variable order {order!r} (choose from {', '.join(ORDERS)})")


@dataclass(frozen=True)
class Encoding:
    """A problem's BDD variables and its Suff function in one manager.

    ``positions[level]`` is the flip at that level, ``names[level]`` its variable; ``steps`` = t* + 1 and
    ``width`` = |AP_in|. In the default "time" order the level of ``(t, rank r)`` is ``t * width + r``.
    """

    problem: Problem
    bdd: Any
    lib: str
    positions: tuple[Flip, ...]
    names: tuple[str, ...]
    steps: int
    width: int
    suff: Any
    order: str = "time"

    @property
    def num_vars(self) -> int:
        return len(self.positions)

    def level_of(self, t: int, i: int) -> int:
        """The level of flip ``(t, i)`` (``t <= t*``)."""
        return self.positions.index((t, i))

    def step_vars(self, t: int) -> list[Any]:
        """The flip variables of step ``t``, inputs by name."""
        return [self.bdd.var(var_name(t, i)) for i in inputs_by_name(self.problem)]

    def touched(self, t: int) -> Any:
        """TS_t: some input is flipped at step ``t``."""
        u = self.bdd.false
        for v in self.step_vars(t):
            u = u | v
        return u

    def assignment(self, flips: Sequence[Flip]) -> dict[str, bool]:
        """The full variable assignment that flips exactly ``flips`` (those after t* are ignored)."""
        on = {var_name(t, i) for t, i in flips if t < self.steps}
        return {n: n in on for n in self.names}

    def holds(self, u: Any, flips: Sequence[Flip]) -> bool:
        """Whether ``u`` is true under the assignment that flips exactly ``flips``."""
        r = self.bdd.let(self.assignment(flips), u)
        return r == self.bdd.true


def encode(problem: Problem, lib: str | None = None, tick: Tick = _no_tick, order: str = "time") -> Encoding:
    """Declare the flip variables of ``problem`` and build Suff backward (module docstring).

    Needs the dense Mealy tables (at most 20 inputs); each state and step costs 2^|AP_in| - 1 ITEs at most (each a
    single node in the "time" order, where the step's variables are above everything built so far).
    """
    if problem.circuit:
        return _encode_circuit(problem, lib, tick, order)
    system = problem.system
    n = system.num_inputs
    if n > MAX_TABLE_INPUTS:
        raise Gf01Error(f"the BDD encoding needs dense tables: at most {MAX_TABLE_INPUTS} inputs, not {n}")
    bdd, lib_name = manager(lib)
    positions = flip_positions(problem, order)
    names = tuple(var_name(t, i) for t, i in positions)
    bdd.declare(*names)
    nxt, out = system.tables
    # Effect value of every (state, input valuation): evaluate the effect once per distinct output valuation.
    ys, inverse = np.unique(out, return_inverse=True)
    eff = evaluate_array(problem.effect, ys)[inverse.reshape(out.shape)]
    ranked = inputs_by_name(problem)  # input at rank r
    # f_of_g[g]: the flip pattern (bit i = input i) whose rank-ordered encoding is g (bit r = input order[r]).
    g = np.arange(1 << n, dtype=np.int64)
    f_of_g = np.zeros(1 << n, dtype=np.int64)
    for r, i in enumerate(ranked):
        f_of_g |= ((g >> r) & 1) << i
    reach = _reachable(nxt, system.initial, problem.t_star + 1)
    effect_steps = set(problem.effect_steps)
    w_next: dict[int, Any] = {}
    for t in range(problem.t_star, -1, -1):
        step_vars = [bdd.var(var_name(t, i)) for i in ranked]
        xs = f_of_g ^ problem.trace[t]
        w_t: dict[int, Any] = {}
        for q in reach[t]:
            dest = nxt[q, xs]
            hit = eff[q, xs] if t in effect_steps else np.zeros(len(xs), dtype=bool)
            leaves = [bdd.true if hit[k] else w_next.get(int(dest[k]), bdd.false) for k in range(len(xs))]
            w_t[q] = _tree(bdd, step_vars, leaves)
        w_next = w_t
        tick(bdd.__len__)
    suff = w_next[system.initial]
    return Encoding(problem, bdd, lib_name, positions, names, problem.t_star + 1, n, suff, order)


def _encode_circuit(problem: Problem, lib: str | None, tick: Tick, order: str) -> Encoding:
    """Suff of a circuit problem by composing the circuit's functions forward, step by step.

    Each latch and gate holds a BDD over the flip variables of the steps so far: at step t the inputs are the
    literals ``f_t_i`` or their negations (as tau_t says), the gates are ANDs of their inputs' BDDs, the outputs and
    the next latches are read off them; Suff is the OR of the effect over the effect steps. No state is enumerated,
    and only the cone of influence of the effect's outputs is built (:meth:`aig.view.CircuitView.cone`).
    """
    view = problem.system
    n = view.num_inputs
    bdd, lib_name = manager(lib)
    positions = flip_positions(problem, order)
    names = tuple(var_name(t, i) for t, i in positions)
    bdd.declare(*names)
    # Only the cone of influence of the effect's outputs: everything else stays false and is never read.
    outs = sorted(variables(problem.effect))
    gate_ids, cone_latches = view.cone(frozenset(outs))
    ands = view.aig.ands
    gates = [(ands[k].lhs >> 1, ands[k].rhs0 >> 1, ands[k].rhs0 & 1, ands[k].rhs1 >> 1, ands[k].rhs1 & 1)
             for k in gate_ids]
    latches = [bdd.true if (view.initial >> k) & 1 else bdd.false for k in range(view.num_latches)]
    effect_steps = set(problem.effect_steps)
    suff = bdd.false
    for t in range(problem.t_star + 1):
        xs = [~bdd.var(var_name(t, i)) if (problem.trace[t] >> i) & 1 else bdd.var(var_name(t, i)) for i in range(n)]
        vals = [bdd.false] * (view.aig.max_var + 1)
        vals[1 : n + 1] = xs
        vals[n + 1 : n + 1 + len(latches)] = latches
        for k, (lhs, v0, n0, v1, n1) in enumerate(gates):
            a, b = vals[v0], vals[v1]
            vals[lhs] = (~a if n0 else a) & (~b if n1 else b)
            if k & 1023 == 1023:
                tick(bdd.__len__)

        def lit(x: int, vals: list[Any] = vals) -> Any:
            return ~vals[x >> 1] if x & 1 else vals[x >> 1]

        if t in effect_steps:
            ys = [bdd.false] * view.num_outputs
            for j in outs:
                ys[j] = lit(view.out_lits[j])
            suff = suff | _expr_bdd(bdd, problem.effect, ys)
        nxt = [bdd.false] * len(latches)
        for k in cone_latches:
            nxt[k] = lit(view.aig.latches[k].next)
        latches = nxt
        tick(bdd.__len__)
    return Encoding(problem, bdd, lib_name, positions, names, problem.t_star + 1, n, suff, order)


def _expr_bdd(bdd: Any, e: Expr, outs: Sequence[Any]) -> Any:
    """The BDD of expression ``e`` over outputs whose BDDs are ``outs``."""
    if isinstance(e, Var):
        return outs[e.index]
    if isinstance(e, Const):
        return bdd.true if e.value else bdd.false
    if isinstance(e, Not):
        return ~_expr_bdd(bdd, e.arg, outs)
    if isinstance(e, And):
        acc = bdd.true
        for a in e.args:
            acc = acc & _expr_bdd(bdd, a, outs)
        return acc
    if isinstance(e, Or):
        acc = bdd.false
        for a in e.args:
            acc = acc | _expr_bdd(bdd, a, outs)
        return acc
    raise TypeError(f"unresolved alias in {e!r}")


def _reachable(nxt: np.ndarray, initial: int, steps: int) -> list[list[int]]:
    """The states reachable at steps 0 .. steps-1 under some input sequence, each list sorted."""
    out = [[initial]]
    cur = np.array([initial])
    for _ in range(steps - 1):
        cur = np.unique(nxt[cur].ravel())
        out.append([int(q) for q in cur])
    return out


def _tree(bdd: Any, step_vars: Sequence[Any], leaves: list[Any]) -> Any:
    """The decision tree over ``step_vars`` (top first) with ``leaves[g]``, bit r of g the value of variable r."""
    nodes = leaves
    for r in range(len(step_vars) - 1, -1, -1):
        half = 1 << r
        v = step_vars[r]
        nodes = [
            nodes[k] if nodes[k] == nodes[k + half] else bdd.ite(v, nodes[k + half], nodes[k]) for k in range(half)
        ]
    return nodes[0]


def valid_bdd(enc: Encoding, within: Any | None = None, tick: Tick = _no_tick) -> Any:
    """Valid AND ``within``: Suff AND within AND_p (f_p -> not S|_{f_p=0}), latest position first.

    ``within`` (default true) must be closed under removing flips, as the budget |TS| <= B is. Then S can be
    Suff AND within instead of Suff: on assignments inside ``within``, removing a flip stays inside it, so both
    cofactors agree there, and S is much smaller than Suff (measured 2x faster on |Q|=16, T=64, B=2).
    """
    bdd = enc.bdd
    s = enc.suff if within is None else enc.suff & within
    u = s
    for level in range(enc.num_vars - 1, -1, -1):
        name = enc.names[level]
        removed = bdd.let({name: False}, s)
        u = u & (~bdd.var(name) | ~removed)
        tick(bdd.__len__)
    return u


def count_constraint(bdd: Any, units: Sequence[Any], accept: Callable[[int], bool]) -> Any:
    """The function "the number of true ``units`` is accepted", by a DP over the units (top to bottom).

    ``units`` must be functions over disjoint, increasing blocks of levels (variables, or the TS_t of successive
    steps); then every ITE below has its condition above both branches and stays cheap. Costs O(len(units)^2) ITEs.
    """
    k = len(units)
    row = [bdd.true if accept(c) else bdd.false for c in range(k + 1)]
    # row[c]: units from position j on, with c true units seen above.
    for j in range(k - 1, -1, -1):
        row = [row[c] if row[c] == row[c + 1] else bdd.ite(units[j], row[c + 1], row[c]) for c in range(j + 1)]
    return row[0]


def budget_bdd(enc: Encoding, budget: int | None) -> Any:
    """|TS(C)| <= budget (true when budget is None)."""
    if budget is None or budget >= enc.steps:
        return enc.bdd.true
    return count_constraint(enc.bdd, [enc.touched(t) for t in range(enc.steps)], lambda c: c <= budget)


__all__ = [
    "LIBS",
    "ORDERS",
    "Encoding",
    "budget_bdd",
    "count_constraint",
    "encode",
    "flip_positions",
    "inputs_by_name",
    "manager",
    "valid_bdd",
    "var_name",
]
