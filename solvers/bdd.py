"""The BDD backend of the solver queries: exact counts, canonical enumeration and best match over M(I) / M_B(I).

Every query builds the encoding of :mod:`encoders.bdd` in a fresh manager (``lib``: "cudd", "autoref" or None for
the best available), then answers by BDD operations and exact walks (:mod:`solvers.bigcount`). Under ``limits``
the clock is checked between BDD operations and the query raises :class:`solvers.limits.Unknown` instead of
answering; one CUDD operation cannot be interrupted, so under a time cap every query runs in a child process that is
killed at the cap (:func:`solvers.limits.guarded`): the answer or Unknown comes within the cap plus a second.

>>> CUDD.count(problem, 2)
6
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from encoders.bdd import (
    CUDD_OUT_OF_MEMORY,
    Encoding,
    budget_bdd,
    count_constraint,
    cudd_memory_bound,
    encode,
    valid_bdd,
)
from encoders.problem import Atom, Certificate, Flip, Problem
from solvers.bigcount import Dag, export, models, profile
from solvers.bigcount import count as dag_count
from solvers.canonical import (
    canonical,
    certificate_digest,
    effective_flips,
    flips_to_atoms,
    timesteps,
)
from solvers.limits import NO_LIMITS, Clock, Limits, Unknown, guarded
from solvers.results import BestMatch, OracleResult, prf

#: Models hashed between two clock checks in the final tie slice of best_match.
_CHECK_EVERY = 256

F = TypeVar("F", bound=Callable[..., Any])


def _detached(fn: F) -> F:
    """Re-raise a query's Unknown without its traceback: the frames it holds keep BDD nodes alive, and a manager
    collected before its nodes complains ("nodes still referenced upon shutdown") on stderr."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            out = fn(*args, **kwargs)
            if not inspect.isgenerator(out):
                return out
            return _detached_iter(out, fn.__name__)
        except Unknown as ex:
            fresh = Unknown(ex.query, ex.reason, ex.spent)
        except ValueError as ex:
            if CUDD_OUT_OF_MEMORY not in str(ex):
                raise
            fresh = _cudd_full(fn.__name__)
        raise fresh

    return call  # type: ignore[return-value]


def _cudd_full(query: str) -> Unknown:
    """Unknown for a CUDD manager that reached its memory bound (:func:`encoders.bdd.cudd_memory_bound`)."""
    return Unknown(query, f"memory limit of the BDD library ({cudd_memory_bound() / 2**20:.0f} MiB)", {})


def _detached_iter(gen: Iterator[Any], query: str) -> Iterator[Any]:
    while True:
        try:
            item = next(gen)
        except StopIteration:
            return
        except Unknown as ex:
            fresh = Unknown(ex.query, ex.reason, ex.spent)
            break
        except ValueError as ex:
            if CUDD_OUT_OF_MEMORY not in str(ex):
                raise
            fresh = _cudd_full(query)
            break
        yield item
    gen.close()
    raise fresh


def _start(problem: Problem, query: str, lib: str | None, limits: Limits | None) -> tuple[Encoding, Clock]:
    clock = (limits or NO_LIMITS).start()
    enc = encode(problem, lib, tick=_tick(clock, query))
    return enc, clock


def _tick(clock: Clock, query: str) -> Callable[[Callable[[], int]], None]:
    """The encoder's progress callback: check the clock, counting live nodes only under a node cap."""
    return lambda nodes: clock.check(query, nodes() if clock.limits.nodes is not None else None)


def _check(clock: Clock, query: str, bdd: Any) -> None:
    clock.check(query, len(bdd) if clock.limits.nodes is not None else None)


def _valid_within(enc: Encoding, budget_t: int | None, clock: Clock, query: str) -> Any:
    """Valid AND |TS| <= budget_t; the budget goes in first so the Min1 conjunctions work on smaller BDDs."""
    return valid_bdd(enc, budget_bdd(enc, budget_t), tick=_tick(clock, query))


def _export(enc: Encoding, u: Any, clock: Clock, query: str) -> Dag:
    dag = export(enc.bdd, u, enc.num_vars)
    clock.check(query, dag.size)
    return dag


def _flips(enc: Encoding, levels: Iterable[int]) -> list[Flip]:
    return [enc.positions[lv] for lv in levels]


def _enumerate_valid(enc: Encoding, v: Any, clock: Clock, limit: int | None) -> Iterator[tuple[Atom, ...]]:
    bdd = enc.bdd
    if v == bdd.false:
        return
    layers = profile(_export(enc, v, clock, "enumerate"), _step_of(enc), _size_weights)
    touched = [enc.touched(t) for t in range(enc.steps)]
    flip_vars = [bdd.var(n) for n in enc.names]
    produced = 0
    for k in sorted(layers):
        by_steps = v & count_constraint(bdd, touched, lambda c, k=k: c == k)
        mask = layers[k]
        for n in range(mask.bit_length()):
            if not (mask >> n) & 1:
                continue
            layer = by_steps & count_constraint(bdd, flip_vars, lambda c, n=n: c == n)
            _check(clock, "enumerate", bdd)
            for i, levels in enumerate(models(_export(enc, layer, clock, "enumerate"))):
                if i % _CHECK_EVERY == 0:
                    clock.check("enumerate")
                yield flips_to_atoms(enc.problem, _flips(enc, levels))
                produced += 1
                if limit is not None and produced >= limit:
                    return


