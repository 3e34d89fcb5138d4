"""The explicit backend: every query by simulation on the dense Mealy tables and exhaustive or shortest-path search.

Suff, Min1 and Valid simulate the certificate and its single removals (:func:`solvers.simulate.check_many`);
SubsetMin is a forward DP restricted to C's flips; witness and oracle are the lexicographic shortest path of
:mod:`solvers.paths`; count, enumeration and best match list M_B(I) exhaustively, layer by layer (exponential: for
small problems and as an independent cross-check of the symbolic backends).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from encoders.problem import Atom, Certificate, Flip, Problem
from hoa.label import evaluate
from solvers import paths
from solvers.canonical import canonical, effective_flips, order_key
from solvers.limits import NO_LIMITS, Limits, guarded
from solvers.results import BestMatch, Check, OracleResult, best_match_among
from solvers.simulate import check_many


@guarded("suff")
def suff(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 10 by simulation."""
    return bool(check_many(problem, [list(atoms)])[0][0])


@guarded("min1")
def min1(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 11 by simulation of the |C| runs with one atom removed."""
    return bool(check_many(problem, [list(atoms)])[1][0])


@guarded("check")
def check(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> Check:
    """Suff and Min1 from one simulation of C and its |C| single removals."""
    s, m = check_many(problem, [list(atoms)])
    return Check(bool(s[0]), bool(m[0]))


@guarded("valid")
def valid(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
    """Definition 12: Suff and Min1."""
    s, m = check_many(problem, [list(atoms)])
    return bool(s[0] and m[0])


@guarded("subset_min")
def subset_min(problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
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


@guarded("enumerate", stream=True)
def enumerate_certificates(
    problem: Problem, budget_t: int | None, limit: int | None = None, *, limits: Limits | None = None
) -> Iterator[Certificate]:
    """M(I) (budget_t None) or M_B(I) in canonical order, by exhaustive layered search over flip sets at t <= t*.

    Layer (k, n) holds the flip sets with k timesteps and n flips; each layer is checked in one :func:`check_many`
    batch, sorted, and yielded. Exponential: meant for small problems and as an independent cross-check.
    """
    clock = (limits or NO_LIMITS).start()
    n_in = problem.system.num_inputs
    steps = problem.t_star + 1
    max_k = steps if budget_t is None else min(budget_t, steps)
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


@guarded("count")
def count(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> int:
    """|M(I)| or |M_B(I)| by exhaustive layered search (see :func:`enumerate_certificates`)."""
    return sum(1 for _ in enumerate_certificates(problem, budget_t, None, limits=limits))


@guarded("witness")
def witness(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> Certificate | None:
    """A valid certificate within ``budget_t`` (the oracle's), or None when none exists."""
    res = paths.oracle(problem, budget_t, limits)
    return None if res is None else res.certificate


@guarded("oracle")
def oracle(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> OracleResult | None:
    """The (Eff_t, Eff_a)-least valid certificate by the lexicographic shortest path of :mod:`solvers.paths`."""
    return paths.oracle(problem, budget_t, limits)


@guarded("best_match")
def best_match(
    problem: Problem, atoms: Sequence[Atom], budget_t: int | None, *, limits: Limits | None = None
) -> BestMatch:
    """The DEC-025 best match, ranking the complete enumeration of M_B(I)."""
    return best_match_among(problem, atoms, enumerate_certificates(problem, budget_t, None, limits=limits))
