"""The generator's oracle-free shortcuts (issue 33) answer exactly what the oracle answers.

Before any oracle, the generator decides from one simulation of a drawn system (``generator._reach``) whether hard-mode
M(I) at t* is empty, and the (Eff_t, Eff_a) optimum whenever it touches one timestep (hard mode, and normal mode
with window 1). Here both are checked against the explicit backend's oracle on random machines, traces and effects,
and ``measure.possible_windows`` against the window the count then gives.
"""

from __future__ import annotations

import numpy as np
import pytest

from encoders.problem import Problem
from gf01_formal.instances.families import FAMILIES
from gf01_formal.instances.generator import _reach
from gf01_formal.instances.measure import QuerySettings, measure_complexity, possible_windows
from gf01_formal.instances.problem import system_view
from gf01_formal.instances.traces import parse_effect
from hoa.label import evaluate_array
from solvers import api


def _cases(kind: str, params: dict, seeds: range):
    for seed in seeds:
        rng = np.random.Generator(np.random.PCG64(seed))
        fs = FAMILIES[kind](rng, params, float(rng.random()))
        view = fs.view if fs.view is not None else system_view(fs.system.spec())
        T = int(rng.integers(1, 13))
        trace = tuple(int(x) for x in rng.integers(0, 1 << view.num_inputs, size=T))
        t_star = int(rng.integers(0, T))
        yield view, trace, t_star, [parse_effect(e, view.outputs) for e in fs.effects]


@pytest.mark.parametrize(("kind", "params"), [("random_mealy", {"states": [3, 6], "inputs": 3, "outputs": 2}),
                                              ("random_mealy", {"inputs": [1, 4], "guard_density": 1.0}),
                                              ("counter", {}), ("arbiter", {})])
def test_reach_answers_what_the_oracle_answers(kind: str, params: dict) -> None:
    checked = one_step = empty = 0
    for view, trace, t_star, effects in _cases(kind, params, range(40)):
        reach = _reach(view, trace, t_star)
        assert reach is not None
        for effect in effects:
            for mode in ("hard", "normal"):
                problem = Problem(view, trace, effect, t_star, mode, 1)
                if api.suff(problem, ()):
                    continue  # the generator asks only about effects the base run does not show
                best = api.oracle(problem, None, "explicit")
                got = reach.one_step(effect, hard=mode == "hard")
                if got is not None:
                    one_step += 1
                    assert best is not None and (best.eff_t, best.eff_a) == got
                else:
                    assert best is None or best.eff_t >= 2
                if mode == "hard":
                    possible = bool(evaluate_array(effect, reach.shown).any())
                    empty += not possible
                    assert possible == (best is not None)
                checked += 1
    assert checked > 100 and one_step > 10
    assert empty > 5 or kind != "random_mealy"  # the real families' effects are all reachable here


def test_possible_windows_hold_the_window_the_count_gives() -> None:
    queries = QuerySettings("explicit", "forward", None, 200)
    seen = 0
    for view, trace, t_star, effects in _cases("random_mealy", {"states": [2, 8], "inputs": [1, 4]}, range(30)):
        for effect in effects[:3]:
            hard = Problem(view, trace, effect, t_star, "hard", 1, None)
            best = api.oracle(hard, None, "explicit")
            if best is None or api.suff(hard, ()):
                continue
            problem = Problem(view, trace, effect, t_star, "normal", 3, min(t_star + 1, best.eff_t + 1))
            windows = possible_windows(problem, queries, best.eff_t)
            assert measure_complexity(problem, queries, hard_eff_t=best.eff_t).window in windows
            assert len(windows) <= 2
            seen += 1
    assert seen > 20
