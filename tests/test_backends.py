"""The contract suite of ``tests/backend_common.py`` once per backend of the dispatch table, on table systems and on
their circuit twins."""

from __future__ import annotations

import pytest
from backend_common import Common

from hoa.errors import Gf01Error
from solvers import api


class TestForward(Common):
    name = "forward"


class TestExplicit(Common):
    name = "explicit"


class TestSat(Common):
    name = "sat"


class TestBddCudd(Common):
    name = "bdd"


class TestBddAutoref(Common):
    name = "bdd-autoref"


class TestForwardCircuit(Common):
    name, circuit = "forward", True


class TestExplicitCircuit(Common):
    name, circuit = "explicit", True


class TestSatCircuit(Common):
    name, circuit = "sat", True


class TestBddCuddCircuit(Common):
    name, circuit = "bdd", True


class TestBddAutorefCircuit(Common):
    name, circuit = "bdd-autoref", True


def test_every_backend_of_the_table_is_tested() -> None:
    for circuit in (False, True):
        tested = {cls.name for cls in Common.__subclasses__() if cls.circuit == circuit}
        assert tested == set(api.BACKENDS)


def test_an_unknown_backend_is_a_user_error() -> None:
    with pytest.raises(Gf01Error, match="unknown backend 'nope'"):
        api.backend("nope")
