"""``gf01 agent check``: each protocol fault a program can make is reported, in words, and a clean program passes.

The programs are scripts on the prelude of tests/scripted_agent.py (it answers ``answer(t)`` for each step asked);
each misbehaves in one way only, so a report of any other fault is a false alarm the test also catches.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from scripted_agent import PRELUDE

from gf01_formal.cli import main
from gf01_formal.runs.agent_check import check_program

ROOT = Path(__file__).resolve().parent.parent
#: The built-in check bundle's 5-step instance (its others have 25 steps): the check waits EXTRA_LINE_WAIT after
#: each answer for a second line, so a fault case on a 25-step episode spends over a second in those waits alone.
SHORT = "gf01f-ae4cbf17def1ee38"


@pytest.fixture(scope="module")
def short_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in check bundle's 5-step instance alone: the fault cases happen at steps 0 to 2, and the end."""
    from gf01_formal.runs.agent_check import builtin_bundle

    out = tmp_path_factory.mktemp("check") / "short.json"
    assert main(["bundle", "subset", str(builtin_bundle()), "--ids", SHORT, "-o", str(out)]) == 0
    return out


def program(tmp_path: Path, body: str) -> str:
    """A command running PRELUDE + ``body`` (which calls play or speaks the protocol itself)."""
    script = tmp_path / "agent.py"
    script.write_text(PRELUDE + body)
    return shlex.join([sys.executable, "-S", str(script), str(tmp_path / "log.jsonl")])


CASES = {
    "not_json": ('play(lambda t: "oops\\n" if t == 1 else {"set": {}})', {"not_json"}),
    "unknown_input": ('play(lambda t: {"set": {"nope": 1}} if t == 1 else {"set": {}})', {"bad_action"}),
    "bad_value": ('play(lambda t: {"set": {}, "commit": "yes"} if t == 0 else {"set": {}})', {"bad_action"}),
    # Two lines for step 1: the second is written before the observation of step 1 asked for it.
    "extra_line": ('play(lambda t: \'{"set": {}}\\n{"set": {}}\\n\' if t == 1 else {"set": {}})', {"extra_line"}),
    # An answer for step t+1 at step t, as a program one line ahead or behind would write.
    "wrong_step": ('play(lambda t: {"set": {}, "t": t + 1} if t == 2 else {"set": {}, "t": t})', {"wrong_step"}),
    "late": ('play(lambda t: (time.sleep(5), {"set": {}})[1] if t == 1 else {"set": {}})', {"timeout"}),
    "crash": ('play(lambda t: sys.exit(3) if t == 1 else {"set": {}})', {"crash"}),
    "no_exit": ('import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nplay(lambda t: {"set": {}})\n'
                'time.sleep(60)', {"no_exit"}),
    "children_left": ('subprocess.Popen(["sleep", "60"])\nplay(lambda t: {"set": {}})', {"children_left"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_fault_is_reported_in_words(case: str, tmp_path: Path, short_bundle: Path) -> None:
    body, kinds = CASES[case]
    # Children outlive the program only unsandboxed: in the sandbox they die with it.
    sandbox = "none" if case == "children_left" else "auto"
    found = check_program(program(tmp_path, body), short_bundle, episodes=1, step_timeout=2.0, sandbox=sandbox)
    assert {f.kind for f in found.faults} == kinds, [str(f) for f in found.faults]
    assert not found.ok and all(f.message and f.instance_id for f in found.faults)


def test_a_clean_program_passes_every_episode(tmp_path: Path) -> None:
    found = check_program(shlex.join([sys.executable, "-S", str(ROOT / "examples" / "agent_example.py")]), episodes=3)
    assert found.ok and found.episodes == 3 and found.steps > 3


def test_the_command_exits_1_on_faults_and_prints_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = program(tmp_path, 'play(lambda t: "oops\\n")')
    assert main(["agent", "check", bad, "--episodes", "1", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False and out["episodes"] == 1 and {f["kind"] for f in out["faults"]} == {"not_json"}
    good = shlex.join([sys.executable, "-S", str(ROOT / "examples" / "agent_example.py")])
    assert main(["agent", "check", good, "--episodes", "1",
                 "--bundle", str(ROOT / "gf01_formal" / "examples" / "arbiter_priority.json")]) == 0
    assert capsys.readouterr().out.startswith("no protocol fault in 1 episode")


#: A program that works unsandboxed only: it reads a data file beside it that its command line does not name.
BESIDE = '''
import json, os, sys
weights = json.load(open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "weights.json")))
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "end":
        break
    if m["type"] == "observation" and m["done"]:
        continue
    print(json.dumps({"set": weights}), flush=True)
'''


def test_an_agent_that_cannot_run_sandboxed_fails_the_check(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             short_bundle: Path) -> None:
    """(e) The check runs the program as evaluate does, in the sandbox: a file it needs but does not name is not
    there, and the check says so (it passed when the check ran the program outside the sandbox)."""
    (tmp_path / "weights.json").write_text("{}")
    script = tmp_path / "agent.py"
    script.write_text(BESIDE)
    cmd = shlex.join([sys.executable, "-S", str(script)])
    assert check_program(cmd, short_bundle, episodes=1, sandbox="none").ok  # it is a working agent, outside
    found = check_program(cmd, short_bundle, episodes=1)
    assert not found.ok and {f.kind for f in found.faults} == {"crash"}
    assert "weights.json" in found.faults[0].message
    assert main(["agent", "check", cmd, "--episodes", "1"]) == 1
    assert "weights.json" in capsys.readouterr().out


#: A program that asks the planner about one edit before each action, then plays nothing.
TOOL_USER = '''
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "end":
        break
    if m["type"] == "observation" and m["done"]:
        continue
    if m["type"] == "start":
        first = m["goal"]["inputs"][0]
    print(json.dumps({"type": "tool", "tool": "local-planner-v1", "atoms": [[0, first, 1]]}), flush=True)
    reply = json.loads(sys.stdin.readline())
    assert reply["type"] == "tool_result" and "error" not in reply["result"], reply
    print(json.dumps({"set": {}}), flush=True)
'''


def test_the_track_option_exercises_tool_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              short_bundle: Path) -> None:
    """(e) --track EVAL-TA answers the program's planner calls (no fault); on EVAL-CB the same program is refused a
    tool, and the check reports it."""
    script = tmp_path / "agent.py"
    script.write_text(TOOL_USER)
    cmd = shlex.join([sys.executable, "-S", str(script)])
    assert check_program(cmd, short_bundle, episodes=2, track="EVAL-TA").ok
    found = check_program(cmd, short_bundle, episodes=1)
    assert {f.kind for f in found.faults} == {"tool_denied"}, [str(f) for f in found.faults]
    assert main(["agent", "check", cmd, "--episodes", "1", "--track", "EVAL-TA", "--bundle", str(short_bundle)]) == 0
    assert capsys.readouterr().out.startswith("no protocol fault in 1 episode")
    assert main(["agent", "check", cmd, "--episodes", "1", "--track", "EVAL-CB", "--bundle", str(short_bundle)]) == 1
    assert "tool" in capsys.readouterr().out
