"""Ctrl-C and kill -9 of ``gf01 generate --jobs 2``: exit 130 (waited for with a generous ceiling), no output, no
worker left running; and of ``gf01 evaluate --agent-cmd``: no external agent left running either, nor a child it
started, even an agent that ignores SIGTERM and never answers.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group, so the tests start the command in a session
of its own and signal its group. The workers are found in /proc by their process group (Linux only); the agents,
which run in sessions of their own, by their script's path (a directory of the test's own) in their argv.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from waits import CEILING

from gf01_formal import workers

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")

ROOT = Path(__file__).resolve().parent.parent
#: A shell reports a process that died of SIGINT as 130, like one that exited 130. CPython dies of SIGINT itself when
#: a Ctrl-C landed inside an exec() of a string (a dataclass being built during an import) even after main() handled
#: the KeyboardInterrupt and printed the message, so both are the same answer.
INTERRUPTED = (130, -signal.SIGINT)


def _group(pgid: int) -> dict[int, tuple[str, float]]:
    """The live processes of process group ``pgid``: pid -> (command line, CPU seconds used)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":  # a zombie has exited; only its parent's reaping is left
            found[int(entry.name)] = (cmdline, (int(fields[11]) + int(fields[12])) / tick)
    return found


def _workers(pgid: int) -> dict[int, float]:
    """The pool workers of the group (spawned interpreters), with their CPU seconds."""
    return {pid: cpu for pid, (cmd, cpu) in _group(pgid).items() if "spawn_main" in cmd}


