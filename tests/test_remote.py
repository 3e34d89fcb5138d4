"""Remote evaluation end to end on loopback (issue 32): a real ``gf01 eval serve`` (uvicorn on a free port) holding a
sealed split, and real participants: ``gf01 evaluate --remote`` processes playing the baseline panel and a sandboxed
external program on every track. The server's records pass ``gf01 validate --official --key``, every receipt is
verified, the leaderboard equals ``gf01 report``'s headline; a forged receipt, another team's episode, a bad, revoked
or over-quota token are refused; the wire leaks nothing (two instances differing only in hidden state give the same
bytes); a line sent twice is applied once; kill -9 of the server, or of a participant's harness, mid-campaign loses
and doubles no run.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from browser import Server
from bundles import SMALL
from waits import CEILING

from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import canonical_json, write_json_atomic
from gf01_formal.campaign.evaluate import Settings, evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import load_set, save_artifact
from gf01_formal.instances.model import make_bundle
from gf01_formal.remote.client import Connection, evaluate_remote, play_remote_run
from gf01_formal.remote.episodes import REOPENED
from gf01_formal.remote.tokens import TokenStore
from gf01_formal.runs.store import latest
from gf01_formal.scoring.values import PRF_FIELDS

ROOT = Path(__file__).resolve().parent.parent
PANEL = ("random", "greedy", "search", "tool", "oracle")

# A gf01.agent.v1 program that uses its track's tool: on EVAL-TA it asks the planner about the plain run, on EVAL-OC
# the oracle for its certificate (and plays it); otherwise it edits the first input at t* and commits there.
AGENT = r"""
import json, sys, time
delay = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
goal, plan = None, {}
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
def read():
    line = sys.stdin.readline()
    return json.loads(line) if line else None
while True:
    m = read()
    if m is None or m["type"] == "end":
        break
    if m["type"] == "start":
        goal, t = m["goal"], 0
        tools = m.get("tools") or []
        if "local-planner-v1" in tools:
            send({"type": "tool", "tool": "local-planner-v1", "atoms": []}); read()
        if "oracle-exact-search-v1" in tools:
            send({"type": "tool", "tool": "oracle-exact-search-v1", "atoms": None})
            for s, a, v in read()["result"]["certificate"] or []:
                plan.setdefault(s, {})[a] = v
    elif m["type"] == "observation":
        if m["done"]:
            continue
        t = m["t"] + 1
    time.sleep(delay)
    if plan:
        send({"set": plan.get(t, {}), "t": t})
    elif t == goal["t_star"]:
        send({"set": {goal["inputs"][0]: 1}, "commit": True, "t": t})
    else:
        send({"set": {}, "t": t})
