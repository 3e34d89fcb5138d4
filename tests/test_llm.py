"""The ``llm`` agent against a local OpenAI-compatible server (tests/llm_server.py) that answers from a script:
valid actions in several reply styles, garbage, a 429 then success, a hang past the timeout, a provider that keeps
failing, a refused key. The records must say what happened (tokens per step and in total, retries, re-asks, agent
errors, the transcript by hash), failures must be told apart by whose they are, and the key must appear in no file
written."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llm_server import STYLES, Call, Reply, ScriptedServer, reply_for, step_of

from gf01_formal.agents.llm import Backoff, check_base_url, llm_spec
from gf01_formal.agents.llm_prompt import Dialogue, ReplyError, drive, load_template, parse_reply
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import instance_problem, load_set
from gf01_formal.play.episode import Episode
from gf01_formal.play.protocol import Start, text
from gf01_formal.runs.validate import validate
from hoa.errors import Gf01Error
from solvers import api

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-gf01-test-7f3c9a1e5b2d4c6a8e0f"  # appears nowhere but in the environment of the runs
REASK = "Your last reply had no usable action"


@pytest.fixture(scope="module")
def bundle(chat_bundle: Path) -> Path:
    return chat_bundle


def plans(bundle: Path) -> dict[str, list[dict[str, Any]]]:
    """Per instance, one action per step: the exact oracle's certificate, played step by step."""
    out = {}
    for inst in load_set(bundle).instances:
        problem = instance_problem(inst)
        res = api.oracle(problem, problem.budget_t)
        edits: dict[int, dict[str, int]] = {}
        for t, i, v in res.certificate:
            edits.setdefault(t, {})[problem.system.inputs[i]] = v
        out[inst.instance_id] = [{"set": edits.get(t, {})} for t in range(problem.horizon)]
    return out


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()]


