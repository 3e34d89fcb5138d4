"""The greedy baseline certifier: sufficient and Min1 when it answers, within B_T, and beaten by hard instances."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from encoders.problem import Problem
from gf01_formal.instances.families.counters import counter_hoa
from gf01_formal.instances.greedy import effect_distance_table, greedy_certificate
from gf01_formal.instances.traces import parse_effect
from hoa.mealy import mealy_from_text
from solvers import api
from solvers.canonical import timesteps


def counter_problem(budget: int | None) -> Problem:
    view = mealy_from_text(counter_hoa(6))
    effect = parse_effect("c0 & c1 & !c2", view.outputs)  # the counter shows 3
    return Problem(view, (0,) * 6, effect, 4, "hard", 1, budget, None)


def test_greedy_finds_the_three_increments():
    p = counter_problem(3)
    cert = greedy_certificate(p)
    assert cert is not None and api.valid(p, cert) and len(timesteps(cert)) == 3
    assert {i for _, i, _ in cert} == {0}  # only inc is raised


def test_greedy_respects_the_budget():
    assert greedy_certificate(counter_problem(2)) is None
    assert api.oracle(counter_problem(2), 2) is None  # and indeed nothing fits


def test_effect_distance_table():
    p = counter_problem(3)
    evars, dist = effect_distance_table(p)
    assert list(evars) == [0, 1, 2]
    # sub-valuation bits (c0, c1, c2): 0b011 satisfies, 0b000 is two flips away, 0b111 one.
    assert dist[0b011] == 0 and dist[0b000] == 2 and dist[0b111] == 1
    unsat = replace(p, effect=parse_effect("c0 & !c0", p.system.outputs))
    assert (effect_distance_table(unsat)[1] > 1).all()


def test_greedy_answers_are_valid_on_random_counters():
    rng = np.random.Generator(np.random.PCG64(3))
    view = mealy_from_text(counter_hoa(5))
    for _ in range(20):
        trace = tuple(int(x) for x in rng.integers(0, 4, size=8))
        effect = parse_effect("c2", view.outputs)
        p = Problem(view, trace, effect, 7, "normal", 2, 3, None)
        cert = greedy_certificate(p)
        if cert is not None:
            assert api.valid(p, cert) and len(timesteps(cert)) <= 3
