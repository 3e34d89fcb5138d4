"""Parity of the three ways a scripted player can play GF-01: as an external agent (``--agent-cmd``), as a model
behind the ``llm`` agent, and as a model in the inspect_ai task (converted back with ``gf01 import inspect``).

The same action sequence, per instance, is played by each: the external agent reads it from a file; the local
OpenAI-compatible server (tests/llm_server.py) answers each step of a conversation with it, in varied reply
styles. The actions include an exact oracle certificate, an early commit, an unknown input, an action for the wrong
step and a no-op edit, so the three paths agree on refusals and scoring, not only on easy runs. The certificates,
scores and step logs must be identical; only the agent's metadata (spec, run id, usage, timing) may differ. An
action naming an unknown input is judged by the episode alike on every path: void, the agent's bad_action, none of
its edits committed (docs/agent-protocol.md). The model must also have seen the very same conversation through our
client and through inspect's.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from llm_server import Call, Reply, ScriptedServer, reply_for, step_of

from gf01_formal.agents import BUILTIN
from gf01_formal.agents.base import Agent, AgentSpec
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import instance_problem, load_set
from gf01_formal.play.protocol import Action, End, Observation, Start
from gf01_formal.runs.runner import play_run
from gf01_formal.runs.store import RunsFile
from gf01_formal.runs.validate import validate
from gf01_formal.scoring.scores import Scorer
from solvers import api

ROOT = Path(__file__).resolve().parent.parent
KEY_CLI = "sk-gf01-cli-91d2e7c04b8a"
KEY_INSPECT = "sk-gf01-inspect-3c5f0a9e17d6"
#: What may differ between the paths: who the agent was and what it spent.
AGENT_FIELDS = {"run_id", "agent_name", "agent_spec", "agent_hash", "agent_meta", "usage", "timing", "sandbox"}

AGENT_SCRIPT = '''\
"""A scripted external agent: plays the action list of each instance from a JSON file (gf01.agent.v1)."""
import json, sys
plans = json.load(open(sys.argv[1]))
plan, t = None, 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start":
        plan, t = plans[msg["instance_id"]], 0
    elif msg["type"] == "observation" and not msg["done"]:
        t = msg["t"] + 1
    elif msg["type"] == "end":
        break
    else:
        continue
    print(json.dumps(plan[t]), flush=True)
'''


class ScriptedAgent(Agent):
    """The same scripted player in process (what ``--agent-cmd`` runs, for a branch without the cmd adapter)."""

    def __init__(self, plans: dict[str, list[dict[str, Any]]]) -> None:
        self.plans = plans

    def start(self, message: Start) -> None:
        self.plan = self.plans[message.instance_id]

    def act(self, observation: Observation | None) -> Action:
        return Action.model_validate(self.plan[0 if observation is None else observation.t + 1])

    def end(self, message: End) -> None:
        pass

    def close(self) -> None:
        pass


def make_plans(bundle: Path) -> dict[str, list[dict[str, Any]]]:
    """Per instance, one action per step: the oracle's certificate, varied per instance (module docstring)."""
    out = {}
    for k, inst in enumerate(sorted(load_set(bundle).instances, key=lambda i: i.instance_id)):
        problem = instance_problem(inst)
        inputs = problem.system.inputs
        edits: dict[int, dict[str, int]] = {}
        for t, i, v in api.oracle(problem, problem.budget_t).certificate:
            edits.setdefault(t, {})[inputs[i]] = v
        plan: list[dict[str, Any]] = [{"set": dict(edits.get(t, {}))} for t in range(problem.horizon)]
        if k % 4 == 1:  # commit right after the last edit: the rest of the episode has no edits
            plan[max(edits, default=0)]["commit"] = True
        elif k % 4 == 2:  # an unknown input (the action is void), and an action for another step (refused)
            plan[0]["set"]["zz"] = 1
            plan[-1] = {"set": {inputs[0]: 1}, "t": 99}
        elif k % 4 == 3:  # an extra edit at step 0 (a no-op when the base trace has that value: not minimal)
            plan[0]["set"].setdefault(inputs[0], 0)
        out[inst.instance_id] = plan
    return out