@contextlib.contextmanager
def _serving(monkeypatch: pytest.MonkeyPatch, script: Callable[[Call], Reply]) -> Iterator[tuple[ScriptedServer, Any]]:
    """A provider answering from ``script``, the key in the environment: the server and an llm agent's spec on it."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer(script) as server:
        yield server, llm_spec("m", base_url=server.url)


# -- the pure parts: the reply parser, the template, the backoff ---------------------------------------------------


@pytest.mark.parametrize("style", range(len(STYLES)))
def test_the_action_is_found_anywhere_in_a_reply(style: int) -> None:
    action = {"set": {"a": 1, "b": 0}, "commit": True}
    got = parse_reply(reply_for(action, style))
    assert got.set == {"a": 1, "b": 0} and got.commit is True


def test_the_last_valid_action_counts_and_bad_replies_say_why() -> None:
    assert parse_reply('{"set": {"a": 1}} on second thought {"set": {"a": 0}}').set == {"a": 0}
    assert parse_reply('{"set": {"a": 1}} then {"plan": "x"}').set == {"a": 1}  # a later non-action is skipped
    assert parse_reply('{"thought": {"set": {"a": 1}}}\n{"set": {}}').set == {}
    assert parse_reply('[{"set": {"a": 1}}]').set == {"a": 1}  # an object inside a list is found too
    for reply, kind, needle in [("no braces at all", "not_json", "no JSON object"),
                                ("{set: 1}", "not_json", "no JSON object"),
                                ('{"set": 5}', "bad_action", "set"),
                                ('{"set": {}, "extra": 1}', "bad_action", "extra"),
                                ("{" * 5000, "not_json", "no JSON object"),
                                ('["set"]', "not_json", "no JSON object")]:
        with pytest.raises(ReplyError) as err:
            parse_reply(reply)
        assert err.value.kind == kind and needle in err.value.message


def test_the_template_is_frozen_and_rendered_from_protocol_messages_only(bundle: Path) -> None:
    template = load_template()
    # gf01.prompt.v1 is released: its text never changes (a change is gf01.prompt.v2, a new file).
    assert template.id == "gf01.prompt.v1"
    assert template.sha256 == "a8a74992f8725868f4b3eccec9820340f0f8821074ff73f83cb114fa154b0fa6"
    inst = load_set(bundle).instances[0]
    episode = Episode(instance_problem(inst), inst.instance_id)
    start = Start(instance_id=inst.instance_id, goal=episode.reset())
    dialogue = Dialogue(template, start)
    seen: list[tuple[str, int]] = []

    def complete(kind: str, messages: list[dict[str, str]]) -> str:
        seen.append((kind, len(messages)))
        return "no idea" if kind == "action" else '{"set": {}}'

    action = drive(dialogue.turn(None), complete)
    assert action.set == {} and seen == [("action", 2), ("reask", 4)]
    observation = episode.step({})
    drive(dialogue.turn(observation), lambda kind, msgs: '{"set": {}}')
    system, first, *_ = dialogue.messages
    assert "GF-01" in system["content"] and '{"set": {"<input>": 0 or 1, ...}}' in system["content"]
    assert text(start) in first["content"] and text(observation) in dialogue.messages[-2]["content"]
    assert all("$" not in m["content"] for m in dialogue.messages)  # every placeholder filled
    # Nothing hidden is rendered: neither the system nor the base trace nor the oracle's certificate.
    hidden = inst.model_dump(mode="json")
    for secret in ("HOA:", "base_trace", "oracle_certificate", json.dumps(hidden["base_trace"][0]),
                   json.dumps(hidden["certification"]["oracle_certificate"], separators=(",", ":"))):
        assert not any(secret in m["content"] for m in dialogue.messages), secret
    with pytest.raises(Gf01Error, match="unknown prompt template"):
        load_template("gf01.prompt.v0")


def test_backoff_is_seeded_exponential_and_bounded() -> None:
    b = Backoff(retries=6, base=1.0, cap=5.0)

    def schedule(seed: int) -> list[float]:
        rng = np.random.Generator(np.random.PCG64(seed))
        return [b.delay(n, rng) for n in range(6)]

    assert schedule(3) == schedule(3) and schedule(3) != schedule(4)
    for n, d in enumerate(schedule(3)):
        assert min(5.0, 2.0**n) * 0.5 <= d < min(5.0, 2.0**n) + 1e-12
    rng = np.random.Generator(np.random.PCG64(0))
    assert b.delay(0, rng, retry_after=0.02) == 0.02 and b.delay(0, rng, retry_after=600) == 5.0


# -- the CLI against the scripted server --------------------------------------------------------------------------


def faulty(plan: dict[str, list[dict[str, Any]]]) -> Any:
    """Instance 0: a reply without usage, then a 429 (with Retry-After) before step 1; instance 1: garbage at step
    1, fixed after the re-ask; instance 2: garbage and a bad action at step 2 (an agent error); instance 3: a hang
    past the timeout at step 1, then the answer."""
    order = sorted(plan)

    def script(call: Call) -> Reply:
        k, t = order.index(call.instance_id), step_of(call)
        action, reask = plan[call.instance_id][t], call.last_user.startswith(REASK)
        if k == 0 and t == 0:
            return Reply(reply_for(action, t), usage=False)
        if k == 0 and t == 1 and call.attempt == 0:
            return Reply(status=429, headers={"retry-after-ms": "20"})
        if k == 1 and t == 1 and not reask:
            return Reply("I would rather not say.")
        if k == 2 and t == 2:
            return Reply('{"set": 5}' if reask else "{not json")
        if k == 3 and t == 1 and call.attempt == 0:
            return Reply(reply_for(action, t), delay=4.0, usage=False)  # the client gave up: nothing is charged
        return Reply(reply_for(action, t))

    return script


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"PYTHONPATH": str(ROOT)} | env
    return subprocess.run([sys.executable, "-m", "gf01_formal", *args], capture_output=True, text=True, env=full,
                          timeout=120, check=False)


def test_evaluate_records_tokens_retries_reasks_and_transcripts(bundle: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plans(bundle)
    order = sorted(plan)
    out = tmp_path / "runs.jsonl"
    with ScriptedServer(faulty(plan), model="scripted-1") as server:
        args = ["evaluate", str(bundle), "--agent", "llm", "--model", "m-test", "--base-url", server.url,
                "--api-key-env", "GF01_TEST_KEY", "--request-timeout", "1.5", "--temperature", "0",
                "--max-tokens", "64", "--jobs", "2", "-o", str(out)]
        proc = run_cli(args, {"GF01_TEST_KEY": KEY})
        assert proc.returncode == 0, proc.stderr
        # The same command again, in this process (the command line as a process is the run above): nothing to play.
        monkeypatch.setenv("GF01_TEST_KEY", KEY)
        capsys.readouterr()
        assert main(args) == 0
        again = capsys.readouterr()
        assert "0 runs played, 4 already done" in again.out
    assert "tokens: " in proc.stdout
    assert all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in server.requests)
    assert {r["body"]["temperature"] for r in server.requests} == {0} and {
        r["body"]["max_tokens"] for r in server.requests} == {64}
    recs = {r["instance_id"]: r for r in records(out)}
    assert sorted(recs) == order and {r["status"] for r in recs.values()} == {"completed"}
    template = load_template()
    for rec in recs.values():
        meta, usage = rec["agent_meta"], rec["usage"]
        assert rec["agent_spec"]["params"] == {"model": "m-test", "base_url": server.url,
                                               "api_key_env": "GF01_TEST_KEY", "temperature": 0.0,
                                               "max_tokens": 64, "request_timeout": 1.5,
                                               "prompt": "gf01.prompt.v1"}
        assert meta["model"] == "m-test" and meta["model_reported"] == "scripted-1"
        assert meta["base_url_host"] == server.url.split("/")[2]
        assert (meta["prompt_template"], meta["prompt_sha256"]) == (template.id, template.sha256)
        assert (rec["adaptation_condition"], rec["adaptation_budget_tokens"], rec["adaptation_data_scope"],
                rec["adaptation_protocol_id"]) == ("no_adaptation", 0, "none", "none")
        # Tokens: per step and in total, and the totals are the sums (unknown, null, where a reply had no usage).
        assert [s["t"] for s in usage["steps"]] == [s["t"] for s in rec["steps"]]
        for key in ("calls", "retries"):
            assert usage[key] == sum(s[key] for s in usage["steps"])
        for key in ("input_tokens", "output_tokens"):
            steps = [s[key] for s in usage["steps"]]
            assert usage[key] == (sum(steps) if usage["usage_reported"] else None)
            assert (None in steps) is (not usage["usage_reported"])
        assert usage["total_tokens"] == (usage["input_tokens"] + usage["output_tokens"] if usage["usage_reported"]
                                         else None)
        # The transcript: a side file whose name and content hash are the record's.
        side = Path(f"{out}.d") / meta["transcript"]
        assert hashlib.sha256(side.read_bytes()).hexdigest() == meta["transcript_sha256"]
        transcript = json.loads(side.read_text())
        roles = [m["role"] for m in transcript["messages"]]
        assert roles[:2] == ["system", "user"] and roles.count("assistant") == usage["calls"]
        assert transcript["prompt_sha256"] == template.sha256 and "timing" not in transcript
    # Every token the server charged is in the records' known steps, and nothing else.
    for key, charged in (("input_tokens", "input"), ("output_tokens", "output")):
        assert sum(s[key] or 0 for r in recs.values() for s in r["usage"]["steps"]) == server.charged[charged]
    r0, r1, r2, r3 = (recs[i] for i in order)
    assert r0["usage"]["usage_reported"] is False and r1["usage"]["usage_reported"] is True
    # Step 0 of instance 0 had a reply without usage: unknown, never 0; one warning for the whole run set.
    assert r0["usage"]["input_tokens"] is None and r0["usage"]["steps"][0]["input_tokens"] is None
    assert r0["usage"]["steps"][1]["input_tokens"] > 0
    assert proc.stderr.count("without token usage") == 1 and "unknown for 1 runs" in proc.stdout
    assert server.gets == ["/v1/models"] * 2  # one preflight request per evaluate
    assert r0["usage"]["retries"] == 1 and r0["usage"]["steps"][1]["retries"] == 1
    calls0 = json.loads((Path(f"{out}.d") / r0["agent_meta"]["transcript"]).read_text())["calls"]
    assert calls0[1]["errors"] == ["HTTP 429"]
    assert r3["usage"]["retries"] == 1
    calls3 = json.loads((Path(f"{out}.d") / r3["agent_meta"]["transcript"]).read_text())["calls"]
    assert calls3[1]["errors"] == ["timeout after 1.5 s"]
    # A re-ask that worked: no agent error, the planned action was played.
    assert r1["usage"]["reasks"] == 1 and r1["agent_errors"] == 0
    assert r1["steps"][1]["submitted"] == plan[order[1]][1]["set"]
    # Two unusable replies: an agent error on that step, which proceeds with no edit; the run is scored as played.
    assert r2["agent_errors"] == 1 and r2["steps"][2]["agent_error"]["kind"] == "bad_action"
    assert r2["steps"][2]["submitted"] == {} and r2["steps"][2]["committed"] == []
    assert r2["score_c"] is not None
    assert validate([out], bundle=str(bundle), official=True) == []
    # The key is in no file written and in no output.
    for path in files_under(tmp_path):
        assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in proc.stdout + proc.stderr + again.out + again.err


def test_a_failing_provider_is_never_scored_and_evaluate_plays_it_again(
        bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plans(bundle)
    order = sorted(plan)
    broken = {"on": True}

    def script(call: Call) -> Reply:
        k, t = order.index(call.instance_id), step_of(call)
        if broken["on"] and k == 1 and t == 2:
            return Reply(status=503, headers={"retry-after-ms": "1"})  # a provider down for good
        if k == 2 and t == 1 and call.attempt == 0:
            return Reply(status=400)  # refused once: not retried, not the model's fault
        return Reply(reply_for(plan[call.instance_id][t], t))

    out = tmp_path / "runs.jsonl"
    with _serving(monkeypatch, script) as (_, spec):
        first = evaluate(bundle, [spec], out)
        assert first.statuses == {"completed": 2, "provider_error": 2}
        recs = {r["instance_id"]: r for r in records(out)}
        down, refused = recs[order[1]], recs[order[2]]
        assert down["status"] == "provider_error" and "HTTP 503 (step 2, after 5 retries)" in down["error"]
        assert refused["status"] == "provider_error" and "HTTP 400" in refused["error"] \
            and "not retried" in refused["error"]
        for rec in (down, refused):
            assert rec["score_c"] is None and rec["certificate"] is None and rec["usage"]["calls"] >= 1
            # The partial transcript is kept as a side file, and the record points to it.
            assert (Path(f"{out}.d") / rec["agent_meta"]["transcript"]).exists(), rec["agent_meta"]
        assert down["usage"]["retries"] == 5
        # Latency of every step played, and of the step that failed (its retries and waits): a failed run took time.
        assert len(down["timing"]["step_ms"]) == 3 and len(refused["timing"]["step_ms"]) == 2
        for rec in (down, refused):
            assert rec["timing"]["total_ms"] == round(sum(rec["timing"]["step_ms"]), 3) > 0
        assert "status" in {v.field for v in validate([out], bundle=str(bundle), official=True)}
        broken["on"] = False
        second = evaluate(bundle, [spec], out)
    assert (second.played, second.skipped) == (2, 2) and second.statuses == {"completed": 2}
    assert validate([out], bundle=str(bundle), official=True) == []
    for path in files_under(tmp_path):
        assert KEY.encode() not in path.read_bytes(), path


HTML = "<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n<body>It works! {key}</body></html>\n"
CUT = '{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assis'


def test_a_malformed_200_is_the_providers_failure_and_keeps_what_was_spent(
        bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTP 200 that is no chat completion: an HTML page (a wrong base URL) fails at once, cut JSON or JSON of
    another shape is retried like a 503; a run that fails keeps its usage, transcript and latencies."""
    from gf01_formal.agents import llm

    plan = plans(bundle)
    order = sorted(plan)
    broken = {"on": True}

    def script(call: Call) -> Reply:
        k, t = order.index(call.instance_id), step_of(call)
        if broken["on"] and k == 0 and t == 1:  # a web page, served as what it is
            return Reply(raw=HTML.format(key=KEY), content_type="text/html; charset=utf-8")
        if broken["on"] and k == 1 and t == 0:  # a web page behind a JSON content type: the client's JSON fails
            return Reply(raw=HTML.format(key=""))
        if broken["on"] and k == 2 and t == 1:  # always cut short: retried, then the provider's failure
            return Reply(raw=CUT)
        if k == 3 and t == 2 and call.attempt == 0:
            return Reply(raw=CUT)
        if k == 3 and t == 2 and call.attempt == 1:  # a gateway's error inside a 200
            return Reply(raw=json.dumps({"error": {"message": "upstream overloaded"}}))
        return Reply(reply_for(plan[call.instance_id][t], t))

    slept: list[float] = []
    monkeypatch.setattr(llm, "time", type("Clock", (), {"sleep": staticmethod(slept.append)}))
    out = tmp_path / "runs.jsonl"
    with _serving(monkeypatch, script) as (server, spec):
        first = evaluate(bundle, [spec], out)
        assert first.statuses == {"completed": 1, "provider_error": 3}
        recs = {r["instance_id"]: r for r in records(out)}
        page, page_json, cut, healed = (recs[i] for i in order)
        for rec in (page, page_json):
            assert "HTML page" in rec["error"] and "not the API's base URL" in rec["error"] \
                and "not retried" in rec["error"] and rec["usage"]["retries"] == 0, rec["error"]
        assert "\n" not in page["error"] and "It works!" in page["error"]
        assert "cut or invalid JSON" in cut["error"] and "after 5 retries" in cut["error"]
        assert cut["usage"]["retries"] == 5 and len(slept) == 5 + 2
        for rec, played in ((page, 2), (page_json, 1), (cut, 2)):
            assert rec["score_c"] is None and rec["usage"]["calls"] == played, rec["usage"]
            assert len(rec["timing"]["step_ms"]) == played
            transcript = json.loads((Path(f"{out}.d") / rec["agent_meta"]["transcript"]).read_text())
            assert [c["reply"] is None for c in transcript["calls"]] == [False] * (played - 1) + [True]
            assert transcript["calls"][-1]["errors"]
        # The tokens of the replies before the failure are kept (page and cut played step 0).
        assert page["usage"]["input_tokens"] > 0 and cut["usage"]["steps"][0]["output_tokens"] > 0
        assert healed["status"] == "completed" and healed["usage"]["retries"] == 2
        calls = json.loads((Path(f"{out}.d") / healed["agent_meta"]["transcript"]).read_text())["calls"]
        assert calls[2]["errors"][0].startswith("a malformed response: cut or invalid JSON")
        assert "upstream overloaded" in calls[2]["errors"][1]
        assert sum(r["usage"]["input_tokens"] for r in recs.values()) == server.charged["input"]
        broken["on"] = False
        second = evaluate(bundle, [spec], out)
    assert (second.played, second.skipped) == (3, 1) and second.statuses == {"completed": 3}
    assert validate([out], bundle=str(bundle), official=True) == []
    for path in files_under(tmp_path):  # the page echoed the key: it is cut out of the error
        assert KEY.encode() not in path.read_bytes(), path


