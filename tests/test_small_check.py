"""Suff and Valid by plain simulation on tiny tables (solvers/small_check.py, issue 33 item 4) against the
brute-force twin and the explicit backend, certificates with restated base values and atoms after t* included."""

from __future__ import annotations

from brute import brute_suff, brute_valid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import certificates, problems

from encoders.problem import Problem
from gf01_formal.instances import measure
from solvers import api, small_check


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=24, max_states=6, max_T=12), data=st.data())
def test_suff_and_valid_match_the_brute_twin_and_the_explicit_backend(problem: Problem, data: st.DataObject) -> None:
    assert small_check.applies(problem)
    cert = data.draw(certificates(problem))
    assert small_check.suff(problem, cert) == brute_suff(problem, cert) == api.suff(problem, cert, "explicit")
    assert small_check.valid(problem, cert) == brute_valid(problem, cert) == api.valid(problem, cert, "explicit")
    assert measure.base_shows_effect(problem) == brute_suff(problem, ())
