"""``gf01 serve`` over HTTP, without a browser: the command line's refusals, Ctrl-C, bad requests (4xx, nothing
changed), the security headers and the assets' lack of inline code, steps that survive a restart, a pilot's rules,
and the replay of recorded runs. The browser tests (test_web_browser.py) play the same server through Chromium."""

from __future__ import annotations

import http.client
import json
import re
import secrets
import signal
import socket
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import Server

from gf01_formal.agents.base import AgentSpec
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import load_bundle, load_set, save_artifact
from gf01_formal.instances.model import make_bundle
from gf01_formal.play.episode import Episode
from gf01_formal.runs.validate import check_runs, validate

ROOT = Path(__file__).resolve().parent.parent
ARBITER = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"
JSON = {"content-type": "application/json"}


def write_bundle(directory: Path, tiny: Path) -> Path:
    """The two instances of the ``tiny`` bundle (one normal, one hard) and the priority arbiter (named states,
    T = 30)."""
    small = load_bundle(tiny)
    arbiter = load_set(ARBITER).instances[0]
    path = directory / "bundle.json"
    save_artifact(path, make_bundle([*small.instances, arbiter], generator_version=small.generator_version,
                                    provenance="test"))
    return path


def write_pilot(directory: Path, order: list[str], name: str = "pilot.json", **changes: Any) -> Path:
    """A pilot file over ``order``, with its key (as ``gf01 pilot issue`` makes it)."""
    data = {"schema_version": "gf01-formal.pilot.v1", "pilot_id": "pilot-t", "title": "GF-01 test study",
            "consent": "You are invited to a study of reasoning about time.\n\nYour data are kept under your "
                       "participant id only.",
            "instances": order, "completion_code": "DONE-4711", **changes}
    path = directory / name
    path.write_text(json.dumps(data))
    from gf01_formal.web.pilot import load_key

    load_key(path, create=True)
    return path


def sig(pilot: Path, participant: str) -> str:
    """The signature of an issued participant of the pilot file ``pilot`` (what its link carries)."""
    from gf01_formal.web.pilot import load_key, participant_sig

    return participant_sig(load_key(pilot), json.loads(pilot.read_text())["pilot_id"], participant)


def journal_of(runs: Path) -> Path:
    return Path(f"{runs}.d") / "web-journal.jsonl"


def snapshot(*paths: Path) -> list[bytes | None]:
    return [p.read_bytes() if p.exists() else None for p in paths]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, tiny_bundle: Path) -> Path:
    return write_bundle(tmp_path_factory.mktemp("web-bundle"), tiny_bundle)


@pytest.fixture(scope="module")
def ids(bundle: Path) -> list[str]:
    return [i.instance_id for i in load_bundle(bundle).instances]


