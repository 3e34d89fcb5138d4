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

from gf01_formal.agents.cgroups import Tree, TreeLimits, places
from gf01_formal.agents.sandbox import LIMITS, Limits, bwrap_problem, environment, wrap
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


def _inside(tmp_path: Path, script: str, *args: str, network: bool = False, limits: Limits = LIMITS,
            python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    """``script`` run by ``python`` in the sandbox an episode gets (the command line and environment
    :class:`SubprocessAgent` starts bubblewrap with), its stdout and stderr captured, its stdin empty."""
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(script))
    return subprocess.run(wrap([python, str(probe), *args], network=network, limits=limits),
                          env=environment(network), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, check=False)


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
def test_the_sandbox_sees_no_harness_process_and_no_project_file(tmp_path: Path) -> None:
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
        print(json.dumps({{"pids": pids, "cmdlines": cmdlines, "instance": can({str(INSTANCE)!r}),
                  "work": os.path.exists("/work"), "root_repo": os.path.exists({str(ROOT)!r}),
                  "cwd": os.getcwd(), "net": sorted(os.listdir("/sys/class/net")) if os.path.exists("/sys") else [],
                  "env": sorted(os.environ)}}))
    '''
    proc = _inside(tmp_path, script)
    assert proc.returncode == 0, proc.stderr
    probe = json.loads(proc.stdout)
    assert len(probe["pids"]) <= 4  # the sandbox's init, the agent (and at most a shim's exec)
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
def test_a_setsid_grandchild_dies_with_the_episode(tmp_path: Path) -> None:
    marker = f"gf01-sandbox-grandchild-{os.getpid()}-{time.monotonic_ns()}"
    script = f'''
        import subprocess, sys
        # a grandchild in a session of its own, which outlives its parent and ignores the group's signals
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", {marker!r}], start_new_session=True)
        print("started", flush=True)
    '''
    proc = _inside(tmp_path, script)
    assert proc.returncode == 0 and proc.stdout == "started\n", proc.stderr
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
def test_no_network_unless_the_run_says_so(tmp_path: Path, network: bool) -> None:
    """The harness's machine listens on loopback: the sandboxed agent cannot reach it, unless --agent-network."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    script = f'''
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
            print("reached")
        except OSError as ex:
            print("refused " + type(ex).__name__)
    '''
    try:
        proc = _inside(tmp_path, script, network=network)
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("reached" if network else "refused"), proc.stdout


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
    assert "--bind" not in args  # nothing is writable: the named files are bound read-only (or already visible)
    assert ("--ro-bind", os.path.realpath(mine)) in pairs


# -- issue 29, the sandbox's second round: each attack of item 1 ---------------------------------------------------


@needs_bwrap
def test_c_a_venv_under_the_system_temp_directory_runs_sandboxed(tmp_path: Path, capsys) -> None:
    """(c) An interpreter under /tmp is bound over the private /tmp: a --system-site-packages venv made under
    mkdtemp() runs the example agent to a completed, officially valid run."""
    import shutil
    import tempfile

    where = tempfile.mkdtemp(prefix="gf01-venv-")
    try:
        venv = Path(where) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                       check=True, capture_output=True, timeout=120)
        out = tmp_path / "runs.jsonl"
        agent = f"{venv / 'bin' / 'python'} {ROOT / 'examples' / 'agent_example.py'}"
        assert main(["evaluate", str(INSTANCE), "--agent-cmd", agent, "-o", str(out)]) == 0, capsys.readouterr().err
        (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
        assert rec["status"] == "completed" and rec["agent_errors"] == 0 and rec["sandbox"] == "bwrap", rec["error"]
        assert main(["validate", str(out), "--official", "--bundle", str(INSTANCE)]) == 0, capsys.readouterr()
    finally:
        shutil.rmtree(where)


#: A closed-book agent kept in a project's bin/: it looks for the bundle beside its directory (and anywhere under
#: it) and plays the oracle's certificate it finds; it prints what it saw as its first line (not JSON: a fault).
PROJECT_PEEKER = '''
import json, os, sys

here = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
seen = []
cert = None
for dirpath, _, files in os.walk(here):
    for name in files:
        seen.append(os.path.join(dirpath, name))
        try:
            doc = json.load(open(os.path.join(dirpath, name)))
            cert = cert or doc["certification"]["oracle_certificate"]
        except Exception:
            pass
