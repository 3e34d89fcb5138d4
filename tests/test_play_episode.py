"""The episode engine: goal panel, observations, refusals and budgets, early commit, canonical-json-v1 round trips,
and scoring of finished episodes against the brute-force twin."""

from __future__ import annotations

import dataclasses
import json

import pytest
from brute import brute_best_match, brute_min1, brute_outputs, brute_suff, brute_valid_set
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import problems

from encoders.problem import Problem
from gf01_formal.play.episode import Episode
from gf01_formal.play.protocol import Observation, Start, parse_action, text
from gf01_formal.scoring.scores import Scorer
from hoa.errors import Gf01Error
from hoa.label import Not, Var, evaluate
from hoa.mealy import MealyView


def counter() -> Problem:
    """Inputs a, b; o = a at odd parity of the a's so far. T = 5, t* = 3, B_T = 2, B_A = 3, tau all zero."""
    nxt = [[0, 1, 0, 1], [1, 0, 1, 0]]
    out = [[0, 0, 0, 0], [0, 1, 0, 1]]
    view = MealyView.from_table(("a", "b"), ("o",), nxt, out, state_names=("even", "odd"))
    return Problem(view, (0, 0, 0, 0, 0), Var(0), t_star=3, budget_t=2, budget_a=3)


def test_goal_panel_is_static_and_shows_no_hidden_state() -> None:
    ep = Episode(counter(), "inst-1")
    goal = ep.reset()
    assert goal.model_dump() == {
        "effect": "o", "t_star": 3, "mode": "hard", "window": None, "effect_steps": [3, 3], "horizon": 5,
        "inputs": ["a", "b"], "outputs": ["o"], "budget_t": 2, "budget_a": 3,
    }
    start = text(Start(instance_id="inst-1", goal=goal))
    assert "even" not in start and "odd" not in start and "trace" not in start


def test_atoms_are_committed_as_submitted_and_the_system_steps() -> None:
    ep = Episode(counter())
    ep.reset()
    o0 = ep.step({"a": 1, "b": 0})  # b = 0 restates the base value: committed all the same (DEC-005)
    assert o0.certificate == [[0, "a", 1], [0, "b", 0]] and o0.y == {"o": 0} and o0.refused == []
    assert (o0.b_T_rem, o0.b_A_rem, o0.done) == (1, 1, False)
    o1 = ep.step({})
    assert o1.y == {"o": 0} and o1.b_T_rem == 1
    o2 = ep.step({"a": 1, "b": 1})  # the second atom would exceed B_A = 3: refused, the first is committed
    assert o2.certificate[-1] == [2, "a", 1] and [r.reason for r in o2.refused] == ["budget_a"]
    assert o2.refused[0].input == "b"
    o3 = ep.step({"a": 1})  # B_T is spent: refused; parity is even, so o = 0 at t* = 3
    assert [r.reason for r in o3.refused] == ["budget_t"] and o3.y == {"o": 0}
    assert o3.effect_status.model_dump() == {"holds": False, "in_window": True, "achieved": False}
    o4 = ep.step({})
    assert o4.done and o4.t == 4
    with pytest.raises(Gf01Error, match="has ended"):
        ep.step({})
    assert ep.certificate == ((0, 0, 1), (0, 1, 0), (2, 0, 1)) and ep.refusals == 2


def test_an_action_with_an_unknown_input_or_a_bad_value_is_void() -> None:
    """The episode is the only judge of an action: one bad atom voids the whole action, its commit included, and
    nothing is listed as refused; the step's log says why."""
    ep = Episode(counter())
    ep.reset()
    obs = ep.step({"zz": 1, "a": 1, "b": True}, commit=True)
    assert obs.refused == [] and obs.certificate == [] and not obs.done and ep.log[-1].commit is False
    assert ep.log[-1].void == "b: value True must be 0 or 1 (and 1 more)"  # AP_in order, unknown names last
    assert ep.log[-1].submitted == {"zz": 1, "a": 1, "b": True} and ep.judge({"a": 0}) is None
    obs = ep.step({"a": 1}, at=5)
    assert [r.reason for r in obs.refused] == ["wrong_step"] and obs.certificate == []
    obs = ep.step({"a": 1.0})
    assert obs.refused == [] and ep.log[-1].void == "a: value 1.0 must be 0 or 1"
    assert ep.refusals == 1 and ep.certificate == ()