"""


def gf01(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m gf01_formal ARGS`` of this checkout, as a user runs it."""
    proc = subprocess.run([sys.executable, "-m", "gf01_formal", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=900)
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``gf01 ARGS`` in this process (exit 0 asserted), its standard output: for commands whose result is what a
    test reads (test_refusals runs `gf01 eval receipt verify` as a process, as a user does)."""
    capsys.readouterr()
    assert main(list(args)) == 0, capsys.readouterr()
    return capsys.readouterr().out


class EvalServer(Server):
    """``gf01 eval serve`` of this checkout on 127.0.0.1 (a free port unless ``port``), stopped by Ctrl-C."""

    def __init__(self, args: list[str], port: int = 0) -> None:
        super().__init__(args)
        self.args = [sys.executable, "-m", "gf01_formal", "eval", "serve", "--host", "127.0.0.1", "--port", str(port),
                     *args]

    @property
    def port(self) -> int:
        return int(self.url.rstrip("/").rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A sealed split of a small bundle generated under a split key: keys, manifest, the private_eval bundle, tokens
    of three teams."""
    d = tmp_path_factory.mktemp("remote")
    # A fixed split key (test data only): the generated bundle, hence the split sizes, are the same on every run.
    (d / "split.key").write_text("b5aaad9b5f47a063fca3b83cc36fe3f51403eefc09d86ad493fce599a23c9ee8\n")
    os.chmod(d / "split.key", 0o600)
    assert main(["key", "new", "--kind", "signing", "-o", str(d / "sign.key")]) == 0
    (d / "cfg.json").write_text(json.dumps(SMALL))
    assert main(["generate", "--seed", "3", "--count", "10", "--cfg", str(d / "cfg.json"), "--key-file",
                 str(d / "split.key"), "--jobs", "1", "-o", str(d / "all.json")]) == 0
    assert main(["split", str(d / "all.json"), "-o", str(d / "splits.json"), "--manifest", str(d / "manifest.json"),
                 "--key-file", str(d / "split.key")]) == 0
    manifest = json.loads((d / "manifest.json").read_text())
    private = [e["instance_id"] for e in manifest["instances"] if e["split_id"] == "private_eval"]
    assert private and all("commitment" in e and "content_hash" not in e for e in manifest["instances"]
                           if e["split_id"] == "private_eval")
    assert main(["bundle", "subset", str(d / "splits.json"), "--ids", ",".join(private), "-o",
                 str(d / "private.json")]) == 0
    store = TokenStore(d / "tokens.json")
    tokens = {"alpha": store.issue("alpha", oracle=True), "beta": store.issue("beta", episodes_per_day=1),
              "baselines": store.issue("baselines", concurrent=8, oracle=True, panel=True)}
    (d / "agent.py").write_text(AGENT)
    return {"dir": d, "private": private, "tokens": tokens, "bundle": d / "private.json",
            "manifest": d / "manifest.json", "key": d / "sign.key", "pub": d / "sign.key.pub"}


def serve_args(split: dict[str, Any], runs: Path, *more: str) -> list[str]:
    return ["--bundle", str(split["bundle"]), "--manifest", str(split["manifest"]), "--runs-out", str(runs),
            "--tokens", str(split["dir"] / "tokens.json"), "--sign-key", str(split["key"]), *more]


@pytest.fixture(scope="module")
def server(split: dict[str, Any]) -> Any:
    runs = split["dir"] / "runs.jsonl"
    with EvalServer(serve_args(split, runs, "--step-timeout", "120")) as srv:
        srv.runs = runs  # type: ignore[attr-defined]
        yield srv


def remote(server: Server, token: str, out: Path, *agent: str, check: bool = True) -> Any:
    return gf01("evaluate", "--remote", server.url, *agent, "-o", str(out), "--json", env={"GF01_TOKEN": token},
                check=check)


def remote_in_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, server: Server,
                      token: str, out: Path, *agent: str) -> dict[str, Any]:
    """:func:`remote` through ``gf01_formal.cli.main`` in this process (its JSON summary): the harness's command
    line as a process is the panel's :func:`remote` in test_the_panel_and_a_sandboxed_program_on_every_track; the
    other harness runs need only what it plays and records (an interpreter less each)."""
    with monkeypatch.context() as mp:
        mp.setenv("GF01_TOKEN", token)
        return json.loads(in_process(capsys, "evaluate", "--remote", server.url, *agent, "-o", str(out), "--json"))


def post(url: str, path: str, body: Any, token: str | None, raw: bytes | None = None) -> tuple[int, dict[str, Any]]:
    host, port = url.split("//")[1].rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=CEILING)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    conn.request("POST", path, body=raw if raw is not None else json.dumps(body).encode(), headers=headers)
    resp = conn.getresponse()
    data = json.loads(resp.read())
    conn.close()
    return resp.status, data


