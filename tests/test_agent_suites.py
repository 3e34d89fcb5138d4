"""The agent suite of tests/agent_common.py once per agent the registry builds without a model endpoint (the llm
agent's is tests/test_llm.py's, against a scripted server); ``cmd`` plays examples/agent_example.py."""

from __future__ import annotations

import pytest
from agent_common import EXAMPLE, Common

from gf01_formal import agents
from gf01_formal.agents.base import AgentSpec

PARAMS = {"random": {}, "greedy": {}, "search": {}, "tool": {}, "oracle": {},
          "cmd": {"cmd": EXAMPLE, "step_timeout": 30.0}}


@pytest.fixture(params=sorted(PARAMS))
def spec(request: pytest.FixtureRequest) -> AgentSpec:
    return AgentSpec(request.param, agents.default_track(request.param), PARAMS[request.param])


class TestAgent(Common):
    pass


def test_every_agent_but_llm_is_tested() -> None:
    assert set(PARAMS) == set(agents.BUILTIN) - {"llm"}