def test_the_per_atom_rule_of_older_records_is_kept_for_their_replay() -> None:
    ep = Episode(counter())
    ep.reset()
    obs = ep.step({"zz": 1, "a": 2, "b": 1}, at=0, per_atom=True)
    assert [(r.input, r.reason) for r in obs.refused] == [("a", "bad_value"), ("zz", "unknown_input")]
    assert obs.certificate == [[0, "b", 1]] and ep.log[-1].void is None and ep.refusals == 2


def test_an_early_commit_ends_the_episode() -> None:
    ep = Episode(counter())
    ep.reset()
    ep.step({})
    ep.step({})
    ep.step({"a": 1})  # parity odd from t=3 on
    obs = ep.step({"a": 1}, commit=True)  # and a = 1 at t* = 3: o holds
    assert obs.done and obs.t == 3 and ep.done and obs.effect_status.achieved
    result = Scorer(ep.problem).score(ep.certificate)
    assert result.suff and result.valid and result.score_c == 1 and result.kappa == [1, 1, -2, -2]
    assert result.best_match_gold == [[2, "a", 1], [3, "a", 1]] and result.ap_f1 == 1.0


def test_messages_round_trip_through_their_canonical_text() -> None:
    ep = Episode(counter(), "x")
    goal = ep.reset()
    obs = ep.step({"a": 1, "q": 3})
    assert Observation.model_validate_json(text(obs)) == obs
    assert Start.model_validate_json(text(Start(instance_id="x", goal=goal))).goal == goal
    assert text(obs) == json.dumps(obs.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    assert parse_action('{"set": {"a": 1}, "commit": true}').commit
    for bad, msg in [("nope", "not JSON"), ("[1]", "JSON object"), ('{"set": {}, "x": 1}', "Extra inputs"),
                     ('{"commit": "yes"}', "valid boolean")]:
        with pytest.raises(Gf01Error, match=msg):
            parse_action(bad)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_episodes_match_the_brute_force_twin(data: st.DataObject) -> None:
    """Observed outputs are those of tau[C_<=t]; budgets hold; the result is the twin's score and best match."""
    problem = data.draw(problems(max_flips=9))
    budget_t = problem.budget_t if problem.budget_t else 1
    problem = dataclasses.replace(problem, budget_t=budget_t, budget_a=data.draw(st.integers(1, 4)))
    ep = Episode(problem)
    goal = ep.reset()
    names = goal.inputs
    while not ep.done:
        action = data.draw(st.dictionaries(st.sampled_from(names), st.integers(0, 1), max_size=len(names)))
        obs = ep.step(action, commit=data.draw(st.integers(0, 9)) == 0)
        ys = brute_outputs(problem, problem.apply(ep.certificate))
        assert obs.y == {n: (ys[obs.t] >> j) & 1 for j, n in enumerate(goal.outputs)}
        assert obs.effect_status.holds == evaluate(problem.effect, ys[obs.t])
        assert len({a[0] for a in ep.certificate}) <= budget_t and len(ep.certificate) <= problem.budget_a
    cert = ep.certificate
    result = Scorer(problem).score(cert)
    assert result.suff == brute_suff(problem, cert) and result.min1 == brute_min1(problem, cert)
    want = brute_best_match(problem, cert, None)  # the gold is ranked in M(I) (section 7.3), B_T aside
    assert (result.ap_f1, result.ts_f1) == (want.ap_f1, want.ts_f1) and result.gold_set == "M"
    gold = [[t, problem.system.inputs[i], v] for t, i, v in want.gold]
    assert result.best_match_gold == (gold if brute_valid_set(problem, None) else None)
    assert result.within_budget is True  # play never lets a certificate past B_T


def test_the_gold_is_null_when_there_is_none_and_empty_when_the_empty_certificate_is_it() -> None:
    p = counter()
    nothing = dataclasses.replace(p, t_star=0)  # o is 0 in the first step whatever the inputs: M(I) is empty
    assert Scorer(nothing).score([(0, 0, 1)]).best_match_gold is None
    done = dataclasses.replace(p, effect=Not(Var(0)))  # the base run already shows !o at t* = 3: M(I) = {{}}
    assert Scorer(done).score([(0, 0, 1)]).best_match_gold == []
