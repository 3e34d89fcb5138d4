"""The executor suite of tests/executor_common.py once per kind that runs on this machine alone (Dask's, on a real
LocalCluster, is tests/test_campaign.py's)."""

from __future__ import annotations

import pytest
from executor_common import Common

from gf01_formal.campaign import executors

KINDS = ("inline", "threads", "local")


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class TestExecutor(Common):
    pass


def test_every_local_kind_is_tested() -> None:
    assert set(KINDS) == set(executors.KINDS) - {"dask"}