print("seen " + " ".join(sorted(os.path.relpath(p, here) for p in seen)), flush=True)
plan = {}
for t, name, value in cert or []:
    plan.setdefault(t, {})[name] = value
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "end":
        break
    if m["type"] == "observation" and m["done"]:
        continue
    t = 0 if m["type"] == "start" else m["t"] + 1
    last = t == max(plan, default=-1)
    print(json.dumps({"set": plan.get(t, {}), "t": t, **({"commit": True} if last else {})}), flush=True)
'''


@needs_bwrap
def test_a_a_program_in_a_project_bin_sees_nothing_of_the_project(tmp_path: Path, capsys) -> None:
    """(a) proj/bin/agent next to proj/bundle.json: only the program's own file is bound, not its "install prefix";
    it finds no bundle and scores 0."""
    proj = tmp_path / "proj"
    (proj / "bin").mkdir(parents=True)
    bundle = proj / "bundle.json"
    bundle.write_text(INSTANCE.read_text())
    (proj / "keys").mkdir()
    (proj / "keys" / "split.key").write_text("not for the agent\n")
    agent = proj / "bin" / "agent"
    agent.write_text(f"#!{sys.executable}\n{PROJECT_PEEKER}")
    agent.chmod(0o755)
    out = proj / "runs.jsonl"
    assert main(["evaluate", str(bundle), "--agent-cmd", str(agent), "-o", str(out)]) == 0, capsys.readouterr().err
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["sandbox"] == "bwrap" and rec["status"] == "completed"
    assert rec["score_c"] == 0 and rec["certificate"] == []
    (fault,) = [s["agent_error"] for s in rec["steps"] if s.get("agent_error")]
    assert fault["kind"] == "not_json" and "seen bin/agent" in fault["message"], fault
    assert "bundle" not in fault["message"] and "keys" not in fault["message"] and "runs" not in fault["message"]


SECRET = "sk-gf01-planted-secret-0123456789"

#: An agent that hunts the harness's credentials everywhere it can look (every process's environ and cmdline, its
#: own environment) and crashes, printing what it found to stderr (which the crash message carries).
SECRET_HUNTER = '''
import os, sys
found = []
for pid in os.listdir("/proc"):
    for what in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{pid}/{what}", "rb").read().decode("utf-8", "replace")
        except OSError as ex:
            print(f"/proc/{pid}/{what}: {type(ex).__name__}", file=sys.stderr)
            continue
        found += [w for w in data.split("\\0") if "sk-" in w or "hf_" in w]
