"""The agent suite of tests/agent_common.py once per agent the registry builds without a model endpoint (the llm
agent's is tests/test_llm.py's, against a scripted server); ``cmd`` plays examples/agent_example.py."""

from __future__ import annotations

from agent_common import EXAMPLE, Common

from gf01_formal import agents


class TestRandom(Common):
    name = "random"


class TestGreedy(Common):
    name = "greedy"


class TestSearch(Common):
    name = "search"


class TestTool(Common):
    name = "tool"


class TestOracle(Common):
    name = "oracle"


class TestCmd(Common):
    name = "cmd"
    params = {"cmd": EXAMPLE, "step_timeout": 30.0}  # noqa: RUF012 - read only


def test_every_agent_but_llm_is_tested() -> None:
    assert {c.name for c in Common.__subclasses__()} == set(agents.BUILTIN) - {"llm"}
