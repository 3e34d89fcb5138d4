"""The explicit backend: suff/min1/valid/subset_min by simulation on the dense Mealy tables, and exact enumeration.

Every run of a certificate agrees with the base run before the certificate's first timestep, so simulation starts
from the cached base-run state there; atoms after t* cannot change the effect and are never simulated.
:func:`check_many` answers suff and min1 for many certificates at once: all |C|+1 variants of every certificate
(C itself and C minus each atom) are simulated in lock-step with numpy fancy-indexing on ``system.tables``.

>>> suff_arr, min1_arr = check_many(problem, [((0, 1, 1),), ((2, 0, 0), (3, 0, 1))])  # doctest: +SKIP
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from encoders.problem import Atom, Flip, Problem
from hoa.errors import Gf01Error
from hoa.label import evaluate, evaluate_array
from hoa.mealy import MAX_TABLE_INPUTS
from solvers.canonical import canonical, effective_flips, order_key
from solvers.limits import NO_LIMITS, Limits

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
        return np.array([evaluate(self.problem.effect, int(y)) for y in ys], dtype=bool)


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

    Certificates must be structurally valid (t in range, distinct (t, i)); atoms may restate base values.
    """
    prep = prepare(problem)
    cert_lists = [list(c) for c in certs]
    hit = _variant_hits(prep, cert_lists)
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
    hit = np.full(rows, bool(prep.base_hits[:t0].any()), dtype=bool)
    q = np.full(rows, prep.base_states[t0], dtype=np.int64)
    system = problem.system
    if system.num_inputs <= MAX_TABLE_INPUTS:
        nxt, out = system.tables
        width = nxt.shape[1]
        # Flat tables indexed by q * width + x, with the next state stored pre-multiplied by width.
        out_flat = out.ravel()
        nxt_pre = nxt.ravel().astype(np.int64) * width
        qpre = q * width
        xs_t = np.ascontiguousarray(xs.T)
        for k in range(span):
            idx = qpre + xs_t[k]
            if prep.in_window[t0 + k]:
                hit |= prep.effect_of(out_flat[idx])
            qpre = nxt_pre[idx]
    else:
        for k in range(span):
            steps = [system.step(int(qq), int(xx)) for qq, xx in zip(q, xs[:, k], strict=True)]
            if prep.in_window[t0 + k]:
                hit |= prep.effect_of(np.array([y for _, y in steps], dtype=np.int64))
            q = np.array([s for s, _ in steps], dtype=np.int64)
    return hit


def suff(problem: Problem, atoms: Iterable[Atom]) -> bool:
    """Definition 10 by simulation."""
    return bool(check_many(problem, [list(atoms)])[0][0])


def min1(problem: Problem, atoms: Iterable[Atom]) -> bool:
    """Definition 11 by simulation of the |C| runs with one atom removed."""
    return bool(check_many(problem, [list(atoms)])[1][0])


def valid(problem: Problem, atoms: Iterable[Atom]) -> bool:
    """Definition 12: Suff and Min1."""
    s, m = check_many(problem, [list(atoms)])
    return bool(s[0] and m[0])


def subset_min(problem: Problem, atoms: Iterable[Atom], limits: Limits | None = None) -> bool:
    """Definition 14 by a forward DP over (state, effect seen, all of C's flips taken so far), restricted to C's flips.

    A proper subset of C is sufficient iff some subset F of C's effective flips up to t* is, where F must be a
    proper subset of them only when every atom of C is an effective flip at t <= t* (otherwise dropping a no-op or
    late atom already gives a proper subset with the same flips).
    """
    clock = (limits or NO_LIMITS).start()
    c = list(atoms)
    flips = sorted(f for f in effective_flips(problem, c) if f[0] <= problem.t_star)
    proper_needed = len(flips) == len(c)
    system = problem.system
    by_t: dict[int, list[int]] = {}
    for t, i in flips:
        by_t.setdefault(t, []).append(i)
    window = set(problem.effect_steps)
    # frontier: set of (state, seen, full) where full = every flip of C up to now was taken
    frontier = {(system.initial, False, True)}
    for t in range(problem.t_star + 1):
        clock.check("subset_min")
        ins = by_t.get(t, [])
        new: set[tuple[int, bool, bool]] = set()
        for q, seen, full in frontier:
            for r in range(len(ins) + 1):
                for chosen in itertools.combinations(ins, r):
                    x = problem.trace[t]
                    for i in chosen:
                        x ^= 1 << i
                    q2, y = system.step(q, x)
                    seen2 = seen or (t in window and evaluate(problem.effect, y))
                    new.add((q2, seen2, full and r == len(ins)))
        frontier = new
    return not any(seen and not (proper_needed and full) for _, seen, full in frontier)


def enumerate_certificates(
    problem: Problem, budget: int | None = None, limit: int | None = None, limits: Limits | None = None
) -> Iterator[tuple[Atom, ...]]:
    """M(I) (budget None) or M_B(I) in canonical order, by exhaustive layered search over flip sets at t <= t*.

    Layer (k, n) holds the flip sets with k timesteps and n flips; each layer is checked in one :func:`check_many`
    batch, sorted, and yielded. Exponential: meant for small problems and as an independent cross-check.
    """
    clock = (limits or NO_LIMITS).start()
    n_in = problem.system.num_inputs
    steps = problem.t_star + 1
    max_k = steps if budget is None else min(budget, steps)
    produced = 0
    for k in range(max_k + 1):
        for n in range(k, k * n_in + 1):
            layer = []
            for ts in itertools.combinations(range(steps), k):
                for sizes in _compositions(n, k, n_in):
                    for choice in itertools.product(*(itertools.combinations(range(n_in), s) for s in sizes)):
                        flips: list[Flip] = [(t, i) for t, ins in zip(ts, choice, strict=True) for i in ins]
                        layer.append(flips)
                        if len(layer) % 4096 == 0:
                            clock.check("enumerate")
            if not layer:
                continue
            certs = [canonical(problem, ((t, i, 1 - ((problem.trace[t] >> i) & 1)) for t, i in f)) for f in layer]
            for start in range(0, len(certs), 8192):
                clock.check("enumerate")
                chunk = certs[start : start + 8192]
                s, m = check_many(problem, chunk)
                certs[start : start + 8192] = [c if ok else None for c, ok in zip(chunk, s & m, strict=True)]
            for c in sorted((c for c in certs if c is not None), key=lambda c: order_key(problem, c)):
                yield c
                produced += 1
                if limit is not None and produced >= limit:
                    return


def _compositions(n: int, k: int, cap: int) -> Iterator[tuple[int, ...]]:
    """Ordered ways to write n as k parts, each in [1, cap]."""
    if k == 0:
        if n == 0:
            yield ()
        return
    for first in range(1, min(cap, n - (k - 1)) + 1):
        for rest in _compositions(n - first, k - 1, cap):
            yield (first, *rest)


def count(problem: Problem, budget: int | None = None, limits: Limits | None = None) -> int:
    """|M(I)| or |M_B(I)| by exhaustive layered search (see :func:`enumerate_certificates`)."""
    return sum(1 for _ in enumerate_certificates(problem, budget, None, limits))


def require_tables(problem: Problem, query: str) -> None:
    """Raise Gf01Error when the system is too wide for dense tables (the explicit backend needs them)."""
    if problem.system.num_inputs > MAX_TABLE_INPUTS:
        raise Gf01Error(f"backend explicit does not answer {query} for systems with more than {MAX_TABLE_INPUTS} "
                        "inputs")
