"""One test suite for the solver contract, run against every backend (``tests/test_backends.py`` subclasses it once per
backend), in the manner of dd's ``tests/common.py``: a failure names its backend in the test id.

Every query is checked against the brute-force twin (``tests/brute.py``) on random small problems, plus the parity
machine, which reads as the specification of why Min1 is not SubsetMin.
"""

from __future__ import annotations

import dataclasses
import inspect

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
from hoa.label import Var
from hoa.mealy import MealyView
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
    def test_certificate_checks_match_brute(self, data: st.DataObject) -> None:
        problem = self.twin(data.draw(problems(max_flips=9)))
        cert = data.draw(certificates(problem))
        assert self.b.suff(problem, cert) == brute_suff(problem, cert)
        assert self.b.min1(problem, cert) == brute_min1(problem, cert)
        assert self.b.valid(problem, cert) == brute_valid(problem, cert)
        assert self.b.subset_min(problem, cert) == brute_subset_min(problem, cert)
        # The optional check query: the backend's own where it has one, else the shared one from suff and min1.
        assert contract.check(self.b, problem, cert) == Check(brute_suff(problem, cert), brute_min1(problem, cert))

    @SETTINGS
    @given(problem=problems(max_flips=9))
    def test_sets_match_brute(self, problem: Problem) -> None:
        self.check_sets(self.twin(problem))

    def check_sets(self, problem: Problem) -> None:
        for budget_t in sorted({problem.budget_t, None}, key=lambda b: -1 if b is None else b):
            expected = brute_valid_set(problem, budget_t)
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

    @SETTINGS
    @given(data=st.data())
    def test_best_match_matches_brute(self, data: st.DataObject) -> None:
        problem = self.twin(data.draw(problems(max_flips=9)))
        # Half the time the agent plays a valid certificate (or a prefix of one), so high F1 values are exercised.
        golds = brute_valid_set(problem, problem.budget_t)
        if golds and data.draw(st.booleans()):
            cert = data.draw(st.sampled_from(golds))
            cert = cert[: data.draw(st.integers(0, len(cert)))]
        else:
            cert = data.draw(certificates(problem))
        got = self.b.best_match(problem, cert, problem.budget_t)
        assert got == BestMatch(**dataclasses.asdict(brute_best_match(problem, cert, problem.budget_t)))

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
