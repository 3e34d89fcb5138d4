"""The plain-Python oracle of tiny table systems (solvers/small_oracle.py, issue 33 item 4) returns exactly what the
numpy layered shortest path (solvers/paths.py) returns, certificate and ties included, and agrees with the brute-force
twin (in tests/test_small_count.py); the generator's oracle (gf01_formal/instances/measure.py) takes it only for the
explicit backend. On the same drawn tables: Suff and Valid by plain simulation (solvers/small_check.py) against the
brute-force twin and the explicit backend, certificates with restated base values and atoms after t* included, and
the generator's greedy tiny search against its numpy sweep."""

from __future__ import annotations

import dataclasses

import pytest
from brute import brute_suff, brute_valid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import certificates, problems
from test_small_count import peer_sized

from encoders.problem import Problem
from gf01_formal.instances import greedy, measure
from gf01_formal.instances.greedy import greedy_certificate
from hoa.mealy import MealyView
from solvers import api, paths, small_check, small_oracle


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=24, max_states=6, max_T=12), data=st.data())
def test_the_tiny_twins_are_the_general_paths(problem: Problem, data: st.DataObject) -> None:
    """The three plain-Python twins of issue 33 item 4 on one drawn tiny table (drawing a problem is most of an
    example's time; each twin's checks take a millisecond): the oracle is the numpy paths oracle; Suff and Valid are
    the brute-force twin's and the explicit backend's; the greedy search is its numpy sweep, which a ``meter``
    keeps (it counts the sweep's cells)."""
    assert small_oracle.applies(problem)
    for budget in (problem.budget_t, None):
        assert small_oracle.oracle(problem, budget) == paths.oracle(problem, budget)
    assert small_check.applies(problem)
    cert = data.draw(certificates(problem))
    assert small_check.suff(problem, cert) == brute_suff(problem, cert) == api.suff(problem, cert, "explicit")
    assert small_check.valid(problem, cert) == brute_valid(problem, cert) == api.valid(problem, cert, "explicit")
    assert measure.base_shows_effect(problem) == brute_suff(problem, ())
    assert greedy._tiny(problem)
    assert greedy_certificate(problem) == greedy_certificate(problem, meter=lambda cells: None)


# Against the brute-force twin: tests/test_small_count.py's test_count_matches_the_brute_twin (400 draws of
# problems(max_flips=11, max_states=5), whose brute-force sets give the count and the oracle both).


@pytest.mark.parametrize("seed", range(60))
def test_oracle_is_the_numpy_paths_oracle_at_the_peer_sizes(seed: int) -> None:
    problem = peer_sized(seed, 12)
    for budget in (problem.budget_t, None, 1, 2):
        assert small_oracle.oracle(problem, budget) == paths.oracle(problem, budget)


def test_tables_past_its_cells_go_to_the_numpy_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = peer_sized(5, 8)
    wide = dataclasses.replace(problem, system=MealyView.from_table(tuple("abcdefghi"), ("x", "y"), [[0] * 512],
                                                                    [[1] * 512]), trace=(0,) * 8)
    long = peer_sized(5, 1000)
    assert small_oracle.applies(problem) and not small_oracle.applies(wide)
    assert not small_oracle.applies(dataclasses.replace(long, t_star=999))
    assert measure.oracle(long, None) == paths.oracle(long, None)
    calls: list[int] = []
    real = small_oracle.oracle

    def spy(p: Problem, budget: int | None) -> object:
        calls.append(1)
        return real(p, budget)

    monkeypatch.setattr(small_oracle, "oracle", spy)
    assert measure.oracle(problem, None) == paths.oracle(problem, None)
    assert measure.oracle(problem, None, "explicit") == paths.oracle(problem, None)
    assert len(calls) == 2
    assert measure.oracle(wide, None) == paths.oracle(wide, None)
    sat, ref = measure.oracle(problem, None, "sat"), paths.oracle(problem, None)
    assert (sat is None) == (ref is None)
    assert sat is None or ref is None or (sat.eff_t, sat.eff_a) == (ref.eff_t, ref.eff_a)
    assert len(calls) == 2
