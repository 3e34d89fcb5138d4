"""The greedy baseline certifier: sufficient and Min1 when it answers, within B_T, and beaten by hard instances."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_small_count import peer_sized

from encoders.problem import Problem
from gf01_formal.instances import greedy
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


def _random_problem(rng: np.random.Generator, horizon: int, mode: str = "normal") -> Problem:
    from hoa.mealy import MealyView

    n_q, n_in, n_out = int(rng.integers(2, 6)), int(rng.integers(1, 3)), 2
    nxt = rng.integers(0, n_q, size=(n_q, 1 << n_in))
    out = rng.integers(0, 1 << n_out, size=(n_q, 1 << n_in))
    view = MealyView.from_table([f"i{k}" for k in range(n_in)], ["o0", "o1"], nxt, out)
    trace = tuple(int(x) for x in rng.integers(0, 1 << n_in, size=horizon))
    effect = parse_effect("o0 & !o1", view.outputs)
    return Problem(view, trace, effect, horizon - 1, mode, 3 if mode == "normal" else 1, None, None)


def test_the_sweep_scores_every_flip_as_replaying_it_does():
    """Issue 29: the backward sweep (linear in T) gives each candidate flip the distance and novelty that replaying
    its whole trace gives, on random tables, traces with flips already made, both modes."""
    from gf01_formal.instances.greedy import _replayed_scores, _swept_scores

    rng = np.random.Generator(np.random.PCG64(29))
    for k in range(60):
        p = _random_problem(rng, int(rng.integers(2, 12)), "normal" if k % 2 else "hard")
        table = effect_distance_table(p)
        base = p.system.simulate(np.array([p.trace], dtype=np.int64))[0][0]
        cur = list(p.trace)
        for t in rng.integers(0, p.horizon, size=int(rng.integers(0, 3))):
            cur[int(t)] ^= 1
        cands = [(t, i) for t in range(p.t_star + 1) for i in range(p.system.num_inputs)]
        swept = _swept_scores(p, cur, cands, base, table, None)
        replayed = _replayed_scores(p, cur, cands, base, table, None)
        assert np.array_equal(swept[0], replayed[0]) and np.array_equal(swept[1], replayed[1]), k


def _counter_at(horizon: int) -> Problem:
    """A counter that must show 3 at the last step of a long all-zero trace: three increments, anywhere."""
    view = mealy_from_text(counter_hoa(6))
    effect = parse_effect("c0 & c1 & !c2", view.outputs)
    return Problem(view, (0,) * horizon, effect, horizon - 1, "hard", 1, 3, None)


def test_greedy_work_is_linear_in_the_horizon():
    """Issue 29: the work of the greedy measure (state-steps swept, counted, not timed) grows linearly in T: T = 10,000
    is 10 times T = 1,000, not 100 (replaying every candidate trace was T^2 a round, 3.1 GiB at T = 10,000)."""
    work: dict[int, int] = {}
    for horizon in (1_000, 10_000):
        spent: list[int] = []
        cert = greedy_certificate(_counter_at(horizon), meter=spent.append)
        assert cert is not None and len(timesteps(cert)) == 3
        work[horizon] = sum(spent)
    assert work[10_000] <= 11 * work[1_000], work


def test_greedy_at_2500_steps_in_bounded_memory():
    # 2,500 steps, not 10,000 (tracemalloc makes each step slow: 3 s of CPU here, 11.5 s there): the replay that held
    # a T x T trace matrix a round (800 MB at 10,000 steps) holds 50 MB here, over the 16 MiB bound; the greedy
    # sweep peaks at 2 MiB (5 MiB at 10,000 steps). Its work at 10,000 steps is test_greedy_work_is_linear_....
    import tracemalloc

    tracemalloc.start()
    try:
        cert = greedy_certificate(_counter_at(2_500))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cert is not None and api.valid(_counter_at(2_500), cert)
    assert peak < 16 << 20, peak


# The tiny search against the sweep on random tables: tests/test_small_oracle.py's
# test_the_tiny_twins_are_the_general_paths (one draw of a tiny table serves the three plain-Python twins).


@pytest.mark.parametrize("seed", range(60))
def test_the_tiny_search_is_the_swept_one_at_the_peer_sizes(seed: int) -> None:
    p = peer_sized(seed, 12)
    for budget in (p.budget_t, None, 2):
        q = replace(p, budget_t=budget)
        assert greedy_certificate(q) == greedy_certificate(q, meter=lambda cells: None)


def test_larger_systems_take_the_sweep() -> None:
    p = counter_problem(3)
    assert greedy._tiny(p)
    assert not greedy._tiny(replace(p, trace=(0,) * 80, t_star=70))
