"""No hidden state reaches an agent (DEC-005, spec §10): what the harness sends over gf01.agent.v1 depends only on
the goal panel and the outputs under the agent's own actions.

Two instances that differ only in the base trace (where the agent's edits make the runs' outputs coincide), or only
in the system's state names, give byte-identical message streams apart from the instance id; and nothing sent before
``end`` (messages, refusals) nor any agent error text holds the base trace, a state name, HOA text, a member of M(I)
or the oracle certificate. Every line is recorded by the scripted external agent that receives it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scripted_agent import PRELUDE

from aig.build import Builder
from aig.writer import binary
from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import canonical_json
from gf01_formal.instances.io import instance_problem
from gf01_formal.instances.sources import InstanceOptions, instance_from_aiger, instance_from_hoa
from gf01_formal.runs.runner import play_run
from gf01_formal.scoring.scores import Scorer
from solvers import api

ARBITER = """HOA: v1
name: "round-robin arbiter"
States: 2
Start: 0
AP: 4 "r0" "r1" "g0" "g1"
acc-name: all
Acceptance: 0 t
controllable-AP: 2 3
--BODY--
State: 0 "{s0}"
[0 & 2 & !3] 1
[!0 & 1 & !2 & 3] 0
[!0 & !1 & !2 & !3] 0
State: 1 "{s1}"
[1 & !2 & 3] 0
[0 & !1 & 2 & !3] 1
[!0 & !1 & !2 & !3] 1
--END--
"""


def ignores_b(body: str) -> str:
    """A machine over inputs a, b and output g, with the given states (``body``: the text after --BODY--)."""
    states = body.count("State:")
    return f"""HOA: v1