def _step_of(enc: Encoding) -> list[int]:
    return [lv // enc.width for lv in range(enc.num_vars)]


def _size_weights(kind: int, index: int) -> tuple[int, int]:
    """x = |TS| (one per touched step), y = |C| (one per flip)."""
    return (0, 1) if kind == 0 else (1, 0)


def _pairs(p: dict[int, int]) -> list[tuple[int, int]]:
    """The (x, y) pairs of a profile, sorted."""
    return sorted((x, y) for x, mask in p.items() for y in range(mask.bit_length()) if (mask >> y) & 1)


def _pair_slice(bdd: Any, u: Any, pairs: list[tuple[int, int]], sub_units: list[Any], units: list[Any]) -> Any:
    """``u`` AND OR over (x, y) in ``pairs`` of (#true sub_units = x AND #true units = y)."""
    out = bdd.false
    for x, y in pairs:
        part = u & count_constraint(bdd, sub_units, lambda c, x=x: c == x)
        out = out | (part & count_constraint(bdd, units, lambda c, y=y: c == y))
    return out


@dataclass(frozen=True)
class BddBackend:
    """The BDD backend on one BDD library: ``"cudd"`` (dd.cudd), ``"autoref"`` (dd's pure Python) or None (CUDD when
    its extension imports, else autoref). Each query builds its encoding in a fresh manager of that library."""

    lib: str | None = None

    @guarded("suff")
    @_detached
    def suff(self, problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
        """Suff(C): the run on tau[C] shows the effect (Definition 10), read off the Suff BDD."""
        enc, _ = _start(problem, "suff", self.lib, limits)
        return enc.holds(enc.suff, sorted(effective_flips(problem, atoms)))

    @guarded("min1")
    @_detached
    def min1(self, problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
        """Min1(C): removing any single atom loses the effect (Definition 11)."""
        c = list(atoms)
        enc, _ = _start(problem, "min1", self.lib, limits)
        return not any(
            enc.holds(enc.suff, sorted(effective_flips(problem, c[:k] + c[k + 1 :]))) for k in range(len(c))
        )

    @guarded("valid")
    @_detached
    def valid(self, problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
        """Valid(C) = Suff(C) and Min1(C) (Definition 12)."""
        c = list(atoms)
        enc, _ = _start(problem, "valid", self.lib, limits)
        flips = effective_flips(problem, c)
        if not enc.holds(enc.suff, sorted(flips)):
            return False
        return not any(
            enc.holds(enc.suff, sorted(effective_flips(problem, c[:k] + c[k + 1 :]))) for k in range(len(c))
        )

    @guarded("subset_min")
    @_detached
    def subset_min(self, problem: Problem, atoms: Sequence[Atom], *, limits: Limits | None = None) -> bool:
        """SubsetMin(C): no proper subset of C is sufficient (Definition 14; C itself need not be sufficient).

        Only C's effective flips at t <= t* matter for Suff: restrict Suff to them (every other flip variable set to 0)
        and ask whether a proper subset satisfies it, or, when C also holds atoms that change nothing relevant (no-ops,
        atoms after t*), whether any subset of the flips does (dropping such an atom is already a proper subset).
        """
        c = list(atoms)
        enc, clock = _start(problem, "subset_min", self.lib, limits)
        bdd = enc.bdd
        relevant = {(t, i) for t, i in effective_flips(problem, c) if t < enc.steps}
        outside = {name: False for name, pos in zip(enc.names, enc.positions, strict=True) if pos not in relevant}
        restricted = bdd.let(outside, enc.suff) if outside else enc.suff
        _check(clock, "subset_min", bdd)
        if len(c) > len(relevant) and restricted != bdd.false:
            return False
        everything = bdd.true
        for t, i in relevant:
            everything = everything & bdd.var(enc.names[enc.level_of(t, i)])
        return (restricted & ~everything) == bdd.false

    @guarded("count")
    @_detached
    def count(self, problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> int:
        """|M(I)| (budget_t None) or |M_B(I)|, exact, as a Python int."""
        enc, clock = _start(problem, "count", self.lib, limits)
        v = _valid_within(enc, budget_t, clock, "count")
        return dag_count(_export(enc, v, clock, "count"))

    @guarded("enumerate", stream=True)
    @_detached
    def enumerate_certificates(
        self, problem: Problem, budget_t: int | None, limit: int | None = None, *, limits: Limits | None = None
    ) -> Iterator[Certificate]:
        """The valid certificates (within ``budget_t`` timesteps), lazily, in canonical order (|TS|, |C|, atoms).

        Layer by layer: the exact set of non-empty (|TS|, |C|) layers comes from one profile walk, then each layer's
        BDD (Valid AND |TS| = k AND |C| = n) is walked depth first, 1 before 0, which is atom order inside a layer.
        Stops after ``limit`` certificates; under ``limits`` raises Unknown when they run out (after what was yielded).
        """
        if limit is not None and limit <= 0:
            return
        enc, clock = _start(problem, "enumerate", self.lib, limits)
        v = _valid_within(enc, budget_t, clock, "enumerate")
        yield from _enumerate_valid(enc, v, clock, limit)

    @guarded("witness")
    @_detached
    def witness(self, problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> Certificate | None:
        """A valid certificate within ``budget_t`` (the first in canonical order), or None when there is none."""
        return next(self.enumerate_certificates(problem, budget_t, 1, limits=limits), None)

    @guarded("oracle")
    @_detached
    def oracle(self, problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> OracleResult | None:
        """The valid certificate minimising (Eff_t, Eff_a) within ``budget_t``: the first in canonical order (optimal).

        None when M_B(I) is empty.
        """
        first = self.witness(problem, budget_t, limits=limits)
        if first is None:
            return None
        return OracleResult(first, len(timesteps(first)), len(first), True)

    @guarded("best_match")
    @_detached
    def best_match(
        self, problem: Problem, atoms: Sequence[Atom], budget_t: int | None, *, limits: Limits | None = None
    ) -> BestMatch:
        """The gold certificate for the agent's ``atoms`` over M_B(I) (docs/semantics.md) and the AP/TS P, R, F1.

        Symbolic, never listing M_B(I): a profile walk gives every reachable (|C_a ∩ C|, |C|) pair, the best F1_AP is
        picked with exact rationals, and the slice of M_B(I) with that pair is built with count constraints; the same
        again for (|TS(C_a) ∩ TS(C)|, |TS(C)|) inside that slice, taking the least |TS(C)| among the best F1_TS. Only
        the final tie slice (same F1_AP, F1_TS and Eff_t) is walked to find the lowest sha256; its size is bounded by
        ``limits`` like the rest of the query.
        """
        agent = list(atoms)
        enc, clock = _start(problem, "best_match", self.lib, limits)
        bdd = enc.bdd
        v = _valid_within(enc, budget_t, clock, "best_match")
        if v == bdd.false:
            return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        size_a = len(agent)
        ts_a = timesteps(agent)
        # Agent atoms that some valid certificate can contain: real flips at t <= t* (C_a ∩ C counts only those).
        agent_levels = sorted(
            enc.level_of(t, i) for t, i, x in agent if t < enc.steps and x != (problem.trace[t] >> i) & 1
        )
        in_agent = set(agent_levels)
        step_of = _step_of(enc)

        ap_pairs = _pairs(profile(_export(enc, v, clock, "best_match"), step_of,
                                  lambda kind, lv: (int(lv in in_agent), 1) if kind == 0 else (0, 0)))
        best_ap = max(prf(i, size_a, n)[2] for i, n in ap_pairs)
        keep = [(i, n) for i, n in ap_pairs if prf(i, size_a, n)[2] == best_ap]
        flip_vars = [bdd.var(n) for n in enc.names]
        agent_vars = [flip_vars[lv] for lv in agent_levels]
        s1 = v if len(keep) == len(ap_pairs) else _pair_slice(bdd, v, keep, agent_vars, flip_vars)
        _check(clock, "best_match", bdd)

        touched = [enc.touched(t) for t in range(enc.steps)]
        ts_pairs = _pairs(profile(_export(enc, s1, clock, "best_match"), step_of,
                                  lambda kind, t: (0, 0) if kind == 0 else (int(t in ts_a), 1)))
        best_ts = max(prf(j, len(ts_a), k)[2] for j, k in ts_pairs)
        j, k = min(((j, k) for j, k in ts_pairs if prf(j, len(ts_a), k)[2] == best_ts), key=lambda p: (p[1], p[0]))
        agent_steps = [touched[t] for t in sorted(ts_a) if t < enc.steps]
        s2 = _pair_slice(bdd, s1, [(j, k)], agent_steps, touched)
        _check(clock, "best_match", bdd)

        gold, best_digest = (), None
        for m, levels in enumerate(models(_export(enc, s2, clock, "best_match"))):
            if m % _CHECK_EVERY == 0:
                clock.check("best_match")
            cert = flips_to_atoms(problem, _flips(enc, levels))
            digest = certificate_digest(problem, cert)
            if best_digest is None or digest < best_digest:
                gold, best_digest = cert, digest
        ap = prf(len(set(agent) & set(gold)), size_a, len(gold))
        ts = prf(len(ts_a & timesteps(gold)), len(ts_a), len(timesteps(gold)))
        return BestMatch(canonical(problem, gold), *(float(x) for x in ap), *(float(x) for x in ts))


#: The backends of the dispatch table: "bdd" (CUDD) and "bdd-autoref" (the pure-Python fallback, a cross-check).
CUDD = BddBackend("cudd")
AUTOREF = BddBackend("autoref")

__all__ = ["AUTOREF", "CUDD", "BddBackend"]