def _start(out: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Far more work than the tests wait for (they signal it once both workers are busy): at 50 instances, about
    # 1.5 s of CPU each, a worker with a light share could finish under the 1 s of CPU the tests wait to see.
    return subprocess.Popen(
        [sys.executable, "-m", "gf01_formal", "generate", "--jobs", "2", "--count", "500", "-o", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(pred, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not pred():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def _ctrl_c_stops(p: subprocess.Popen[str]) -> None:
    """Ctrl-C the command's process group: it says it was interrupted and exits 130 (how fast: bench/)."""
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=CEILING)
    assert p.returncode in INTERRUPTED and err == "gf01: interrupted\n"


@pytest.fixture
def run(tmp_path: Path):
    """Start the command; afterwards make sure nothing of it is left (killing what is, so a failure stays local)."""
    procs: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        procs.append(_start(tmp_path / "out" / "bundle.json"))
        return procs[-1]

    yield start
    for p in procs:
        for pid in _group(p.pid):
            os.kill(pid, signal.SIGKILL)
        p.kill()
        p.communicate()


def test_ctrl_c_stops_at_once_and_leaves_nothing(run, tmp_path: Path) -> None:
    p = run()
    # Working: both workers have spent a second of CPU time (their start-up takes about half of that).
    _wait_for(lambda: len(w := _workers(p.pid)) == 2 and min(w.values()) >= 1.0, 60, "two busy workers")
    _ctrl_c_stops(p)
    _wait_for(lambda: not _group(p.pid), 2, "the workers to be gone")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []  # no output, no temp file


def test_ctrl_c_while_the_workers_start_prints_only_one_line(run) -> None:
    """A worker still starting when Ctrl-C comes neither dies nor prints a traceback: it starts with SIGINT blocked.

    SIGINT goes to the workers again and again during their whole start-up (where a worker started without the
    mask dies, or prints KeyboardInterrupt, and the pool breaks), then to the group, as a Ctrl-C.
    """
    p = run()
    _wait_for(lambda: _workers(p.pid), 60, "a worker to start")
    until = time.monotonic() + 1.0
    while time.monotonic() < until:
        for pid in _workers(p.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
        time.sleep(0.005)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=10)
    assert p.returncode in INTERRUPTED and err == "gf01: interrupted\n"
    _wait_for(lambda: not _group(p.pid), 2, "the workers to be gone")


def test_kill_9_of_the_parent_takes_the_workers_along(run, tmp_path: Path) -> None:
    p = run()
    _wait_for(lambda: len(w := _workers(p.pid)) == 2 and min(w.values()) >= 1.0, 60, "two busy workers")
    workers = set(_workers(p.pid))
    os.kill(p.pid, signal.SIGKILL)  # the parent only: nothing of ours runs to clean up
    p.wait(timeout=10)  # (not communicate: orphaned workers would hold its pipes open)
    _wait_for(lambda: not workers & set(_group(p.pid)), 5, "the orphaned workers to die")
    assert not (tmp_path / "out" / "bundle.json").exists()


# -- external agents ---------------------------------------------------------------------------------------------------

#: An agent that reads its start message and then never answers, and ignores SIGTERM: its end can only be forced.
SLEEPER = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdin.readline()
time.sleep(300)
"""


def _argv_under(prefix: str) -> list[int]:
    """The live processes with an argv word that starts with ``prefix`` (zombies, which have exited, excepted; and
    bubblewrap's own processes, whose argv names the files they bind: the agent inside is counted)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"bwrap":
            continue
        if stat[stat.rindex(")") + 2 :].split()[0] != "Z" and any(a.startswith(prefix.encode()) for a in argv):
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def bundle(generated_bundle: Callable[..., Path]) -> Path:
    return generated_bundle(3, 4)  # 4 instances: both workers play


@pytest.fixture
def agent(tmp_path: Path):
    """The agent command (``direct``: the sleeper; ``shell``: a shell script running it as its child, no exec) and
    a function listing the agent processes alive; afterwards whatever is left of them is killed."""
    home = tmp_path / "agent"
    home.mkdir()
    (home / "agent.py").write_text(SLEEPER)
    (home / "wrap.sh").write_text(f'"{sys.executable}" -S "{home / "agent.py"}"\necho unreachable\n')

    def command(via: str) -> str:
        # A wrapper script names a file of its own that the sandbox does not bind (only the files named on the
        # agent's command line are): it runs unsandboxed, stated; the direct agent runs in the sandbox.
        # -S: the sleeper needs the standard library only (tests/scripted_agent.py says why).
        return f"{sys.executable} -S {home / 'agent.py'}" if via == "direct" else f"sh {home / 'wrap.sh'}"

    def alive(program: str = "") -> list[int]:
        return _argv_under(str(home / program))

    yield command, alive
    for pid in alive():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def harness(tmp_path: Path):
    """Start a Python process (argv after the interpreter) in a session of its own; afterwards nothing of its group
    is left."""
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        procs.append(subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, start_new_session=True))
        return procs[-1]

    yield start
    for p in procs:
        for pid in _group(p.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        p.kill()
        p.communicate()


def _evaluate(harness, bundle: Path, cmd: str, jobs: int, tmp_path: Path) -> subprocess.Popen[str]:
    sandbox = ["--sandbox", "none"] if cmd.startswith("sh ") else []  # see the agent fixture
    return harness("-m", "gf01_formal", "evaluate", str(bundle), "--agent-cmd", cmd, "--jobs", str(jobs),
                   "--step-timeout", "120", *sandbox, "-o", str(tmp_path / "runs.jsonl"))


@pytest.mark.parametrize(("jobs", "via"), [(1, "direct"), (2, "direct"), (1, "shell"), (2, "shell")])
def test_ctrl_c_of_evaluate_ends_every_agent_at_once(harness, agent, bundle, tmp_path, jobs, via) -> None:
    """Within 2 s, though the agents ignore SIGTERM (no grace is waited for), and nothing of them is left: with
    --jobs 2 the pool's workers, which are SIGKILLed, first kill their agents' process groups (the shell's child
    too)."""
    command, alive = agent
    p = _evaluate(harness, bundle, command(via), jobs, tmp_path)
    _wait_for(lambda: len(alive("agent.py")) == jobs, 60, f"{jobs} agents to start")
    time.sleep(0.2)  # the agents are waiting for nothing now: deep in the step's wait
    _ctrl_c_stops(p)
    _wait_for(lambda: not alive(), 1, "the agents to be gone")


@pytest.mark.parametrize("jobs", [1, 2])
def test_kill_9_of_evaluate_takes_the_agents_along(harness, agent, bundle, tmp_path, jobs) -> None:
    """Nothing of the harness runs after kill -9: the kernel ends each agent (its parent-death signal), with --jobs 2
    once the worker that started it has died of its own."""
    command, alive = agent
    p = _evaluate(harness, bundle, command("direct"), jobs, tmp_path)
    _wait_for(lambda: len(alive("agent.py")) == jobs, 60, f"{jobs} agents to start")
    os.kill(p.pid, signal.SIGKILL)  # the harness only
    p.wait(timeout=10)
    _wait_for(lambda: not alive(), 5, "the orphaned agents to die")


@pytest.mark.parametrize("jobs", [1, 2])
def test_sigterm_of_evaluate_ends_every_agent_and_its_children(harness, agent, bundle, tmp_path, jobs) -> None:
    """SIGTERM to the harness alone: it (--jobs 1) or its workers end the agents' groups before it dies of the
    signal."""
    command, alive = agent
    p = _evaluate(harness, bundle, command("shell"), jobs, tmp_path)
    _wait_for(lambda: len(alive("agent.py")) == jobs, 60, f"{jobs} agents to start")
    os.kill(p.pid, signal.SIGTERM)
    p.communicate(timeout=10)
    assert p.returncode == -signal.SIGTERM
    _wait_for(lambda: not alive(), 2, "the agents to be gone")


def test_ctrl_c_of_a_threaded_evaluation_ends_every_agent(harness, agent, bundle, tmp_path) -> None:
    """evaluate(threads=True) plays in daemon threads that no one joins: the interrupted generator kills the groups
    of the agents they started (the shell's child too)."""
    command, alive = agent
    script = ("import sys\n"
              "from gf01_formal.agents.base import AgentSpec\n"
              "from gf01_formal.campaign.evaluate import evaluate\n"
              "spec = AgentSpec('cmd', 'EVAL-CB', {'cmd': sys.argv[2], 'step_timeout': 120.0, 'sandbox': 'none'})\n"
              "evaluate(sys.argv[1], [spec], sys.argv[3], jobs=2, threads=True)\n")
    p = harness("-c", script, str(bundle), command("shell"), str(tmp_path / "runs.jsonl"))
    _wait_for(lambda: len(alive("agent.py")) == 2, 60, "2 agents to start")
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=CEILING)
    assert "KeyboardInterrupt" in err
    # Killed by the harness before it exits; the ceiling only allows for a loaded machine's scheduling (1 s timed out
    # once in a full suite run next to other work).
    _wait_for(lambda: not alive(), 5, "the agents to be gone")


def test_a_program_started_while_the_groups_are_killed_is_killed_too() -> None:
    """The race of a stop with a thread that is starting an agent: the group it holds after the kill dies at once."""
    since = workers.kills()
    workers.kill_groups()  # another thread stops the work while this one is starting its program
    program = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        workers.hold_group(program.pid, since=since)
        assert program.wait(timeout=5) == -signal.SIGKILL
    finally:
        workers.release_group(program.pid)
        program.kill()
        program.wait()


def _session(sid: int) -> list[str]:
    """Every process of session ``sid``, zombies included (where process 1 does not reap, an exited child whose parent
    has gone stays a zombie: a child left behind all the same)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[3]) == sid:
            found.append(stat[:80])
    return found


@pytest.mark.parametrize("command", ["generate", "campaign"])
def test_no_child_is_left_behind_at_exit(command: str, bundle: Path, tmp_path: Path) -> None:
    """generate --jobs 2 and campaign (a spawn pool each) leave no process at all once they have exited: no worker
    and no multiprocessing resource tracker (which ends only after its parent and is then nobody's to reap)."""
    argv = {"generate": ["generate", "-o", str(tmp_path / "g.json"), "--count", "3", "--jobs", "2", "--cfg",
                         str(tmp_path / "cfg.json")],
            "campaign": ["campaign", str(bundle), "--panel", "core", "--agents", "random", "--jobs", "2", "--batch",
                         "1", "-o", str(tmp_path / "c")]}[command]
    (tmp_path / "cfg.json").write_text(json.dumps({"families": [{"kind": "random_mealy", "states": [4, 6],
                                                                 "inputs": [2, 3]}], "horizon": [6, 10]}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # A session of its own: its id is the command's pid, and every process it starts stays in it.
    p = subprocess.Popen([sys.executable, "-m", "gf01_formal", *argv], env=env, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    # At once: a process of the session still there (running, or a zombie) when the command has exited was not
    # stopped and reaped by it.
    assert _session(p.pid) == []
