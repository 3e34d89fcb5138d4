"""One test suite for the solver contract, run against every backend (``tests/test_backends.py`` subclasses it once per
backend), in the manner of dd's ``tests/common.py``: a failure names its backend in the test id.

Every query is checked against the brute-force twin (``tests/brute.py``) on random small problems, plus the parity
machine, which reads as the specification of why Min1 is not SubsetMin.
"""

from __future__ import annotations

import dataclasses
import gc
import inspect

import numpy as np
import pytest
from brute import (
    brute_best_match,
    brute_min1,
    brute_subset_min,
    brute_suff,
    brute_valid,
    brute_valid_set,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import as_circuit, certificates, circuit_problems, problems

from encoders.problem import Problem
from hoa.label import TRUE, And, Not, Or, Var, conjunction_of_literals
from hoa.mealy import MealyEdge, MealyView
from solvers import api, contract
from solvers.canonical import order_key
from solvers.contract import QUERIES, Backend
from solvers.limits import Limits, Unknown
from solvers.results import BestMatch, Check

# One test body runs for several subclasses (executors); each backend is a separate test, so this is intended.
SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors]
)


def parity_problem() -> Problem:
    """One step, inputs a, b, c, d (all 0 in tau); output o = a XOR b XOR c (d is ignored); effect o at t* = 0."""
    nxt = [[0] * 16]
    out = [[bin(x & 0b111).count("1") & 1 for x in range(16)]]
    return Problem(MealyView.from_table(("a", "b", "c", "d"), ("o",), nxt, out), (0,), Var(0), t_star=0)


def _prefix(x: int, bits: int) -> int:
    return (2 << (x % bits)) - 1


