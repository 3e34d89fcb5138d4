"""Ctrl-C and kill -9 of ``gf01 generate --jobs 2``: exit 130 within 2 s, no output, no worker left running.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group, so the tests start the command in a session
of its own and signal its group. The workers are found in /proc by their process group (Linux only).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    return subprocess.Popen(
        [sys.executable, "-m", "gf01_formal", "generate", "--jobs", "2", "--count", "50", "-o", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(pred, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not pred():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


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
    sent = time.monotonic()
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=10)
    took = time.monotonic() - sent
    assert p.returncode in INTERRUPTED and err == "gf01: interrupted\n"
    assert took < 2.0, f"took {took:.1f} s to stop"
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