def test_the_panel_and_a_sandboxed_program_on_every_track(server: Any, split: dict[str, Any],
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The baseline panel and an external program (bubblewrap) play through the server on every track; the server's
    records validate --official with its key, every receipt verifies against them, the leaderboard is the report's
    headline and holds nothing per instance."""
    d = split["dir"]
    receipts = d / "receipts-panel.jsonl"
    panel = [x for name in PANEL for x in ("--agent", name)]
    result = json.loads(remote(server, split["tokens"]["baselines"], receipts, *panel).stdout)
    n = len(split["private"])
    assert result["played"] == len(PANEL) * n and result["statuses"] == {"completed": len(PANEL) * n}
    agent = f"{sys.executable} -S {d / 'agent.py'}"  # -S: AGENT needs the standard library only (scripted_agent.py)
    for track in ("EVAL-CB", "EVAL-TA", "EVAL-OC"):
        out = remote_in_process(capsys, monkeypatch, server, split["tokens"]["alpha"], d / "receipts-alpha.jsonl",
                                "--agent-cmd", agent, "--track", track)
        assert out["played"] == n and out["statuses"] == {"completed": n}, out
    # A team that plays the built-in oracle itself: its agent is the team's, never a baseline (below).
    mine = evaluate_remote(server.url, split["tokens"]["alpha"], [AgentSpec("oracle", "EVAL-OC")],
                           d / "receipts-alpha.jsonl", limit=1)
    assert mine["statuses"] == {"completed": 1}
    records = latest(server.runs)
    assert len(records) == (len(PANEL) + 3) * n + 1  # every run recorded once
    cmd = [r for r in records.values() if r["agent_name"] == "cmd"]
    assert {r["sandbox"] for r in cmd} == {"bwrap"} and {r["eval_track"] for r in cmd} == {"EVAL-CB", "EVAL-TA",
                                                                                          "EVAL-OC"}
    assert all(r["tool_log_hash"] for r in cmd if r["eval_track"] != "EVAL-CB")
    oc = [r for r in cmd if r["eval_track"] == "EVAL-OC"]
    assert all(r["score_c"] == 1 for r in oc)  # it played the oracle's certificate, asked over the wire
    in_process(capsys, "validate", str(server.runs), "--bundle", str(split["bundle"]), "--official", "--key",
               str(split["pub"]))
    for name in ("receipts-panel.jsonl", "receipts-alpha.jsonl"):
        verified = in_process(capsys, "eval", "receipt", "verify", str(d / name), "--key", str(split["pub"]),
                              "--runs", str(server.runs), "--json")
        assert json.loads(verified)["faults"] == []
    # A rerun plays nothing and writes no receipt twice.
    again = remote_in_process(capsys, monkeypatch, server, split["tokens"]["baselines"], receipts, *panel)
    assert again["played"] == 0 and len(receipts.read_text().splitlines()) == len(PANEL) * n
    # The leaderboard: the report's headline, team agents and the baseline panel side by side, nothing per instance.
    board, page = board_of(server)
    report = json.loads(in_process(capsys, "report", str(server.runs), "--format", "json"))
    assert [{**r["key"]} for r in report["headline"]] == [r["key"] for r in board["rows"]]
    for row, head in zip(board["rows"], report["headline"], strict=True):
        assert sorted(row["teams"] + row["baselines"], key=lambda a: a["agent"]) == head["agents"]
        # The baseline column is the operator's --panel team's runs, whatever a team calls its agent.
        assert {a["agent"].split("/")[1] for a in row["baselines"]} <= set(PANEL)
        assert all(a["agent"].startswith("baselines/") for a in row["baselines"])
        assert not any(a["agent"].startswith("baselines/") for a in row["teams"])
    assert board["panel"] == ["baselines"]
    (oc,) = [r for r in board["rows"] if r["key"]["eval_track"] == "EVAL-OC"]
    assert "alpha/oracle" in [a["agent"] for a in oc["teams"]]
    assert "<tr><td>alpha/oracle</td><td>team</td>" in page
    assert "baselines/oracle" in page and "alpha/cmd:agent.py" in page
    text = json.dumps(board)
    assert not any(iid in text or iid in page for iid in split["private"])


def test_remote_runs_are_local_runs(server: Any, split: dict[str, Any], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A built-in agent plays the same moves remotely as locally (the same seed per instance), and the server's
    record is the local record of that play: steps, certificate and scores."""
    receipts = tmp_path / "r.jsonl"
    remote_in_process(capsys, monkeypatch, server, split["tokens"]["alpha"], receipts, "--agent", "search", "--seed",
                      "7")
    local = tmp_path / "local.jsonl"
    evaluate(split["bundle"], [AgentSpec("search", "EVAL-CB")], local, settings=Settings(seed=7))
    mine = {r["instance_id"]: r for r in latest(server.runs).values()
            if r["agent_name"] == "search" and r["seed"] == 7 and r["agent_spec"]["params"].get("team") == "alpha"}
    theirs = {r["instance_id"]: r for r in latest(local).values()}
    assert set(mine) == set(theirs) == set(split["private"])
    for iid, rec in mine.items():
        for field in ("steps", "certificate", "score_c", "goal", "eff_t", "eff_a", "best_match_gold", "status"):
            assert rec[field] == theirs[iid][field], (iid, field)


def board_of(server: Any) -> tuple[dict[str, Any], str]:
    """The leaderboard's JSON and page."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=CEILING)
    conn.request("GET", "/v1/leaderboard")
    board = json.loads(conn.getresponse().read())
    conn.request("GET", "/leaderboard")
    page = conn.getresponse().read().decode()
    conn.close()
    return board, page


def _trace(server: Any, token: str, spec: AgentSpec, iid: str) -> list[str]:
    conn = Connection(server.url, token)
    conn.trace = []
    play_remote_run(conn, spec, 0, iid)
    conn.close()
    messages = []
    for body in conn.trace:
        messages += json.loads(body).get("messages", [])
    return messages


def test_the_wire_leaks_no_hidden_state(tmp_path: Path, split: dict[str, Any]) -> None:
    """Over the wire as locally (tests/test_leakage.py): two instances that differ only in the base trace of an
    input nothing reads give byte-identical message streams up to the end, apart from the instance id."""
    from test_leakage import IGNORES_B

    from gf01_formal.instances.sources import InstanceOptions, instance_from_hoa
    from gf01_formal.instances.splits import ManifestEntry, SplitManifest

    one = instance_from_hoa(IGNORES_B.format(s0="s"), InstanceOptions(trace="!a&b;!a&b;!a&!b;!a&b;!a&!b",
                                                                      effect="g"), measure=False)
    two = instance_from_hoa(IGNORES_B.format(s0="s"), InstanceOptions(trace="!a&!b;!a&!b;!a&b;!a&!b;!a&b",
                                                                      effect="g"), measure=False)
    assert one.base_trace != two.base_trace
    bundle = make_bundle([one, two], generator_version="test", provenance="test")
    save_artifact(tmp_path / "pair.json", bundle)
    loaded = load_set(tmp_path / "pair.json")
    entries = [ManifestEntry(instance_id=i.instance_id, content_hash=i.content_hash, split_id="private_eval",
                             mode=i.mode, stratum="x") for i in loaded.instances]
    manifest = SplitManifest(targets={"private_eval": 1.0}, tolerance=0.05, key_id="0" * 64, public_key=False,
                             source_bundle_hash=loaded.bundle_hash or "", counts={"private_eval": 2},
                             instances=entries)
    write_json_atomic(tmp_path / "pair-manifest.json", manifest.model_dump(mode="json"))
    args = ["--bundle", str(tmp_path / "pair.json"), "--manifest", str(tmp_path / "pair-manifest.json"),
            "--runs-out", str(tmp_path / "runs.jsonl"), "--tokens", str(split["dir"] / "tokens.json"),
            "--sign-key", str(split["key"])]
    with EvalServer(args) as srv:
        spec = AgentSpec("cmd", "EVAL-CB", {"cmd": f"{sys.executable} -S {split['dir'] / 'agent.py'}"})
        streams = [_trace(srv, split["tokens"]["alpha"], spec, inst.instance_id) for inst in loaded.instances]
    for stream, inst in zip(streams, loaded.instances, strict=True):
        assert json.loads(stream[-1])["type"] == "end" and sum(inst.instance_id in m for m in stream[:-1]) == 1
        # The end carries the run's scores, never a gold certificate nor the figures measured against it: those
        # would answer a sealed instance (one edit alone: in a valid certificate or not, and its size).
        end = json.loads(stream[-1])["result"]
        assert end["best_match_gold"] is None and end["suff"] is not None
        assert [end[f] for f in PRF_FIELDS] == [None] * 6, end
    a, b = ([m.replace(inst.instance_id, "ID") for m in stream[:-1]] for stream, inst in
            zip(streams, loaded.instances, strict=True))
    assert a == b and len(a) > 3


def test_refusals(server: Any, split: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad, revoked or over-quota token, another team's episode, a line out of order, a body past its limit and a
    forged receipt are refused, each with its status and one line."""
    url, tokens = server.url, split["tokens"]
    body = {"agent": AgentSpec("random", "EVAL-CB").to_json(), "seed": 0, "instance_id": split["private"][0]}
    assert post(url, "/v1/episodes", body, None)[0] == 401
    assert post(url, "/v1/episodes", body, "gf01t_00000000_" + "0" * 64)[0] == 401
    store = TokenStore(split["dir"] / "tokens.json")
    gamma = store.issue("gamma")
    store.revoke("gamma")
    status, answer = post(url, "/v1/episodes", body, gamma)
    assert status == 403 and "revoked" in answer["error"]
    # EVAL-OC's tool answers the sealed instances: beta was not issued with it.
    oc = {**body, "agent": AgentSpec("oracle", "EVAL-OC").to_json()}
    status, answer = post(url, "/v1/episodes", oc, tokens["beta"])
    assert status == 403 and "EVAL-OC" in answer["error"]
    # beta may open one episode a day: the second is refused.
    status, opened = post(url, "/v1/episodes", {**body, "seed": 11}, tokens["beta"])
    assert status == 201 and opened["messages"][0].startswith('{"goal"')
    status, answer = post(url, "/v1/episodes", {**body, "seed": 12}, tokens["beta"])
    assert status == 429 and "beta" in answer["error"]
    # Another team cannot send lines to beta's episode (nor learn that it exists).
    path = f"/v1/episodes/{opened['episode']}/lines"
    assert post(url, path, {"seq": 0, "line": '{"set": {}}'}, tokens["alpha"])[0] == 404
    assert post(url, path, {"seq": 5, "line": '{"set": {}}'}, tokens["beta"])[0] == 409
    assert post(url, path, {"seq": 0}, tokens["beta"])[0] == 422
    assert post(url, path, None, tokens["beta"], raw=b'{"seq": 0, "line": "' + b"x" * (1 << 20) + b'"}')[0] == 413
    # A line sent twice (its answer lost) is answered again, the same, and applied once.
    first = post(url, path, {"seq": 0, "line": '{"set": {}}'}, tokens["beta"])
    again = post(url, path, {"seq": 0, "line": '{"set": {}}'}, tokens["beta"])
    assert first == again and first[0] == 200 and json.loads(first[1]["messages"][0])["t"] == 0
    assert post(url, path, {"seq": 0, "line": '{"set": {"x": 1}}'}, tokens["beta"])[0] == 409
    # A forged receipt: a score changed after signing.
    conn = Connection(url, tokens["alpha"])
    good = play_remote_run(conn, AgentSpec("random", "EVAL-CB"), 99, split["private"][0]).receipt
    conn.close()
    assert good is not None
    (tmp_path / "good.json").write_text(canonical_json(good))
    assert gf01("eval", "receipt", "verify", str(tmp_path / "good.json"), "--key", str(split["pub"]), "--runs",
                str(server.runs)).returncode == 0
    forged = dict(good, score_c=1 - int(good["score_c"]))
    (tmp_path / "forged.json").write_text(canonical_json(forged))
    # (The command line as a process once, above; the forged receipts through main() in this process.)
    capsys.readouterr()
    assert main(["eval", "receipt", "verify", str(tmp_path / "forged.json"), "--key", str(split["pub"])]) == 1
    assert "changed after it was signed" in capsys.readouterr().out
    # A receipt relabelled as another team's is forged too.
    relabelled = dict(good, team="beta")
    (tmp_path / "relabelled.json").write_text(canonical_json(relabelled))
    assert main(["eval", "receipt", "verify", str(tmp_path / "relabelled.json"), "--key", str(split["pub"])]) == 1


def test_a_late_line_is_the_agents_timeout(split: dict[str, Any], tmp_path: Path) -> None:
    """The per-step deadline is the server's: an agent silent past it has the fatal timeout fault on that step, as
    locally, and the run is recorded (agent_error) with its receipt."""
    runs = tmp_path / "runs.jsonl"
    with EvalServer(serve_args(split, runs, "--step-timeout", "1")) as srv:
        body = {"agent": AgentSpec("random", "EVAL-CB").to_json(), "seed": 3, "instance_id": split["private"][0]}
        status, opened = post(srv.url, "/v1/episodes", body, split["tokens"]["alpha"])
        assert status == 201
        deadline = time.monotonic() + CEILING
        while not runs.exists() or not runs.read_text().strip():  # the deadline passes, the server records
            assert time.monotonic() < deadline
            time.sleep(0.2)
        status, answer = post(srv.url, f"/v1/episodes/{opened['episode']}/lines", {"seq": 0, "line": '{"set":{}}'},
                              split["tokens"]["alpha"])
        assert status == 200 and answer["late"] and answer["done"] and answer["receipt"]["status"] == "agent_error"
    (rec,) = latest(runs).values()
    assert rec["status"] == "agent_error" and rec["steps"][0]["agent_error"]["kind"] == "timeout"


def _wait_lines(path: Path, n: int) -> None:
    deadline = time.monotonic() + CEILING * 4
    while not path.exists() or len(path.read_text().splitlines()) < n:
        assert time.monotonic() < deadline, f"{path} never reached {n} lines"
        time.sleep(0.1)


def test_kill_9_of_the_server_or_the_harness_loses_and_doubles_nothing(split: dict[str, Any], tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """kill -9 of the server mid-campaign: the participant's harness waits for it, replays the episode it was in
    from its start, and every run is recorded once; kill -9 of the harness mid-episode: the same command resumes,
    and that episode is recorded once (as the agent's crash when its agent had sent lines, else played again from
    its start, the record counting the restart)."""
    runs = tmp_path / "runs.jsonl"
    receipts = tmp_path / "receipts.jsonl"
    # Slow: each step takes 0.1 s, so an episode (the agent commits at t*, 4 to 8 on this split) lasts 0.5 s or more
    # and each kill below lands inside one.
    agent = f"{sys.executable} -S {split['dir'] / 'agent.py'} 0.1"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GF01_TOKEN": split["tokens"]["alpha"]}
    n = len(split["private"])
    srv = EvalServer(serve_args(split, runs)).start()
    cmd = [sys.executable, "-m", "gf01_formal", "evaluate", "--remote", srv.url, "--agent-cmd", agent, "-o",
           str(receipts), "--json"]
    harness = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_lines(runs, 1)
    srv.proc.kill()  # kill -9 of the server, mid-campaign
    srv.proc.wait()
    srv = EvalServer(serve_args(split, runs), port=srv.port).start()
    try:
        out, err = harness.communicate(timeout=CEILING * 10)
        assert harness.returncode == 0, err
        assert json.loads(out)["statuses"] == {"completed": n}
        records = [json.loads(x) for x in runs.read_text().splitlines()]
        assert len({r["run_id"] for r in records}) == len(records) == n  # none lost, none doubled
        # The harness killed mid-episode: the same command finishes what is left, once.
        harness = subprocess.Popen([*cmd[:-3], "--seed", "1", "-o", str(receipts), "--json"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_lines(runs, n + 1)
        time.sleep(0.25)  # into the next episode (0.25-0.35 s after its predecessor's record: _wait_lines polls)
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait()
        rerun = subprocess.run([*cmd[:-3], "--seed", "1", "-o", str(receipts), "--json"], env=env,
                               capture_output=True, text=True, timeout=CEILING * 10)
        assert rerun.returncode == 0, rerun.stderr
        records = [json.loads(x) for x in runs.read_text().splitlines()]
        assert len({r["run_id"] for r in records}) == len(records) == 2 * n
        # The episode the kill cut: started again when its agent had sent no line yet (the record counts the
        # restart), else ended as the agent's crash when the rerun opened it again (a look is never free).
        assert any(r["agent_meta"]["restarts"] >= 1 or (r["status"] == "agent_error" and REOPENED in (r["error"] or ""))
                   for r in records if r["seed"] == 1)
    finally:
        srv.stop()
    verified = in_process(capsys, "eval", "receipt", "verify", str(receipts), "--key", str(split["pub"]), "--runs",
                          str(runs), "--json")
    assert json.loads(verified) == {"faults": [], "receipts": 2 * n, "valid": 2 * n}


def test_tokens_are_stored_hashed_and_revocable(tmp_path: Path) -> None:
    """The tokens file holds the sha256 of each token, never the token (mode 0600); a revoked or altered token is
    refused; a change of the file counts from the next check, without a restart."""
    from gf01_formal.remote.tokens import Refused

    path = tmp_path / "tokens.json"
    store = TokenStore(path)
    token = store.issue("team-x", episodes_per_day=7, concurrent=2)
    text = path.read_text()
    assert token not in text and token.split("_")[2] not in text and (path.stat().st_mode & 0o777) == 0o600
    team = store.check(token)
    assert (team.name, team.episodes_per_day, team.concurrent, team.oracle) == ("team-x", 7, 2, False)
    with pytest.raises(Refused) as bad:
        store.check(token[:-1] + ("0" if token[-1] != "0" else "1"))
    assert bad.value.status == 401
    TokenStore(path).revoke("team-x")  # another process revokes: the running store sees it at its next check
    with pytest.raises(Refused) as revoked:
        store.check(token)
    assert revoked.value.status == 403


def test_a_model_calls_its_tool_over_the_wire(server: Any, split: dict[str, Any], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``--agent llm`` with --remote: the model runs here (a scripted OpenAI-compatible server), its function calls
    to local-planner-v1 are answered by the evaluation server, which logs each one in the run's tool log."""
    from llm_server import Call, Reply, ScriptedServer

    def script(call: Call) -> Reply:
        last_user = max(i for i, m in enumerate(call.messages) if m.get("role") == "user")
        if not any(m.get("role") == "tool" for m in call.messages[last_user:]):
            return Reply(tool_calls=(("local-planner-v1", {"atoms": []}),))
        return Reply('{"set": {}}')

    receipts = tmp_path / "llm.jsonl"
    with ScriptedServer(script) as model:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-remote")
        out = remote_in_process(capsys, monkeypatch, server, split["tokens"]["alpha"], receipts, "--agent", "llm",
                                "--model", "m", "--base-url", model.url, "--track", "EVAL-TA", "--limit", "2")
    assert out["statuses"] == {"completed": 2}
    runs = [r for r in latest(server.runs).values() if r["agent_name"] == "llm"]
    assert len(runs) == 2 and {r["eval_track"] for r in runs} == {"EVAL-TA"}
    for rec in runs:
        log = (Path(f"{server.runs}.d") / "tool-logs" / f"{rec['tool_log_hash']}.jsonl").read_text().splitlines()
        assert len(log) - 1 == len(rec["steps"])  # the header, then one planner call per step
        assert "sk-test-remote" not in json.dumps(rec)


def test_a_runs_scoring_limits_reach_the_shared_scorer(split: dict[str, Any]) -> None:
    """The server's scorer is shared by the episodes of an instance: the limits a run's scoring sets
    (``score_within``, as ``play_run`` calls it in the episode's thread) are the ones its queries run under, so a
    scoring past them is the run's harness_error, as locally, never an unbounded query on the server."""
    import threading

    from gf01_formal.remote.state import _LockedScorer
    from gf01_formal.runs.scoring_limit import score_within
    from gf01_formal.scoring.scores import Scorer
    from solvers.limits import Unknown

    loaded = load_set(split["bundle"])
    inst = loaded.instances[0]
    shared = _LockedScorer(Scorer(loaded.problem(inst)))
    caught: list[BaseException] = []

    def episode() -> None:  # an episode's thread: limits are checked at each step of a query
        try:
            score_within(shared, [], seconds=0.0)
        except BaseException as ex:  # the test reads what it was
            caught.append(ex)

    worker = threading.Thread(target=episode)
    worker.start()
    worker.join(CEILING)
    assert len(caught) == 1 and isinstance(caught[0], Unknown), caught


def test_a_model_plays_eval_oc_with_the_oracle_over_the_wire(server: Any, split: dict[str, Any], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``--agent llm`` on EVAL-OC with --remote: the model (a scripted OpenAI-compatible provider) calls
    oracle-exact-search-v1 with null atoms, the evaluation server answers the certificate (and logs the call), and
    the model plays it step by step: every run certified."""
    import re

    from llm_server import Call, Reply, ScriptedServer

    def script(call: Call) -> Reply:
        answers = [json.loads(m["content"]) for m in call.messages if m.get("role") == "tool"]
        certs = [a["certificate"] for a in answers if a.get("certificate")]
        if not certs:
            return Reply(tool_calls=(("oracle-exact-search-v1", {"atoms": None}),))
        seen = re.findall(r'"t":(\d+)', call.last_user) if '"type":"observation"' in call.last_user else []
        t = int(seen[0]) + 1 if seen else 0
        return Reply(json.dumps({"set": {name: v for s, name, v in certs[-1] if s == t}}))

    from gf01_formal.agents.llm import llm_spec

    receipts = tmp_path / "llm-oc.jsonl"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-remote")
    with ScriptedServer(script) as model:
        spec = llm_spec("m-oc", base_url=model.url)
        out = evaluate_remote(server.url, split["tokens"]["alpha"], [AgentSpec("llm", "EVAL-OC", spec.params)],
                              receipts, limit=2)
    assert out["statuses"] == {"completed": 2}
    runs = [r for r in latest(server.runs).values() if r["agent_spec"]["params"].get("model") == "m-oc"]
    assert len(runs) == 2 and {r["eval_track"] for r in runs} == {"EVAL-OC"}
    assert all(r["score_c"] == 1 for r in runs)  # the oracle's certificate, asked over the wire, played
    for rec in runs:
        log = (Path(f"{server.runs}.d") / "tool-logs" / f"{rec['tool_log_hash']}.jsonl").read_text().splitlines()
        calls = [json.loads(x) for x in log[1:]]
        assert calls and all(c["tool"] == "oracle-exact-search-v1" for c in calls)
    assert all(json.loads(line)["eval_track"] == "EVAL-OC" for line in receipts.read_text().splitlines())


def _self_signed(d: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1, signed by its own key (test data only)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (d / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    return d / "cert.pem", d / "key.pem"


def test_https_with_a_self_signed_certificate(split: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An evaluation server behind TLS (uvicorn with a certificate made here): ``gf01 evaluate --remote https://``
    plays through it when SSL_CERT_FILE names the certificate, and refuses at once, in one line, when it does not
    trust it (never a retry loop); a plain http:// URL to another machine warns that the token goes in the clear."""
    import threading

    import uvicorn

    from gf01_formal.remote.client import DEFAULT_RETRY_SECONDS, cleartext_warning
    from gf01_formal.remote.server import create_app
    from gf01_formal.remote.state import EvalServer as State
    from gf01_formal.runs.signing import load_signer
    from gf01_formal.web.app import LOOPBACK_NAMES
    from gf01_formal.web.server import bind
    from hoa.errors import Gf01Error

    cert, key = _self_signed(tmp_path)
    state = State(split["bundle"], split["manifest"], tmp_path / "runs.jsonl", split["dir"] / "tokens.json",
                  load_signer(split["key"]))
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(state, allowed_hosts=set(LOOPBACK_NAMES)), log_level="warning",
                            lifespan="off", ssl_certfile=str(cert), ssl_keyfile=str(key))
    tls = uvicorn.Server(config)
    thread = threading.Thread(target=tls.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + CEILING
        while not tls.started:
            assert thread.is_alive() and time.monotonic() < deadline
            time.sleep(0.05)
        url, token, random = f"https://localhost:{port}", split["tokens"]["alpha"], [AgentSpec("random", "EVAL-CB")]
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # read by each new TLS context, as in a fresh gf01 process
        out = evaluate_remote(url, token, random, tmp_path / "r.jsonl", limit=1)
        assert out["statuses"] == {"completed": 1}
        (rec,) = latest(tmp_path / "runs.jsonl").values()
        assert rec["status"] == "completed" and rec["agent_spec"]["params"]["team"] == "alpha"
        # Not trusted: one line at once (a Gf01Error: exit 2 on the command line), never the retry loop.
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "none.pem"))
        start = time.monotonic()
        with pytest.raises(Gf01Error, match=r"certificate is not trusted .*SSL_CERT_FILE"):
            evaluate_remote(url, token, random, tmp_path / "r2.jsonl", limit=1)
        assert time.monotonic() - start < DEFAULT_RETRY_SECONDS
    finally:
        tls.should_exit = True
        thread.join(CEILING)
        state.close()
    assert cleartext_warning("http://192.0.2.7:8000") is not None
    assert [cleartext_warning(u) for u in ("https://192.0.2.7", "http://127.0.0.1:8000", "http://localhost:1",
                                           "http://[::1]:8000")] == [None] * 4
    # The warning is printed before anything is sent (here nothing answers: a closed loopback port stands in for
    # the far host, so that no packet leaves the machine).
    capsys.readouterr()
    with pytest.raises(Gf01Error, match="did not answer"):
        evaluate_remote("http://192.0.2.7:9", "t", [AgentSpec("random", "EVAL-CB")], tmp_path / "r3.jsonl",
                        connection=Connection("http://127.0.0.1:9", "t", retry_seconds=0))
    assert "warning: " + str(cleartext_warning("http://192.0.2.7:9")) in capsys.readouterr().err


def test_a_reopen_mid_episode_is_the_agents_crash_not_a_free_look(split: dict[str, Any], tmp_path: Path) -> None:
    """Red-team round 8: a team that opened an instance again after its agent had played lines got a fresh episode
    and nothing of the first was recorded: it could try edits, read the outputs they made, give up and start again,
    as often as its quota allowed, and then play what it learned. Now an episode the agent has played lines in ends,
    when its instance is opened again, as the agent's crash: recorded, and the open answers with its receipt. An
    episode without a line yet (an open sent again after its answer was lost) still starts again: its agent saw
    only the goal panel."""
    runs = tmp_path / "runs.jsonl"
    token = split["tokens"]["alpha"]
    body = {"agent": AgentSpec("random", "EVAL-CB").to_json(), "seed": 5, "instance_id": split["private"][0]}
    with EvalServer(serve_args(split, runs, "--step-timeout", "60")) as srv:
        status, first = post(srv.url, "/v1/episodes", body, token)
        assert status == 201 and not first["done"]
        status, again = post(srv.url, "/v1/episodes", body, token)  # the first open's answer "lost": no line yet
        assert status == 201 and not again["done"] and again["episode"] != first["episode"]
        assert again["messages"] == first["messages"]
        status, answer = post(srv.url, f"/v1/episodes/{again['episode']}/lines", {"seq": 0, "line": '{"set":{}}'},
                              token)
        assert status == 200 and not answer["done"] and json.loads(answer["messages"][0])["type"] == "observation"
        status, probe = post(srv.url, "/v1/episodes", body, token)  # seen step 0: give up and look again
        assert status == 201 and probe["done"] and "episode" not in probe, probe
        assert probe["receipt"]["status"] == "agent_error"
    (rec,) = latest(runs).values()
    assert rec["status"] == "agent_error" and rec["run_id"] == probe["run_id"]
    fault = rec["steps"][1]["agent_error"]
    assert fault["kind"] == "crash" and fault["message"].startswith(REOPENED), fault
