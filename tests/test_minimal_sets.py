"""Count, enumeration and best match on circuits without a BDD of the valid set (issue 28, item 2): the SAT search
that learns Min1 copies (solvers/minimal_sets.py), the best match as SAT optimisation (solvers/optimise.py) and the
projected counter (solvers/projected_count.py), each against the brute-force twin, the forward pass and the BDD."""

from __future__ import annotations

import dataclasses

import pytest
from brute import brute_best_match, brute_count, brute_suff, brute_valid_set
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pysat.solvers import Solver
from strategies import as_circuit, certificates, circuit_problems, problems
from test_circuits import wide_problem

from aig.build import Builder
from aig.view import CircuitView
from encoders.cnf import encode, rank_min1_term
from encoders.problem import Problem
from hoa.label import Var
from solvers import api, minimal_sets, optimise, projected_count
from solvers.limits import NO_LIMITS, Unknown
from solvers.minimal_sets import ValidSearch
from solvers.results import BestMatch

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
needs_ganak = pytest.mark.skipif(not projected_count.available(), reason="the count extra (pyganak) is not installed")


def _any_problem(data: st.DataObject) -> Problem:
    """A random circuit, or the circuit twin of a random table system (the forward pass tabulates both)."""
    if data.draw(st.booleans()):
        return data.draw(circuit_problems(max_flips=9))
    return as_circuit(data.draw(problems(max_flips=9)))


@SETTINGS
@given(data=st.data())
def test_best_match_by_optimisation_matches_brute_and_the_forward_pass(data: st.DataObject) -> None:
    problem = _any_problem(data)
    golds = brute_valid_set(problem, problem.budget_t)
    # Half the time the agent plays (part of) a valid certificate plus maybe a stray atom: high F1 and real ties.
    if golds and data.draw(st.booleans()):
        cert = data.draw(st.sampled_from(golds))
        cert = cert[: data.draw(st.integers(0, len(cert)))]
    else:
        cert = data.draw(certificates(problem))
    want = BestMatch(**dataclasses.asdict(brute_best_match(problem, cert, problem.budget_t)))
    assert optimise.best_match(problem, cert, problem.budget_t) == want
    assert api.best_match(problem, cert, problem.budget_t, "forward") == want


@SETTINGS
@given(data=st.data())
def test_count_and_enumeration_match_brute_forward_and_bdd(data: st.DataObject) -> None:
    problem = _any_problem(data)
    for budget_t in (problem.budget_t, None):
        want = brute_valid_set(problem, budget_t)
        assert list(minimal_sets.enumerate_certificates(problem, budget_t)) == want
        assert minimal_sets.count(problem, budget_t) == len(want)
        assert api.count(problem, budget_t, "forward") == api.count(problem, budget_t, "bdd") == len(want)


@needs_ganak
@SETTINGS
@given(data=st.data())
def test_the_projected_counter_matches_brute(data: st.DataObject) -> None:
    problem = _any_problem(data)
    for budget_t in (problem.budget_t, None):
        assert projected_count.count(problem, budget_t) == brute_count(problem, budget_t)


@needs_ganak
def test_past_the_enumeration_cap_the_count_goes_to_the_projected_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    p = _two_ways_problem()
    monkeypatch.setattr(minimal_sets, "ENUMERATION_CAP", 1)
    assert minimal_sets.count(p, None) == brute_count(p, None) == 3


def test_past_the_enumeration_cap_without_a_counter_the_count_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    p = _two_ways_problem()
    monkeypatch.setattr(minimal_sets, "ENUMERATION_CAP", 1)
    monkeypatch.setattr(projected_count, "available", lambda: False)
    with pytest.raises(Unknown, match=r"more than 1 certificates and no projected model counter .*\[count\]"):
        minimal_sets.count(p, None)


def test_a_tie_class_past_its_cap_is_unknown_never_a_pick(monkeypatch: pytest.MonkeyPatch) -> None:
    p = _two_ways_problem()
    # The empty agent certificate ties every gold of least Eff_t: (0, a) and (0, b) both have Eff_t = 1.
    assert optimise.best_match(p, [], None).gold == brute_best_match(p, [], None).gold
    monkeypatch.setattr(optimise, "TIE_CAP", 1)
    with pytest.raises(Unknown, match="more than 1 certificates tie up to the digest"):
        optimise.best_match(p, [], None)