found += [f"{k}={v}" for k, v in os.environ.items() if "sk-" in v or "hf_" in v]
print("found: " + " ".join(found), file=sys.stderr)
print("leak " + " ".join(found), flush=True)
sys.exit(1)
'''


@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
def test_b_the_harness_environment_never_reaches_the_record(tmp_path: Path, monkeypatch, capsys,
                                                              network: bool) -> None:
    """(b) The operator's OPENAI_API_KEY and HF_TOKEN: unreadable through /proc/1/environ or any other process's
    file; with --agent-network the agent gets them (it calls a model), and its crash message and the lines it
    prints still reach the record with the values redacted."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("HF_TOKEN", "hf_" + SECRET)
    agent = tmp_path / "hunter.py"
    agent.write_text(SECRET_HUNTER)
    out = tmp_path / "runs.jsonl"
    extra = ["--agent-network"] if network else []
    main(["evaluate", str(INSTANCE), "--agent-cmd", f"{sys.executable} {agent}", *extra, "-o", str(out)])
    capsys.readouterr()
    text = out.read_text()
    (rec,) = [json.loads(line) for line in text.splitlines()]
    assert rec["status"] == "agent_error" and "found:" in rec["error"], rec["error"]
    assert SECRET not in text and "planted" not in text
    if network:
        assert "[$OPENAI_API_KEY]" in text  # the agent had it, and the record names the variable, not the value
    else:
        assert "/proc/1/environ: PermissionError" in rec["error"] or "[$" not in text


@needs_bwrap
def test_d_named_files_are_read_only_and_nothing_is_kept(tmp_path: Path) -> None:
    """(d) The agent's own script and a file named on its command line cannot be rewritten (no state across
    episodes, no code changed on the host); a 300 MiB write fails inside and reaches no disk."""
    memo = tmp_path / "memo.json"
    memo.write_text("{}")
    marker = f"gf01-big-{os.getpid()}-{time.monotonic_ns()}"
    script = f'''
        import errno, json, sys
        out = {{}}
        for name, path in (("script", sys.argv[0]), ("memo", sys.argv[1])):
            try:
                with open(path, "a") as fh:
                    fh.write("# gold: [[20, 'r2', 1]]\\n")
                out[name] = "written"
            except OSError as ex:
                out[name] = errno.errorcode[ex.errno]
        written = 0
        try:
            with open("/tmp/{marker}", "wb") as fh:
                for _ in range(300):
                    fh.write(b"x" * (1 << 20))
                    fh.flush()
                    written += 1
        except OSError as ex:
            out["big"] = errno.errorcode[ex.errno]
        out["mib"] = written
        print(json.dumps(out))
    '''
    proc = _inside(tmp_path, script, str(memo))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["script"] in ("EROFS", "EACCES") and out["memo"] in ("EROFS", "EACCES"), out
    assert out["big"] in ("ENOSPC", "EFBIG") and out["mib"] < 300, out
    assert memo.read_text() == "{}" and (tmp_path / "probe.py").read_text() == textwrap.dedent(script)
    assert not (Path("/tmp") / marker).exists()  # the write went to the sandbox's memory-backed /tmp, now gone


FORK_BOMB = '''
import errno, json, os, time
forked, error = 0, None
try:
    for _ in range(2000):
        pid = os.fork()
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        forked += 1
except OSError as ex:
    error = errno.errorcode[ex.errno]
print(json.dumps({"forked": forked, "error": error}), flush=True)
'''


@needs_bwrap
def test_d_a_fork_bomb_is_bounded_and_the_next_episode_starts(tmp_path: Path) -> None:
    """(d) Tasks: the episode's RLIMIT_NPROC binds even under a root harness (the program runs as a uid of its own);
    its processes die with the sandbox, and the next episode's sandbox starts."""
    proc = _inside(tmp_path, FORK_BOMB)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["error"] == "EAGAIN" and out["forked"] < LIMITS.tasks, out
    again = _inside(tmp_path, "print('started')")
    assert again.returncode == 0 and again.stdout == "started\n", again.stderr


@needs_bwrap
def test_d_memory_and_cpu_are_bounded(tmp_path: Path) -> None:
    """(d) A 2 GiB allocation fails (RLIMIT_AS); a busy loop is stopped at its CPU limit (RLIMIT_CPU, here 1 s)."""
    big = _inside(tmp_path, '''
        try:
            block = bytearray(2 << 30)
            print("allocated")
        except MemoryError:
            print("MemoryError")
    ''')
    assert big.returncode == 0 and big.stdout == "MemoryError\n", (big.stdout, big.stderr)
    busy = _inside(tmp_path, "print('busy', flush=True)\nwhile True:\n    pass\n", limits=Limits(cpu_seconds=1))
    assert busy.stdout == "busy\n" and busy.returncode != 0


def test_the_record_states_the_sandbox_limits(tmp_path: Path) -> None:
    from gf01_formal.agents.subprocess_agent import SubprocessAgent

    agent = SubprocessAgent([sys.executable, str(ROOT / "examples" / "agent_example.py")], sandbox="bwrap")
    assert agent.meta["sandbox_limits"] == {"tasks": LIMITS.tasks, "memory_bytes": LIMITS.memory_bytes,
                                            "cpu_seconds": LIMITS.cpu_seconds, "tmp_bytes": LIMITS.tmp_bytes,
                                            "file_bytes": LIMITS.file_bytes,
                                            # the tree's: none held before the program is started
                                            "tree_memory_bytes": None, "tree_tasks": None, "tree_cpu_cores": None,
                                            "tree_how": "none", "tree_not_held": "the program was not started"}
    assert "sandbox_limits" not in SubprocessAgent([sys.executable], sandbox="none").meta


@needs_bwrap
def test_b_the_environment_given_with_network_is_on_no_command_line(monkeypatch) -> None:
    """--agent-network gives the program the harness's environment, inherited, never as bwrap --setenv words: a
    command line is readable by every user of the machine (and by the agent, as its pid 1's)."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert SECRET not in " ".join(wrap([sys.executable, "-c", "pass"], network=True))
    seen = subprocess.run(wrap([sys.executable, "-c", "import os; print(os.environ['OPENAI_API_KEY'], "
                                "os.environ['HOME'])"], network=True), env=environment(True),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)
    assert seen.returncode == 0 and seen.stdout.split() == [SECRET, "/tmp"], seen.stderr


# -- the whole process tree (agents/cgroups.py): limits beyond the per-process rlimits -------------------------------

TREE = places()
needs_tree = pytest.mark.skipif(not {"memory", "pids", "cpu"} <= set(TREE),
                                reason=f"no writable cgroup hierarchy for memory, pids and cpu here ({sorted(TREE)})")

#: Four processes that each hold 512 MiB (each within its own 1 GiB address space): 2 GiB in all. Reports on stderr,
#: as its crash message, how many held it to the end, were killed (the OOM killer of the tree's group) or failed.
TWO_GIB = '''
import json, os, select, sys
sys.stdin.readline()
# Each child writes 512 MiB and says so on `ready`, then holds it until `go` is closed: the parent closes it once
# every child has either said so or died, so the survivors held their blocks all at the same time (an event, where
# a sleep of some seconds only made that likely).
ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
kids = []
for k in range(4):
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(go_w)
        try:
            block = b"\\x01" * (512 << 20)  # written, so resident
        except MemoryError:
            os._exit(2)
        os.write(ready_w, bytes([k]))
        os.read(go_r, 1)  # end of file when the parent closes go_w
        os._exit(0)
    kids.append(pid)
