"""The solver front: one function per GF-01 query, answered by a backend picked by name from one table.

Every backend implements :class:`solvers.contract.Backend` with the same signatures; this module only chooses one
(``backend=None`` takes the query's natural backend, :data:`DEFAULT_BACKEND` on a table system,
:data:`DEFAULT_CIRCUIT_BACKEND` on a circuit) and calls it. Conventions on atoms,
budgets and limits are those of :mod:`solvers.contract`.

>>> valid(problem, [(20, 2, 1), (21, 2, 1)])
True
>>> oracle(problem, problem.budget_t).certificate
((20, 2, 1), (21, 2, 1))
>>> check(problem, [(21, 2, 1)])
Check(suff=False, min1=True)
>>> len(sample(problem, problem.budget_t, k=5, seed=1))
5
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator

from encoders.problem import Atom, Certificate, Problem
from hoa.errors import Gf01Error
from solvers import contract
from solvers.canonical import certificate_digest
from solvers.contract import Backend
from solvers.limits import Limits
from solvers.results import BestMatch, Check, OracleResult, best_match_among

#: Backend name -> (module, attribute naming the backend object, or "" for the module itself). Imported on first use,
#: so that a query on one backend does not pay for the others' libraries (python-sat, dd).
TABLE: dict[str, tuple[str, str]] = {
    "forward": ("solvers.forward", ""),
    "explicit": ("solvers.explicit", ""),
    "sat": ("solvers.sat", ""),
    "bdd": ("solvers.bdd", "CUDD"),
    "bdd-autoref": ("solvers.bdd", "AUTOREF"),
}
BACKENDS = tuple(TABLE)

#: The natural backend of each query (docs/solvers.md).
DEFAULT_BACKEND: dict[str, str] = {
    "suff": "explicit",
    "min1": "explicit",
    "valid": "explicit",
    "check": "explicit",
    "subset_min": "sat",
    "witness": "explicit",
    "count": "forward",
    "enumerate_certificates": "forward",
    "oracle": "explicit",
    "best_match": "forward",
}


#: The natural backend of each query on a circuit system: simulation for certificate checks, SAT on the unrolling
#: for everything else (docs/solvers.md): counting, enumeration and best match by the search that learns Min1
#: copies (:mod:`solvers.minimal_sets`, :mod:`solvers.optimise`), with no BDD of the valid set, whose size is what
#: ran real circuits out of memory (issue 28). These three go to the forward pass instead when the circuit's
#: reachable latch states tabulate (:func:`solvers.circuit.tabulable`).
DEFAULT_CIRCUIT_BACKEND: dict[str, str] = {
    "suff": "explicit",
    "min1": "explicit",
    "valid": "explicit",
    "check": "explicit",
    "subset_min": "sat",
    "witness": "sat",
    "count": "sat",
    "enumerate_certificates": "sat",
    "oracle": "sat",
    "best_match": "sat",
}

#: Queries that go to the forward pass on a circuit whose reachable latch states tabulate.
TABULATED_QUERIES = ("count", "enumerate_certificates", "best_match")


def default_backend(query: str, problem: Problem) -> str:
    """The natural backend of ``query`` for ``problem``'s kind of system (table or circuit)."""
    if not problem.circuit:
        return DEFAULT_BACKEND[query]
    if query in TABULATED_QUERIES:
        from solvers.circuit import tabulable

        if tabulable(problem):
            return "forward"
    return DEFAULT_CIRCUIT_BACKEND[query]


def backend(name: str) -> Backend:
    """The backend called ``name`` (one of :data:`BACKENDS`)."""
    if name not in TABLE:
        raise Gf01Error(f"unknown backend {name!r} (expected one of {', '.join(BACKENDS)})", field="backend")
    module, attr = TABLE[name]
    mod = importlib.import_module(module)
    return getattr(mod, attr) if attr else mod  # type: ignore[return-value]


def _pick(query: str, name: str | None, problem: Problem) -> Backend:
    return backend(default_backend(query, problem) if name is None else name)


def suff(problem: Problem, atoms: Iterable[Atom], backend: str | None = None, *, limits: Limits | None = None) -> bool:
    """Suff(C): the intervened run shows the effect (Definition 10)."""
    return bool(_pick("suff", backend, problem).suff(problem, list(atoms), limits=limits))


def min1(problem: Problem, atoms: Iterable[Atom], backend: str | None = None, *, limits: Limits | None = None) -> bool:
    """Min1(C): removing any single atom loses the effect (Definition 11)."""
    return bool(_pick("min1", backend, problem).min1(problem, list(atoms), limits=limits))


def valid(problem: Problem, atoms: Iterable[Atom], backend: str | None = None, *, limits: Limits | None = None) -> bool:
    """Valid(C) = Suff(C) and Min1(C) (Definition 12)."""
    return bool(_pick("valid", backend, problem).valid(problem, list(atoms), limits=limits))


