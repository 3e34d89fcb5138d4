"""Every track for external programs (DEC-053, docs/agent-protocol.md "Tools"): on EVAL-TA a program calls
local-planner-v1 and on EVAL-OC oracle-exact-search-v1 through tool lines; its records pass validate --official
with the tool log, and a tampered log fails it; asking for a tool on EVAL-CB (or another track's tool) is an agent
error answered by nothing; gf01 play takes --track."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gf01_formal.cli import main

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = str(ROOT / "gf01_formal" / "examples" / "arbiter_priority.json")
AGENT = f"{sys.executable} {ROOT / 'tests' / 'track_agent.py'}"


def play(tmp: Path, track: str, agent: str = AGENT) -> tuple[dict, Path]:
    runs = tmp / f"{track}.jsonl"
    assert main(["evaluate", INSTANCE, "--agent-cmd", agent, "--track", track, "-o", str(runs)]) in (0, 1)
    (line,) = runs.read_text().splitlines()
    return json.loads(line), runs


def log_lines(runs: Path, record: dict) -> list[dict]:
    path = Path(f"{runs}.d") / "tool-logs" / f"{record['tool_log_hash']}.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_on_eval_ta_the_program_calls_the_planner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec, runs = play(tmp_path, "EVAL-TA")
    assert rec["status"] == "completed" and rec["tool_allowlist_id"] == "local-planner-v1"
    header, call = log_lines(runs, rec)
    assert header == {"max_queries": 256, "tool": "local-planner-v1"}
    assert call["tool"] == "local-planner-v1" and call["query"] == [[0, "r0", 1]]
    # The planner shows the outputs of the run with the edits, the effect and the queries left: nothing else.
    assert set(call["answer"]) == {"outputs", "effect", "queries_left"} and call["answer"]["queries_left"] == 255
    assert main(["validate", str(runs), "--bundle", INSTANCE, "--official"]) == 0


def test_on_eval_oc_the_program_calls_the_oracle_and_certifies(tmp_path: Path) -> None:
    rec, runs = play(tmp_path, "EVAL-OC")
    assert rec["status"] == "completed" and rec["score_c"] == 1 and rec["tool_allowlist_id"] == "oracle-exact-search-v1"
    header, first, second = log_lines(runs, rec)
    assert header["tool"] == "oracle-exact-search-v1" and first["query"] is None
    assert first["answer"]["certificate"] == rec["certificate"]
    assert second["answer"] | {"queries_left": 0} == {"suff": True, "min1": True, "valid": True, "queries_left": 0}
    assert main(["validate", str(runs), "--bundle", INSTANCE, "--official"]) == 0


@pytest.mark.parametrize("track", ["EVAL-TA", "EVAL-OC"])
def test_a_tampered_or_missing_tool_log_fails_validate_official(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               track: str) -> None:
    rec, runs = play(tmp_path, track)
    log = Path(f"{runs}.d") / "tool-logs" / f"{rec['tool_log_hash']}.jsonl"
    log.write_text(log.read_text().replace('"call":0', '"call":7'))
    capsys.readouterr()
    assert main(["validate", str(runs), "--bundle", INSTANCE, "--official"]) == 2
    assert "does not hash to it" in capsys.readouterr().out
    log.unlink()
    assert main(["validate", str(runs), "--bundle", INSTANCE, "--official"]) == 2
    assert f"the tool log tool-logs/{log.name} is not in" in capsys.readouterr().out


@pytest.mark.parametrize(("track", "tool"), [("EVAL-CB", "local-planner-v1"), ("EVAL-CB", "oracle-exact-search-v1"),
                                             ("EVAL-TA", "oracle-exact-search-v1"),
                                             ("EVAL-OC", "local-planner-v1")])
def test_a_tool_the_track_does_not_allow_is_an_agent_error(tmp_path: Path, track: str, tool: str) -> None:
    rec, runs = play(tmp_path, track, f"{AGENT} {tool}")
    assert rec["status"] == "agent_error" and rec["error"].startswith(f"tool_denied: asked for tool '{tool}'")
    assert rec["certificate"] == [] and all(s["agent_error"]["kind"] == "tool_denied" for s in rec["steps"][:1])
    if track == "EVAL-CB":  # answered by nothing: no tool log at all
        assert rec["tool_log_hash"] == "" and not Path(f"{runs}.d").exists()
    else:  # the track's own log holds no call
        assert len(log_lines(runs, rec)) == 1
    assert main(["validate", str(runs), "--bundle", INSTANCE, "--official"]) == 0


def test_play_takes_the_track(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", INSTANCE, "--agent-cmd", AGENT, "--track", "EVAL-OC", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["eval_track"] == "EVAL-OC" and out["score_c"] == 1
    assert main(["play", INSTANCE, "--agent", "random", "--track", "EVAL-TA"]) == 2
    assert "plays on EVAL-CB, not EVAL-TA" in capsys.readouterr().err
    assert main(["play", INSTANCE, "--track", "EVAL-OC"]) == 2
    assert "--track is for --agent-cmd" in capsys.readouterr().err


def test_the_tool_messages_are_exported(tmp_path: Path) -> None:
    assert main(["export-schemas", str(tmp_path)]) == 0
    tool = json.loads((tmp_path / "agent_tool.v1.json").read_text())
    assert tool["properties"]["type"]["const"] == "tool"
    assert "tools" in json.loads((tmp_path / "agent_start.v1.json").read_text())["properties"]
    assert (tmp_path / "agent_tool_result.v1.json").is_file()


def test_budgets_are_answered_then_enforced() -> None:
    from gf01_formal.agents.base import AgentFault
    from gf01_formal.agents.planner import Planner
    from gf01_formal.agents.tools import OVER_BUDGET, OracleSearch, TrackTools
    from gf01_formal.instances.sources import open_instance

    _, problem = open_instance(INSTANCE, None, None)
    tools = TrackTools(planner=Planner(problem, max_queries=1))
    assert "outputs" in tools.call("local-planner-v1", [])
    assert tools.call("local-planner-v1", [])["error"].startswith("query budget of 1 calls spent")
    for _ in range(OVER_BUDGET - 1):
        tools.call("local-planner-v1", [])
    with pytest.raises(AgentFault, match="more than 17 tool calls"):
        tools.call("local-planner-v1", [])
    oracle = TrackTools(oracle=OracleSearch(problem))
    assert oracle.call("oracle-exact-search-v1", [[0, "nope", 1]])["error"]  # malformed: an answer, logged
    assert oracle.call("oracle-exact-search-v1", []) == {"suff": False, "min1": True, "valid": False,
                                                         "queries_left": 62}
    assert len(oracle.oracle.log) == 2  # type: ignore[union-attr]
