"""Circuit problems for the backends that need explicit states: the reachable latch states tabulated into a table
system, when they are few.

The forward pass (:mod:`solvers.forward`) and the layered shortest path (:mod:`solvers.paths`) work on dense
next/out tables. A circuit whose reachable latch valuations are few (a counter, an arbiter, most small controllers)
has an exact table: breadth-first from the reset state, every reachable state simulated under all 2^|AP_in| input
valuations at once (bit-parallel). The table system has the same inputs, outputs and runs, so every answer on it is
the circuit's answer. Past :data:`MAX_CELLS` (or 20 inputs) the query says so and names the backends that do not
need states (sat, bdd).

>>> table_problem = tabulated(problem, "count")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses

import numpy as np

from aig.view import CircuitView, pack_runs, unpack_runs
from encoders.problem import Problem
from hoa.errors import Gf01Error
from hoa.mealy import MealyView

#: Most (reachable state x input valuation) cells tabulated. The table view keeps one guard per (state, next,
#: output) class, built in Python: 2^16 cells take about a second.
MAX_CELLS = 1 << 16
#: Most outputs of a tabulated circuit (output valuations are int64 in the tables).
MAX_OUTPUTS = 62


def tabulated(problem: Problem, query: str) -> Problem:
    """``problem`` itself on a table system; on a circuit, the same problem on the table of its reachable latch
    states, or a Gf01Error saying why there is none (too many inputs, outputs or reachable states)."""
    if not problem.circuit:
        return problem
    view: CircuitView = problem.system  # type: ignore[assignment]
    table = view.memo.get("table")
    if table is None:
        table = _tabulate(view)
        view.memo["table"] = table
    if isinstance(table, Gf01Error):
        # What answers instead depends on the query: the SAT and BDD backends count, list and best-match a circuit,
        # but only the forward pass samples.
        advice = ("no backend samples it (--sample): --count, or the listing with --backend sat or bdd, "
                  "answers" if query == "sample" else "use the sat or bdd backend on this circuit")
        raise Gf01Error(f"{query}: needs explicit states; {advice} ({table.message})")
    return dataclasses.replace(problem, system=table)


def tabulable(problem: Problem) -> bool:
    """Whether ``problem``'s system is a table, or a circuit whose reachable latch states tabulate (cached)."""
    try:
        tabulated(problem, "tabulate")
    except Gf01Error:
        return False
    return True


def _tabulate(view: CircuitView) -> MealyView | Gf01Error:
    """Breadth-first over the reachable latch valuations; each layer's states under all letters in one bit-parallel
    simulation (run r = state r // letters under letter r % letters)."""
    n, n_l = view.num_inputs, view.num_latches
    if n > 16 or view.num_outputs > MAX_OUTPUTS:
        return Gf01Error(f"{n} inputs and {view.num_outputs} outputs are too many to tabulate")
    letters = 1 << n
    letter_bits = ((np.arange(letters)[None, :] >> np.arange(n)[:, None]) & 1).astype(bool)  # [input, letter]
    weights = np.array([1 << j for j in range(view.num_outputs)], dtype=np.int64)
    index = {view.initial: 0}
    states = [view.initial]
    nxt_rows: list[np.ndarray] = []
    out_rows: list[np.ndarray] = []
    frontier = [view.initial]
    while frontier:
        if len(states) * letters > MAX_CELLS:
            return Gf01Error(f"more than {MAX_CELLS // letters} reachable latch states under "
                             f"{letters} input valuations")
        runs = len(frontier) * letters
        qbits = np.array([[(q >> k) & 1 for q in frontier] for k in range(n_l)], dtype=bool).reshape(n_l, len(frontier))
        outs, after = view.simulate_words(pack_runs(np.tile(letter_bits, len(frontier)))[None],
                                          pack_runs(np.repeat(qbits, letters, axis=1)))
        ys = weights @ unpack_runs(outs[0], runs).astype(np.int64) if len(weights) else np.zeros(runs, np.int64)
        packed = np.packbits(unpack_runs(after, runs).T, axis=1, bitorder="little")  # [run, byte]
        targets = np.empty(runs, dtype=np.int64)
        found = []
        for r, raw in enumerate(packed):
            q2 = int.from_bytes(raw.tobytes(), "little")
            k = index.get(q2)
            if k is None:
                k = index[q2] = len(states)
                states.append(q2)
                found.append(q2)
            targets[r] = k
        nxt_rows.extend(targets.reshape(len(frontier), letters))
        out_rows.extend(ys.reshape(len(frontier), letters))
        frontier = found
    names = tuple(view.state_name(q) for q in states)
    return MealyView.from_table(view.inputs, view.outputs, np.array(nxt_rows), np.array(out_rows), 0, names)


__all__ = ["MAX_CELLS", "tabulable", "tabulated"]
