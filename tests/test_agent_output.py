"""Red-team round 8: the ``--agent-output`` descriptor carries no state from one episode to the next.

The sandboxed program used to get the output file itself as ``$GF01_OUTPUT_FD``: ``fstat`` told it the file's size
and ``open("/proc/self/fd/N")`` re-opened the file for reading (the magic link reaches the inode, which any uid may
read), so an agent could read back what an earlier episode wrote (an end message's gold certificate) and play it."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from gf01_formal.agents import subprocess_agent
from gf01_formal.agents.base import AgentFault
from gf01_formal.agents.sandbox import bwrap_problem
from gf01_formal.agents.subprocess_agent import SubprocessAgent
from gf01_formal.instances.sources import open_instance
from gf01_formal.play.protocol import Start
from gf01_formal.runs.recorder import EpisodeRecorder

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"
needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")

#: What an earlier episode left in the output file: the gold certificate its end message showed.
EARLIER = "earlier episode: gold [[19, 'r1', 1]]\n"

#: An agent that tries to read its output back, by re-opening the descriptor through /proc and by its size, and
#: writes what it found (then exits: its first action is a crash, which ends the episode).
READER = '''
import errno, json, os
fd = int(os.environ["GF01_OUTPUT_FD"])
found = {"size": os.fstat(fd).st_size}
try:
    back = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
    found["read"] = os.read(back, 1 << 16).decode("utf-8", "replace")
except OSError as ex:
    found["read"] = errno.errorcode[ex.errno]
os.write(fd, (json.dumps(found) + "\\n").encode())
'''


def _episode(tmp_path: Path, script: str, output: Path, sandbox: str = "bwrap") -> None:
    """One episode of ``script`` as the harness plays it (SubprocessAgent), with ``output`` as ``--agent-output``."""
    agent_file = tmp_path / "agent.py"
    agent_file.write_text(textwrap.dedent(script))
    agent_file.chmod(0o644)
    tmp_path.chmod(0o755)
    instance, problem = open_instance(INSTANCE)
    agent = SubprocessAgent([sys.executable, str(agent_file)], step_timeout=60.0, sandbox=sandbox,  # type: ignore[arg-type]
                            output=str(output))
    try:
        agent.start(Start(instance_id=instance.instance_id, goal=EpisodeRecorder(problem, instance.instance_id).start(),
                          tools=None))
        with pytest.raises(AgentFault):
            agent.act(None)
    finally:
        agent.close()


@needs_bwrap
@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_the_output_descriptor_cannot_be_read_back(tmp_path: Path, sandbox: str) -> None:
    output = tmp_path / "agent-output.txt"
    output.write_text(EARLIER)
    output.chmod(0o644)
    _episode(tmp_path, READER, output, sandbox)
    lines = output.read_text().splitlines(keepends=True)
    assert lines[0] == EARLIER and len(lines) == 2, lines  # appended, the earlier content kept
    found = json.loads(lines[1])
    assert "gold" not in found["read"], found  # nothing of the file comes back
    assert found["size"] == 0, found  # not even its size (a number the agent could have chosen)


@needs_bwrap
def test_the_output_is_bounded_per_episode(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(subprocess_agent, "OUTPUT_BYTES", 100_000)
    output = tmp_path / "agent-output.txt"
    script = '''
        import os
        fd = int(os.environ["GF01_OUTPUT_FD"])
        for _ in range(40):
            os.write(fd, b"y" * 10_000)
    '''
    _episode(tmp_path, script, output)
    assert output.read_bytes() == b"y" * 100_000


AGENT = ROOT / "examples" / "agent_example.py"


@pytest.mark.parametrize("target", ["bundle", "runs", "key"])
def test_the_agent_output_is_none_of_the_commands_own_files(tmp_path: Path, target: str, capsys) -> None:
    """An operator's slip: ``--agent-output`` naming the bundle, the runs file (``-o``) or the signing key would let
    the program append to it (a forged record in the runs file, a line in the bundle): refused in one line, exit 2,
    before anything is played or written."""
    from gf01_formal.cli import main

    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(INSTANCE.read_bytes())
    runs = tmp_path / "runs.jsonl"
    key = tmp_path / "eval.key"
    assert main(["key", "new", "--kind", "signing", "-o", str(key)]) == 0
    files = {"bundle": bundle, "runs": runs, "key": key}
    before = {name: p.read_bytes() if p.exists() else None for name, p in files.items()}
    capsys.readouterr()
    code = main(["evaluate", str(bundle), "-o", str(runs), "--agent-cmd", f"python3 {AGENT}", "--sign-key", str(key),
                 "--agent-output", str(files[target])])
    err = capsys.readouterr().err
    assert code == 2 and "--agent-output" in err and len(err.strip().splitlines()) == 1, err
    assert {name: p.read_bytes() if p.exists() else None for name, p in files.items()} == before


def test_play_and_agent_check_refuse_their_instance_as_the_agent_output(tmp_path: Path, capsys) -> None:
    from gf01_formal.cli import main

    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(INSTANCE.read_bytes())
    for argv in (["play", str(bundle), "--agent-cmd", f"python3 {AGENT}", "--agent-output", str(bundle)],
                 ["agent", "check", f"python3 {AGENT}", "--bundle", str(bundle), "--agent-output", str(bundle)]):
        capsys.readouterr()
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and "--agent-output" in err, (argv, err)
        assert bundle.read_bytes() == INSTANCE.read_bytes()


def test_a_locked_runs_file_is_never_an_agent_output(tmp_path: Path) -> None:
    """Below the command line too: the harness does not hand a program a runs file some writer holds locked."""
    from gf01_formal.agents.subprocess_agent import open_output
    from gf01_formal.artifacts import lock_exclusive
    from hoa.errors import Gf01Error

    runs = tmp_path / "runs.jsonl"
    fd = lock_exclusive(runs)
    try:
        with pytest.raises(Gf01Error, match="lock"):
            open_output(str(runs))
    finally:
        assert fd is not None
        os.close(fd)
