"""The tool results' schema (issue 31): ``agent_tool_result.v1.json`` states every field of every tool's answer, and
the answers the harness gives validate against it (a result with another field, or a field of the wrong type, does
not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from gf01_formal.agents.planner import Planner
from gf01_formal.agents.tools import OracleSearch, TrackTools
from gf01_formal.instances.sources import open_instance
from gf01_formal.play.protocol import ToolResult

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = str(ROOT / "gf01_formal" / "examples" / "arbiter_priority.json")


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = ToolResult.model_json_schema()
    Draft202012Validator.check_schema(schema)
    assert schema == json.loads((ROOT / "docs" / "schemas" / "agent_tool_result.v1.json").read_text())
    return Draft202012Validator(schema)


def answers() -> list[tuple[str, dict]]:
    _, problem = open_instance(INSTANCE, None, None)
    planner = TrackTools(planner=Planner(problem, max_queries=2))
    oracle = TrackTools(oracle=OracleSearch(problem, max_queries=3))
    return [("local-planner-v1", planner.call("local-planner-v1", [[20, "r2", 1]])),
            ("local-planner-v1", planner.call("local-planner-v1", [[0, "nope", 1]])),
            ("local-planner-v1", planner.call("local-planner-v1", [])),  # past the budget
            ("oracle-exact-search-v1", oracle.call("oracle-exact-search-v1", [[20, "r2", 1], [21, "r2", 1]])),
            ("oracle-exact-search-v1", oracle.call("oracle-exact-search-v1", None))]


def test_every_answer_of_every_tool_fits_the_schema(validator: Draft202012Validator) -> None:
    got = answers()
    kinds = {frozenset(a) for _, a in got}
    assert {"outputs", "effect", "queries_left"} in kinds and {"suff", "min1", "valid", "queries_left"} in kinds
    assert {"certificate", "eff_t", "eff_a", "queries_left"} in kinds and {"error", "queries_left"} in kinds
    for tool, answer in got:
        message = ToolResult(tool=tool, result=answer).model_dump(mode="json")
        assert list(validator.iter_errors(message)) == [], (tool, answer)


@pytest.mark.parametrize("result", [
    {"suff": True, "min1": True, "valid": True, "queries_left": 3, "gold": [[1, "r0", 1]]},
    {"suff": "yes", "min1": True, "valid": True, "queries_left": 3},
    {"outputs": [{"g0": 2}], "effect": True, "queries_left": 1},
    {"certificate": [[0, "r0", 1]], "eff_t": 1, "queries_left": 1},
    {"queries_left": 1},
])
def test_a_result_of_another_shape_does_not(validator: Draft202012Validator, result: dict) -> None:
    assert list(validator.iter_errors({"type": "tool_result", "tool": "t", "result": result}))
