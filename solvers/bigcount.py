"""Exact walks over a dd BDD: big-int model counts, count profiles and models in canonical order.

``dd.cudd``'s own ``count`` is a float (inexact above 2^53), so the BDD is exported once into a plain DAG (complement
edges kept as a flag, as both ``dd.cudd`` and ``dd.autoref`` store them: ``u.low``/``u.high`` are the children of
the regular node and ``u.negated`` says the edge is complemented) and walked in Python with memoisation.

An edge is the int ``2 * node + negated``; node 0 is the terminal "true", so edge 0 is true and edge 1 is false.

>>> from dd import autoref
>>> bdd = autoref.BDD()
>>> bdd.declare("a", "b", "c", "d")
>>> u = bdd.add_expr("a | b")
>>> count(export(bdd, u, num_vars=4))
12
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

TRUE, FALSE = 0, 1


@dataclass(frozen=True)
class Dag:
    """A BDD as plain arrays: ``level[k]``, ``low[k]``, ``high[k]`` (edges) per node; node 0 is the terminal."""

    level: tuple[int, ...]
    low: tuple[int, ...]
    high: tuple[int, ...]
    root: int
    num_vars: int

    @property
    def size(self) -> int:
        return len(self.level)


def export(bdd: Any, u: Any, num_vars: int) -> Dag:
    """The DAG of ``u`` (a dd.cudd or dd.autoref function over levels ``0 .. num_vars-1``)."""
    ids: dict[int, int] = {}
    level, low, high = [num_vars], [0], [0]
    true_key = int(bdd.true)

    def edge_of(f: Any) -> tuple[int, Any, bool]:
        neg = bool(f.negated)
        reg = ~f if neg else f
        return int(reg), reg, neg

    root_key, root_reg, root_neg = edge_of(u)
    ids[true_key] = 0
    # Iterative post-order, so deep BDDs do not hit the recursion limit.
    stack: list[tuple[int, Any, bool]] = [(root_key, root_reg, False)]
    while stack:
        key, reg, expanded = stack.pop()
        if key in ids:
            continue
        lo_key, lo_reg, lo_neg = edge_of(reg.low)
        hi_key, hi_reg, hi_neg = edge_of(reg.high)
        if expanded:
            ids[key] = len(level)
            level.append(reg.level)
            low.append(2 * ids[lo_key] + lo_neg)
            high.append(2 * ids[hi_key] + hi_neg)
            continue
        stack.append((key, reg, True))
        for k, r in ((hi_key, hi_reg), (lo_key, lo_reg)):
            if k not in ids:
                stack.append((k, r, False))
    return Dag(tuple(level), tuple(low), tuple(high), 2 * ids[root_key] + root_neg, num_vars)


def count(dag: Dag) -> int:
    """The exact number of satisfying assignments over all ``num_vars`` variables, as a Python int."""
    # models[k]: models of node k over the levels level[k] .. num_vars-1 (regular polarity); node ids are post-order.
    models = [1] * dag.size
    for k in range(1, dag.size):
        lv = dag.level[k]
        models[k] = sum(
            _edge_models(dag, models, e) << (dag.level[e >> 1] - lv - 1) for e in (dag.low[k], dag.high[k])
        )
    return _edge_models(dag, models, dag.root) << dag.level[dag.root >> 1]


def _edge_models(dag: Dag, models: list[int], e: int) -> int:
    k = e >> 1
    m = models[k]
    return ((1 << (dag.num_vars - dag.level[k])) - m) if e & 1 else m


Profile = dict[int, int]
"""A set of pairs (x, y): ``x -> bitmask`` with bit ``y`` set when (x, y) is reachable."""


def _shift(p: Profile, dx: int, dy: int) -> Profile:
    return {x + dx: m << dy for x, m in p.items()} if dx or dy else p


def _union(a: Profile, b: Profile) -> Profile:
    out = dict(a)
    for x, m in b.items():
        out[x] = out.get(x, 0) | m
    return out


def profile(
    dag: Dag,
    step_of: Sequence[int],
    weight: Callable[[int, int], tuple[int, int]],
) -> Profile:
    """The set of (x, y) over the models of ``dag``, where each model adds up per-level and per-step weights.

    ``step_of[level]`` groups levels into steps (contiguous). ``weight(kind, index)`` gives (dx, dy): with
    ``kind = 0`` for a level set to 1 (``index`` = level), ``kind = 1`` for a step with some level set to 1
    (``index`` = step). Walks level by level (skipped levels are free), memoised on (edge, level, touched).
    """
    n = dag.num_vars
    last_of_step = [lv == n - 1 or step_of[lv + 1] != step_of[lv] for lv in range(n)]
    memo: dict[tuple[int, int, bool], Profile] = {}
    # Iterative evaluation with an explicit stack of states (edge, level, touched).
    stack = [(dag.root, 0, False)]
    while stack:
        state = stack[-1]
        if state in memo:
            stack.pop()
            continue
        e, lv, touched = state
        if e == FALSE:
            memo[state] = {}
            stack.pop()
            continue
        if lv == n:
            memo[state] = {0: 1}
            stack.pop()
            continue
        kids = _branches(dag, e, lv, touched, last_of_step)
        missing = [k for _, k in kids if k not in memo]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        result: Profile = {}
        for bit, kid in kids:
            dx = dy = 0
            if bit:
                dx, dy = weight(0, lv)
            if last_of_step[lv] and (touched or bit):
                sx, sy = weight(1, step_of[lv])
                dx, dy = dx + sx, dy + sy
            result = _union(result, _shift(memo[kid], dx, dy))
        memo[state] = result
    return memo[(dag.root, 0, False)]


def _branches(
    dag: Dag, e: int, lv: int, touched: bool, last_of_step: Sequence[bool]
) -> list[tuple[int, tuple[int, int, bool]]]:
    """The two successors (bit, (edge, level + 1, touched')) of state (e, lv, touched), ``e`` not false."""
    k, neg = e >> 1, e & 1
    kids = [(0, e), (1, e)] if dag.level[k] > lv else [(0, dag.low[k] ^ neg), (1, dag.high[k] ^ neg)]
    out = []
    for bit, child in kids:
        now = (touched or bool(bit)) and not last_of_step[lv]
        out.append((bit, (child, lv + 1, now)))
    return out


def models(dag: Dag) -> Iterator[tuple[int, ...]]:
    """Every model, as the tuple of levels set to 1, depth first trying 1 before 0 at each level, lazily.

    Among models with the same number of 1s this is lexicographic order of the sorted level tuples (the first level
    where two models differ is in the earlier one). Every non-false edge has a model, so the walk never backtracks
    from a dead end: each model costs O(num_vars).
    """
    n = dag.num_vars
    if dag.root == FALSE:
        return
    path: list[int] = []  # path[level]: the bit chosen at that level on the current branch
    # Frames [edge, level, next bit to try]: 1, then 0, then -1 (done).
    stack: list[list[int]] = [[dag.root, 0, 1]]
    while stack:
        frame = stack[-1]
        e, lv, bit = frame
        if lv == n:
            yield tuple(level for level, b in enumerate(path) if b)
            stack.pop()
            continue
        if bit < 0:
            stack.pop()
            continue
        frame[2] = bit - 1
        k, neg = e >> 1, e & 1
        child = e if dag.level[k] > lv else (dag.high[k] if bit else dag.low[k]) ^ neg
        if child == FALSE:
            continue
        del path[lv:]
        path.append(bit)
        stack.append([child, lv + 1, 1])


__all__ = ["FALSE", "TRUE", "Dag", "count", "export", "models", "profile"]