def test_evaluate_exits_1_and_says_so_when_runs_ended_provider_error(bundle: Path, tmp_path: Path, capsys,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "runs.jsonl"
    with ScriptedServer(lambda call: Reply(raw=HTML.format(key=""), content_type="text/html")) as server:
        args = ["evaluate", str(bundle), "--agent", "llm", "--model", "m", "--base-url", server.url, "-o", str(out)]
        args += ["--max-provider-failures", "4"]  # all four: the default would stop after two
        assert main(args) == 1
        captured = capsys.readouterr()
        assert main([*args, "--json"]) == 1
        again = capsys.readouterr()
    assert captured.err.strip().startswith("gf01: stopped: 4 runs in a row ended provider_error (the last: HTTP 200 "
                                           "with an HTML page")
    assert "status provider_error: 4" in captured.out
    assert json.loads(again.out)["statuses"] == {"provider_error": 4} and "4 runs in a row" in again.err
    assert [r["status"] for r in records(out)] == ["provider_error"] * 8


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_service_that_dies_after_the_preflight_stops_the_evaluation_and_a_resume_plays_the_rest(
        bundle: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, jobs: int) -> None:
    """The preflight passes, then every chat completion is a 503 (issue 31: 12 runs cost 304 s): after
    --max-provider-failures runs in a row the evaluation stops with one line and exit 1; the runs it did not play
    have no record, none is the agent's failure; once the service is back the same command plays the rest."""
    plan = plans(bundle)
    down = {"on": True}

    def script(call: Call) -> Reply:
        if down["on"]:
            return Reply(status=503, headers={"retry-after-ms": "1"})
        return Reply(reply_for(plan[call.instance_id][step_of(call)], step_of(call)))

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "runs.jsonl"
    with ScriptedServer(script) as server:
        args = ["evaluate", str(bundle), "--agent", "llm", "--model", "m", "--base-url", server.url, "-o", str(out),
                "--jobs", str(jobs)]
        assert main([*args, "--max-provider-failures", "2"]) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("gf01: stopped: 2 runs in a row ended provider_error")
        assert "HTTP 503" in err and "not played" in err
        first = records(out)
        assert [r["status"] for r in first] == ["provider_error"] * 2  # never agent_error, never scored
        assert all(r["score_c"] is None for r in first)
        down["on"] = False
        assert main(args) == 0
    done = records(out)[2:]
    assert sorted(r["instance_id"] for r in done) == sorted(plan) and {r["status"] for r in done} == {"completed"}
    assert validate([out], bundle=str(bundle), official=True) == []


def test_a_hanging_service_costs_each_run_its_request_timeouts_only(bundle: Path, tmp_path: Path, capsys,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A service that answers the preflight and then never answers: each request gives up after --request-timeout
    and is retried at once (no backoff on top of the wait), and the default --max-provider-failures (2) stops the
    evaluation."""
    from gf01_formal.cli.llm import DEFAULT_MAX_PROVIDER_FAILURES

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "runs.jsonl"
    slept: list[float] = []
    monkeypatch.setattr("gf01_formal.agents.llm.time", types.SimpleNamespace(sleep=slept.append))  # its only use
    with ScriptedServer(lambda call: Reply("{}", delay=30.0)) as server:
        assert main(["evaluate", str(bundle), "--agent", "llm", "--model", "m", "--base-url", server.url,
                     "--request-timeout", "0.3", "-o", str(out)]) == 1
    assert "stopped: 2 runs in a row" in capsys.readouterr().err
    recs = records(out)
    assert len(recs) == DEFAULT_MAX_PROVIDER_FAILURES and {r["status"] for r in recs} == {"provider_error"}
    for rec in recs:
        assert rec["usage"]["retries"] == 5 and "timeout after 0.3 s" in rec["error"]
    assert slept == []  # every wait was the request's own timeout


def test_a_refused_key_stops_the_evaluation_with_one_line(bundle: Path, tmp_path: Path, capsys,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "runs.jsonl"
    with ScriptedServer(lambda call: Reply(status=401)) as server:
        code = main(["evaluate", str(bundle), "--agent", "llm", "--model", "m", "--base-url", server.url,
                     "--jobs", "2", "-o", str(out)])  # raised in a worker thread, reported by the parent
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "refused the key in $OPENAI_API_KEY" in err
    assert KEY not in err and (not out.exists() or out.read_text() == "")


def test_an_unreachable_endpoint_is_one_line_naming_it_within_seconds(bundle: Path, tmp_path: Path, capsys,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "runs.jsonl"
    # Port 9 (discard) on loopback: nothing listens there, so the connection is refused at once.
    code = main(["evaluate", str(bundle), "--agent", "llm", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                 "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 2 and printed.out == ""
    assert printed.err.count("\n") == 1 and "cannot reach http://127.0.0.1:9/v1" in printed.err
    assert "preflight" in printed.err and not out.exists()


@pytest.mark.parametrize(("status", "needle"), [(401, "refused the key in $OPENAI_API_KEY"),
                                                (503, "answered HTTP 503")])
def test_a_refusing_endpoint_stops_before_the_first_run(bundle: Path, tmp_path: Path, capsys, status: int,
                                                        needle: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "runs.jsonl"
    with ScriptedServer(lambda call: Reply("{}"), models_status=status) as server:
        code = main(["evaluate", str(bundle), "--agent", "llm", "--model", "m", "--base-url", server.url,
                     "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and needle in err and server.url in err and KEY not in err
    assert server.requests == [] and not out.exists()  # no chat request, no record


@pytest.mark.parametrize("extra, env, needle", [
    (["--agent", "llm"], {"OPENAI_API_KEY": KEY}, "--model: --agent llm needs a model name"),
    (["--agent", "llm", "--model", "m"], {}, "OPENAI_API_KEY holds no API key"),
    (["--agent", "llm", "--model", "m", "--api-key-env", "GF01_NOPE"], {"OPENAI_API_KEY": KEY},
     "GF01_NOPE holds no API key"),
    (["--agent", "llm", "--model", "m"], {"OPENAI_API_KEY": "  "}, "holds no API key"),
    (["--agent", "llm", "--model", "m", "--base-url", "ftp://host/v1"], {"OPENAI_API_KEY": KEY}, "http(s) URL"),
    (["--agent", "llm", "--model", "m", "--base-url", "http:///v1"], {"OPENAI_API_KEY": KEY}, "with a host"),
    (["--agent", "llm", "--model", "m", "--base-url", "http://u:pw@host/v1"], {"OPENAI_API_KEY": KEY},
     "credentials"),
    (["--agent", "llm", "--model", "m", "--base-url", "http://host/v1?key=1"], {"OPENAI_API_KEY": KEY}, "query"),
    (["--agent", "llm", "--model", "m", "--base-url", "http://host:99999/v1"], {"OPENAI_API_KEY": KEY},
     "bad port"),
    (["--agent", "llm", "--model", "m"], {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "nonsense"}, "http(s) URL"),
    (["--agent", "random", "--model", "m"], {}, "--model: --model apply to --agent llm only"),
    (["--agent", "llm", "--model", "m", "--temperature", "3"], {"OPENAI_API_KEY": KEY}, "--temperature"),
])
def test_bad_llm_options_are_one_line_and_exit_2(bundle: Path, tmp_path: Path, capsys, monkeypatch, extra, env,
                                                 needle) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GF01_NOPE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "runs.jsonl"
    assert main(["evaluate", str(bundle), "-o", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and needle in err and "Traceback" not in err, err
    assert KEY not in err and not out.exists()


def test_base_urls_are_normalised_and_the_default_comes_from_the_environment() -> None:
    assert check_base_url(" http://127.0.0.1:8000/v1/ ") == "http://127.0.0.1:8000/v1"
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.2:8080/v1"}
    assert llm_spec("m", environ=env).params["base_url"] == "http://127.0.0.2:8080/v1"
    assert llm_spec("m", environ={"OPENAI_API_KEY": KEY}).params["base_url"] == "https://api.openai.com/v1"
    assert llm_spec("m", base_url="http://h/v1", environ=env).params["base_url"] == "http://h/v1"
    assert KEY not in json.dumps(llm_spec("m", environ=env).to_json())