def run(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LOCAL_"))}
    full |= {"PYTHONPATH": str(ROOT)} | env
    proc = subprocess.run(args, capture_output=True, text=True, env=full, cwd=cwd, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc


def records(path: Path) -> dict[str, dict[str, Any]]:
    return {r["instance_id"]: r for r in (json.loads(x) for x in path.read_text().splitlines())}


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, chat_bundle: Path) -> dict[str, Any]:
    """Play the bundle by the three paths (and the llm path again in process, one job) against one server."""
    tmp = tmp_path_factory.mktemp("parity")
    bundle = chat_bundle
    plans = make_plans(bundle)
    (tmp / "plans.json").write_text(json.dumps(plans))
    (tmp / "agent.py").write_text(AGENT_SCRIPT)
    out: dict[str, Any] = {"tmp": tmp, "bundle": bundle, "plans": plans, "outputs": ""}

    # 1. The external agent: through the cmd adapter when this tree has it, else the same player in process. The
    # harness runs in this process (the agent is a program either way; `gf01 evaluate --agent-cmd` as a process is
    # test_interrupt's and test_sandbox's): a gf01 interpreter less.
    cmd_runs = tmp / "cmd.jsonl"
    command = f"{sys.executable} {tmp / 'agent.py'} {tmp / 'plans.json'}"
    if "cmd" in BUILTIN:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert main(["evaluate", str(bundle), "--agent-cmd", command, "-o", str(cmd_runs)]) == 0
    else:
        art = load_set(bundle)
        store = RunsFile(cmd_runs)
        spec = AgentSpec("cmd", "EVAL-CB", {"cmd": command, "step_timeout": 30.0})
        for inst in art.instances:
            problem = instance_problem(inst)
            store.append(play_run(inst, problem, spec, seed=0, scorer=Scorer(problem), bundle_hash=art.instances_hash,
                                  build=lambda spec, access: ScriptedAgent(plans)))
    out["cmd"] = records(cmd_runs)

    first = min(plans)

    def script(call: Call) -> Reply:
        t = step_of(call)
        if call.instance_id == first and t == 1 and not call.last_user.startswith("Your last reply"):
            return Reply("Let me think about it first.")  # no action: both harnesses re-ask, the same way
        return Reply(reply_for(plans[call.instance_id][t], t))

    with ScriptedServer(script) as server:
        # 2. The llm agent, through the CLI, three episodes at a time.
        llm_runs = tmp / "llm.jsonl"
        proc = run([sys.executable, "-m", "gf01_formal", "evaluate", str(bundle), "--agent", "llm", "--model", "m",
                    "--base-url", server.url, "--jobs", "3", "-o", str(llm_runs)], {"OPENAI_API_KEY": KEY_CLI})
        out["outputs"] += proc.stdout + proc.stderr
        out["llm"] = records(llm_runs)
        # The same in process, one episode at a time (must not change a record).
        os.environ["OPENAI_API_KEY"] = KEY_CLI
        try:
            from gf01_formal.agents.llm import llm_spec

            evaluate(bundle, [llm_spec("m", base_url=server.url)], tmp / "llm-1.jsonl")
        finally:
            del os.environ["OPENAI_API_KEY"]
        out["llm1"] = records(tmp / "llm-1.jsonl")
        # 3. The inspect task, through inspect's CLI and its openai-api provider, then our converter; as the docs
        # write it, from the repository root with a bundle path relative to it (inspect runs the task elsewhere).
        logs = tmp / "logs"
        proc = run([sys.executable, "-m", "inspect_ai", "eval", "gf01_formal/integrations/inspect_task.py",
                    "-T", f"bundle={os.path.relpath(bundle, ROOT)}", "--model", "openai-api/local/m",
                    "--log-dir", str(logs), "--display", "none", "--max-connections", "4"],
                   {"LOCAL_BASE_URL": server.url, "LOCAL_API_KEY": KEY_INSPECT, "INSPECT_LOG_LEVEL": "warning",
                    "PWD": str(ROOT), "INSPECT_CACHE_DIR": str(tmp / "cache")})
        out["outputs"] += proc.stdout + proc.stderr
        requests = list(server.requests)
    (log,) = sorted(logs.glob("*.eval"))
    out["log"] = log
    inspect_runs = tmp / "inspect.jsonl"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # the command in process: inspect_ai is imported once
        assert main(["import", "inspect", str(log), "-o", str(inspect_runs)]) == 0
    out["outputs"] += printed.getvalue()
    out["import_stdout"] = printed.getvalue()
    out["inspect"] = records(inspect_runs)
    out["requests"] = requests
    return out


def test_every_path_gives_the_same_certificates_and_scores(played: dict[str, Any]) -> None:
    cmd, llm, insp = played["cmd"], played["llm"], played["inspect"]
    assert sorted(cmd) == sorted(llm) == sorted(insp) == sorted(played["plans"]) and len(cmd) == 4
    for iid in cmd:
        a, b, c = ({k: v for k, v in r[iid].items() if k not in AGENT_FIELDS} for r in (cmd, llm, insp))
        assert b == c, iid
        assert a == b, iid
        if any("zz" in action["set"] for action in played["plans"][iid]):  # one rule: the episode voids it
            assert a["steps"][0]["agent_error"]["kind"] == "bad_action" and a["steps"][0]["committed"] == []
            assert a["steps"][0]["refused"] == [] and "zz" in a["steps"][0]["submitted"]
        assert a["status"] == "completed" and a["steps"]
    assert {r["agent_name"] for r in cmd.values()} == {"cmd"}
    assert {r["sandbox"] for r in cmd.values()} == {"bwrap"} and all("sandbox" not in r for r in insp.values())
    assert {r["agent_name"] for r in insp.values()} == {"llm"}
    assert {r["agent_spec"]["params"]["harness"] for r in insp.values()} == {"inspect_ai"}
    # The plans exercise the engine: a certified run, an early commit, a void action and a wrong-step refusal.
    rows = list(cmd.values())
    assert any(r["score_c"] == 1 for r in rows)
    assert any(r["steps"][-1]["commit"] for r in rows)
    reasons = {x["reason"] for r in llm.values() for s in r["steps"] for x in s["refused"]}
    assert "wrong_step" in reasons and not {"unknown_input", "bad_value"} & reasons
    assert any(s["agent_error"] and s["agent_error"]["kind"] == "bad_action" for r in llm.values() for s in r["steps"])
    for name in ("cmd", "llm", "inspect"):
        assert validate([played["tmp"] / f"{name}.jsonl"], bundle=str(played["bundle"]), official=True) == []
    assert "(0 where the log's scores differ from the exact ones)" in played["import_stdout"]


def test_the_model_saw_the_same_conversation_through_both_harnesses(played: dict[str, Any]) -> None:
    tmp = played["tmp"]
    for iid, rec in played["llm"].items():
        mine = json.loads((Path(f"{tmp / 'llm.jsonl'}.d") / rec["agent_meta"]["transcript"]).read_text())
        other = played["inspect"][iid]
        theirs = json.loads((Path(f"{tmp / 'inspect.jsonl'}.d") / other["agent_meta"]["transcript"]).read_text())
        assert mine["messages"] == theirs["messages"] and len(mine["messages"]) > 3
        assert rec["usage"]["input_tokens"] == other["usage"]["input_tokens"]
        assert rec["usage"]["output_tokens"] == other["usage"]["output_tokens"]
        assert rec["usage"]["steps"] == other["usage"]["steps"]
        assert rec["usage"]["reasks"] == other["usage"]["reasks"] == (iid == min(played["plans"]))
        assert rec["agent_meta"]["model_seed"] == other["agent_meta"]["model_seed"]
        assert other["agent_meta"]["base_url_host"] == rec["agent_meta"]["base_url_host"]
    # Each harness asked each instance's model for the same seed, on every request.
    seeds: dict[tuple[str, str], set[int]] = defaultdict(set)
    for req in played["requests"]:
        start = next(m["content"] for m in req["body"]["messages"] if m["role"] == "user")
        iid = start.split('"instance_id":"')[1].split('"')[0]
        seeds[(req["headers"]["authorization"], iid)].add(req["body"].get("seed"))
    for iid in played["plans"]:
        assert seeds[(f"Bearer {KEY_CLI}", iid)] == seeds[(f"Bearer {KEY_INSPECT}", iid)]
        assert len(seeds[(f"Bearer {KEY_CLI}", iid)]) == 1


def test_jobs_do_not_change_the_llm_records(played: dict[str, Any]) -> None:
    def strip(recs: dict[str, Any]) -> dict[str, Any]:
        return {i: {k: v for k, v in r.items() if k != "timing"} for i, r in recs.items()}

    assert strip(played["llm"]) == strip(played["llm1"])


def test_the_inspect_log_is_readable_and_holds_our_exact_scores(played: dict[str, Any]) -> None:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(played["log"]))
    assert log.status == "success" and log.eval.task.endswith("gf01") and len(log.samples) == 4
    metrics = {s.name: s.metrics["mean"].value for s in log.results.scores}
    errors = {s.name: s.metrics["stderr"].value for s in log.results.scores}  # issue 31: a mean has its error
    recs = played["inspect"]
    for key in ("score_c", "goal", "eff_t", "eff_a", "ap_f1", "ts_f1"):
        values = [float(r[key]) for r in recs.values()]
        mean = sum(values) / len(values)
        assert metrics[key] == pytest.approx(mean)
        sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
        assert errors[key] == pytest.approx(sd / len(values) ** 0.5)
    for sample in log.samples:
        rec = recs[str(sample.id)]
        (score,) = sample.scores.values()
        assert score.value["score_c"] == rec["score_c"] and score.metadata["certificate"] == rec["certificate"]
        assert sample.store["gf01"]["certificate"] == rec["certificate"]
    # inspect's own summary reader (what `inspect view` lists) opens it too.
    from inspect_ai.log import read_eval_log_sample_summaries

    assert len(read_eval_log_sample_summaries(str(played["log"]))) == 4