def check(
    problem: Problem, atoms: Iterable[Atom], backend: str | None = None, *, limits: Limits | None = None
) -> Check:
    """Suff(C) and Min1(C) in one query (:func:`solvers.contract.check`): one simulation on the explicit backend."""
    return contract.check(_pick("check", backend, problem), problem, list(atoms), limits=limits)


def subset_min(
    problem: Problem, atoms: Iterable[Atom], backend: str | None = None, *, limits: Limits | None = None
) -> bool:
    """SubsetMin(C): no proper subset of C is sufficient (Definition 14; C itself need not be)."""
    return bool(_pick("subset_min", backend, problem).subset_min(problem, list(atoms), limits=limits))


def witness(
    problem: Problem, budget_t: int | None, backend: str | None = None, *, limits: Limits | None = None
) -> Certificate | None:
    """A valid certificate with at most ``budget_t`` timesteps, or None when it is proven that there is none."""
    return _pick("witness", backend, problem).witness(problem, budget_t, limits=limits)


def count(problem: Problem, budget_t: int | None, backend: str | None = None, *, limits: Limits | None = None) -> int:
    """|M(I)| (``budget_t`` None) or |M_B(I)|, exactly."""
    return int(_pick("count", backend, problem).count(problem, budget_t, limits=limits))


def enumerate_certificates(
    problem: Problem,
    budget_t: int | None,
    limit: int | None = None,
    backend: str | None = None,
    *,
    limits: Limits | None = None,
) -> Iterator[Certificate]:
    """The valid certificates (within ``budget_t``) in canonical order, lazily; at most ``limit`` of them."""
    chosen = _pick("enumerate_certificates", backend, problem)
    return chosen.enumerate_certificates(problem, budget_t, limit, limits=limits)


def oracle(
    problem: Problem, budget_t: int | None, backend: str | None = None, *, limits: Limits | None = None
) -> OracleResult | None:
    """The valid certificate minimising (Eff_t, Eff_a) within ``budget_t``; None when M_B(I) is empty."""
    return _pick("oracle", backend, problem).oracle(problem, budget_t, limits=limits)


def best_match(
    problem: Problem,
    atoms: Iterable[Atom],
    budget_t: int | None,
    backend: str | None = None,
    *,
    limits: Limits | None = None,
) -> BestMatch:
    """The DEC-025 gold certificate in M_B(I) for the agent's ``atoms``, with AP- and TS-level P/R/F1."""
    return _pick("best_match", backend, problem).best_match(problem, list(atoms), budget_t, limits=limits)


def sample(
    problem: Problem, budget_t: int | None, k: int, seed: int, limits: Limits | None = None
) -> list[Certificate]:
    """A uniformly random k-subset of M_B(I) (``budget_t`` None: M(I)), drawn without replacement, in canonical order.

    Deterministic for ``seed`` (``numpy.random.Generator(PCG64(seed))``, no global state); all of M_B(I) when
    ``k >= |M_B(I)|``. Answered by the forward backend (:func:`solvers.forward.sample`).
    """
    from solvers import forward

    return forward.sample(problem, budget_t, k, seed, limits=limits)


#: A gold set of ``count`` members at horizon T is listed by one forward pass (all of it drawn as a sample: the pass,
#: then one walk of T steps per member) when count x T is at most this, layer by layer (one pass per Eff_t) beyond:
#: one pass costs about a count, a walk about 8 us a step (docs/solvers.md, "Listing a gold set").
ONE_PASS_CELLS = 16_384


def list_members(
    problem: Problem, budget_t: int | None, count: int, *, limits: Limits | None = None
) -> list[Certificate]:
    """All of M_B(I) (``budget_t`` None: M(I)), of ``count`` members (the caller counted them), in canonical order.

    Never much slower than the count: a small set comes from one forward pass (:func:`sample` of every member); a
    larger one layer by layer, stopped at its ``count``-th member (unstopped, the enumeration runs a pass for each empty
    layer up to t*: 800 passes for the one member of an 800-step arbiter's M(I))."""
    if count * problem.horizon <= ONE_PASS_CELLS and default_backend("enumerate_certificates", problem) == "forward":
        return sample(problem, budget_t, count, 0, limits=limits)
    return list(enumerate_certificates(problem, budget_t, count, limits=limits))


def gold_digest(problem: Problem, cert: Iterable[Atom]) -> str:
    """sha256 hex digest of a certificate's canonical JSON (atoms ``[t, input_name, v]`` sorted, compact)."""
    return certificate_digest(problem, cert)


__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "DEFAULT_CIRCUIT_BACKEND",
    "backend",
    "best_match",
    "best_match_among",
    "check",
    "count",
    "default_backend",
    "enumerate_certificates",
    "gold_digest",
    "list_members",
    "min1",
    "oracle",
    "sample",
    "subset_min",
    "suff",
    "valid",
    "witness",
]