def history_problem(inputs: int, depth: int, budget_t: int | None = None) -> Problem:
    """A machine whose quotient at step ``depth`` has 2^(inputs * depth) classes (256 for (4, 2), 65,536 for (4, 4)).

    It records the first ``depth`` input letters in a tree of states; at step ``depth`` its output o under letter x is
    the parity of the recorded history's lowest x % bits + 1 bits (bits = inputs * depth <= 2^inputs: the prefix
    parities are independent, so no two histories agree under every letter), then it rests in a sink. Base trace
    x_t = 3 + 5t (mod 2^inputs), effect o at t* = depth (hard). The view is built from shared guard objects and handed
    its tables, as ``MealyView.from_table`` does (which builds a guard per cell: minutes at 10^6 cells). The cyclic
    collector is paused while it builds: the (4, 4) machine's 400,000 guard and edge objects, all kept, set off its
    full passes over everything alive, 1.5 of the build's 2.2 s of CPU.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _history_problem(inputs, depth, budget_t)
    finally:
        if was_enabled:
            gc.enable()


def _history_problem(inputs: int, depth: int, budget_t: int | None) -> Problem:
    letters, bits = 1 << inputs, inputs * depth
    assert letters >= bits
    offsets = [0]
    for k in range(depth + 1):
        offsets.append(offsets[-1] + letters**k)
    sink = offsets[-1]
    nxt = np.full((sink + 1, letters), sink, dtype=np.int64)
    out = np.zeros((sink + 1, letters), dtype=np.int64)
    xs = np.arange(letters)
    for k in range(depth):
        h = np.arange(letters**k)
        nxt[offsets[k] + h] = offsets[k + 1] + h[:, None] * letters + xs[None, :]
    h = np.arange(letters**depth)
    parity = h[:, None] & np.array([_prefix(x, bits) for x in range(letters)])[None, :]
    for shift in (32, 16, 8, 4, 2, 1):  # fold the bits (bits <= 2^inputs <= 64) onto bit 0
        parity ^= parity >> shift
    parity &= 1
    out[offsets[depth] + h] = parity
    minterm = [conjunction_of_literals((i, bool((x >> i) & 1)) for i in range(inputs)) for x in range(letters)]
    o_lit = (Not(Var(inputs)), Var(inputs))
    quiet = [And((minterm[x], o_lit[0])) for x in range(letters)]
    record = [tuple(MealyEdge(quiet[x], offsets[k + 1] + c * letters + x) for x in range(letters))
              for k in range(depth) for c in range(letters**k)]
    readout = []
    for row in parity.tolist():
        ones = tuple(m for m, y in zip(minterm, row, strict=True) if y)
        zeros = tuple(m for m, y in zip(minterm, row, strict=True) if not y)
        readout.append(tuple(MealyEdge(And((Or(g) if len(g) < letters else TRUE, o_lit[y])), sink)
                             for y, g in ((1, ones), (0, zeros)) if g))
    edges = (*record, *readout, (MealyEdge(And((TRUE, o_lit[0])), sink),))
    view = MealyView(tuple(f"i{k}" for k in range(inputs)), ("o",), edges)
    tables = (nxt.astype(np.int32), out)
    for a in tables:
        a.setflags(write=False)
    view.__dict__["tables"] = tables  # the cached property's value, as MealyView.from_table seeds it
    trace = tuple((3 + 5 * t) % letters for t in range(depth + 1))
    return Problem(view, trace, Var(0), depth, budget_t=depth + 1 if budget_t is None else budget_t)


def arbiter_view(clients: int = 3, modes: int = 6, reset: int = 20) -> MealyView:
    """An arbiter-like controller of 404 states (3 requests s_i, 3 grants g_i; issue 28's size and shape).

    ``reset`` start-up states wait for a first request; then a state is (mode, the last two request letters): a
    client that asked in both previous steps is granted first, the others in round-robin order from the mode, an
    order that a schedule over (mode, history) sometimes reverses; the grant moves the mode on. At 8 steps of
    ``s_0&s_1&s_2`` with effect g_2, its quotient has 266 classes at one step (more than a byte of class ids).
    """
    letters = 1 << clients

    def arb(m: int, l1: int, l2: int) -> int:
        return reset + (m * letters + l1) * letters + l2

    def step(m: int, l1: int, l2: int, x: int) -> tuple[int, int]:
        if not x:
            return 0, arb(m, 0, l1)
        order = [(m + k) % clients for k in range(clients)]
        if (m * 37 + l1 * 11 + l2 * 5 + x) % 7 < 2:
            order.reverse()
        starving = [c for c in order if (l1 & l2 & x) >> c & 1]
        g = (starving or [c for c in order if (x >> c) & 1])[0]
        return 1 << g, arb((m + g + 1) % modes, x, l1)

    n = reset + modes * letters * letters
    nxt = np.zeros((n, letters), dtype=np.int64)
    out = np.zeros((n, letters), dtype=np.int64)
    for k in range(reset):
        for x in range(letters):
            out[k, x], nxt[k, x] = (0, k + 1 if k + 1 < reset else arb(0, 0, 0)) if not x else step(k % modes, 0, 0, x)
    for m in range(modes):
        for l1 in range(letters):
            for l2 in range(letters):
                for x in range(letters):
                    out[arb(m, l1, l2), x], nxt[arb(m, l1, l2), x] = step(m, l1, l2, x)
    return MealyView.from_table(tuple(f"s_{c}" for c in range(clients)), tuple(f"g_{c}" for c in range(clients)),
                                nxt, out)


class Common:
    """The contract's tests; a subclass sets ``name`` to a key of :data:`solvers.api.TABLE`, and ``circuit`` to run
    every test on the circuit twin of each table problem (the same machine as an AIG: every answer must be the same,
    and the brute-force twin, which only steps the system, checks it)."""

    name: str
    circuit: bool = False

    def twin(self, problem: Problem) -> Problem:
        return as_circuit(problem) if self.circuit else problem

    @property
    def b(self) -> Backend:
        return api.backend(self.name)

    def test_implements_the_contract(self) -> None:
        assert isinstance(self.b, Backend)
        for query in QUERIES:
            want = inspect.signature(getattr(Backend, query))
            got = inspect.signature(getattr(self.b, query))
            params = [p for p in want.parameters.values() if p.name != "self"]
            assert [(p.name, p.kind, p.default) for p in got.parameters.values()] == [
                (p.name, p.kind, p.default) for p in params
            ], query

    @SETTINGS
    @given(data=st.data())
    def test_queries_match_brute(self, data: st.DataObject) -> None:
        """Every query against the brute-force twin on one drawn problem: the certificate checks on a drawn
        certificate, the sets (count, enumeration, witness, oracle) and the best match. One draw serves the three
        (drawing a problem is most of a small backend's time); each still runs on 30 examples."""
        problem = self.twin(data.draw(problems(max_flips=9)))
        cert = data.draw(certificates(problem))
        self.check_certificate(problem, cert)
        golds = self.check_sets(problem)
        # Half the time the agent plays a valid certificate (or a prefix of one), so high F1 values are exercised.
        if golds and data.draw(st.booleans()):
            cert = data.draw(st.sampled_from(golds))
            cert = cert[: data.draw(st.integers(0, len(cert)))]
        got = self.b.best_match(problem, cert, problem.budget_t)
        assert got == BestMatch(**dataclasses.asdict(brute_best_match(problem, cert, problem.budget_t)))

    def check_certificate(self, problem: Problem, cert: tuple) -> None:
        suff, min1 = brute_suff(problem, cert), brute_min1(problem, cert)
        assert self.b.suff(problem, cert) == suff
        assert self.b.min1(problem, cert) == min1
        assert self.b.valid(problem, cert) == brute_valid(problem, cert)
        assert self.b.subset_min(problem, cert) == brute_subset_min(problem, cert)
        # The optional check query: the backend's own where it has one, else the shared one from suff and min1.
        assert contract.check(self.b, problem, cert) == Check(suff, min1)

    def check_sets(self, problem: Problem) -> list[tuple]:
        """The set queries against the brute-force twin under the problem's budget and none; the brute-force set
        under the problem's budget (M_B(I))."""
        sets = {}
        for budget_t in sorted({problem.budget_t, None}, key=lambda b: -1 if b is None else b):
            expected = sets[budget_t] = brute_valid_set(problem, budget_t)
            assert self.b.count(problem, budget_t) == len(expected)
            got = list(self.b.enumerate_certificates(problem, budget_t))
            assert got == expected
            assert got == sorted(got, key=lambda c: order_key(problem, c))
            assert list(self.b.enumerate_certificates(problem, budget_t, 2)) == expected[:2]
            w = self.b.witness(problem, budget_t)
            assert (w in expected) if expected else w is None
            best = self.b.oracle(problem, budget_t)
            if expected:
                assert best is not None and best.optimal and best.certificate in expected
                assert (best.eff_t, best.eff_a) == min((len({a[0] for a in c}), len(c)) for c in expected)
            else:
                assert best is None
        return sets[problem.budget_t]

    def test_a_quotient_past_255_classes(self) -> None:
        """Issue 28: a step of 256 classes (class ids past a byte), every query against the brute-force twin."""
        if self.circuit:
            return  # the table itself is the case; its circuit twin (9 latches) adds nothing here
        self.check_sets(history_problem(4, 2))

    def test_non_monotone_sufficiency(self) -> None:
        """Suff is not monotone in C, so Min1 (singleton removal) is weaker than subset-minimality."""
        p, b = self.twin(parity_problem()), self.b
        a, bb, c, d = (0, 0, 1), (0, 1, 1), (0, 2, 1), (0, 3, 1)
        # Suff(C) true, Suff(C - {d}) true, Suff(C - {d, a}) false.
        assert b.suff(p, [a, d]) and b.suff(p, [a]) and not b.suff(p, [])
        assert not b.min1(p, [a, d]) and b.valid(p, [a])
        # Min1 holds for {a, b, c} (every pair has even parity), yet its proper subset {a} is sufficient.
        assert b.valid(p, [a, bb, c]) and not b.subset_min(p, [a, bb, c])
        assert b.subset_min(p, [a])
        # A restated base value changes nothing and breaks Min1.
        assert b.suff(p, [a, (0, 1, 0)]) and not b.min1(p, [a, (0, 1, 0)])
        # Blocking supersets of a found certificate would lose {a, b, c}: M(I) holds it and its subsets {a}, {b}, {c}.
        expected = [(a,), (bb,), (c,), (a, bb, c)]
        assert list(b.enumerate_certificates(p, None)) == expected
        assert b.count(p, None) == 4
        assert list(b.enumerate_certificates(p, None, 3)) == expected[:3]

    def test_a_spent_time_limit_answers_unknown(self) -> None:
        p = parity_problem()
        with pytest.raises(Unknown) as info:
            self.b.count(p, None, limits=Limits(seconds=0.0))
        assert "time limit" in info.value.reason

    @SETTINGS
    @given(data=st.data())
    def test_random_circuits_match_brute(self, data: st.DataObject) -> None:
        """Circuits that come from no table (latches, gates and properties drawn at random)."""
        if not self.circuit:
            return
        problem = data.draw(circuit_problems(max_flips=9))
        cert = data.draw(certificates(problem))
        assert self.b.suff(problem, cert) == brute_suff(problem, cert)
        assert self.b.min1(problem, cert) == brute_min1(problem, cert)
        assert self.b.subset_min(problem, cert) == brute_subset_min(problem, cert)
        self.check_sets(problem)
        got = self.b.best_match(problem, cert, problem.budget_t)
        assert got == BestMatch(**dataclasses.asdict(brute_best_match(problem, cert, problem.budget_t)))
