"""Scoring's gold set (issue 29 item 5, issue 33 item 3): listing a gold set is never much slower than counting it,
and the scorer answers each run's best match by the cheaper exact route (docs/solvers.md, "Scoring: listing or the
symbolic best match"), with the same results either way.

Costs are held by events, not by time: the number of forward passes a query runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gf01_formal.instances.sources import InstanceOptions, open_instance
from gf01_formal.scoring.scores import Scorer
from solvers import api
from solvers.forward import Forward

EXAMPLES = Path(__file__).resolve().parent.parent / "gf01_formal" / "examples"


@pytest.fixture()
def passes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The forward passes run while the test runs, counted; past 12 the test stops (a runaway runs one per step)."""
    ran = [0]
    real = Forward.run

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        ran[0] += 1
        assert ran[0] <= 12, "more than 12 forward passes"
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Forward, "run", counted)
    yield ran


def long_arbiter(steps: int = 800):  # type: ignore[no-untyped-def]
    """The bundled round-robin arbiter left idle for ``steps`` steps, effect g0 at the last: |M(I)| = 1 (request r0
    at the last step)."""
    options = InstanceOptions(trace=";".join(["!r0&!r1"] * steps), effect="g0")
    return open_instance(EXAMPLES / "arbiter.hoa", None, options)[1]


def test_listing_a_gold_set_of_one_member_costs_about_a_count(passes: list[int]) -> None:
    problem = long_arbiter()
    assert api.count(problem, None) == 1
    counted = passes[0]
    golds = Scorer(problem).gold_set()
    assert golds == [((799, 0, 1),)]
    # The count, then layers |TS| = 0 and 1: not one pass per empty layer after the last member (800 of them).
    assert passes[0] - counted <= 4 * counted