def test_no_key_in_any_file_written(played: dict[str, Any]) -> None:
    files = [p for p in played["tmp"].rglob("*") if p.is_file()]
    assert any(p.suffix == ".eval" for p in files) and any("transcripts" in p.parts for p in files)
    for path in files:
        data = path.read_bytes()
        if path.suffix == ".eval":  # a zip archive: look inside its members too
            import zipfile

            with zipfile.ZipFile(path) as z:
                data += b"".join(z.read(n) for n in z.namelist())
        for key in (KEY_CLI, KEY_INSPECT):
            assert key.encode() not in data, path
    assert KEY_CLI not in played["outputs"] and KEY_INSPECT not in played["outputs"]
    assert {r["headers"]["authorization"] for r in played["requests"]} == {f"Bearer {KEY_CLI}",
                                                                            f"Bearer {KEY_INSPECT}"}


def test_import_inspect_refuses_what_is_not_a_gf01_log(played: dict[str, Any], tmp_path: Path, capsys) -> None:
    for target, needle in ((played["bundle"], "not an inspect eval log"),
                           (tmp_path / "none.eval", "No such file")):
        assert main(["import", "inspect", str(target), "-o", str(tmp_path / "x.jsonl")]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert not (tmp_path / "x.jsonl").exists()


@pytest.fixture(scope="module")
def failed_and_cached(played: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One more ``inspect eval`` of two samples, with ``--cache``, against a server that fails the first (a 400,
    not retried) and answers the second as the played fixture's server did: the failed sample's record is
    test_an_inspect_sample_the_provider_failed_is_a_provider_error's, the requests for the second are
    test_the_inspect_task_asks_the_model_every_time_never_inspects_cache's (one inspect process for both: its
    start-up is most of its time)."""
    tmp = tmp_path_factory.mktemp("failed-and-cached")
    bundle, plans = played["bundle"], played["plans"]
    bad, good = sorted(plans)[:2]  # good: not the fixture's re-asked instance (min), its conversation the plain one

    def script(call: Call) -> Reply:
        if call.instance_id == bad:
            return Reply(status=400)  # inspect does not retry it: the sample ends with an error
        return Reply(reply_for(plans[call.instance_id][step_of(call)], step_of(call)))  # the fixture's replies

    with ScriptedServer(script) as server:
        run([sys.executable, "-m", "inspect_ai", "eval", "gf01_formal/integrations/inspect_task.py",
             "-T", f"bundle={bundle}", "--model", "openai-api/local/m", "--log-dir", str(tmp / "logs"),
             "--display", "none", "--sample-id", f"{bad},{good}", "--sample-shuffle", "false",
             "--no-fail-on-error", "--retry-on-error", "0", "--cache"],
            {"LOCAL_BASE_URL": server.url, "LOCAL_API_KEY": KEY_INSPECT, "INSPECT_LOG_LEVEL": "error",
             "INSPECT_CACHE_DIR": str(tmp / "cache")})
        requests = list(server.requests)
    return {"tmp": tmp, "bad": bad, "good": good, "requests": requests}


def asked_about(requests: list[dict[str, Any]], iid: str) -> int:
    """How many of ``requests`` (the inspect task's, by its key) ask about instance ``iid``."""
    return sum(1 for req in requests if req["headers"]["authorization"] == f"Bearer {KEY_INSPECT}"
               and f'"instance_id":"{iid}"' in next(m["content"] for m in req["body"]["messages"]
                                                     if m["role"] == "user"))


def test_an_inspect_sample_the_provider_failed_is_a_provider_error(played: dict[str, Any],
                                                                    failed_and_cached: dict[str, Any],
                                                                    tmp_path: Path) -> None:
    bundle = played["bundle"]
    bad, good = failed_and_cached["bad"], failed_and_cached["good"]
    (log,) = sorted((failed_and_cached["tmp"] / "logs").glob("*.eval"))
    out = tmp_path / "runs.jsonl"
    assert main(["import", "inspect", str(log), "-o", str(out)]) == 0
    recs = records(out)
    assert recs[bad]["status"] == "provider_error" and "400" in recs[bad]["error"] and recs[bad]["score_c"] is None
    # The failed run keeps what the harness's own records keep: the time of the step that failed, and the
    # transcript written beside the records, referenced by its hash.
    assert len(recs[bad]["timing"]["step_ms"]) == 1 and recs[bad]["timing"]["total_ms"] > 0
    assert recs[bad]["usage"]["calls"] == 1  # requests made, as --agent llm counts them: this one got no reply
    transcript = Path(f"{out}.d") / recs[bad]["agent_meta"]["transcript"]
    assert hashlib.sha256(transcript.read_bytes()).hexdigest() == recs[bad]["agent_meta"]["transcript_sha256"]
    assert recs[good]["status"] == "completed"
    assert {k: v for k, v in recs[good].items() if k not in AGENT_FIELDS} == \
        {k: v for k, v in played["inspect"][good].items() if k not in AGENT_FIELDS}
    assert validate([out], bundle=str(bundle)) == []
    assert "status" in {v.field for v in validate([out], bundle=str(bundle), official=True)}


def test_the_inspect_task_takes_a_limit(played: dict[str, Any]) -> None:
    from gf01_formal.integrations.inspect_task import gf01
    from hoa.errors import Gf01Error

    bundle = str(played["bundle"])
    every = sorted(played["plans"])
    task = gf01(bundle, limit=2)
    ids = [str(s.id) for s in task.dataset]
    assert len(ids) == 2 and set(ids) <= set(every) and len(list(gf01(bundle).dataset)) == len(every)
    with pytest.raises(Gf01Error, match="limit"):
        gf01(bundle, limit=0)


def test_the_inspect_task_asks_the_model_every_time_never_inspects_cache(played: dict[str, Any],
                                                                          failed_and_cached: dict[str, Any]) -> None:
    # inspect's CLI keeps model replies in a cache keyed by the endpoint, the model and the conversation: a second
    # eval against the same server would replay the first one's replies as new runs (and, with a port reused by
    # another server, another server's replies). The task asks the model at every step, with or without --cache.
    # Without: the played fixture's eval (its requests for this sample counted, its cache directory kept empty);
    # with: failed_and_cached's eval of this sample (with --cache), the same conversation, as many requests.
    iid = failed_and_cached["good"]
    without = asked_about(played["requests"], iid)
    asked = asked_about(failed_and_cached["requests"], iid)
    assert without > 0 and asked == without
    for cache in (played["tmp"] / "cache", failed_and_cached["tmp"] / "cache"):  # nothing kept for a later eval
        assert not [p for p in cache.rglob("*") if p.is_file()], cache
