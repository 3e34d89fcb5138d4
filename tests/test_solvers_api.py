"""The query front (solvers.api): default backends per query, limits passed through, dispatch errors."""

from __future__ import annotations

import dataclasses

import pytest
from backend_common import parity_problem
from brute import brute_valid_set

from hoa.errors import Gf01Error
from hoa.label import Var
from hoa.mealy import MealyEdge, MealyView
from solvers import api
from solvers.contract import QUERIES
from solvers.limits import Limits, Unknown


def test_every_query_has_a_default_backend_in_the_table() -> None:
    assert set(api.DEFAULT_BACKEND) == set(QUERIES)
    assert set(api.DEFAULT_BACKEND.values()) <= set(api.BACKENDS)


def test_default_backends_answer() -> None:
    p = parity_problem()
    gold = brute_valid_set(p, None)
    assert api.valid(p, [(0, 0, 1)]) and not api.subset_min(p, [(0, 0, 1), (0, 1, 1), (0, 2, 1)])
    assert api.count(p, None) == len(gold) and list(api.enumerate_certificates(p, None)) == gold
    assert api.witness(p, None) in gold and api.oracle(p, None).eff_a == 1
    assert api.best_match(p, [(0, 1, 1)], None).gold == ((0, 1, 1),)


def test_limits_reach_the_backend() -> None:
    with pytest.raises(Unknown):
        api.oracle(parity_problem(), None, "sat", limits=Limits(seconds=0.0))


def test_unknown_backend_and_too_wide_systems() -> None:
    p = parity_problem()
    with pytest.raises(Gf01Error, match="unknown backend 'nope'"):
        api.suff(p, [], "nope")
    wide = MealyView(tuple(f"i{k}" for k in range(21)), ("o",), ((MealyEdge(Var(21), 0),),))
    with pytest.raises(Gf01Error, match="oracle needs the dense Mealy tables"):
        api.oracle(dataclasses.replace(p, system=wide, trace=(0,)), None, "explicit")
