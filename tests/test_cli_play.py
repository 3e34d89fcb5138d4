"""``gf01 play``: a person at the prompt (piped stdin), watching agents, and the CLI's bad-input conventions."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gf01_formal.cli import main
from gf01_formal.cli.play import parse_prompt
from gf01_formal.instances.sources import open_instance
from gf01_formal.play.protocol import GoalPanel

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"  # hard mode, t* = 21, T = 30, B_T = 2


def gf01(*args: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "gf01_formal", *args], input=stdin, capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout, check=False)


@pytest.fixture
def play(capsys, monkeypatch):
    """``gf01 play ...`` in this process, with ``stdin`` typed at the prompt: (exit status, stdout, stderr)."""

    def run(*args: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        status = main(["play", *args])
        out, err = capsys.readouterr()
        return status, out, err

    return run


@pytest.fixture(scope="module")
def oracle_cert():
    inst, _ = open_instance(INSTANCE)
    return inst.certification.oracle_certificate


def test_a_person_plays_at_the_prompt_and_gets_the_scores(oracle_cert, play):
    answers = {t: f"{a}={v}" for t, a, v in oracle_cert}  # one atom per step here: [20, r2, 1], [21, r2, 1]
    lines = ["help", "r9=1", "r0=2", "r0", "r1=1 r1=0"]  # each explained, then asked again (still step 0)
    lines += [answers.get(t, "") for t in range(21)] + [answers[21] + " commit"]
    status, out, err = play(str(INSTANCE), stdin="\n".join(lines) + "\n")
    assert status == 0, err
    assert "Goal: make  g2 | g3  hold at step t* = 21 (hard mode)." in out
    assert "Budgets: edits on at most 2 distinct steps (B_T), 4 edits in all (B_A)." in out
    assert "'r9' is not an input; the inputs are r0 r1 r2 r3 r4" in out
    assert "r0: the value must be 0 or 1, not '2'" in out and "'r0' is not an edit" in out
    assert "r1 is set twice" in out and "commit        end the episode" in out
    assert "t=21 (t*)> " in out and "ACHIEVED" in out
    assert "t=22" not in out  # the commit ended the episode
    result = out[out.index("Result"):]
    for row in ("valid            true", "score_c          1", "eff_t            2", "AP P / R / F1    1.000",
                "best-match gold  {(20, r2, 1), (21, r2, 1)}", "agent            human (EVAL-CB)"):
        assert row in result


def test_refusals_are_shown_on_the_timeline(play):
    # B_T = 2: an edit at a third step is refused, and the person is told why.
    status, out, _ = play(str(INSTANCE), stdin="r0=1\nr0=1\nr0=1 commit\n")
    assert status == 0
    assert "refused: r0: no step with edits left (B_T = 2)" in out and "refusals         1" in out


def test_end_of_input_leaves_with_130(play):
    status, out, err = play(str(INSTANCE), stdin="r0=1\n\n")
    assert status == 130 and "Traceback" not in err and "Result" not in out
    p = gf01("play", str(INSTANCE), stdin="")  # a real process too: nothing on stdin at all
    assert p.returncode == 130 and "Traceback" not in p.stderr and "Result" not in p.stdout


def test_watching_the_oracle_and_the_example_agent(play):
    status, out, _ = play(str(INSTANCE), "--agent", "oracle")
    assert status == 0 and "score_c          1" in out and "agent            oracle (EVAL-OC)" in out
    assert out.count("\nt=") == 30  # every step, the last (done) one included
    # In this process (the example agent is a program all the same): `gf01 play` as a process is the end-of-input
    # test's.
    status, out, _ = play(str(INSTANCE), "--agent-cmd", f"{sys.executable} {ROOT / 'examples' / 'agent_example.py'}",
                          "--json")
    assert status == 0
    record = json.loads(out)
    assert record["agent_name"] == "cmd" and record["status"] == "completed" and record["certificate"] == [
        [21, "r0", 1]]
    assert record["agent_spec"]["params"]["cmd"].endswith("examples/agent_example.py")


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["play", "missing.json"], "missing.json: cannot read"),
        (["play", str(INSTANCE), "--agent", "nobody"], "unknown agent 'nobody'"),
        (["play", str(INSTANCE), "--agent", "cmd"], "--agent-cmd CMD"),
        (["play", str(INSTANCE), "--agent-cmd", "no-such-agent-program"], "not found on PATH"),
        (["play", str(INSTANCE), "--agent-cmd", ""], "command is empty"),
        (["play", str(INSTANCE), "--agent", "random", "--agent-cmd", "python3"], "not both"),
        (["play", str(ROOT / "gf01_formal" / "examples" / "arbiter.hoa")], "needs the instance options"),
        (["play", str(INSTANCE), "--step-timeout", "0"], "Invalid value"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gf01: error: ") and needle in err[0]


def test_an_agent_that_fails_at_once_is_reported_once_not_per_step(tmp_path, play):
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho started >&2\nexit 7\n")
    script.chmod(0o755)
    status, out, err = play(str(INSTANCE), "--agent-cmd", str(script))
    # exit 1: the run did not complete (issue 31), said once on stderr
    assert status == 1 and "agent_error: crash: the agent exited with status 7" in out and "started" in out
    assert err.count("did not complete") == 1
    assert "agent errors     1" in out


def test_prompt_words():
    goal = GoalPanel(effect="g", t_star=1, mode="hard", window=None, effect_steps=[1, 1], horizon=3,
                     inputs=["a", "b"], outputs=["g"], budget_t=3, budget_a=6)
    assert parse_prompt("  a=1   b=0 ", goal)[0].set == {"a": 1, "b": 0}
    assert parse_prompt("commit", goal)[0].commit and parse_prompt("", goal)[0].set == {}
    assert parse_prompt("?", goal) == (None, None)
    assert parse_prompt("a=1 c=1", goal)[1].startswith("'c' is not an input")
