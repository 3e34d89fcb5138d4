"""bench/frontier.py's families: the random-labels machine's tables, computed from the draws, are the ones its HOA
text compiles to (the bench seeds the view with them), and a cell answers the forward count, or unknown under a
limit it cannot meet."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from hoa.mealy import MealyView
from hoa.parser import parse
from solvers import api, forward

ROOT = Path(__file__).resolve().parent.parent


def _frontier():
    spec = importlib.util.spec_from_file_location("frontier_bench", ROOT / "bench" / "frontier.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("frontier_bench", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(("seed", "inputs"), [(0, 1), (0, 4), (3, 6), (5, 11)])
def test_labels_tables_are_the_compiled_ones(seed: int, inputs: int) -> None:
    fr = _frontier()
    text, _, nxt, out = fr.labels_machine(seed, inputs)
    view = MealyView.from_automaton(parse(text)[0])
    got_nxt, got_out = view.tables
    assert np.array_equal(got_nxt, nxt)
    assert np.array_equal(got_out, out)


def test_labels_problem_counts_agree_with_bdd() -> None:
    fr = _frontier()
    problem = fr.family_problem(2, 3, 6, "labels")
    assert problem.t_star == 4 and problem.budget_t == 6
    assert forward.count(problem, problem.budget_t) == api.count(problem, problem.budget_t, "bdd")


def test_cell_reports_unknown_under_a_limit() -> None:
    fr = _frontier()
    got = fr.cell("count", 0, 64, 8, "forward", "labels", seconds=0.001)
    assert got["answer"].startswith("unknown"), got
    small = fr.cell("count", 0, 8, 3, "forward", "labels")
    problem = fr.family_problem(0, 3, 8, "labels")
    assert small["answer"] == str(forward.count(problem, problem.budget_t))
    assert small["cpu"] >= 0


@pytest.mark.parametrize(("seed", "inputs", "steps"), [(3, 2, 7), (0, 2, 8)])
def test_best_match_of_random_atoms_agrees_with_explicit(seed: int, inputs: int, steps: int) -> None:
    # The tie class's lowest digest, walked step by step as arrays, against the explicit backend's listing.
    fr = _frontier()
    problem = fr.family_problem(seed, inputs, steps, "labels")
    atoms = [(1, 0, 1), (3, 1, 0), (4, 0, 0), (5, 1, 1)]
    for budget in (None, 3):
        assert forward.best_match(problem, atoms, budget) == api.best_match(problem, atoms, budget, "explicit")