@pytest.fixture(scope="module")
def free(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from serve_free(bundle, tmp_path_factory.mktemp("web-free") / "runs.jsonl")


def serve_free(bundle: Path, runs: Path) -> Iterator[Server]:
    """A free-play server of ``bundle`` that appends its run records to ``runs`` (a fixture's body)."""
    with Server(["--bundle", str(bundle), "--runs-out", str(runs)]) as server:
        server.runs = runs  # type: ignore[attr-defined]
        yield server


def begin(client: httpx.Client, instance_id: str) -> str:
    r = client.post("/api/episodes", json={"instance_id": instance_id})
    assert r.status_code == 201, r.text
    return r.json()["token"]


def play(client: httpx.Client, token: str, t: int, assignment: dict[str, int] | None = None,
         commit: bool = False) -> dict[str, Any]:
    r = client.post(f"/api/episodes/{token}/steps", json={"action": {"t": t, "set": assignment or {},
                                                                     "commit": commit}, "response_ms": 250})
    assert r.status_code == 200, r.text
    return r.json()


# -- the command line ----------------------------------------------------------------------------------------------


def test_serve_refuses_bad_command_lines(bundle: Path, ids: list[str], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    runs = str(tmp_path / "runs.jsonl")
    with_pilot = ["--bundle", str(bundle), "--runs-out", runs, "--pilot"]
    cases = [
        (["--bundle", str(tmp_path / "missing.json")], "missing.json"),
        (["--bundle", str(bundle), "--pilot", str(write_pilot(tmp_path, ids[:1]))], "--runs-out"),
        ([*with_pilot, str(write_pilot(tmp_path, ["gf01f-nope"], "p1.json"))], "not in the bundle"),
        ([*with_pilot, str(write_pilot(tmp_path, ids[:1] * 2, "p2.json"))], "appears twice"),
        ([*with_pilot, str(write_pilot(tmp_path, ids, "p3.json", consent=""))], "consent"),
        ([*with_pilot, str(write_pilot(tmp_path, ids, "p4.json", extra=1))], "extra"),
        ([*with_pilot, str(tmp_path / "missing-pilot.json")], "missing-pilot.json"),
        (["--bundle", str(bundle), "--port", str(port)], "in use"),
        (["--bundle", str(bundle), "--host", "no-such-host.invalid"], "no such address"),
    ]
    try:
        for args, expected in cases:
            assert main(["serve", *args]) == 2, args
            err = capsys.readouterr().err
            assert err.startswith("gf01: error: ") and err.count("\n") == 1 and expected in err, (args, err)
    finally:
        busy.close()
    assert not (tmp_path / "runs.jsonl").exists()


def test_ctrl_c_stops_the_server(bundle: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    server = Server(["--bundle", str(bundle), "--runs-out", str(runs)]).start()
    with httpx.Client(base_url=server.url) as client:  # a kept-alive connection must not hold the server up
        token = begin(client, load_bundle(bundle).instances[0].instance_id)
        play(client, token, 0)
        status, err = server.stop(signal.SIGINT)  # waits for the exit (tests/browser.py), with a ceiling
    assert status == 130 and "interrupted" in err
    lines = journal_of(runs).read_text().splitlines()
    assert [json.loads(x)["event"] for x in lines] == ["episode", "step"]  # whole lines only


# -- bad requests ------------------------------------------------------------------------------------------------


def raw_get(url: str, path: str) -> tuple[int, str]:
    """GET ``path`` exactly as written (http.client does not normalise dot segments or escapes)."""
    host, port = re.match(r"http://([^:/]+):(\d+)", url).groups()  # type: ignore[union-attr]
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_bad_requests_get_a_4xx_with_a_message_and_change_nothing(free: Any, ids: list[str]) -> None:
    runs: Path = free.runs
    with httpx.Client(base_url=free.url, timeout=30) as client:
        token = begin(client, ids[0])
        play(client, token, 0)
        steps = f"/api/episodes/{token}/steps"
        inputs = client.get(f"/api/episodes/{token}").json()["goal"]["inputs"]

        def action(**fields: Any) -> bytes:
            return json.dumps({"action": {"t": 1, "set": {}, **fields}}).encode()

        ten_mb = b'{"action": {"t": 1, "set": {}}, "pad": "' + b"x" * (10 * 1024 * 1024) + b'"}'
        bad: list[tuple[str, str, bytes | None, dict[str, str], int, str]] = [
            ("GET", f"/api/episodes/{secrets.token_urlsafe(24)}", None, {}, 404, "no episode has this token"),
            ("POST", f"/api/episodes/{secrets.token_urlsafe(24)}/steps", action(), JSON, 404, "no episode"),
            ("GET", "/api/episodes/short", None, {}, 404, "no episode"),
            ("POST", steps, action(t=0), JSON, 409, "step 0 is already committed: the current step is 1"),
            ("POST", steps, action(t=4), JSON, 409, "step 4 is not reached"),
            ("POST", steps, action(set={"zz": 1}), JSON, 422, "'zz' is not an input"),
            ("POST", steps, action(set={inputs[0]: 2}), JSON, 422, "must be 0 or 1"),
            ("POST", steps, action(set={inputs[0]: True}), JSON, 422, "must be 0 or 1"),
            ("POST", steps, action(set={inputs[0]: 1.0}), JSON, 422, "must be 0 or 1"),
            ("POST", steps, json.dumps({"action": {"set": {}}}).encode(), JSON, 422, "action.t: required"),
            ("POST", steps, action(undo=True), JSON, 422, "unknown field 'undo'"),
            ("POST", steps, json.dumps({"action": {"t": 1}, "response_ms": -5}).encode(), JSON, 422,
             "response_ms"),
            ("POST", steps, json.dumps([1, 2]).encode(), JSON, 422, "a step is a JSON object"),
            ("POST", steps, b"{not json", JSON, 400, "not JSON"),
            ("POST", steps, action(), {"content-type": "text/plain"}, 415, "JSON"),
            ("POST", steps, ten_mb, JSON, 413, "at most 16384"),
            ("POST", steps, action(), {**JSON, "origin": "http://evil.example"}, 403, "another site"),
            ("POST", steps, action(), {**JSON, "host": "evil.example"}, 400, "not served here"),
            ("GET", steps, None, {}, 405, "not allowed"),
            ("POST", "/api/episodes", json.dumps({"instance_id": "gf01f-nope"}).encode(), JSON, 404, "no instance"),
            ("POST", "/api/episodes", json.dumps({"instance_id": ids[0], "x": 1}).encode(), JSON, 422, "instance_id"),
            ("POST", "/api/pilot", json.dumps({"participant_id": "p", "consent": True}).encode(), JSON, 404,
             "no pilot"),
        ]
        before = client.get(f"/api/episodes/{token}").json()
        files = (runs, journal_of(runs))
        saved = snapshot(*files)
        for method, path, body, headers, status, message in bad:
            r = client.request(method, path, content=body, headers=headers)
            assert r.status_code == status, (method, path, r.status_code, r.text)
            assert message in r.json()["error"], (path, r.text)
            assert client.get(f"/api/episodes/{token}").json() == before, path
            assert snapshot(*files) == saved, path

        def chunks() -> Any:  # a body with no declared length is cut off at the limit too
            for _ in range(160):
                yield b"x" * 65536

        r = client.post(steps, content=chunks(), headers=JSON)
        assert r.status_code == 413 and "longer than 16384" in r.json()["error"]

        # Paths that try to leave the assets: the router or the asset table refuses them, byte for byte as sent.
        for path in ["/static/../../pyproject.toml", "/static/..%2F..%2Fpyproject.toml",
                     "/static/%2e%2e/%2e%2e/pyproject.toml", "/static/%2e%2e%2fgames.py", "/static/games.py",
                     "/static/app.css/../../app.py", "/static//etc/passwd", "/play/../static/../../README.md",
                     "/static/.%2e/web/app.py", "/static/" + "a" * 5000]:
            status, text = raw_get(free.url, path)
            assert status == 404 and ("no such" in text), (path, status, text[:80])
        assert snapshot(*files) == saved
        assert client.get(f"/api/episodes/{token}").json() == before

        # The episode goes on, and a step after its end is refused.
        for t in range(1, before["goal"]["horizon"]):
            play(client, token, t)
        r = client.post(steps, json={"action": {"t": before["goal"]["horizon"], "set": {}}})
        assert r.status_code == 409 and "the episode has ended" in r.json()["error"]
        run_id = client.get(f"/api/episodes/{token}").json()["result"]["run_id"]
    assert [json.loads(x)["run_id"] for x in runs.read_text().splitlines()].count(run_id) == 1


class _Inline(HTMLParser):
    """Collects what a CSP without 'unsafe-inline' would block: inline scripts, styles and event handlers."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {k for k, _ in attrs}
        if tag == "script":
            self._script = True
            if "src" not in names:
                self.found.append("<script> without src")
        if tag == "style":
            self.found.append("<style>")
        self.found += [f"{tag} {k}=" for k in names if k.startswith("on") or k == "style"]
        for k, v in attrs:
            if k in ("src", "href") and v and re.match(r"(?i)(https?:)?//|javascript:", v):
                self.found.append(f"{tag} {k}={v} (not an asset of the package)")

    def handle_data(self, data: str) -> None:
        if self._script and data.strip():
            self.found.append("inline script")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = False


def test_every_response_has_the_security_headers_and_no_page_has_inline_code(free: Any, ids: list[str]) -> None:
    assets = {p.name: p for p in (resources.files("gf01_formal.web") / "static").iterdir()}
    assert {"play.html", "play.js", "timeline.js", "common.js", "app.css", "replay.html", "pilot.html"} <= set(assets)
    for name, path in assets.items():
        text = path.read_text()
        if name.endswith(".html"):
            parser = _Inline()
            parser.feed(text)
            assert parser.found == [], (name, parser.found)
        if name.endswith((".js", ".css")):  # nothing fetched from elsewhere, nothing evaluated from text
            assert not re.search(r"https?://|@import|\beval\(|new Function|innerHTML", text), name
    with httpx.Client(base_url=free.url) as client:
        token = begin(client, ids[0])
        for path in ["/", "/replay", f"/play/{token}", "/static/play.js", "/static/app.css", "/api/instances",
                     f"/api/episodes/{token}", "/static/nothing.js", "/nowhere", "/pilot"]:
            r = client.get(path)
            h = r.headers
            csp = h["content-security-policy"]
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
            assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
            assert h["x-content-type-options"] == "nosniff" and h["x-frame-options"] == "DENY", path
            assert h["referrer-policy"] == "no-referrer"
            if path.startswith("/api/"):
                assert h["cache-control"] == "no-store"
        assert client.get("/static/play.js").headers["content-type"].startswith("text/javascript")
        assert client.get(f"/play/{secrets.token_urlsafe(24)}").status_code == 404


# -- saving and resuming -----------------------------------------------------------------------------------------


def test_steps_survive_a_restart_and_each_run_is_recorded_once(bundle: Path, ids: list[str],
                                                              tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    journal = journal_of(runs)
    with Server(["--bundle", str(bundle), "--runs-out", str(runs)]) as server, \
            httpx.Client(base_url=server.url) as client:
        token = begin(client, ids[1])
        goal = client.get(f"/api/episodes/{token}").json()["goal"]
        play(client, token, 0, {goal["inputs"][0]: 1})
        play(client, token, 1)
        before = client.get(f"/api/episodes/{token}").json()
        status, _ = server.stop()
    assert status == 130 and (not runs.exists() or runs.read_bytes() == b"")  # (the lock may have made it)
    assert journal.stat().st_mode & 0o777 == 0o600  # it holds the tokens
    with journal.open("a") as fh:  # a write torn by a crash: cut off when the journal is opened again
        fh.write('{"event":"step","token":"')
    with Server(["--bundle", str(bundle), "--runs-out", str(runs)]) as server, \
            httpx.Client(base_url=server.url) as client:
        assert client.get(f"/api/episodes/{token}").json() == before and before["t"] == 2
        for t in range(2, goal["horizon"]):
            last = play(client, token, t)
        assert last["done"]
        finished = client.get(f"/api/episodes/{token}").json()
    rows = [json.loads(x) for x in runs.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["run_id"] == finished["result"]["run_id"]
    assert rows[0]["certificate"] == [[0, goal["inputs"][0], 1]]
    assert len(rows[0]["timing"]["step_ms"]) == goal["horizon"] and rows[0]["timing"]["step_ms"][0] == 250
    # Lose the journal's last line (the record was appended, its "recorded" event not): no second record.
    lines = journal.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["event"] == "recorded"
    journal.write_text("".join(lines[:-1]))
    with Server(["--bundle", str(bundle), "--runs-out", str(runs)]) as server, \
            httpx.Client(base_url=server.url) as client:
        again = client.get(f"/api/episodes/{token}").json()
    assert again["result"] == finished["result"]
    assert len(runs.read_text().splitlines()) == 1
    assert validate([runs], bundle=str(bundle)) == []
    # free play (anyone, under an anonymous id, shown the gold at the end) is never official
    assert [v.field for v in validate([runs], bundle=str(bundle), official=True)] == ["agent_meta"]


# -- pilots --------------------------------------------------------------------------------------------------------


def test_a_pilot_needs_consent_keeps_its_order_and_ends_with_the_code(bundle: Path, ids: list[str],
                                                                       tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    order = [ids[1], ids[0]]
    pilot = write_pilot(tmp_path, order)
    with Server(["--bundle", str(bundle), "--runs-out", str(runs), "--pilot", str(pilot)]) as server, \
            httpx.Client(base_url=server.url) as client:
        home = client.get("/")  # a page, with the same rules as free play, before the first instance
        assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
        assert "How to play" in home.text and "A hidden machine reads some switches" in home.text
        assert client.get("/api/pilot").json()["consent"].startswith("You are invited")
        refusals = [
            ("/api/pilot", {"participant_id": "P-1", "consent": True}, 403, "no invitation"),
            ("/api/pilot", {"participant_id": "P-1", "consent": True, "sig": sig(pilot, "P-2")}, 403,
             "no invitation"),
            ("/api/pilot", {"participant_id": "P-1", "consent": False}, 422, "consent"),
            ("/api/pilot", {"participant_id": "P-1"}, 422, "consent"),
            ("/api/pilot", {"participant_id": "../etc", "consent": True}, 422, "participant_id"),
            ("/api/pilot", {"participant_id": "", "consent": True}, 422, "participant_id"),
            ("/api/episodes", {"instance_id": ids[0]}, 403, "runs a pilot"),
            ("/api/replay", {"record": {}}, 403, "replay is off while a pilot runs"),
        ]
        for path, body, status, message in refusals:
            r = client.post(path, json=body)
            assert r.status_code == status and message in r.json()["error"], (body, r.text)
        assert client.get("/api/instances").status_code == 403
        assert not journal_of(runs).exists()
        issued = {"participant_id": "P-1", "consent": True, "sig": sig(pilot, "P-1"), "platform_id": "prolific-9"}
        resume = {"participant_id": "P-1", "sig": sig(pilot, "P-1")}
        r = client.post("/api/pilot/resume", json=resume)  # not started yet
        assert r.status_code == 404 and "not started" in r.json()["error"]
        token = client.post("/api/pilot", json=issued).json()["token"]
        # the signed link is the key: opened again anywhere (a client with nothing stored), it resumes the episode
        with httpx.Client(base_url=server.url) as elsewhere:
            assert elsewhere.post("/api/pilot", json=issued).json()["token"] == token
            assert elsewhere.post("/api/pilot/resume", json=resume).json()["play"] == f"/play/{token}"
            for body, status in (({**resume, "sig": sig(pilot, "P-2")}, 403), ({**resume, "x": 1}, 422)):
                assert elsewhere.post("/api/pilot/resume", json=body).status_code == status
        seen, tokens = [], []
        while True:
            state = client.get(f"/api/episodes/{token}").json()
            seen.append(state["instance_id"])
            tokens.append(token)
            assert state["pilot"]["completion_code"] is None and state["pilot"]["next"] is None
            for t in range(state["goal"]["horizon"]):
                if play(client, token, t, commit=t == 2)["done"]:
                    break
            state = client.get(f"/api/episodes/{token}").json()
            if state["pilot"]["next"] is None:
                break
            # before the last instance is finished, no gold and no oracle certificate: no member of M(I)
            assert state["pilot"]["completion_code"] is None
            assert state["result"]["best_match_gold"] is None and state["result"]["oracle"] is None
            assert "withheld" in state["result"]
            token = state["pilot"]["next"].rsplit("/", 1)[1]
            # between episodes, the link resumes at the next one
            assert client.post("/api/pilot/resume", json=resume).json()["token"] == token
        code = state["pilot"]["completion_code"]
        assert client.post("/api/pilot/resume", json=resume).json()["token"] == token  # the last: its code
        assert seen == order and code.startswith("DONE-4711-P-1-")
        # finished: the answers of every episode are shown
        assert all(client.get(f"/api/episodes/{t}").json()["result"]["oracle"] is not None for t in tokens)
        # a second participant gets another code
        token2 = client.post("/api/pilot", json={"participant_id": "P-2", "consent": True,
                                                 "sig": sig(pilot, "P-2")}).json()["token"]
        while token2 is not None:
            state = client.get(f"/api/episodes/{token2}").json()
            play(client, token2, 0, commit=True)
            state = client.get(f"/api/episodes/{token2}").json()
            token2 = state["pilot"]["next"] and state["pilot"]["next"].rsplit("/", 1)[1]
        code2 = state["pilot"]["completion_code"]
        assert code2 and code2 != code
    assert main(["pilot", "check-code", code, "--pilot", str(pilot)]) == 0
    assert main(["pilot", "check-code", code[:-1] + ("0" if code[-1] != "0" else "1"), "--pilot", str(pilot)]) == 1
    assert main(["pilot", "check-code", f"  {code.lower()} ", "--pilot", str(pilot)]) == 0  # typed in lower case
    rows = [json.loads(x) for x in runs.read_text().splitlines()][:len(order)]  # P-1's; then P-2's
    assert [r["instance_id"] for r in rows] == order
    for r in rows:
        assert (r["renderer_track"], r["renderer_profile_id"], r["eval_track"]) == ("visual", "GF-01-R1", "EVAL-CB")
        assert r["agent_name"] == "human" and r["agent_spec"]["params"] == {"participant_id": "P-1"}
        assert r["agent_meta"]["participant_id"] == "P-1" and r["agent_meta"]["pilot_id"] == "pilot-t"
        assert len(r["agent_meta"]["consent_sha256"]) == 64 and r["agent_meta"]["platform_id"] == "prolific-9"
        assert len(r["steps"]) == 3 and len(r["timing"]["step_ms"]) == 3  # committed early, after step 2
    assert main(["validate", str(runs), "--official", "--bundle", str(bundle), "--pilot", str(pilot)]) == 0
    # without the pilot's key validate cannot tell an issued participant: refused; a forged id: refused
    assert main(["validate", str(runs), "--official", "--bundle", str(bundle)]) == 2
    forged = [json.loads(x) for x in runs.read_text().splitlines()]
    for r in forged:
        r["agent_meta"]["participant_id"] = "P-3"
        r["agent_spec"]["params"]["participant_id"] = "P-3"
    fake = tmp_path / "forged.jsonl"
    fake.write_text("".join(json.dumps(r) + "\n" for r in forged))
    found = check_runs([fake], bundle=str(bundle), official=True, issued=lambda p, i, s: False)
    assert any("never issued" in str(v) for v in found.violations)


# -- replay ----------------------------------------------------------------------------------------------------------


def test_replay_plays_a_recorded_run_again(free: Any, bundle: Path, ids: list[str], tmp_path: Path) -> None:
    out = tmp_path / "agents.jsonl"
    evaluate(bundle, [AgentSpec("random", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")], out)
    records = [json.loads(x) for x in out.read_text().splitlines()]
    instances = {i.instance_id: i for i in load_bundle(bundle).instances}
    from gf01_formal.instances.io import instance_problem

    with httpx.Client(base_url=free.url, timeout=30) as client:
        for rec in records:
            r = client.post("/api/replay", json={"record": rec})
            assert r.status_code == 200, r.text
            data = r.json()
            engine = Episode(instance_problem(instances[rec["instance_id"]]), rec["instance_id"])
            engine.reset()
            want = [engine.step(s["submitted"], commit=s["commit"]).model_dump(mode="json") for s in rec["steps"]]
            assert data["observations"] == want and data["record"]["certificate"] == rec["certificate"]
            assert data["record"]["renderer_track"] == "json" and not data["record"]["reconstructed"]
        rec = next(r for r in records if r["certificate"])
        imported = {**rec, "steps": []}  # an imported record: no step log, its certificate is replayed
        data = client.post("/api/replay", json={"record": imported}).json()
        assert data["record"]["reconstructed"] and data["observations"][-1]["certificate"] == rec["certificate"]
        tampered = json.loads(json.dumps(rec))
        step = next(s for s in tampered["steps"] if s["committed"])
        step["committed"] = []
        for record, status, message in [
            (tampered, 422, "replaying commits other atoms"),
            ({**rec, "instance_id": "gf01f-nope"}, 404, "not in the bundle"),
            ({**rec, "instance_hash": "0" * 64}, 422, "another version"),
            ({**rec, "suff": "yes"}, 422, "not a run record"),
            ({**rec, "valid": not rec["valid"]}, 422, "not those of its certificate (valid: recorded"),
            ({**rec, "ap_f1": 0.25}, 422, "not those of its certificate (ap_f1"),
        ]:
            r = client.post("/api/replay", json={"record": record})
            assert r.status_code == status and message in r.json()["error"], r.text


# -- hostile clients (issue 19) ------------------------------------------------------------------------------------


def _raw(url: str) -> socket.socket:
    host, port = url.split("//", 1)[1].rstrip("/").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=30)


def test_a_dropped_client_is_one_line_and_a_stalled_request_times_out(bundle: Path, ids: list[str]) -> None:
    """A client gone mid-body is one line on stderr, a body that stalls gets a 408 after --body-timeout, and the
    server still serves. Red-team round 9: a connection that never completed a request was kept open for ever (3,000
    idle ones, some with half a request's headers, all open 12 s later), so one client could hold connections up to
    the server's open-file limit. Now a connection waiting for a request's head is closed after --body-timeout too;
    a keep-alive client still gets its answers. (One server for both: the same options.)"""
    with Server(["--bundle", str(bundle), "--body-timeout", "1"]) as server:
        idle, half = _raw(server.url), _raw(server.url)
        half.sendall(b"GET /api/instances HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the head never ends
        with httpx.Client(base_url=server.url) as client:  # one connection, several requests
            assert all(client.get("/api/instances").status_code == 200 for _ in range(3))
        for sock in (idle, half):
            sock.settimeout(30.0)  # generous: the server closes it after about a second
            assert sock.recv(1 << 16) == b""  # closed (before the fix: a timeout here)
            sock.close()
        head = (b"POST /api/episodes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n")
        dropped = _raw(server.url)
        dropped.sendall(head + b'{"instance_id": ')
        dropped.close()  # gone mid-body
        stalled = _raw(server.url)
        stalled.sendall(head + b'{"instance_id": ')  # and never the rest
        answer = b""
        while b"did not arrive" not in answer:
            chunk = stalled.recv(65536)
            if not chunk:
                break
            answer += chunk
        stalled.close()
        answer = answer.decode()
        assert answer.startswith("HTTP/1.1 408") and "did not arrive" in answer
        with httpx.Client(base_url=server.url) as client:  # the server still serves
            assert client.get("/api/instances").status_code == 200
        time.sleep(0.2)
        status, err = server.stop()
    assert status == 130
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if "dropped" in x]
    assert len(lines) == 1 and "/api/episodes" in lines[0], err


def test_free_play_limits_episodes_per_client(bundle: Path, ids: list[str]) -> None:
    from gf01_formal.web import games as games_module
    from gf01_formal.web.games import Games, RequestError

    games = Games.open(bundle)
    for _ in range(games_module.FREE_EPISODES_PER_CLIENT):
        games.start_free(ids[0], client="10.0.0.1")
    with pytest.raises(RequestError) as refused:
        games.start_free(ids[0], client="10.0.0.1")
    assert refused.value.status == 429
    with pytest.raises(RequestError):  # naming a fresh participant id each time does not get around it
        games.start_free(ids[0], "fresh-name", client="10.0.0.1")
    games.start_free(ids[0], client="10.0.0.2")  # another client still may


def test_free_play_counts_the_peer_not_what_it_claims_in_x_forwarded_for(bundle: Path, ids: list[str]) -> None:
    """From loopback, uvicorn would trust X-Forwarded-For: a client naming a new address each time would never
    reach its cap (issue 29). Without --proxy, the connection's peer is the client."""
    from gf01_formal.web.games import FREE_EPISODES_PER_CLIENT

    with Server(["--bundle", str(bundle)]) as server, httpx.Client(base_url=server.url) as client:
        codes = [client.post("/api/episodes", json={"instance_id": ids[0]},
                             headers={"X-Forwarded-For": f"10.1.{n // 250}.{n % 250}"}).status_code
                 for n in range(FREE_EPISODES_PER_CLIENT + 1)]
    assert codes[:-1] == [201] * FREE_EPISODES_PER_CLIENT and codes[-1] == 429


def test_a_proxy_names_the_client_by_x_forwarded_for(bundle: Path, ids: list[str]) -> None:
    from gf01_formal.web.games import FREE_EPISODES_PER_CLIENT

    with Server(["--bundle", str(bundle), "--proxy", "127.0.0.1"]) as server, \
            httpx.Client(base_url=server.url) as client:
        for _ in range(FREE_EPISODES_PER_CLIENT):
            assert begin(client, ids[0])
        r = client.post("/api/episodes", json={"instance_id": ids[0]}, headers={"X-Forwarded-For": "10.2.0.1"})
        assert r.status_code == 201  # another client behind the proxy
    assert main(["serve", "--bundle", str(bundle), "--proxy", "proxy.example"]) == 2


def wait_unlocked(path: Path, ceiling: float = 60.0) -> None:
    """Wait until no process holds the lock of ``path`` (a generous ceiling: an event, not a time)."""
    from gf01_formal.artifacts import check_unlocked
    from hoa.errors import Gf01Error

    deadline = time.monotonic() + ceiling
    while True:
        try:
            check_unlocked(path)
            return
        except Gf01Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_pilot_reset_lets_a_test_participant_start_again(bundle: Path, ids: list[str], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs.jsonl"
    pilot = write_pilot(tmp_path, ids[:2])
    args = ["--bundle", str(bundle), "--runs-out", str(runs), "--pilot", str(pilot)]

    def start(client: httpx.Client, who: str) -> str:
        r = client.post("/api/pilot", json={"participant_id": who, "consent": True, "sig": sig(pilot, who)})
        assert r.status_code == 201, r.text
        return str(r.json()["token"])

    with Server(args) as server, httpx.Client(base_url=server.url) as client:
        tester = start(client, "P-TEST")
        play(client, tester, 0)
        real = start(client, "P-REAL")
        play(client, real, 0, commit=True)  # P-REAL finishes episode 1: a record, real data
        # while the server writes the runs file, a reset is refused (it would change what the server holds)
        assert main(["pilot", "reset", "P-TEST", "--pilot", str(pilot), "--runs-out", str(runs)]) == 2
        assert "lock" in capsys.readouterr().err
    wait_unlocked(runs)  # the server's scoring child may outlive it by a moment (it dies with its parent)
    before = runs.read_bytes()
    assert main(["pilot", "reset", "P-REAL", "--pilot", str(pilot), "--runs-out", str(runs)]) == 2
    assert "real data" in capsys.readouterr().err and runs.read_bytes() == before
    assert main(["pilot", "reset", "P-NOBODY", "--pilot", str(pilot), "--runs-out", str(runs)]) == 0
    assert "nothing to reset" in capsys.readouterr().out
    assert main(["pilot", "reset", "P-TEST", "--pilot", str(pilot), "--runs-out", str(runs)]) == 0
    assert "1 episode forgotten" in capsys.readouterr().out
    assert main(["pilot", "reset", "P-REAL", "--pilot", str(pilot), "--runs-out", str(runs), "--force"]) == 0
    assert "1 record moved" in capsys.readouterr().out
    assert runs.read_text() == "" and len((Path(f"{runs}.d") / "pilot-reset.jsonl").read_text().splitlines()) == 1
    events = [json.loads(x) for x in journal_of(runs).read_text().splitlines()]
    assert [(e["participant_id"], e["forced"]) for e in events if e["event"] == "reset"] == [("P-TEST", False),
                                                                                             ("P-REAL", True)]
    with Server(args) as server, httpx.Client(base_url=server.url) as client:
        for who, old in (("P-TEST", tester), ("P-REAL", real)):
            assert client.get(f"/api/episodes/{old}").status_code == 404  # the old episode is gone
            fresh = start(client, who)  # the link starts the pilot again
            state = client.get(f"/api/episodes/{fresh}").json()
            assert state["t"] == 0 and state["pilot"]["index"] == 0
        # a participant who played nothing yet, and one reset: both play to the end and get a record
        play(client, fresh, 0, commit=True)
    assert [json.loads(x)["agent_meta"]["participant_id"] for x in runs.read_text().splitlines()] == ["P-REAL"]


def test_a_pilots_result_carries_nothing_measured_against_the_withheld_gold(bundle: Path, ids: list[str],
                                                                            tmp_path: Path) -> None:
    """Red-team round 9: before a participant finished the study, the end screen's JSON held the AP/TS precision,
    recall and F1 of their certificate against the best match it withholds. One edit played alone told whether
    that edit lies in some valid certificate (AP precision 1 or 0) and the size of the smallest such (its recall),
    though the pilot's page shows none of these: the answers a withheld gold would give, one edit at a time."""
    arbiter = load_set(ARBITER).instances[0]
    (t, name, value), *_ = arbiter.certification.oracle_certificate  # type: ignore[union-attr]
    runs = tmp_path / "runs.jsonl"
    pilot = write_pilot(tmp_path, [arbiter.instance_id, ids[0]])
    with Server(["--bundle", str(bundle), "--runs-out", str(runs), "--pilot", str(pilot)]) as server, \
            httpx.Client(base_url=server.url) as client:
        token = client.post("/api/pilot", json={"participant_id": "P-9", "consent": True,
                                                "sig": sig(pilot, "P-9")}).json()["token"]
        for step in range(t + 1):
            play(client, token, step, {name: value} if step == t else {}, commit=step == t)
        result = client.get(f"/api/episodes/{token}").json()["result"]
    assert result["certificate"] == [[t, name, value]] and "withheld" in result
    # what the pilot's end screen shows (play.js) is all there is: no figure measured against the gold
    shown = {"status", "error", "run_id", "certificate", "suff", "min1", "valid", "goal", "eff_t", "eff_a",
             "score_c", "kappa", "gold_set", "within_budget", "refusals", "recorded", "withheld"}
    leaked = {k: v for k, v in result.items() if k not in shown and v is not None}
    assert not leaked, leaked
