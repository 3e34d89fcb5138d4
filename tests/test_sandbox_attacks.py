"""Red-team round 8: what a sandboxed program can reach through the files its command names.

A participant's package holding a symbolic link (``weights.bin -> ../bundle.json``) named on the agent's command
line used to be bound by its target: the program read the bundle the evaluator keeps beside it and played the
oracle certificate stored there (a real ``gf01 evaluate`` scored it Score_C 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gf01_formal.agents.sandbox import bwrap_problem, environment, wrap

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"
needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")

#: Reads the file its first argument names (the bundle, through the link) and plays its oracle certificate.
CHEAT = '''
import json, sys
try:
    cert = json.load(open(sys.argv[1]))["certification"]["oracle_certificate"]
except Exception:
    cert = []
plan = {}
for t, n, v in cert:
    plan.setdefault(t, {})[n] = v
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "start":
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


def _package(tmp_path: Path) -> tuple[Path, Path]:
    """The evaluator's bundle in ``tmp_path``, and beside it a participant's package whose ``weights.bin`` is a
    relative link to it."""
    tmp_path.chmod(0o755)
    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(INSTANCE.read_bytes())
    pkg = tmp_path / "pkg"
    pkg.mkdir(mode=0o755)
    (pkg / "agent.py").write_text(CHEAT)
    (pkg / "weights.bin").symlink_to("../bundle.json")
    return bundle, pkg


def _evaluate(bundle: Path, out: Path, pkg: Path, named: str) -> subprocess.CompletedProcess[str]:
    """``gf01 evaluate`` of the package's agent with ``named`` on its command line, from the package's directory."""
    return subprocess.run([sys.executable, "-m", "gf01_formal", "evaluate", str(bundle), "-o", str(out),
                           "--agent-cmd", f"{sys.executable} agent.py {named}"], cwd=pkg, capture_output=True,
                          text=True, timeout=120, check=False)


@needs_bwrap
def test_a_named_symbolic_link_to_the_bundle_is_refused(tmp_path: Path) -> None:
    bundle, pkg = _package(tmp_path)
    out = tmp_path / "runs.jsonl"
    proc = _evaluate(bundle, out, pkg, "weights.bin")
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "weights.bin" in proc.stderr and "symbolic link" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not out.exists() or not out.read_text().strip()


@needs_bwrap
def test_the_sandbox_never_binds_a_named_links_target(tmp_path: Path) -> None:
    """Below the checks (the Python API): the sandbox does not show a file reached through a named link."""
    _, pkg = _package(tmp_path)
    probe = pkg / "probe.py"
    probe.write_text("import os, sys\n"
                     "print(os.path.exists(sys.argv[1]), os.path.exists(os.path.realpath(sys.argv[1])))\n")
    proc = subprocess.run(wrap([sys.executable, str(probe), str(pkg / "weights.bin")]), env=environment(False),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"], proc.stdout


def test_a_named_file_by_its_real_path_is_fine(tmp_path: Path) -> None:
    from gf01_formal.agents.sandbox import check_named_files

    _, pkg = _package(tmp_path)
    check_named_files([sys.executable, str(pkg / "agent.py"), str(pkg / "agent.py"), "--flag", "word"])
    with pytest.raises(Exception, match="symbolic link"):
        check_named_files([sys.executable, str(pkg / "agent.py"), str(pkg / "weights.bin")])
    os.symlink(pkg, tmp_path / "linked")  # a link on the way to the file counts too
    with pytest.raises(Exception, match="symbolic link"):
        check_named_files([sys.executable, str(tmp_path / "linked" / "agent.py")])


#: Shrinks its input pipe to one page, reads the start message and then only writes: a flood of short action lines
#: while the harness waits to write the next message.
FLOOD = '''
import fcntl, os, sys
fcntl.fcntl(0, 1031, 4096)  # F_SETPIPE_SZ: one page
sys.stdin.readline()
chunk = b'{"set":{}}\\n' * 6000
while True:
    os.write(1, chunk)
'''


@needs_bwrap
def test_a_flood_of_lines_is_not_kept_without_bound(tmp_path: Path) -> None:
    """A program that stops reading its input and floods its output used to have every line kept while the
    harness waited to write (hundreds of MB of the harness's memory in one step's timeout, and a quadratic split
    of each chunk into lines): the lines not yet taken are bounded, and the harness stops reading past the bound."""
    from gf01_formal.agents.base import AgentFault
    from gf01_formal.agents.subprocess_agent import MAX_BACKLOG, SubprocessAgent
    from gf01_formal.instances.sources import open_instance
    from gf01_formal.play.protocol import Start
    from gf01_formal.runs.recorder import EpisodeRecorder

    tmp_path.chmod(0o755)
    script = tmp_path / "flood.py"
    script.write_text(FLOOD)
    script.chmod(0o644)
    instance, problem = open_instance(INSTANCE)
    agent = SubprocessAgent([sys.executable, str(script)], step_timeout=2.0, sandbox="bwrap")
    try:
        agent.start(Start(instance_id=instance.instance_id, goal=EpisodeRecorder(problem, instance.instance_id).start(),
                          tools=None))
        assert agent.next_line() == b'{"set":{}}'
        with pytest.raises(AgentFault) as fault:
            for _ in range(1000):  # its input fills after a few; then the write waits out the step's timeout
                agent.send_line("{" + " " * 1000 + "}")
        assert fault.value.kind == "timeout"
        assert len(agent._lines) <= MAX_BACKLOG + 65536 // 2  # the bound, and at most the lines of one read
    finally:
        agent.close()


def test_the_commands_files_must_be_hidden_from_the_sandbox(tmp_path: Path) -> None:
    """The sandbox shows /usr, /etc, /opt, the interpreter's installation and the named files: a bundle kept there
    (``/opt/gf01/private.json``, a deployment's habit) was read by a program walking /opt, which played its oracle
    certificate (a real ``gf01 evaluate`` scored it Score_C 1); a bundle named on the agent's command line was shown
    too. Such a run is refused before any episode."""
    from gf01_formal.agents.sandbox import check_hidden

    _, pkg = _package(tmp_path)
    argv = [sys.executable, str(pkg / "agent.py")]
    check_hidden(argv, [tmp_path / "bundle.json", tmp_path / "runs.jsonl", None])  # beside the agent: hidden
    for shown in ("/opt/gf01/private.json", "/etc/gf01/eval.key", "/usr/share/gf01/bundle.json",
                  os.path.join(os.path.realpath(sys.prefix), "lib", "private.json"), str(pkg / "agent.py")):
        with pytest.raises(Exception, match="sandbox shows"):
            check_hidden(argv, [shown])
    with pytest.raises(Exception, match="sandbox shows"):  # named on the command line: shown, refused
        check_hidden([*argv, str(tmp_path / "bundle.json")], [tmp_path / "bundle.json"])


@needs_bwrap
def test_evaluate_refuses_a_bundle_the_sandbox_shows(tmp_path: Path) -> None:
    bundle, pkg = _package(tmp_path)
    out = tmp_path / "runs.jsonl"
    proc = _evaluate(bundle, out, pkg, str(bundle))
    assert proc.returncode == 2 and "sandbox shows" in proc.stderr, (proc.returncode, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not out.exists() or not out.read_text().strip()


@needs_bwrap
def test_a_named_device_is_never_shown(tmp_path: Path) -> None:
    """A device named on the command line (``/dev/vda``: the raw disk, readable by a harness user of group disk)
    used to be bound into the sandbox like a file; only regular files are."""
    from gf01_formal.agents.sandbox import shown

    _, pkg = _package(tmp_path)
    disks = [d for d in ("/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/loop0") if os.path.exists(d)]
    binds = shown([sys.executable, str(pkg / "agent.py"), "/dev/null", *disks])
    assert str(pkg / "agent.py") in binds and not any(b.startswith("/dev/") for b in binds), binds


#: Reports, as its first line, what it can reach beyond its pipes: its descriptors, a terminal to inject keystrokes
#: into (TIOCSTI), /dev/shm, /sys, and an abstract unix socket the host listens on (named by its argument).
REACH = '''
import errno, fcntl, json, os, socket, sys, termios
sys.stdin.readline()
found = {"fds": {}, "tiocsti": [], "tty": None, "shm": None, "sys": os.path.exists("/sys"), "abstract": None}
for fd in os.listdir("/proc/self/fd"):
    try:
        found["fds"][fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass  # the descriptor listdir used, closed by now
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"x")
        found["tiocsti"].append("injected")
    except OSError as ex:
        found["tiocsti"].append(errno.errorcode[ex.errno])
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    found["tty"] = "opened"
except OSError as ex:
    found["tty"] = errno.errorcode[ex.errno]
try:
    open("/dev/shm/fill", "wb").write(b"x")
    found["shm"] = "written"
except OSError as ex:
    found["shm"] = errno.errorcode[ex.errno]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\\0" + sys.argv[1])
    found["abstract"] = "connected"
except OSError as ex:
    found["abstract"] = errno.errorcode[ex.errno]
print(json.dumps(found), flush=True)
'''


@needs_bwrap
def test_nothing_beyond_the_pipes_is_reachable(tmp_path: Path) -> None:
    """Red-team round 9, attacks that fail (the defence holds): the program's descriptors are its pipes only; no
    terminal to inject keystrokes into (TIOCSTI: its own session, no controlling terminal); /dev/shm is not
    writable (no disk to fill beyond the bounded /tmp); no /sys; the host's abstract unix sockets are in another
    network namespace."""
    import secrets
    import socket

    from gf01_formal.agents.subprocess_agent import SubprocessAgent
    from gf01_formal.instances.sources import open_instance
    from gf01_formal.play.protocol import Start
    from gf01_formal.runs.recorder import EpisodeRecorder

    tmp_path.chmod(0o755)
    script = tmp_path / "reach.py"
    script.write_text(REACH)
    script.chmod(0o644)
    name = f"gf01-red9-{secrets.token_hex(8)}"
    host = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    host.bind("\0" + name)
    host.listen(1)
    instance, problem = open_instance(INSTANCE)
    agent = SubprocessAgent([sys.executable, str(script), name], step_timeout=60.0, sandbox="bwrap")
    try:
        agent.start(Start(instance_id=instance.instance_id, goal=EpisodeRecorder(problem, instance.instance_id).start(),
                          tools=None))
        line = agent.next_line()
    finally:
        agent.close()
        host.close()
    assert line is not None
    found = json.loads(line)
    assert found["fds"] and all(target.startswith("pipe:") for target in found["fds"].values()), found
    assert found["tiocsti"] == ["ENOTTY"] * 3 and found["tty"] == "ENXIO", found
    assert found["shm"] == "EROFS" and found["sys"] is False and found["abstract"] == "ECONNREFUSED", found


#: Fills /dev/shm as far as it can (64 MiB at most) and says how far it got.
FILL_SHM = '''
import os
n = 0
try:
    with open("/dev/shm/fill", "wb") as fh:
        for _ in range(64):
            fh.write(b"x" * (1 << 20))
            n += 1
except OSError as ex:
    print(n, ex.errno)
else:
    print(n, 0)
'''


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0 or not all(os.path.exists(p) for p in ("/usr/bin/setpriv", "/usr/bin/python3")),
                    reason="needs root (to run the harness as an unprivileged user), setpriv and /usr/bin/python3")
def test_an_unprivileged_harness_gives_no_writable_dev_shm() -> None:
    """Red-team round 9: under a harness that is not root (bubblewrap in a user namespace), the program owned the
    sandbox's /dev, a tmpfs of half the machine's memory, and wrote to /dev/shm without bound (192 MiB and on, past
    the 256 MiB /tmp limit and outside it). /dev is now mounted read-only (its devices still work)."""
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="gf01-shm-"))  # under /tmp, not the test's own (root-only) directory
    try:
        work.chmod(0o755)
        probe = work / "fill.py"
        probe.write_text(FILL_SHM)
        probe.chmod(0o644)
        # bubblewrap started by an unprivileged user with the command line a harness that is not root makes (a user
        # namespace, no uid switch inside), made here: that user need read neither this tree nor the venv (a fresh
        # clone in a root-only temporary directory, CI's checkout).
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(os, "geteuid", lambda: 65534)
            mp.setattr(os, "getuid", lambda: 65534)
            argv = wrap(["/usr/bin/python3", str(probe)])
        proc = subprocess.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", *argv],
                              env=environment(False), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120, cwd="/", check=False)
    finally:
        shutil.rmtree(work)
    assert proc.returncode == 0, proc.stderr
    written, error = proc.stdout.split()
    assert (written, error) == ("0", str(30)), proc.stdout  # EROFS: nothing written
