"""External agents in the bubblewrap sandbox (issue 19, item 1): a closed-book agent that peeks (the harness's command
line in /proc, the bundle it names, the instance's oracle certificate) scores like the closed-book baselines; a
setsid grandchild is gone when the episode ends; without a sandbox, a run is refused unless --sandbox none is
stated, which the record carries and ``validate --official`` rejects."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gf01_formal.agents.sandbox import bwrap_problem
from gf01_formal.cli import main

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")

#: An agent that reads every process's command line and environment it can see, opens every JSON file they name
#: (the bundle), and plays the oracle certificate of its instance it finds there; otherwise it plays nothing. (Only its
#: own instance's: other tests, run in parallel, have processes naming other instances.)
PEEKER = '''
import json, os, sys

def found_certificate(instance_id):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("cmdline", "environ"):
            try:
                words = open(f"/proc/{pid}/{what}", "rb").read().split(b"\\0")
            except OSError:
                continue
            for w in words:
                for part in w.decode("utf-8", "replace").split("="):
                    if part.endswith(".json") and os.path.isfile(part):
                        try:
                            doc = json.load(open(part))
                            cert = doc["certification"]["oracle_certificate"]
                        except Exception:
                            continue
                        if cert and doc.get("instance_id") == instance_id:
                            return cert
    return None

cert = None
plan = {}
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "start":
        cert = found_certificate(m["instance_id"])
        plan = {}
        for t, name, value in cert or []:
            plan.setdefault(t, {})[name] = value
        t = 0
    elif m["type"] == "observation":
        if m["done"]:
            continue
        t = m["t"] + 1
    else:
        break
    last = t == max(plan, default=-1)
    print(json.dumps({"set": plan.get(t, {}), "t": t, **({"commit": True} if last else {})}), flush=True)
'''


def _evaluate(tmp_path: Path, script: str, *extra: str) -> tuple[int, list[dict]]:
    """``gf01 evaluate`` as a user runs it (a process whose command line names the bundle), with ``script``."""
    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent(script))
    out = tmp_path / "runs.jsonl"
    proc = subprocess.run([sys.executable, "-m", "gf01_formal", "evaluate", str(INSTANCE), "--agent-cmd",
                           f"{sys.executable} {agent}", "-o", str(out), *extra], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.returncode, [json.loads(line) for line in out.read_text().splitlines()]


#: What follows a probe in an agent script: the agent plays no edit at any step, to the end of the episode.
PLAY_NOTHING = '''
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "end":
        break
    if m["type"] == "observation" and m["done"]:
        continue
    print(json.dumps({"set": {}}), flush=True)
'''


def _probe(tmp_path: Path, probe: str, writes: Path, *extra: str) -> int:
    """``gf01 evaluate`` (in this process) with an agent that runs ``probe`` (Python source importing json and sys),
    then plays nothing; ``writes``, the file the probe writes, is named on the agent's command line (the sandbox
    lets it write the files named there). Returns the exit status."""
    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent(probe) + PLAY_NOTHING)
    return main(["evaluate", str(INSTANCE), "--agent-cmd", f"{sys.executable} {agent} {writes}", *extra, "-o",
                 str(tmp_path / "runs.jsonl")])


def test_the_peeker_wins_without_a_sandbox(tmp_path: Path, capsys) -> None:
    """The attack is real: unsandboxed (stated), it finds the bundle and plays the oracle's certificate."""
    status, records = _evaluate(tmp_path, PEEKER, "--sandbox", "none")
    assert status == 0, capsys.readouterr().err
    (rec,) = records
    assert rec["sandbox"] == "none" and rec["score_c"] == 1 and rec["certificate"] == [[20, "r2", 1], [21, "r2", 1]]


@needs_bwrap
def test_the_peeker_in_the_sandbox_scores_like_the_baselines(tmp_path: Path, capsys) -> None:
    status, records = _evaluate(tmp_path, PEEKER)
    assert status == 0, capsys.readouterr().err
    (rec,) = records
    assert rec["sandbox"] == "bwrap" and rec["status"] == "completed"
    assert rec["score_c"] == 0 and rec["certificate"] == []  # it found nothing to copy: closed book


