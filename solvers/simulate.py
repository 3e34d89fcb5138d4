"""Simulation of certificates on the dense Mealy tables: the base run, and Suff/Min1 of many certificates at once.

Every run of a certificate agrees with the base run before the certificate's first timestep, so simulation starts
from the cached base-run state there; atoms after t* cannot change the effect and are never simulated.
:func:`check_many` answers suff and min1 for many certificates at once: all |C|+1 variants of every certificate
(C itself and C minus each atom) run in lock-step through :meth:`hoa.mealy.MealyView.simulate`.

>>> suff_arr, min1_arr = check_many(problem, [((0, 1, 1),), ((20, 2, 1), (21, 2, 1))])
>>> suff_arr.tolist(), min1_arr.tolist()
([False, True], [True, True])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from aig.view import CircuitView, pack_runs, unpack_runs
from encoders.problem import Atom, Problem
from hoa.errors import Gf01Error
from hoa.label import And, Const, Expr, Not, Or, Var, evaluate, evaluate_array

#: Largest output count for which the effect is tabulated over all output valuations.
MAX_EFFECT_TABLE_OUTPUTS = 20


@dataclass(frozen=True)
class Prepared:
    """What every explicit query on one problem needs: base run, effect table, effect steps as a mask."""

    problem: Problem
    base_states: np.ndarray  # q_0 .. q_T of the base run
    base_hits: np.ndarray  # bool per t: the base run shows the effect at t and t is an effect step
    effect_table: np.ndarray | None  # bool per output valuation, or None when there are too many outputs
    in_window: np.ndarray  # bool per t: t is an effect step

    @property
    def t_end(self) -> int:
        """The last step that matters: t*."""
        return self.problem.t_star

    def effect_of(self, ys: np.ndarray) -> np.ndarray:
        """Whether each output valuation in ``ys`` satisfies the effect."""
        if self.effect_table is not None:
            return self.effect_table[ys]
        flat = np.asarray(ys).ravel()
        return np.array([evaluate(self.problem.effect, int(y)) for y in flat], dtype=bool).reshape(np.shape(ys))


def prepare(problem: Problem) -> Prepared:
    """Simulate the base run once and tabulate the effect."""
    system = problem.system
    states, outs = system.run(problem.trace)
    table = None
    if system.num_outputs <= MAX_EFFECT_TABLE_OUTPUTS:
        table = evaluate_array(problem.effect, np.arange(1 << system.num_outputs, dtype=np.int64))
    in_window = np.zeros(problem.horizon, dtype=bool)
    in_window[list(problem.effect_steps)] = True
    ys = np.asarray(outs, dtype=np.int64)
    shows = table[ys] if table is not None else np.array([evaluate(problem.effect, int(y)) for y in ys], dtype=bool)
    return Prepared(problem, np.asarray(states, dtype=np.int64), shows & in_window, table, in_window)


def check_many(problem: Problem, certs: Sequence[Iterable[Atom]]) -> tuple[np.ndarray, np.ndarray]:
    """Suff and Min1 of every certificate in ``certs``, as two bool arrays (vectorised over all variants' runs).

    Certificates must be structurally valid (t in range, distinct (t, i)); atoms may restate base values. On a
    circuit every variant is one bit of the bit-parallel simulation (:func:`_circuit_hits`).
    """
    cert_lists = [list(c) for c in certs]
    hit = _circuit_hits(problem, cert_lists) if problem.circuit else _variant_hits(prepare(problem), cert_lists)
    lens = np.fromiter((len(c) for c in cert_lists), dtype=np.int64, count=len(cert_lists))
    offsets = np.concatenate(([0], np.cumsum(lens + 1)))[:-1]
    suff = hit[offsets] if len(cert_lists) else np.zeros(0, dtype=bool)
    # Min1: none of the rows "C minus one atom" (rows offsets+1 .. offsets+len) shows the effect.
    csum = np.concatenate(([0], np.cumsum(hit.astype(np.int64))))
    minus_hits = csum[offsets + lens + 1] - csum[offsets + 1] if len(cert_lists) else np.zeros(0, dtype=np.int64)
    return suff, minus_hits == 0


def _variant_hits(prep: Prepared, certs: list[list[Atom]]) -> np.ndarray:
    """Per variant row (for each certificate: C, then C minus atom 0, 1, ...): does its run show the effect?"""
    problem = prep.problem
    lens = np.array([len(c) for c in certs], dtype=np.int64)
    rows = int((lens + 1).sum())
    if rows == 0:
        return np.zeros(0, dtype=bool)
    offsets = np.concatenate(([0], np.cumsum(lens + 1)))[:-1]
    flat = [a for c in certs for a in c]
    a_t = np.array([a[0] for a in flat], dtype=np.int64)
    a_i = np.array([a[1] for a in flat], dtype=np.int64)
    a_v = np.array([a[2] for a in flat], dtype=np.int64)
    a_cert = np.repeat(np.arange(len(certs)), lens)
    a_j = np.arange(len(flat)) - np.repeat(offsets - np.arange(len(certs)), lens)  # index within its certificate
    # Each atom applies to every row of its certificate except the row that removes it.
    live = a_t <= prep.t_end
    a_t, a_i, a_v, a_cert, a_j = a_t[live], a_i[live], a_v[live], a_cert[live], a_j[live]
    if a_t.size == 0:
        base = bool(prep.base_hits.any())
        return np.full(rows, base, dtype=bool)
    t0 = int(a_t.min())
    span = prep.t_end - t0 + 1
    reps = lens[a_cert] + 1
    app_atom = np.repeat(np.arange(a_t.size), reps)
    within = np.arange(app_atom.size) - np.repeat(np.cumsum(reps) - reps, reps)
    app_row = offsets[a_cert[app_atom]] + within
    keep = within != a_j[app_atom] + 1
    app_atom, app_row = app_atom[keep], app_row[keep]
    bit = np.left_shift(np.int64(1), a_i[app_atom])
    clear = np.zeros((rows, span), dtype=np.int64)
    setb = np.zeros((rows, span), dtype=np.int64)
    cols = a_t[app_atom] - t0
    np.bitwise_or.at(clear, (app_row, cols), bit)
    np.bitwise_or.at(setb, (app_row, cols), bit * a_v[app_atom])
    base_x = np.asarray(problem.trace[t0 : prep.t_end + 1], dtype=np.int64)
    xs = (base_x[None, :] & ~clear) | setb
    start = np.full(rows, prep.base_states[t0], dtype=np.int64)
    _, outs = problem.system.simulate(xs, start)
    cols = np.flatnonzero(prep.in_window[t0 : prep.t_end + 1])
    hit = np.full(rows, bool(prep.base_hits[:t0].any()), dtype=bool)
    if cols.size:
        hit |= prep.effect_of(outs[:, cols]).any(axis=1)
    return hit


def _circuit_hits(problem: Problem, certs: list[list[Atom]]) -> np.ndarray:
    """:func:`_variant_hits` on a circuit: the same rows, each one run of the bit-parallel simulation from the base
    run's latches at the first atom's step (runs agree with the base run before it)."""
    view: CircuitView = problem.system  # type: ignore[assignment]
    base = circuit_base(problem)
    lens = np.array([len(c) for c in certs], dtype=np.int64)
    rows = int((lens + 1).sum())
    if rows == 0:
        return np.zeros(0, dtype=bool)
    flat = [a for c in certs for a in c if a[0] <= problem.t_star]
    if not flat:
        return np.full(rows, bool(base.hits.any()), dtype=bool)
    t0 = min(a[0] for a in flat)
    span = problem.t_star - t0 + 1
    n = view.num_inputs
    xs = np.repeat(base.inputs[t0 : problem.t_star + 1, :, None], rows, axis=2)  # [t, input, row]
    row = 0
    for c in certs:
        for j in range(len(c) + 1):  # row j: C itself (j = 0) or C minus atom j - 1
            for k, (t, i, v) in enumerate(c):
                if k + 1 != j and t <= problem.t_star:
                    xs[t - t0, i, row] = bool(v)
            row += 1
    start = np.where(base.latches[t0], np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64(0))[:, None]
    words = (rows + 63) // 64
    outs, _ = view.simulate_words(pack_runs(xs.reshape(span, n, rows)), np.repeat(start, words, axis=1))
    cols = [t - t0 for t in problem.effect_steps if t >= t0]
    hit = np.full(rows, bool(base.hits[:t0].any()), dtype=bool)
    if cols:
        eff = effect_words(problem.effect, outs[cols])  # [step, word]
        hit |= unpack_runs(np.bitwise_or.reduce(eff, axis=0), rows)
    return hit


@dataclass(frozen=True)
class CircuitBase:
    """A circuit problem's base run: inputs ``[t, i]``, latches ``[t, k]`` (t = 0 .. T), effect hits per step."""

    inputs: np.ndarray
    latches: np.ndarray
    hits: np.ndarray


def circuit_base(problem: Problem) -> CircuitBase:
    """The base run of a circuit problem, bit-parallel over one run (cached on the view per trace)."""
    view: CircuitView = problem.system  # type: ignore[assignment]
    key = (problem.trace, problem.effect, problem.t_star, problem.mode, problem.window)
    bases = view.memo.setdefault("base", {})
    got = bases.get(key)
    if got is not None:
        return got
    T, n, n_l = problem.horizon, view.num_inputs, view.num_latches
    inputs = np.array([[(x >> i) & 1 for i in range(n)] for x in problem.trace], dtype=bool).reshape(T, n)
    latches = np.zeros((T + 1, n_l), dtype=bool)
    latches[0] = [(view.initial >> k) & 1 for k in range(n_l)]
    outs = np.zeros((T, view.num_outputs), dtype=np.uint64)
    state = pack_runs(latches[0][:, None])
    for t in range(T):
        o, state = view.simulate_words(pack_runs(inputs[t][None, :, None]), state)
        outs[t] = o[0, :, 0]
        latches[t + 1] = unpack_runs(state, 1)[:, 0]
    shows = unpack_runs(effect_words(problem.effect, outs[:, :, None]), 1)[:, 0]
    in_window = np.zeros(T, dtype=bool)
    in_window[list(problem.effect_steps)] = True
    base = CircuitBase(inputs, latches, shows & in_window)
    if len(bases) >= 64:  # a long-lived view sees many traces (generation): keep the cache bounded
        bases.clear()
    bases[key] = base
    return base


def effect_words(effect: Expr, outs: np.ndarray) -> np.ndarray:
    """The effect over bit-parallel outputs ``[..., j, word]``: one word array ``[..., word]``."""
    if isinstance(effect, Var):
        return outs[..., effect.index, :]
    if isinstance(effect, Const):
        shape = outs.shape[:-2] + outs.shape[-1:]
        return np.full(shape, np.uint64(0xFFFFFFFFFFFFFFFF) if effect.value else np.uint64(0), dtype=np.uint64)
    if isinstance(effect, Not):
        return ~effect_words(effect.arg, outs)
    if isinstance(effect, And):
        acc = effect_words(effect.args[0], outs)
        for a in effect.args[1:]:
            acc = acc & effect_words(a, outs)
        return acc
    if isinstance(effect, Or):
        acc = effect_words(effect.args[0], outs)
        for a in effect.args[1:]:
            acc = acc | effect_words(a, outs)
        return acc
    raise TypeError(f"unresolved alias in {effect!r}")


def run_many(problem: Problem, traces: Sequence[Sequence[int]] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs on whole input traces (one row each, T steps, valuations as Python ints): state keys ``[row, t]`` for
    t = 0 .. T and output bits ``[row, t, j]``, on tables or (bit-parallel) circuits.

    A state key is the table state, or on a circuit its latch valuation folded into 63 bits (exact up to 63
    latches; beyond, equal valuations still have equal keys, which is all the greedy certifier asks of them).
    """
    rows, T = len(traces), problem.horizon
    view = problem.system
    n_out = view.num_outputs
    if not problem.circuit:
        states, outs = view.simulate(np.asarray(traces, dtype=np.int64).reshape(rows, T))
        bits = ((outs[:, :, None] >> np.arange(n_out, dtype=np.int64)) & 1).astype(bool)
        return states, bits
    n, n_l = view.num_inputs, view.num_latches
    xs = np.array([[[(x >> i) & 1 for i in range(n)] for x in tr] for tr in traces], dtype=bool).reshape(rows, T, n)
    words = max(1, (rows + 63) // 64)
    start = np.repeat(np.array([[np.uint64(0xFFFFFFFFFFFFFFFF) if (view.initial >> k) & 1 else np.uint64(0)]
                                for k in range(n_l)], dtype=np.uint64).reshape(n_l, 1), words, axis=1)
    outs, latches = view.simulate_words(pack_runs(xs.transpose(1, 2, 0)), start, every_step=True)
    bits = unpack_runs(outs, rows).transpose(2, 0, 1)  # [row, t, j]
    lbits = unpack_runs(latches, rows).transpose(2, 0, 1).astype(np.int64)  # [row, t, k]
    keys = np.zeros((rows, T + 1), dtype=np.int64)
    for k in range(n_l):
        keys ^= lbits[:, :, k] << (k % 63)
    return keys, bits


def require_tables(problem: Problem, query: str) -> None:
    """Raise Gf01Error when the system has no dense tables (the explicit queries need them)."""
    if not problem.system.has_tables:
        raise Gf01Error(f"{query} needs the dense Mealy tables: {problem.system.num_states} states x "
                        f"2^{problem.system.num_inputs} inputs is too large for them")
