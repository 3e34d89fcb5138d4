"""Check a solver backend against the contract, in the manner of Gymnasium's ``check_env``: run it on small problems
beside the reference backend and say what differs.

The reference is the explicit backend (plain simulation and enumeration, held to the brute-force twin by the test
suite). :func:`check_backend` runs every query of :mod:`solvers.contract` (and the optional ``check``) on a few
small problems: the parity machine, where Min1 and SubsetMin part, and seeded random tables in hard and normal
mode, with and without a budget; each certificate checked is a valid one of the reference or a seeded random one.
A query that answers otherwise, returns another type or raises is one :class:`Difference`, in plain words.

>>> from solvers import api
>>> check_backend(api.backend("forward"))
[]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from encoders.problem import Atom, Problem
from hoa.label import And, Expr, Not, Or, Var
from hoa.mealy import MealyView
from solvers import contract, explicit
from solvers.contract import QUERIES, Backend

#: Random problems checked besides the parity machine (small enough that the reference enumerates M(I) at once).
RANDOM_PROBLEMS = 6
#: Random certificates checked per problem, besides the reference's valid ones.
RANDOM_CERTS = 8


@dataclass(frozen=True)
class Difference:
    """One query whose answer differs from the reference's, or that failed: ``message`` says, in words, which call
    on which problem expected what and got what."""

    query: str
    message: str


def parity_problem() -> Problem:
    """One step, inputs a, b, c, d (all 0 in tau); output o = a XOR b XOR c (d is ignored); effect o at t* = 0.
    {a} is valid; {a, b, c} is Min1 (each pair has even parity) but not SubsetMin ({a} suffices)."""
    nxt = [[0] * 16]
    out = [[bin(x & 0b111).count("1") & 1 for x in range(16)]]
    return Problem(MealyView.from_table(("a", "b", "c", "d"), ("o",), nxt, out), (0,), Var(0), t_star=0)


def small_problems(seed: int = 0, count: int = RANDOM_PROBLEMS) -> Iterator[tuple[str, Problem]]:
    """The parity machine, then ``count`` seeded random tables (2-3 states, 1-2 inputs, 2 outputs, T of 2-4), each
    named for messages."""
    yield "the parity machine", parity_problem()
    rng = np.random.Generator(np.random.PCG64(seed))
    for k in range(count):
        n_states, n_in, T = int(rng.integers(2, 4)), int(rng.integers(1, 3)), int(rng.integers(2, 5))
        size = 1 << n_in
        nxt = rng.integers(0, n_states, size=(n_states, size)).tolist()
        out = rng.integers(0, 4, size=(n_states, size)).tolist()
        view = MealyView.from_table(tuple(f"i{j}" for j in range(n_in)), ("o0", "o1"), nxt, out)
        effects: list[Expr] = [Var(0), Or((Var(0), Var(1))), And((Var(0), Not(Var(1))))]
        mode = "normal" if k % 2 else "hard"
        budget = None if k % 3 == 0 else int(rng.integers(1, T + 1))
        problem = Problem(view, tuple(int(x) for x in rng.integers(0, size, size=T)),
                          effects[int(rng.integers(0, len(effects)))], t_star=int(rng.integers(0, T)), mode=mode,
                          window=int(rng.integers(1, T + 1)), budget_t=budget)
        yield f"random problem {k} (seed {seed}: {n_states} states, {n_in} inputs, T = {T}, {mode} mode)", problem


def check_backend(backend: Backend, *, seed: int = 0, problems: int = RANDOM_PROBLEMS,
                  reference: Backend = explicit) -> list[Difference]:
    """Every difference between ``backend`` and ``reference`` on :func:`small_problems` (``problems`` random ones;
    module docstring); empty when the backend keeps the contract there. Signatures are compared first: a query
    missing or taking other parameters is a difference and is not called."""
    found = _signatures(backend)
    missing = {d.query for d in found}
    rng = np.random.Generator(np.random.PCG64(seed + 1))
    for name, problem in small_problems(seed, problems):
        found += _differences(backend, reference, name, problem, rng, missing)
    return found


def _differences(backend: Backend, reference: Backend, name: str, problem: Problem, rng: np.random.Generator,
                 missing: set[str]) -> list[Difference]:
    """The differences on one problem (the queries in ``missing`` are not called)."""
    found: list[Difference] = []

    def compare(query: str, args: str, call: Callable[[Backend], Any]) -> None:
        if query in missing:
            return
        want = call(reference)
        try:
            got = call(backend)
        except Exception as ex:  # a backend's failure is what the check reports
            found.append(_differs(query, f"({args}) on {name}", repr(want), f"{type(ex).__name__}: {ex}"))
            return
        if got != want or type(got) is not type(want):
            found.append(_differs(query, f"({args}) on {name}", repr(want), repr(got)))

    budgets = sorted({problem.budget_t, None}, key=lambda b: -1 if b is None else b)
    certs = [list(c) for c in reference.enumerate_certificates(problem, None)]
    certs += [_random_certificate(problem, rng) for _ in range(RANDOM_CERTS)]
    for cert in certs:
        for query in ("suff", "min1", "valid", "subset_min"):
            compare(query, str(cert), lambda b, q=query, c=cert: getattr(b, q)(problem, c))
        compare("check", str(cert), lambda b, c=cert: contract.check(b, problem, c))
    for budget in budgets:
        args = f"budget_t={budget}"
        compare("count", args, lambda b, B=budget: b.count(problem, B))
        compare("enumerate_certificates", args, lambda b, B=budget: list(b.enumerate_certificates(problem, B)))
        compare("enumerate_certificates", f"{args}, limit=2",
                lambda b, B=budget: list(b.enumerate_certificates(problem, B, 2)))
        compare("oracle", args, lambda b, B=budget: _oracle_key(b, problem, B))
        compare("witness", args, lambda b, B=budget: _witness_ok(b, problem, B, reference))
        for cert in certs[:3]:
            compare("best_match", f"{cert}, {args}", lambda b, c=cert, B=budget: b.best_match(problem, c, B))
    return found


def _signatures(backend: Backend) -> list[Difference]:
    out = []
    for query in QUERIES:
        want = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(Backend, query)).parameters.values()
                if p.name != "self"]
        fn = getattr(backend, query, None)
        if fn is None:
            out.append(_differs(query, ": the signature", "the query", "no such attribute"))
            continue
        got = [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
        if got != want:
            out.append(_differs(query, ": the signature", f"parameters {[w[0] for w in want]}",
                                f"parameters {[g[0] for g in got]}"))
    return out


def _differs(query: str, where: str, expected: str, got: str) -> Difference:
    return Difference(query, f"{query}{where}: expected {expected}, got {got}")


def _random_certificate(problem: Problem, rng: np.random.Generator) -> list[Atom]:
    """A structurally valid certificate: distinct (t, i), values 0 or 1 (restating the base trace or not)."""
    T, n = len(problem.trace), problem.system.num_inputs
    cells = [(t, i) for t in range(T) for i in range(n)]
    k = int(rng.integers(0, min(len(cells), 4) + 1))
    picked = rng.choice(len(cells), size=k, replace=False) if k else []
    return sorted((cells[j][0], cells[j][1], int(rng.integers(0, 2))) for j in picked)


def _oracle_key(b: Backend, problem: Problem, budget: int | None) -> tuple[int, int, bool] | None:
    """What every backend's oracle must agree on: (Eff_t, Eff_a, optimal); the certificate itself may differ
    among equally cheap ones, but it must be valid."""
    res = b.oracle(problem, budget)
    if res is None:
        return None
    if not explicit.valid(problem, list(res.certificate)):
        return (-1, -1, False)  # an invalid oracle certificate: never equal to the reference's key
    return (res.eff_t, res.eff_a, res.optimal)


def _witness_ok(b: Backend, problem: Problem, budget: int | None, reference: Backend) -> bool | None:
    """None when there is no witness, else whether the one given is a valid certificate within the budget."""
    w = b.witness(problem, budget)
    if w is None:
        return None
    within = budget is None or len({a[0] for a in w}) <= budget
    return within and bool(reference.valid(problem, list(w)))


__all__ = ["Difference", "check_backend", "parity_problem", "small_problems"]