@needs_bwrap
def test_the_sandbox_sees_no_harness_process_and_no_project_file(tmp_path: Path, capsys) -> None:
    seen = tmp_path / "seen.json"
    seen.write_text("")
    script = f'''
        import json, os, sys
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        cmdlines = [open(f"/proc/{{p}}/cmdline", "rb").read().replace(b"\\0", b" ").decode() for p in pids]
        def can(path):
            try:
                open(path, "rb").close()
                return True
            except OSError:
                return False
        probe = {{"pids": pids, "cmdlines": cmdlines, "instance": can({str(INSTANCE)!r}),
                  "work": os.path.exists("/work"), "root_repo": os.path.exists({str(ROOT)!r}),
                  "cwd": os.getcwd(), "net": sorted(os.listdir("/sys/class/net")) if os.path.exists("/sys") else [],
                  "env": sorted(os.environ)}}
        open({str(seen)!r}, "w").write(json.dumps(probe))
    '''
    status = _probe(tmp_path, script, seen)
    assert status == 0, capsys.readouterr().err
    probe = json.loads(seen.read_text())
    assert len(probe["pids"]) <= 3  # the sandbox's init, the agent (and at most a shim's exec)
    # the harness (this test's process) is invisible; what the sandbox's init shows is the sandbox's own set-up
    assert not any("gf01_formal" in c or str(INSTANCE) in c or "-m pytest" in c for c in probe["cmdlines"])
    assert probe["instance"] is False and probe["root_repo"] is False
    assert probe["cwd"] == "/tmp"
    assert "OPENAI_API_KEY" not in probe["env"] and set(probe["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL",
                                                                          "PYENV_VERSION", "PWD", "SHLVL", "_"}


def _gone(marker: str, wait: float = 5.0) -> bool:
    """Whether no process of this machine has ``marker`` in its command line (zombies count as gone)."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        alive = False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker.encode() in cmd and state not in ("Z", "X"):
                alive = True
                break
        if not alive:
            return True
        time.sleep(0.05)
    return False


@needs_bwrap
def test_a_setsid_grandchild_dies_with_the_episode(tmp_path: Path, capsys) -> None:
    marker = f"gf01-sandbox-grandchild-{os.getpid()}-{time.monotonic_ns()}"
    started = tmp_path / "started"
    started.write_text("")
    script = f'''
        import json, os, subprocess, sys
        # a grandchild in a session of its own, which outlives its parent and ignores the group's signals
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", {marker!r}], start_new_session=True)
        open({str(started)!r}, "w").write("yes")
    '''
    status = _probe(tmp_path, script, started)
    assert status == 0, capsys.readouterr().err
    assert started.read_text() == "yes"
    assert _gone(marker)


def test_without_a_sandbox_a_run_is_refused_unless_stated(tmp_path: Path, monkeypatch, capsys) -> None:
    from gf01_formal.agents import sandbox

    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    out = tmp_path / "runs.jsonl"
    agent = f"{sys.executable} {ROOT / 'examples' / 'agent_example.py'}"
    assert main(["evaluate", str(INSTANCE), "--agent-cmd", agent, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--sandbox none" in err and "not installed" in err
    assert not out.exists()
    assert main(["evaluate", str(INSTANCE), "--agent-cmd", agent, "--sandbox", "none", "-o", str(out)]) == 0
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["sandbox"] == "none"
    capsys.readouterr()
    assert main(["validate", str(out), "--official", "--bundle", str(INSTANCE)]) == 2
    assert "sandbox" in capsys.readouterr().out


@needs_bwrap
def test_the_example_agent_in_the_sandbox_passes_official_validation(tmp_path: Path, capsys) -> None:
    out = tmp_path / "runs.jsonl"
    agent = f"python3 {os.path.relpath(ROOT / 'examples' / 'agent_example.py')}"  # a relative path, as documented
    assert main(["evaluate", str(INSTANCE), "--agent-cmd", agent, "-o", str(out)]) == 0, capsys.readouterr().err
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["sandbox"] == "bwrap" and rec["status"] == "completed" and rec["agent_errors"] == 0
    assert main(["validate", str(out), "--official", "--bundle", str(INSTANCE)]) == 0, capsys.readouterr()


@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
def test_no_network_unless_the_run_says_so(tmp_path: Path, capsys, network: bool) -> None:
    """The harness's machine listens on loopback: the sandboxed agent cannot reach it, unless --agent-network."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    seen = tmp_path / "seen.txt"
    seen.write_text("")
    script = f'''
        import json, socket, sys
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
            reached = "reached"
        except OSError as ex:
            reached = "refused " + type(ex).__name__
        open({str(seen)!r}, "w").write(reached)
    '''
    extra = ["--agent-network"] if network else []
    try:
        status = _probe(tmp_path, script, seen, *extra)
    finally:
        server.close()
    assert status == 0, capsys.readouterr().err
    assert seen.read_text().startswith("reached" if network else "refused"), seen.read_text()


@needs_bwrap
def test_a_named_file_in_a_system_directory_stays_read_only(tmp_path: Path) -> None:
    """Naming a file of the Python installation on the agent's command line must not make it writable."""
    import sysconfig

    from gf01_formal.agents.sandbox import wrap

    inside = str(Path(sysconfig.get_paths()["stdlib"]) / "json" / "__init__.py")
    mine = tmp_path / "agent.py"
    mine.write_text("")
    args = wrap([sys.executable, inside, str(mine)])
    pairs = list(itertools.pairwise(args))
    assert ("--bind", os.path.realpath(inside)) not in pairs
    assert ("--bind", os.path.realpath(mine)) in pairs
