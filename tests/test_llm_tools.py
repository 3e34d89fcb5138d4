"""The LLM agent on EVAL-TA and EVAL-OC (DEC-053): its track's tool offered as an OpenAI function, the model's tool
calls answered as ``tool`` messages against the scripted OpenAI-compatible server, every call in the run's tool log
(validate --official recomputes its hash); a tool call on EVAL-CB is an agent error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import Call, Reply, ScriptedServer, step_of

from gf01_formal.cli import main

ROOT = Path(__file__).resolve().parent.parent
#: A horizon-5 instance of the check bundle (inputs d and en, certified): one planner call per step is 10 model
#: requests a run, where the 30-step arbiter made 60 (each through the whole client, or inspect's, and the planner).
SHORT = "gf01f-ae4cbf17def1ee38"
FIRST_INPUT = "d"


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> str:
    """:data:`SHORT` alone, as a bundle of one instance (each evaluation plays one run)."""
    out = tmp_path_factory.mktemp("tools") / "short.json"
    assert main(["bundle", "subset", str(ROOT / "gf01_formal" / "examples" / "check_bundle.json"), "--ids", SHORT,
                 "-o", str(out)]) == 0
    return str(out)


def after_tool(call: Call) -> list[dict]:
    """The tool messages sent since the last user message (the answers to this step's tool calls)."""
    last_user = max(i for i, m in enumerate(call.messages) if m.get("role") == "user")
    return [m for m in call.messages[last_user:] if m.get("role") == "tool"]


def planner_script(call: Call) -> Reply:
    t = step_of(call)
    if not after_tool(call):  # first ask the planner about an edit at this step, then act
        return Reply(tool_calls=(("local-planner-v1", {"atoms": [[t, FIRST_INPUT, 1]]}),))
    answer = json.loads(after_tool(call)[-1]["content"])
    assert set(answer) == {"outputs", "effect", "queries_left"}
    return Reply('{"set": {}}')


def oracle_script(call: Call) -> Reply:
    t = step_of(call)
    tools = [m for m in call.messages if m.get("role") == "tool"]
    if not tools:  # once, at step 0: the oracle's certificate
        return Reply(tool_calls=(("oracle-exact-search-v1", {"atoms": None}),))
    cert = json.loads(tools[0]["content"])["certificate"]
    return Reply(json.dumps({"set": {a: v for s, a, v in cert if s == t}}))


def evaluate(instance: str, tmp: Path, server: ScriptedServer, track: str) -> tuple[dict, Path]:
    runs = tmp / f"{track}.jsonl"
    assert main(["evaluate", instance, "--agent", "llm", "--model", "m", "--base-url", server.url, "--track", track,
                 "-o", str(runs)]) in (0, 1)
    (line,) = runs.read_text().splitlines()
    return json.loads(line), runs


def test_the_llm_calls_the_planner_on_eval_ta(instance: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-tools")
    with ScriptedServer(planner_script) as server:
        rec, runs = evaluate(instance, tmp_path, server, "EVAL-TA")
        bodies = [r["body"] for r in server.requests]
    assert rec["status"] == "completed" and rec["eval_track"] == "EVAL-TA"
    assert rec["tool_allowlist_id"] == "local-planner-v1"
    assert all(b["tools"][0]["function"]["name"] == "local-planner-v1" for b in bodies)
    horizon = len(rec["steps"])
    log = (Path(f"{runs}.d") / "tool-logs" / f"{rec['tool_log_hash']}.jsonl").read_text().splitlines()
    calls = [json.loads(x) for x in log[1:]]
    assert [c["query"] for c in calls] == [[[t, FIRST_INPUT, 1]] for t in range(horizon)]  # one call per step, in order
    transcript = json.loads((Path(f"{runs}.d") / rec["agent_meta"]["transcript"]).read_text())
    assert sum(m["role"] == "tool" for m in transcript["messages"]) == horizon
    assert rec["usage"]["calls"] == 2 * horizon  # each step: the tool call, then the action
    assert main(["validate", str(runs), "--bundle", instance, "--official"]) == 0


def test_the_llm_calls_the_oracle_on_eval_oc(instance: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-tools")
    with ScriptedServer(oracle_script) as server:
        rec, runs = evaluate(instance, tmp_path, server, "EVAL-OC")
    assert rec["status"] == "completed" and rec["score_c"] == 1
    assert main(["validate", str(runs), "--bundle", instance, "--official"]) == 0


def test_a_tool_call_on_eval_cb_is_an_agent_error(instance: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-tools")
    with ScriptedServer(planner_script) as server:
        rec, _ = evaluate(instance, tmp_path, server, "EVAL-CB")
        assert all("tools" not in r["body"] for r in server.requests)  # nothing offered on EVAL-CB
    assert rec["status"] == "agent_error" and rec["error"].startswith("tool_denied")
    assert rec["tool_log_hash"] == "" and rec["tool_allowlist_id"] == "none"


# inspect_ai's retry set-up warns of its tenacity call at every model request when run in process (its own code).
@pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")
def test_the_inspect_task_runs_on_eval_ta(instance: str, tmp_path: Path) -> None:
    """The inspect task on EVAL-TA, run in this process through inspect's Python API (as tests/test_runs_spine.py
    does): the task as `inspect eval` runs it from its file, command line and all, is tests/test_inspect.py's."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from gf01_formal.integrations.inspect_task import gf01

    with ScriptedServer(planner_script) as server:
        model = get_model("openai-api/local/m", base_url=server.url, api_key="sk-test-inspect")
        (done,) = inspect_eval(gf01(bundle=instance, track="EVAL-TA"), model=model, log_dir=str(tmp_path / "logs"),
                               display="none", log_level="warning")
        assert done.status == "success", done.error
        bodies = [r["body"] for r in server.requests]
    assert bodies and all(b["tools"][0]["function"]["name"] == "local-planner-v1" for b in bodies)
    (log,) = sorted((tmp_path / "logs").glob("*.eval"))
    runs = tmp_path / "inspect.jsonl"
    assert main(["import", "inspect", str(log), "-o", str(runs)]) == 0
    (line,) = runs.read_text().splitlines()
    rec = json.loads(line)
    assert rec["status"] == "completed" and rec["eval_track"] == "EVAL-TA"
    assert rec["tool_allowlist_id"] == "local-planner-v1" and rec["agent_spec"]["track"] == "EVAL-TA"
    calls = (Path(f"{runs}.d") / "tool-logs" / f"{rec['tool_log_hash']}.jsonl").read_text().splitlines()[1:]
    assert len(calls) == len(rec["steps"])  # one planner call per step
    assert main(["validate", str(runs), "--bundle", instance, "--official"]) == 0
