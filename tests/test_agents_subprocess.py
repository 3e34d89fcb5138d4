"""The gf01.agent.v1 adapter against small scripted agents: the message stream, every kind of misbehaviour (garbage,
unknown keys, wrong types, crash, hang, huge lines, stderr noise), and no process left behind, also on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
from scripted_agent import PRELUDE
from waits import CEILING

from gf01_formal import agents
from gf01_formal.agents import subprocess_agent
from gf01_formal.agents.base import AgentSpec
from gf01_formal.instances.sources import InstanceOptions, open_instance
from gf01_formal.runs.runner import play_run
from gf01_formal.scoring.scores import Scorer

ROOT = Path(__file__).resolve().parent.parent
ARBITER = ROOT / "gf01_formal" / "examples" / "arbiter.hoa"

@pytest.fixture(scope="module")
def case():
    inst, problem = open_instance(ARBITER, options=InstanceOptions(trace="r0&!r1;!r0&r1;r0&r1;!r0&!r1;r0&!r1;!r0&r1",
                                                                    effect="g1", t_star=4))
    return inst, problem, Scorer(problem)


def run(case, tmp_path: Path, body: str, *, timeout: float = 5.0, build=None, sandbox: str | None = None):
    """Play the scripted agent ``body`` (after the prelude); returns the record and the messages it received. The
    agent runs in the bubblewrap sandbox unless ``sandbox`` says otherwise ("none": the tests that watch its
    process ids from outside, which a PID namespace hides; the sandboxed kill is tested in test_sandbox.py)."""
    script = tmp_path / "agent.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    log = tmp_path / "received.jsonl"
    log.write_text("")
    params = {"cmd": f"{sys.executable} -S {script} {log}", "step_timeout": timeout, "output": str(log)}
    spec = AgentSpec("cmd", "EVAL-CB", params if sandbox is None else {**params, "sandbox": sandbox})
    agents.check(spec)
    inst, problem, scorer = case
    record = play_run(inst, problem, spec, seed=0, scorer=scorer, build=build).record
    return record, [json.loads(line) for line in log.read_text().splitlines()]


def gone(pid: int, wait: float = 3.0) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting for init to reap it counts as ended)."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def test_a_valid_agent_gets_start_observations_end_and_its_edits_count(case, tmp_path):
    record, received = run(case, tmp_path, """
        play(lambda t: {"set": {"r1": 1}, "t": t} if t == 4 else {"set": {}})
    """)
    assert record.status == "completed" and record.agent_errors == 0
    assert record.certificate == [[4, "r1", 1]]
    types = [m["type"] for m in received]
    assert types == ["start"] + ["observation"] * 6 + ["end"]
    start, *observations, end = received
    assert start["protocol"] == "gf01.agent.v1" and start["goal"]["inputs"] == ["r0", "r1"]
    assert [o["t"] for o in observations] == list(range(6)) and [o["done"] for o in observations][-2:] == [False, True]
    assert end["result"]["score_c"] == record.score_c and end["result"]["best_match_gold"] == record.best_match_gold


def test_an_early_commit_ends_the_stream(case, tmp_path):
    record, received = run(case, tmp_path, """
        play(lambda t: {"set": {"r1": 1}, "commit": True} if t == 2 else {"set": {}})
    """)
    assert record.status == "completed" and len(record.steps) == 3
    assert [m["type"] for m in received] == ["start", "observation", "observation", "observation", "end"]
    assert received[3]["done"] and received[3]["t"] == 2


def test_garbage_unknown_keys_and_wrong_types_are_faults(case, tmp_path):
    record, _ = run(case, tmp_path, """
        answers = ["hello world\\n", {"set": {}, "foo": 1}, {"set": [1]}, {"set": {}}]
        play(lambda t: answers[min(t, 3)])
    """)
    errors = [s.agent_error and s.agent_error.kind for s in record.steps]
    assert errors == ["not_json", "bad_action", "bad_action", None, None, None]
    assert "hello world" in record.steps[0].agent_error.message
    assert "foo" in record.steps[1].agent_error.message
    assert record.status == "completed" and record.certificate == [] and record.refusals == 0


def test_an_unknown_input_or_a_value_not_0_or_1_voids_the_whole_action(case, tmp_path):
    """The episode voids such an action, the agent's error counted as a protocol violation: none of its atoms is
    committed, not even the well-formed ones, nor its commit, and no refusal is reported; the step log keeps what
    was submitted."""
    record, received = run(case, tmp_path, """
        answers = [{"set": {"r0": 1, "bogus": 1}}, {"set": {"r1": 2}}, {"set": {"r1": 1.0}},
                   {"set": {"r0": True, "r1": 1}, "commit": True}, {"set": {"r1": 1}}, {"set": {}}]
        play(lambda t: answers[t])
    """)
    errors = [s.agent_error and s.agent_error.kind for s in record.steps]
    assert errors == ["bad_action"] * 4 + [None, None]
    messages = [s.agent_error.message for s in record.steps[:4]]
    assert messages == ["'bogus' is not an input (r0, r1)", "r1: value 2 must be 0 or 1",
                        "r1: value 1.0 must be 0 or 1", "r0: value True must be 0 or 1"]
    assert all(s.committed == [] and s.refused == [] and not s.commit for s in record.steps[:4])
    assert record.steps[0].submitted == {"r0": 1, "bogus": 1} and record.steps[3].submitted == {"r0": True, "r1": 1}
    assert all(o["refused"] == [] for o in received[1:5])
    assert record.certificate == [[4, "r1", 1]] and record.refusals == 0 and len(record.steps) == 6
    assert record.status == "agent_error" and record.error == "4 protocol violations (more than 3)"


def test_every_bad_atom_is_counted_in_the_message(case, tmp_path):
    record, _ = run(case, tmp_path, """
        play(lambda t: {"set": {"zz": 1, "r0": 2, "r1": 1, "yy": 0}} if t == 0 else {"set": {}})
    """)
    message = record.steps[0].agent_error.message
    assert message == "r0: value 2 must be 0 or 1 (and 2 more)"  # the first in AP_in order, unknown names last
    assert record.agent_errors == 1 and record.status == "completed" and record.certificate == []


def test_budget_and_wrong_step_refusals_are_not_errors_of_the_agent(tmp_path):
    inst, problem = open_instance(ARBITER, options=InstanceOptions(trace="r0&!r1;!r0&r1;r0&r1;!r0&!r1;r0&!r1;!r0&r1",
                                                                    effect="g1", t_star=4, budget_t=1, budget_a=1))
    record, received = run((inst, problem, Scorer(problem)), tmp_path, """
        answers = [{"set": {"r0": 1, "r1": 1}}, {"set": {"r1": 1}}, {"set": {"r1": 1}, "t": 7}, {"set": {}}]
        play(lambda t: answers[min(t, 3)])
    """)
    assert record.agent_errors == 0 and record.status == "completed" and record.certificate == [[0, "r0", 1]]
    reasons = [[r.reason for r in s.refused] for s in record.steps[:3]]
    assert reasons == [["budget_a"], ["budget_t"], ["wrong_step"]]
    assert [r["reason"] for r in received[3]["refused"]] == ["wrong_step"]  # the agent is told what was refused
    assert record.refusals == 3


def test_more_protocol_violations_than_allowed_make_an_agent_error(case, tmp_path):
    record, _ = run(case, tmp_path, """
        play(lambda t: "not json\\n")
    """)
    assert record.status == "agent_error" and "protocol violations" in record.error
    assert record.agent_errors == 6 and all(not s.committed for s in record.steps)


def test_a_crash_is_fatal_with_its_status_and_stderr_tail(case, tmp_path):
    record, _ = run(case, tmp_path, """
        def answer(t):
            if t == 2:
                print("Traceback: the agent broke", file=sys.stderr)
                sys.exit(3)
            return {"set": {"r0": 1}}
        play(answer)
    """)
    assert record.status == "agent_error" and record.error.startswith("crash: ")
    assert "status 3" in record.error and "the agent broke" in record.error
    assert record.certificate == [[0, "r0", 1], [1, "r0", 1]]  # the rest of the episode has no edits
    assert [s.agent_error is not None for s in record.steps] == [False, False, True, False, False, False]


def test_an_agent_that_exits_at_once_crashes_on_step_0(case, tmp_path):
    record, _ = run(case, tmp_path, "sys.exit(0)\n")
    assert record.status == "agent_error" and record.error.startswith("crash: ") and record.steps[0].agent_error


def test_silence_past_the_step_timeout_is_fatal_and_the_agent_is_killed(case, tmp_path):
    pids = tmp_path / "pids"
    begin = time.monotonic()
    record, _ = run(case, tmp_path, f"""
        child = subprocess.Popen(["sleep", "300"])
        open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
        def answer(t):
            if t == 1:
                time.sleep(300)
            return {{"set": {{}}}}
        play(answer)
    """, timeout=2.0, sandbox="none")  # step 0's clock includes the start-up: 2 s, not a race with a loaded machine
    assert time.monotonic() - begin < CEILING  # the program sleeps 300 s: only the step timeout ends it sooner
    assert record.status == "agent_error" and record.error == "timeout: no action within 2 s"
    assert record.steps[1].agent_error.kind == "timeout"
    assert all(gone(int(p)) for p in pids.read_text().split())  # the agent and its child: the whole group


def test_a_huge_line_is_a_bad_action_and_reading_goes_on(case, tmp_path):
    record, _ = run(case, tmp_path, """
        play(lambda t: "x" * 300000 + "\\n" if t == 0 else {"set": {"r1": 1}} if t == 1 else {"set": {}})
    """)
    assert record.steps[0].agent_error.kind == "bad_action"
    assert "longer than" in record.steps[0].agent_error.message
    assert len(record.steps[0].agent_error.message) < 200
    assert record.status == "completed" and record.certificate == [[1, "r1", 1]]


def test_a_line_that_never_ends_times_out_without_unbounded_memory(case, tmp_path):
    record, _ = run(case, tmp_path, """
        for m in messages():
            while True:
                sys.stdout.write("y" * 65536)
    """, timeout=3.0)  # the clock of step 0 includes the sandbox's start-up: not a race with it
    assert record.status == "agent_error" and record.steps[0].agent_error.kind == "bad_action"
    assert record.steps[1].agent_error.kind == "timeout"


def test_stderr_noise_is_drained(case, tmp_path):
    record, _ = run(case, tmp_path, """
        def answer(t):
            sys.stderr.write("noise " * 50000)  # 300 kB a step: far more than a pipe holds
            sys.stderr.flush()
            return {"set": {}}
        play(answer)
    """)
    assert record.status == "completed" and record.agent_errors == 0


def test_an_agent_that_ignores_the_end_and_sigterm_is_killed(case, tmp_path, monkeypatch):
    monkeypatch.setattr(subprocess_agent, "GRACE", 0.2)
    pids = tmp_path / "pids"
    record, received = run(case, tmp_path, f"""
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open({str(pids)!r}, "w").write(str(os.getpid()))
        play(lambda t: {{"set": {{}}}})
        while True:
            time.sleep(1)
    """, sandbox="none")
    assert record.status == "completed" and received[-1]["type"] == "end"
    assert gone(int(pids.read_text()))


class Hooked:
    """The real adapter, with ``hook(observation)`` called before each of its actions (to interrupt or watch it);
    ``ends`` records how the harness ended it (``close`` or ``abort``)."""

    def __init__(self, agent, hook):
        self.agent, self.hook = agent, hook
        self.ends: list[str] = []

    def __getattr__(self, name):
        return getattr(self.agent, name)

    def act(self, observation):
        self.hook(observation)
        return self.agent.act(observation)

    def close(self):
        self.ends.append("close")
        self.agent.close()

    def abort(self):
        self.ends.append("abort")
        self.agent.abort()


def test_ctrl_c_in_the_harness_still_reaps_the_agent(case, tmp_path):
    pids = tmp_path / "pids"

    def interrupt(observation):  # a Ctrl-C arriving while step 2 is played
        if observation is not None and observation.t == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(case, tmp_path, f"""
            child = subprocess.Popen(["sleep", "300"])
            open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
            play(lambda t: {{"set": {{}}}})
        """, sandbox="none", build=lambda spec, access: Hooked(agents.build(spec, access), interrupt))
    assert all(gone(int(p)) for p in pids.read_text().split())


def test_a_sigterm_handler_is_in_place_only_while_an_agent_runs(case, tmp_path):
    """While its program runs, SIGTERM to the harness kills the program's group first (tests/test_interrupt.py); before
    and after, the handler is the one the harness had, so a process holding no agent dies of SIGTERM at once."""
    seen = []
    watch = lambda _: seen.append(signal.getsignal(signal.SIGTERM))  # noqa: E731
    before = signal.getsignal(signal.SIGTERM)
    run(case, tmp_path, "play(lambda t: {'set': {}})\n", build=lambda spec, access: Hooked(agents.build(spec, access),
                                                                                            watch))
    assert seen and all(h is not before and callable(h) for h in seen)
    assert signal.getsignal(signal.SIGTERM) is before


def test_ctrl_c_ends_an_agent_that_ignores_sigterm_without_grace(case, tmp_path):
    """Interrupted, the harness does not wait the GRACE periods (1 s after end of input, 1 s after SIGTERM) of a
    normal end: abort() SIGKILLs the group at once."""
    pids = tmp_path / "pids"
    hooked: list[Hooked] = []

    def interrupt(observation):
        if observation is not None and observation.t == 1:
            raise KeyboardInterrupt

    def build(spec, access):
        hooked.append(Hooked(agents.build(spec, access), interrupt))
        return hooked[-1]

    with pytest.raises(KeyboardInterrupt):
        run(case, tmp_path, f"""
            import signal
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            open({str(pids)!r}, "w").write(str(os.getpid()))
            play(lambda t: {{"set": {{}}}})
            while True:
                time.sleep(1)
        """, sandbox="none", build=build)
    # The stop took the abort path (SIGKILL to the group at once), not close's polite end with its grace periods.
    assert hooked[0].ends == ["abort"]
    assert gone(int(pids.read_text()), wait=CEILING)


def test_close_is_idempotent_and_a_fresh_process_starts_per_episode(case, tmp_path):
    pids = tmp_path / "pids"
    body = f"""
        open({str(pids)!r}, "a").write(str(os.getpid()) + "\\n")
        play(lambda t: {{"set": {{}}}})
    """
    run(case, tmp_path, body, sandbox="none")
    run(case, tmp_path, body, sandbox="none")
    first, second = pids.read_text().split()
    assert first != second and gone(int(first)) and gone(int(second))
    agent = subprocess_agent.SubprocessAgent([sys.executable, "-c", "pass"])
    agent.close()
    agent.close()


def test_the_example_agent_plays_by_the_protocol(case):
    inst, problem, scorer = case
    spec = AgentSpec("cmd", "EVAL-CB", {"cmd": f"{sys.executable} -S {ROOT / 'examples' / 'agent_example.py'}"})
    record = play_run(inst, problem, spec, seed=0, scorer=scorer).record
    assert record.status == "completed" and record.agent_errors == 0
    assert record.certificate == [[4, "r0", 1]] and len(record.steps) == 5  # it commits at t* = 4
    assert record.sandbox == "bwrap"  # played in the sandbox, and the record says so
    assert os.access(ROOT / "examples" / "agent_example.py", os.X_OK)


# -- issue 29 item 4 and issue 31 item 5: a bad tool line is one run's fault; no completed run is exit 1 ------------

CHECK_BUNDLE = ROOT / "gf01_formal" / "examples" / "check_bundle.json"

#: Asks the planner about atoms that hold NaN and 1e400 (JSON the tool log cannot carry), then would play nothing.
NAN_TOOL_LINE = '''
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "end":
        break
    if m["type"] == "observation" and m["done"]:
        continue
    print('{"type": "tool", "tool": "local-planner-v1", "atoms": [[0, "r0", NaN], [1e400, "r1", 1]]}', flush=True)
    print(json.dumps({"set": {}}), flush=True)
'''


def test_a_tool_line_with_nan_or_1e400_is_a_tool_denied_fault_and_the_evaluation_goes_on(tmp_path, capsys):
    from gf01_formal.cli import main

    agent = tmp_path / "nan.py"
    agent.write_text(NAN_TOOL_LINE)
    out = tmp_path / "runs.jsonl"
    status = main(["evaluate", str(CHECK_BUNDLE), "--agent-cmd", f"{sys.executable} -S {agent}", "--agent",
                   "tool", "--track", "EVAL-TA", "-o", str(out)])
    assert status == 0, capsys.readouterr().err  # the tool baseline's runs completed
    records = [json.loads(line) for line in out.read_text().splitlines()]
    mine = [r for r in records if r["agent_name"] == "cmd"]
    assert len(records) == 6 and len(mine) == 3  # every episode of both agents has its record
    for rec in mine:
        (fault,) = [s["agent_error"] for s in rec["steps"] if s.get("agent_error")]
        assert rec["status"] == "agent_error" and fault["kind"] == "tool_denied" and "NaN" in fault["message"]


def test_evaluate_and_play_exit_1_when_no_run_completed(tmp_path, capsys):
    """An agent that cannot start (here: it exits at once) leaves no completed run: exit 1 and one line naming the
    cause, not a completed evaluation exiting 0."""
    from gf01_formal.cli import main

    agent = tmp_path / "dead.py"
    agent.write_text("import sys\nprint('cannot start: no model here', file=sys.stderr)\nsys.exit(3)\n")
    out = tmp_path / "runs.jsonl"
    cmd = f"{sys.executable} -S {agent}"
    assert main(["evaluate", str(CHECK_BUNDLE), "--agent-cmd", cmd, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no run completed (3 played)" in err and "cannot start: no model here" in err
    assert len(out.read_text().splitlines()) == 3
    # run again: nothing is played now (the runs are final), nothing failed now
    assert main(["evaluate", str(CHECK_BUNDLE), "--agent-cmd", cmd, "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["play", str(ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"), "--agent-cmd", cmd]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did not complete: agent_error" in err and "no model here" in err
