"""The executor suite of tests/executor_common.py once per kind that runs on this machine alone (Dask's, on a real
LocalCluster, is tests/test_campaign.py's)."""

from __future__ import annotations

from executor_common import Common

from gf01_formal.campaign import executors


class TestInline(Common):
    kind = "inline"


class TestThreads(Common):
    kind = "threads"


class TestLocalPool(Common):
    kind = "local"


def test_every_local_kind_is_tested() -> None:
    assert {c.kind for c in Common.__subclasses__()} == set(executors.KINDS) - {"dask"}
