"""The solver contract: the nine queries every backend answers, each with one signature (in the manner of dd's _abc).

A backend is any object with these functions: a module (``solvers.explicit``, ``solvers.sat``) or an instance
(``solvers.bdd.BddBackend("cudd")``). :mod:`solvers.api` picks one by name from its table and calls it; tests run one
suite against every backend and against the brute-force twin, so every backend gives the same answers.

Shared conventions:

- ``atoms``: a structurally valid certificate (t in [0, T-1], input index in range, v in {0, 1}, distinct (t, i));
  atoms may restate base values.
- ``budget_t``: B_T, the most distinct timesteps a certificate may touch; None means unbounded (M(I) rather than
  M_B(I)). Pass ``problem.budget_t`` for the instance's own M_B(I).
- ``limits``: under a :class:`solvers.limits.Limits` a query answers exactly or raises
  :class:`solvers.limits.Unknown`; it never guesses.
- Certificates returned are canonical (:data:`encoders.problem.Certificate`); enumeration follows
  :func:`solvers.canonical.order_key`.

>>> from solvers.api import backend
>>> b = backend("explicit")
>>> b.valid(problem, [(20, 2, 1), (21, 2, 1)])
True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

from encoders.problem import Atom, Certificate, Problem
from solvers.limits import Limits
from solvers.results import BestMatch, Check, OracleResult

#: The queries of the contract, in the order the docs list them.
QUERIES = ("suff", "min1", "valid", "subset_min", "witness", "count", "enumerate_certificates", "oracle", "best_match")
#: Queries a backend may answer itself; :mod:`solvers.api` answers them from the others where it does not.
OPTIONAL_QUERIES = ("check",)


@runtime_checkable
class Backend(Protocol):
    """What every solver backend answers (module docstring for the conventions)."""

    def suff(self, problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
        """Suff(C): the intervened run shows the effect (Definition 10)."""
        ...

    def min1(self, problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
        """Min1(C): removing any single atom loses the effect (Definition 11, literally: C itself need not be Suff)."""
        ...

    def valid(self, problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
        """Valid(C) = Suff(C) and Min1(C) (Definition 12)."""
        ...

    def subset_min(self, problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
        """SubsetMin(C): no proper subset of C is sufficient (Definition 14; C itself need not be)."""
        ...

    def witness(self, problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> Certificate | None:
        """A valid certificate with at most ``budget_t`` timesteps, or None when it is proven that there is none."""
        ...

    def count(self, problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> int:
        """|M(I)| (``budget_t`` None) or |M_B(I)|, exactly, as a Python int."""
        ...

    def enumerate_certificates(
        self, problem: Problem, budget_t: int | None, limit: int | None = None, *, limits: Limits | None = None
    ) -> Iterator[Certificate]:
        """The valid certificates within ``budget_t`` in canonical order, lazily; at most ``limit`` of them."""
        ...

    def oracle(self, problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> OracleResult | None:
        """The valid certificate minimising (Eff_t, Eff_a) within ``budget_t``; None when M_B(I) is empty."""
        ...

    def best_match(
        self, problem: Problem, atoms: Sequence[Atom], budget_t: int | None, *, limits: Limits | None = None
    ) -> BestMatch:
        """The DEC-025 gold certificate in M_B(I) for the agent's ``atoms``, with AP- and TS-level P/R/F1."""
        ...


__all__ = ["OPTIONAL_QUERIES", "QUERIES", "Backend", "check"]


def check(backend: Backend, problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> Check:
    """Suff(C) and Min1(C) together: the backend's own ``check`` where it has one (the explicit backend answers both
    from one simulation), else its ``suff`` and ``min1`` one after the other. ``check`` is an optional query: a
    backend that answers it must give what ``suff`` and ``min1`` give (the per-backend suite compares them)."""
    own = getattr(backend, "check", None)
    if own is not None:
        return own(problem, atoms, limits=limits)  # type: ignore[no-any-return]
    return Check(bool(backend.suff(problem, atoms, limits=limits)), bool(backend.min1(problem, atoms, limits=limits)))