os.close(ready_w)
os.close(go_r)
ready, statuses = set(), {}
while len(ready | {kids.index(pid) for pid in statuses}) < len(kids):
    if select.select([ready_r], [], [], 0.05)[0]:
        ready |= set(os.read(ready_r, 16))
    for pid in kids:
        if pid not in statuses:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                statuses[pid] = status
os.close(go_w)
held = killed = failed = 0
for pid in kids:
    status = statuses[pid] if pid in statuses else os.waitpid(pid, 0)[1]
    if os.WIFSIGNALED(status):
        killed += 1
    elif os.WEXITSTATUS(status) == 0:
        held += 1
    else:
        failed += 1
sys.stderr.write(json.dumps({"held": held, "killed": killed, "failed": failed}) + "\\n")
sys.exit(3)
'''


def _one_episode(tmp_path: Path, script: str) -> tuple[str, dict]:
    """``script`` as a sandboxed agent's program for one episode (the harness's own path: SubprocessAgent); returns
    the fault message of its first action and the record's ``sandbox_limits``."""
    from gf01_formal.agents.base import AgentFault
    from gf01_formal.agents.subprocess_agent import SubprocessAgent
    from gf01_formal.instances.sources import open_instance
    from gf01_formal.play.protocol import Start
    from gf01_formal.runs.recorder import EpisodeRecorder

    agent_file = tmp_path / "tree_agent.py"
    agent_file.write_text(textwrap.dedent(script))
    agent_file.chmod(0o644)
    instance, problem = open_instance(INSTANCE)
    agent = SubprocessAgent([sys.executable, str(agent_file)], step_timeout=120.0, sandbox="bwrap")
    try:
        goal = EpisodeRecorder(problem, instance.instance_id).start()
        agent.start(Start(instance_id=instance.instance_id, goal=goal, tools=None))
        with pytest.raises(AgentFault) as fault:
            agent.act(None)
        return fault.value.message, dict(agent.meta["sandbox_limits"])
    finally:
        agent.close()


@needs_bwrap
@needs_tree
def test_d_two_gib_in_four_processes_is_bounded_by_the_tree_and_the_next_episode_starts(tmp_path: Path) -> None:
    """Each process is within its own address space limit; the tree's memory group (1 GiB) holds them together:
    at most one of the four keeps its 512 MiB. Without it all four do (2 GiB of the machine's)."""
    message, limits = _one_episode(tmp_path, TWO_GIB)
    assert limits["tree_memory_bytes"] == LIMITS.tree_memory_bytes == 1 << 30, limits
    assert "memory" in limits["tree_how"] and "tree_not_held" not in limits, limits
    got = json.loads(message[message.index("{"):message.index("}") + 1])
    assert got["held"] <= 1 and got["held"] + got["killed"] + got["failed"] == 4, got
    again, _ = _one_episode(tmp_path, "import sys\nsys.stdin.readline()\nsys.stderr.write('started')\nsys.exit(3)\n")
    assert again.endswith("started"), again


@needs_bwrap
@needs_tree
def test_d_a_fork_bomb_is_bounded_by_the_tree_and_the_groups_are_removed(tmp_path: Path) -> None:
    """Tasks: the tree's pids group (and the episode uid's RLIMIT_NPROC) stop a fork bomb short of the limit; when
    the episode ends its groups are gone, and the next episode starts."""
    bomb = "import sys\nsys.stdin.readline()\n" + textwrap.dedent(FORK_BOMB).replace("print(", "sys.stderr.write(") \
        .replace(", flush=True)", " + '\\n')") + "sys.exit(3)\n"
    message, limits = _one_episode(tmp_path, bomb)
    assert limits["tree_tasks"] == LIMITS.tasks and "pids" in limits["tree_how"], limits
    got = json.loads(message[message.index("{"):message.index("}") + 1])
    assert got["error"] == "EAGAIN" and got["forked"] < LIMITS.tasks, got
    mine = f"gf01-agent-{os.getpid()}-"
    left = [d for place in TREE.values() for d in os.listdir(place.parent) if d.startswith(mine)]
    assert left == [], left
    again, _ = _one_episode(tmp_path, "import sys\nsys.stdin.readline()\nsys.stderr.write('started')\nsys.exit(3)\n")
    assert again.endswith("started"), again


@needs_tree
def test_the_tree_cpu_rate_holds_every_process_together(tmp_path: Path) -> None:
    """CPU: two busy processes in a group of 0.05 cores for 3 s of wall time get about 0.15 s of CPU between them
    (a loaded machine gives them less, never more); without the group each would get up to 3 s."""
    tree = Tree.make(TreeLimits(memory_bytes=1 << 30, tasks=64, cpu_cores=0.05))
    busy = ("import os, time\n"
            "pid = os.fork()\n"
            "end = time.monotonic() + 3\n"
            "while time.monotonic() < end:\n"
            "    pass\n"
            "if pid:\n"
            "    os.waitpid(pid, 0)\n"
            "    t = os.times()\n"
            "    print(t.user + t.system + t.children_user + t.children_system)\n")
    try:
        tree.open()
        proc = subprocess.Popen([sys.executable, "-c", busy], stdout=subprocess.PIPE, text=True,
                                preexec_fn=tree.enter)
        tree.closed()
        tree.confirm(proc.pid)
        assert tree.held()["tree_cpu_cores"] == 0.05, tree.held()
        out, _ = proc.communicate(timeout=120)
    finally:
        tree.remove()
    assert float(out) < 0.6, out


@needs_tree
def test_a_tree_limit_is_claimed_only_for_a_program_inside_its_group() -> None:
    """The harness looks after the start: a program that is not in a group (here, one never moved) gets no claim of
    that group's limit in the record, and a reason."""
    tree = Tree.make(LIMITS.tree())
    try:
        assert tree.held()["tree_how"] != "none"
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            tree.confirm(proc.pid)
        finally:
            proc.kill()
            proc.wait()
        held = tree.held()
    finally:
        tree.remove()
    assert (held["tree_memory_bytes"], held["tree_tasks"], held["tree_cpu_cores"], held["tree_how"]) == \
        (None, None, None, "none"), held
    assert "could not be moved into its group" in held["tree_not_held"], held


@needs_tree
def test_groups_left_by_a_killed_harness_are_removed_by_the_next() -> None:
    """kill -9 of a harness leaves its episode's groups; the next harness to look for its places removes them."""
    dead = 4_194_304 + 1  # above the largest pid Linux hands out: no such process
    stale = [os.path.join(place.parent, f"gf01-agent-{dead}-0") for place in TREE.values()]
    for path in dict.fromkeys(stale):
        os.makedirs(path, exist_ok=True)
    places.cache_clear()
    try:
        assert set(places()) == set(TREE)
    finally:
        places.cache_clear()
    assert not any(os.path.exists(p) for p in stale), stale