def _two_ways_problem() -> Problem:
    """Inputs a, b, c at 0 for two steps; output o at step 1 = latch(a | b) or c: M(I) = {a@0}, {b@0}, {c@1}."""
    b = Builder()
    a, bb, c = b.input("a"), b.input("b"), b.input("c")
    seen = b.latch("seen")
    b.set_next(seen, b.or_(a, bb))
    b.output("o", b.or_(seen, c))
    return Problem(CircuitView.from_aig(b.aig()), (0, 0), Var(0), t_star=1)


def test_the_search_builds_only_the_min1_copies_it_needs() -> None:
    # 70 inputs x 3 steps: the full Valid encoding has 140 copies up to t* = 1; the search needs none of them here.
    p = wide_problem()
    with ValidSearch(p, None, NO_LIMITS.start(), "count") as search:
        found = minimal_sets.valid_sets(search, (), None)
        assert found.complete and [sorted(f) for f in found.found] == [[(0, 0), (0, 40), (0, 69)]]
        assert len(search.copies) < len(search.enc.flips) // 4
    assert api.count(p, 1) == 1
    assert api.best_match(p, [(0, 0, 1)], 1).gold == ((0, 0, 1), (0, 40, 1), (0, 69, 1))


@SETTINGS
@given(data=st.data())
def test_rank_copy_j_is_the_run_without_the_jth_flip(data: st.DataObject) -> None:
    # The encoding's claim, checked model by model: with the flips fixed to C, rank copy j is Suff exactly when C
    # minus its j-th flip (in position order) is, and its term is false exactly when |C| >= j and that run is Suff.
    # Half the time a table system: the log (binary) and one-hot state encodings.
    problem = _any_problem(data) if data.draw(st.booleans()) else data.draw(problems(max_flips=9))
    enc = encode(problem, states=data.draw(st.sampled_from(("log", "one-hot"))))
    order = sorted(enc.flips)
    terms = [rank_min1_term(enc, j, order) for j in (1, 2, 3)]
    chosen = sorted(data.draw(st.sets(st.sampled_from(order), max_size=5)))
    with Solver(name="cadical195", bootstrap_with=enc.clauses) as solver:
        assert solver.solve([v if p in chosen else -v for p, v in enc.flips.items()])
        model = set(solver.get_model())
    for j, term in enumerate(terms, start=1):
        rest = [(t, i, 1 - ((problem.trace[t] >> i) & 1)) for t, i in chosen[: j - 1] + chosen[j:]]
        assert (enc.rank_suff[j - 1] in model) == brute_suff(problem, rest)
        assert (term in model) == (len(chosen) < j or not brute_suff(problem, rest))


@SETTINGS
@given(data=st.data(), rank_cap=st.sampled_from((0, 1, 2)))
def test_few_rank_copies_and_the_lazy_copies_past_them_match_brute(data: st.DataObject, rank_cap: int) -> None:
    # With K = 0, 1 or 2 rank copies, valid sets of more flips are Min1-checked by the per-position copies and the
    # simulation: the answers stay those of the brute-force twin.
    problem = _any_problem(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(minimal_sets, "RANK_CAP", rank_cap)
        for budget_t in (problem.budget_t, None):
            want = brute_valid_set(problem, budget_t)
            assert list(minimal_sets.enumerate_certificates(problem, budget_t)) == want
            assert minimal_sets.count(problem, budget_t) == len(want)


@pytest.mark.parametrize(("rank_cap", "ranks", "copies"), [(0, 0, {(0, 0), (0, 1)}), (1, 1, {(0, 1)}), (8, 2, set())])
def test_removable_flips_ranked_past_the_cap_get_their_own_copies(rank_cap: int, ranks: int,
                                                                  copies: set[tuple[int, int]]) -> None:
    # M(I) = {a@0}, {b@0}, {c@1}: a model made to carry a@0 and b@0 has both removable, ranked 1 and 2. Rank copies
    # rule them out up to the cap, per-position copies past it; either way the search answers as the brute twin.
    p = _two_ways_problem()
    with ValidSearch(p, None, NO_LIMITS.start(), "count", rank_cap=rank_cap) as search:
        assert search.solve([search.enc.flips[(0, 0)], search.enc.flips[(0, 1)]]) is None
        assert (search.ranks, search.copies) == (ranks, copies)
        found = minimal_sets.valid_sets(search, (), None).found
    assert sorted(sorted((t, i, 1) for t, i in f) for f in found) == [list(c) for c in brute_valid_set(p, None)]
