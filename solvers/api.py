"""The solver contract: one function per GF-01 query, answered by a chosen backend (explicit, sat, bdd).

Every backend gives the same answers (tests check them against a brute-force twin). A backend that does not answer
a query raises Gf01Error("backend X does not answer Y"); under ``limits`` a query answers exactly or raises
:class:`solvers.limits.Unknown`, never a guess.

- ``atoms``: structurally valid certificates (t in range, distinct (t, i)); atoms may restate base values.
- ``budget``: B_T, the most distinct timesteps a certificate may touch; None means unbounded (M(I)). Pass
  ``problem.budget_t`` for M_B(I).
- Returned certificates are canonical tuples (:func:`solvers.canonical.canonical`); enumeration follows
  :func:`solvers.canonical.order_key`.

>>> valid(problem, [(2, 0, 1)])  # doctest: +SKIP
True
>>> oracle(problem, problem.budget_t).certificate  # doctest: +SKIP
((2, 0, 1),)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import ModuleType

from encoders.problem import Atom, Problem
from hoa.errors import Gf01Error
from solvers import explicit, paths
from solvers.canonical import certificate_digest, timesteps
from solvers.limits import Limits
from solvers.results import BestMatch, OracleResult, prf

BACKENDS = ("explicit", "sat", "bdd")


def _backend(name: str) -> ModuleType:
    if name == "explicit":
        return explicit
    if name == "sat":
        from solvers import sat

        return sat
    if name == "bdd":
        from solvers import bdd  # written by the BDD side; imported lazily so the other backends work without it

        return bdd
    raise Gf01Error(f"unknown backend {name!r} (expected one of {', '.join(BACKENDS)})")


def _no(backend: str, query: str) -> Gf01Error:
    return Gf01Error(f"backend {backend} does not answer {query}")


def _call(backend: str, query: str, *args, **kwargs):
    fn = getattr(_backend(backend), query, None)
    if fn is None:
        raise _no(backend, query)
    return fn(*args, **kwargs)


def suff(problem: Problem, atoms: Iterable[Atom], backend: str = "explicit") -> bool:
    """Suff(C): the intervened run shows the effect (Definition 10)."""
    return bool(_call(backend, "suff", problem, list(atoms)))


def min1(problem: Problem, atoms: Iterable[Atom], backend: str = "explicit") -> bool:
    """Min1(C): removing any single atom loses the effect (Definition 11)."""
    return bool(_call(backend, "min1", problem, list(atoms)))


def valid(problem: Problem, atoms: Iterable[Atom], backend: str = "explicit") -> bool:
    """Valid(C) = Suff(C) and Min1(C) (Definition 12)."""
    return bool(_call(backend, "valid", problem, list(atoms)))


def subset_min(problem: Problem, atoms: Iterable[Atom], backend: str = "sat", limits: Limits | None = None) -> bool:
    """SubsetMin(C): no proper subset of C is sufficient (Definition 14; C itself need not be)."""
    return bool(_call(backend, "subset_min", problem, list(atoms), limits=limits))


def witness(
    problem: Problem, budget: int | None = None, backend: str = "explicit", limits: Limits | None = None
) -> tuple[Atom, ...] | None:
    """A valid certificate with at most ``budget`` timesteps, or None when it is proven that there is none."""
    if backend == "explicit":
        return paths.witness(problem, budget, limits)
    return _call(backend, "witness", problem, budget, limits=limits)


def count(problem: Problem, budget: int | None = None, backend: str = "bdd", limits: Limits | None = None) -> int:
    """|M(I)| (budget None) or |M_B(I)|, exactly."""
    return int(_call(backend, "count", problem, budget, limits=limits))


def enumerate_certificates(
    problem: Problem,
    budget: int | None = None,
    limit: int | None = None,
    backend: str = "bdd",
    limits: Limits | None = None,
) -> Iterator[tuple[Atom, ...]]:
    """The valid certificates (within ``budget``) in canonical order, lazily; at most ``limit`` of them."""
    return _call(backend, "enumerate_certificates", problem, budget, limit, limits=limits)


def oracle(
    problem: Problem, budget: int | None = None, backend: str = "explicit", limits: Limits | None = None
) -> OracleResult | None:
    """The valid certificate minimising (Eff_t, Eff_a) within ``budget``; None when M_B(I) is empty."""
    if backend == "explicit":
        return paths.oracle(problem, budget, limits)
    return _call(backend, "oracle", problem, budget, limits=limits)


def best_match(
    problem: Problem,
    atoms: Iterable[Atom],
    budget: int | None = None,
    backend: str = "bdd",
    limits: Limits | None = None,
) -> BestMatch:
    """The DEC-025 gold certificate in M_B(I) for the agent's ``atoms``, with AP- and TS-level P/R/F1.

    The explicit and sat backends rank the complete enumeration of M_B(I); the bdd backend works symbolically.
    """
    if backend == "bdd":
        return _call(backend, "best_match", problem, list(atoms), budget, limits=limits)
    golds = enumerate_certificates(problem, budget, None, backend, limits)
    return best_match_among(problem, atoms, golds)


def gold_digest(problem: Problem, cert: Iterable[Atom]) -> str:
    """sha256 hex digest of a certificate's canonical JSON (atoms ``[t, input_name, v]`` sorted, compact)."""
    return certificate_digest(problem, cert)


def best_match_among(problem: Problem, atoms: Iterable[Atom], golds: Iterable[tuple[Atom, ...]]) -> BestMatch:
    """The best match of ``atoms`` among the complete list ``golds`` (ranking of DESIGN.md §3.3)."""
    agent = set(atoms)
    agent_ts = timesteps(agent)
    best = None
    for gold in golds:
        gold_set = set(gold)
        gold_ts = timesteps(gold_set)
        ap = prf(len(agent & gold_set), len(agent), len(gold_set))
        ts = prf(len(agent_ts & gold_ts), len(agent_ts), len(gold_ts))
        rank = (-ap[2], -ts[2], len(gold_ts))
        if best is not None and rank > best[0][:3]:
            continue
        full = (*rank, gold_digest(problem, gold))
        if best is None or full < best[0]:
            best = (full, gold, ap, ts)
    if best is None:
        return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    _, gold, ap, ts = best
    return BestMatch(gold, *(float(v) for v in ap), *(float(v) for v in ts))


__all__ = [
    "BACKENDS",
    "best_match",
    "best_match_among",
    "count",
    "enumerate_certificates",
    "gold_digest",
    "min1",
    "oracle",
    "subset_min",
    "suff",
    "valid",
    "witness",
]
