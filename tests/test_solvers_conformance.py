"""The library-level check of a solver backend (solvers.conformance): silent on every backend of the dispatch
table, and loud, naming the query, on a backend that breaks the contract in one place."""

from __future__ import annotations

import types

import pytest

from solvers import api, explicit
from solvers.conformance import check_backend


@pytest.mark.parametrize("name", api.BACKENDS)
def test_every_backend_of_the_table_keeps_the_contract(name: str) -> None:
    # CUDD managers are costly to set up (about 0.2 s a query here): two random problems for it, six for the others.
    problems = 2 if name == "bdd" else 6
    assert [d.message for d in check_backend(api.backend(name), problems=problems)] == []


def _explicit_with(**overrides: object) -> types.SimpleNamespace:
    """The explicit backend with some queries replaced (a backend is any object with the contract's functions)."""
    queries = {q: getattr(explicit, q) for q in ("suff", "min1", "valid", "subset_min", "witness", "count",
                                                  "enumerate_certificates", "oracle", "best_match")}
    return types.SimpleNamespace(**{**queries, **overrides})


def test_a_backend_whose_min1_lies_is_reported_on_min1_and_check() -> None:
    def min1(problem, atoms, *, limits=None):  # Min1 confused with SubsetMin: wrong on the parity machine
        return explicit.subset_min(problem, atoms)

    found = check_backend(_explicit_with(min1=min1))
    assert found and {d.query for d in found} <= {"min1", "check"} and {"min1", "check"} <= {d.query for d in found}
    assert any("on the parity machine: expected" in d.message for d in found)
    assert "expected" in found[0].message and ", got " in found[0].message


def test_a_failing_or_misshapen_query_is_reported() -> None:
    def count(problem, budget_t, *, limits=None):
        raise RuntimeError("not implemented here")

    def oracle(problem, budget_t):  # no limits parameter: the signature differs, the query is not called
        return None

    found = check_backend(_explicit_with(count=count, oracle=oracle))
    assert {d.query for d in found} == {"count", "oracle"}
    assert any("RuntimeError: not implemented here" in d.message for d in found if d.query == "count")
    assert [d.message.split(":")[0] for d in found if d.query == "oracle"] == ["oracle"]
    assert all("the signature" in d.message for d in found if d.query == "oracle")