States: {states}
Start: 0
AP: 3 "a" "b" "g"
acc-name: all
Acceptance: 0 t
controllable-AP: 2
--BODY--
{body}--END--
"""


# The output g follows input a; input b is read by nothing.
IGNORES_B = ignores_b("""State: 0 "{s0}"
[0 & 2] 0
[!0 & !2] 0
""")
# The same behaviour with two states that take turns (bisimilar to IGNORES_B): other states, same outputs.
IGNORES_B_TWO_STATES = ignores_b("""State: 0 "even"
[0 & 2] 1
[!0 & !2] 1
State: 1 "odd"
[0 & 2] 0
[!0 & !2] 0
""")

# Logs every line it receives to argv[1]; answers the actions listed in argv[2] (JSON: step -> raw line).
AGENT = PRELUDE + """
plan = json.loads(open(sys.argv[2]).read())
play(lambda t: plan.get(str(t), '{"set": {}}') + "\\n")
"""


def stream(tmp_path: Path, hoa: str | bytes, trace: str, effect: str, plan: dict[int, str], name: str, **options):
    """Play the scripted agent on the instance (``hoa``: HOA text, or AIGER bytes); returns the lines it received,
    the record and the instance."""
    opts = InstanceOptions(trace=trace, effect=effect, **options)
    if isinstance(hoa, bytes):
        inst = instance_from_aiger(hoa, opts, measure=False)
    else:
        inst = instance_from_hoa(hoa, opts, measure=False)
    problem = instance_problem(inst)
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / f"{name}.plan").write_text(json.dumps({str(t): line for t, line in plan.items()}))
    log = tmp_path / f"{name}.jsonl"
    log.write_text("")  # the agent's output file (the only file it may write); the plan is bound read-only
    cmd = f"{sys.executable} {tmp_path / 'agent.py'} {log} {tmp_path / f'{name}.plan'}"
    spec = AgentSpec("cmd", "EVAL-CB", {"cmd": cmd, "output": str(log)})
    record = play_run(inst, problem, spec, seed=0, scorer=Scorer(problem)).record
    return log.read_text().splitlines(), record, inst, problem


def without_id(lines: list[str], instance_id: str) -> list[str]:
    assert sum(instance_id in line for line in lines) == 1  # the id is in the start message only
    return [line.replace(instance_id, "ID") for line in lines]


def test_base_traces_the_agent_overrides_are_invisible(tmp_path):
    """The agent sets every input at every step: the runs coincide, and no acknowledgment tells a no-op from a flip."""
    full = {t: json.dumps({"set": {"r0": t % 2, "r1": 1 - t % 2}}) for t in range(6)}
    one, rec1, i1, _ = stream(tmp_path, ARBITER.format(s0="p0", s1="p1"), "r0&!r1;r0&r1;!r0&!r1;r0&!r1;!r0&r1;r0&r1",
                              "g1", full, "one")
    two, rec2, i2, _ = stream(tmp_path, ARBITER.format(s0="p0", s1="p1"), "!r0&r1;!r0&!r1;r0&r1;!r0&r1;r0&!r1;!r0&!r1",
                              "g1", full, "two")
    assert i1.instance_id != i2.instance_id and i1.base_trace != i2.base_trace
    assert rec1.certificate == rec2.certificate and len(rec1.certificate) == 12
    # Before the end the streams are identical; the end's scores may differ (they are measured against tau).
    assert without_id(one, i1.instance_id)[:-1] == without_id(two, i2.instance_id)[:-1]


def test_base_trace_of_an_input_nothing_reads_is_invisible(tmp_path):
    plan = {2: '{"set": {"a": 1}}', 4: '{"set": {"a": 1, "b": 0}}'}
    one, _, i1, _ = stream(tmp_path, IGNORES_B.format(s0="s"), "!a&b;!a&b;!a&!b;!a&b;!a&!b", "g", plan, "one")
    two, _, i2, _ = stream(tmp_path, IGNORES_B.format(s0="s"), "!a&!b;!a&!b;!a&b;!a&!b;!a&b", "g", plan, "two")
    assert i1.base_trace != i2.base_trace
    assert without_id(one, i1.instance_id)[:-1] == without_id(two, i2.instance_id)[:-1]


def test_state_names_are_invisible(tmp_path):
    plan = {1: '{"set": {"r1": 1}}', 3: '{"set": {"r0": 1}}'}
    trace = "r0&!r1;r0&r1;!r0&!r1;r0&!r1;!r0&r1"
    one, _, i1, _ = stream(tmp_path, ARBITER.format(s0="idle", s1="busy"), trace, "g1", plan, "one")
    two, _, i2, _ = stream(tmp_path, ARBITER.format(s0="Q_alpha", s1="Q_beta"), trace, "g1", plan, "two")
    assert i1.system.hoa != i2.system.hoa
    assert without_id(one, i1.instance_id) == without_id(two, i2.instance_id)  # the end too


def test_the_number_of_states_is_invisible(tmp_path):
    plan = {1: '{"set": {"a": 1}}', 3: '{"set": {"b": 1}}'}
    trace = "!a&b;a&!b;!a&!b;!a&b;a&b"
    one, _, i1, _ = stream(tmp_path, IGNORES_B.format(s0="s"), trace, "g", plan, "one", t_star=3)
    two, _, i2, _ = stream(tmp_path, IGNORES_B_TWO_STATES, trace, "g", plan, "two", t_star=3)
    assert without_id(one, i1.instance_id) == without_id(two, i2.instance_id)


def test_nothing_before_the_end_holds_hidden_state(tmp_path):
    """An agent that edits, names an unknown input or a bad value (agent errors), is refused (budget) and sends
    garbage sees no hidden state."""
    hoa = ARBITER.format(s0="SECRET_STATE_ZERO", s1="SECRET_STATE_ONE")
    trace = "r0&!r1;!r0&r1;r0&r1;!r0&!r1;r0&!r1;!r0&r1;r0&r1"
    plan = {0: '{"set": {"zz": 1, "r0": 7}}', 1: "garbage", 2: '{"set": {"r1": 1}, "x": 0}',
            3: '{"set": {"r0": 1}}', 4: '{"set": {"r1": 0}}', 5: '{"set": {"r0": 0}}', 6: '{"set": {"r1": 1}}'}
    lines, record, inst, problem = stream(tmp_path, hoa, trace, "g1", plan, "one", budget_t=2, budget_a=3)
    assert [json.loads(line)["type"] for line in lines][-1] == "end"
    before_end = "\n".join(lines[:-1])
    assert any(r.reason == "budget_t" for s in record.steps for r in s.refused)  # refusals were sent
    errors = " ".join(s.agent_error.message for s in record.steps if s.agent_error)
    assert "garbage" in errors and "r0: value 7 must be 0 or 1 (and 1 more)" in errors
    hidden = ["SECRET_STATE", "HOA:", "--BODY--", "controllable-AP", "Acceptance", canonical_json(inst.base_trace)]
    hidden += [canonical_json(step) for step in inst.base_trace]  # {"r0":1,"r1":0}: inputs by name, as in tau
    oracle = api.oracle(problem, problem.budget_t)
    golds = list(api.enumerate_certificates(problem, problem.budget_t))
    assert oracle is not None and golds
    played = record.certificate
    for cert in [oracle.certificate, *golds]:
        atoms = [[t, problem.system.inputs[i], v] for t, i, v in cert]
        if atoms != played:
            hidden.append(canonical_json(atoms))
    for text in (before_end, errors):
        for secret in hidden:
            assert secret not in text, secret


def ignores_b_circuit() -> bytes:
    """IGNORES_B as a circuit: g = a, b read by nothing, and two latches (secretly named) that count steps."""
    b = Builder()
    a, _ = b.input("a"), b.input("b")
    l0, l1 = b.latch("SECRET_LATCH_0"), b.latch("SECRET_LATCH_1", 1)
    b.set_next(l0, l0 ^ 1)
    b.set_next(l1, b.xor(l1, l0))
    b.output("g", a)
    return binary(b.aig())


def test_a_circuit_and_a_table_with_the_same_outputs_give_the_same_stream(tmp_path):
    """Nothing of the circuit (its AIGER text, latches, their names or number) reaches the agent: the stream equals
    that of the one-state HOA machine with the same input/output behaviour, and holds no latch name."""
    plan = {1: '{"set": {"a": 1}}', 3: '{"set": {"b": 1}}'}
    trace = "!a&b;a&!b;!a&!b;!a&b;a&b"
    one, _, i1, _ = stream(tmp_path, IGNORES_B.format(s0="s"), trace, "g", plan, "one", t_star=3)
    two, _, i2, _ = stream(tmp_path, ignores_b_circuit(), trace, "g", plan, "two", t_star=3)
    assert i2.system.kind == "aiger" and "SECRET_LATCH_0" in (i2.system.aiger or "")
    assert without_id(one, i1.instance_id) == without_id(two, i2.instance_id)
    assert not any("SECRET" in line or "aag" in line for line in two)
