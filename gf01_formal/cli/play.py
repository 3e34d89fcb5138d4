"""``gf01 play``: one episode in the terminal, played by a person at a prompt or watched as an agent plays it.

Either way the episode goes through the harness every run goes through (:func:`gf01_formal.runs.runner.play_run`):
a person is one more agent, on the closed-book track, who sees the goal panel and the observations only. End of
input or Ctrl-C at the prompt leaves with exit status 130.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from gf01_formal.agents.base import Agent
from gf01_formal.cli.common import (
    MAX_SECONDS,
    SCORING_SECONDS,
    AgentNameOpt,
    AgentNetworkOpt,
    AgentOutputOpt,
    Deadline,
    IdOpt,
    InstanceArg,
    JsonOpt,
    SandboxOpt,
    cmd_params,
    emit,
    open_instance,
    rows,
    with_lazy_instance_options,
)
from hoa.errors import Gf01Error, quote

if TYPE_CHECKING:
    # The protocol's pydantic models (14 ms to import) are not needed to register this command next to the others.
    from gf01_formal.play.protocol import Action, End, GoalPanel, Observation, Start
    from gf01_formal.runs.record import RunRecord

HELP = """At each step, type the edits for this step and press Enter:
  r0=1 r2=0     set input r0 to 1 and r2 to 0 (inputs you do not name keep their hidden value)
  (empty)       no edit at this step
  commit        end the episode after this step (alone or after edits: r0=1 commit)
  help          this text
Every edit counts: it is part of your certificate, even if it sets an input to the value it had anyway.
Score_C = 1 when the certificate achieves the effect (Suff) and every single edit is needed (Min1)."""


@with_lazy_instance_options
def play_cmd(
    instance: InstanceArg,
    agent: Annotated[
        str | None, typer.Option("--agent", metavar="NAME", help="Watch a built-in agent play: random, greedy, "
                                 "search, tool or oracle.")
    ] = None,
    agent_cmd: Annotated[
        str | None, typer.Option("--agent-cmd", metavar="CMD", help="Watch an external program play (protocol "
                                 "gf01.agent.v1, docs/agent-protocol.md), e.g. 'python3 examples/agent_example.py'.")
    ] = None,
    step_timeout: Annotated[
        float, typer.Option("--step-timeout", metavar="S", min=0.001, max=MAX_SECONDS,
                            help="--agent-cmd: seconds the program has "
                            "for each action.")
    ] = 30.0,
    seed: Annotated[int, typer.Option("--seed", metavar="N", min=0, help="The agent's seed.")] = 0,
    sandbox: SandboxOpt = "auto",
    agent_network: AgentNetworkOpt = False,
    agent_output: AgentOutputOpt = None,
    agent_name: AgentNameOpt = None,
    track: Annotated[Literal["EVAL-CB", "EVAL-TA", "EVAL-OC"] | None, typer.Option(
        "--track", help="The track of --agent-cmd (EVAL-TA: it may call local-planner-v1, EVAL-OC: "
        "oracle-exact-search-v1; docs/agent-protocol.md); a built-in agent plays on its own.")] = None,
    scoring_seconds: Annotated[
        float, typer.Option("--scoring-seconds", metavar="S", min=0.001, max=MAX_SECONDS,
                            help="Time limit of scoring the episode (wall seconds, its exact queries together: gold "
                            "set, best match); past it the answer is unknown (exit 3).")
    ] = SCORING_SECONDS,
    json_out: JsonOpt = False,
    instance_id: IdOpt = None,
    make_options: Any = None,
) -> None:
    """Play one episode at the prompt, or watch an agent play it (--agent, --agent-cmd); then show the scores."""
    from gf01_formal import agents
    from gf01_formal.agents.base import AgentSpec
    from gf01_formal.runs.runner import play_run
    from gf01_formal.scoring.scores import Scorer

    if agent is not None and agent_cmd is not None:
        raise Gf01Error("give one agent: --agent NAME or --agent-cmd CMD, not both", field="--agent")
    if agent_name is not None and agent_cmd is None:
        raise Gf01Error("--agent-name names an --agent-cmd program", field="--agent-name")
    spec: AgentSpec | None = None
    if agent is not None:
        spec = AgentSpec(agent, agents.default_track(agent))
        if agent == agents.CMD:
            raise Gf01Error("an external agent is given with --agent-cmd CMD", field="--agent")
        if track is not None and track != spec.track:
            raise Gf01Error(f"agent {agent} plays on {spec.track}, not {track}", field="--track")
    elif agent_cmd is not None:
        spec = AgentSpec(agents.CMD, track or "EVAL-CB", cmd_params(agent_cmd, step_timeout, sandbox, agent_network,
                                                                    agent_output, agent_name))
    elif track not in (None, "EVAL-CB"):
        raise Gf01Error("a person plays at the prompt on EVAL-CB (no tool prompt); --track is for --agent-cmd",
                        field="--track")
    if spec is not None:
        agents.check(spec)
        agents.check_hidden(spec, [instance])
    if agent_output is not None:
        from gf01_formal.agents.subprocess_agent import check_output_file

        check_output_file(agent_output, [instance])
    options = make_options()
    inst, problem = open_instance(instance, instance_id, options, Deadline(None))
    out = (lambda line: None) if json_out else _say
    if spec is None:
        spec = AgentSpec("human", "EVAL-CB")

        def build(s: AgentSpec, access: Any) -> Any:
            return Terminal(out)
    else:
        def build(s: AgentSpec, access: Any) -> Any:
            return Watched(agents.build(s, access), out)

    outcome = play_run(inst, problem, spec, seed=seed, scorer=Scorer(problem), build=build,
                       scoring_seconds=scoring_seconds)
    record = outcome.record
    from gf01_formal.runs.scoring_limit import passed_limits

    if record.status == "harness_error" and passed_limits(record.error):
        # Exact scoring of a large gold set can outlast any wait (a SYNTCOMP circuit's M(I)): unknown, as every
        # query past its limit answers, not an internal error.
        emit({"unknown": {"query": "score", "reason": record.error}}, json_out,
             lambda _: [f"unknown ({record.error})"])
        raise typer.Exit(3)
    if record.status == "harness_error":
        raise RuntimeError(record.error)
    emit(record.to_json(), json_out, lambda _: _result_lines(record))
    if record.status != "completed":  # the episode did not complete (e.g. the agent could not start): not a result
        print(f"gf01: the run did not complete: {record.status}: {quote(record.error or '', 300, bare=True)}",
              file=sys.stderr)
        raise typer.Exit(1)


def _say(line: str) -> None:
    print(line, flush=True)


# -- the episode as a person sees it -------------------------------------------------------------------------------


def goal_lines(goal: GoalPanel, instance_id: str) -> list[str]:
    """The static goal panel, for people."""
    first, last = goal.effect_steps
    where = f"at step t* = {goal.t_star}" if goal.mode == "hard" else (
        f"at some step from {first} to {last} (t* = {goal.t_star}, window {goal.window})")
    return [
        f"GF-01 instance {instance_id}",
        f"Goal: make  {goal.effect}  hold {where} ({goal.mode} mode).",
        f"Steps 0 .. {goal.horizon - 1}.  Inputs you may set: {' '.join(goal.inputs)}.  "
        f"Outputs you observe: {' '.join(goal.outputs)}.",
        f"Budgets: edits on at most {goal.budget_t} distinct steps (B_T), {goal.budget_a} edits in all (B_A).",
        "Type 'help' at the prompt for how to play.",
        "",
    ]


def step_line(obs: Observation, goal: GoalPanel, submitted: dict[str, Any] | None = None) -> str:
    """One row of the timeline: the step, its edits, its outputs, the effect, the budgets left, refusals."""
    edits = " ".join(f"{a}={v}" for t, a, v in obs.certificate if t == obs.t) or "-"
    ys = " ".join(f"{o}={obs.y[o]}" for o in goal.outputs)
    status = obs.effect_status
    effect = "holds" if status.holds else "no"
    mark = " <- t*" if obs.t == goal.t_star else (" (window)" if status.in_window else "")
    line = (f"t={obs.t:<3} edits {edits:<14} outputs {ys}   effect {effect}{mark}   "
            f"left: B_T {obs.b_T_rem}, B_A {obs.b_A_rem}")
    if status.achieved and status.in_window and status.holds:
        line += "   ACHIEVED"
    for r in obs.refused:
        line += f"\n      refused: {r.message}"
    return line


class Terminal(Agent):
    """A person at the prompt, as an agent: sees the goal panel and the observations, types one action per step."""

    def __init__(self, out: Callable[[str], None], read: Callable[[str], str] = input) -> None:
        self._out, self._read = out, read

    def start(self, message: Start) -> None:
        self._goal = message.goal
        for line in goal_lines(message.goal, message.instance_id):
            self._out(line)

    def act(self, observation: Observation | None) -> Action:
        t = 0
        if observation is not None:
            self._out(step_line(observation, self._goal))
            t = observation.t + 1
        while True:
            try:
                answer = self._read(prompt(t, self._goal))
            except EOFError:
                self._out("")
                raise KeyboardInterrupt from None  # the person left: the CLI exits 130
            action, problem = parse_prompt(answer, self._goal)
            if action is not None:
                return action
            self._out(problem or HELP)

    def observe(self, observation: Observation) -> None:
        self._out(step_line(observation, self._goal))



def prompt(t: int, goal: GoalPanel) -> str:
    """The prompt for step t, marking the steps at which the effect counts."""
    first, last = goal.effect_steps
    mark = " (t*)" if t == goal.t_star else (" (window)" if first <= t <= last else "")
    return f"t={t}{mark}> "


def parse_prompt(answer: str, goal: GoalPanel) -> tuple[Action | None, str | None]:
    """The action a prompt answer asks for, or (None, why it is not one); (None, None) asks for the help text."""
    words = answer.split()
    if words in (["help"], ["?"]):
        return None, None
    commit = "commit" in words
    edits: dict[str, int] = {}
    for word in (w for w in words if w != "commit"):
        name, eq, value = word.partition("=")
        if not eq:
            return None, f"'{word}' is not an edit: write input=0 or input=1 (type 'help')"
        if name not in goal.inputs:
            return None, f"'{name}' is not an input; the inputs are {' '.join(goal.inputs)}"
        if value not in ("0", "1"):
            return None, f"{name}: the value must be 0 or 1, not '{value}'"
        if name in edits:
            return None, f"{name} is set twice"
        edits[name] = int(value)
    from gf01_formal.play.protocol import Action

    return Action(set=edits, commit=commit), None


class Watched(Agent):
    """An agent played as usual, each step shown as it happens."""

    def __init__(self, agent: Agent, out: Callable[[str], None]) -> None:
        self._agent, self._out = agent, out

    # What the run record reads after the episode is the watched agent's.
    meta = property(lambda self: self._agent.meta)
    usage = property(lambda self: self._agent.usage)  # type: ignore[assignment]
    side_files = property(lambda self: self._agent.side_files)
    tool_log = property(lambda self: self._agent.tool_log)
    sandbox = property(lambda self: self._agent.sandbox)  # type: ignore[assignment]

    def start(self, message: Start) -> None:
        self._goal = message.goal
        for line in goal_lines(message.goal, message.instance_id)[:-2]:
            self._out(line)
        self._out("")
        self._agent.start(message)

    def act(self, observation: Observation | None) -> Action:
        if observation is not None:
            self._out(step_line(observation, self._goal))
        return self._agent.act(observation)

    def observe(self, observation: Observation) -> None:
        self._out(step_line(observation, self._goal))
        self._agent.observe(observation)

    def end(self, message: End) -> None:
        self._agent.end(message)

    def close(self) -> None:
        self._agent.close()

    def abort(self) -> None:
        self._agent.abort()


def _result_lines(r: RunRecord) -> list[str]:
    def cert(atoms: list[list[Any]] | None) -> str:
        return "{" + ", ".join(f"({t}, {a}, {v})" for t, a, v in atoms or []) + "}"

    def prf(level: str) -> str:
        return " / ".join(f"{getattr(r, f'{level}_{m}'):.3f}" for m in ("precision", "recall", "f1"))

    pairs: list[tuple[str, Any]] = [
        ("agent", f"{r.agent_name} ({r.eval_track})"),
        ("status", r.status if r.error is None else f"{r.status}: {r.error}"),
        ("certificate", cert(r.certificate)),
        *((k, getattr(r, k)) for k in ("suff", "min1", "valid", "goal", "eff_t", "eff_a", "score_c", "kappa")),
        ("AP P / R / F1", prf("ap")),
        ("TS P / R / F1", prf("ts")),
        ("best-match gold", cert(r.best_match_gold)),
    ]
    if r.refusals or r.agent_errors:
        pairs += [("refusals", r.refusals), ("agent errors", r.agent_errors)]
    return ["", "Result", *("  " + line for line in rows(pairs))]


def register(app: typer.Typer) -> None:
    """Add this module's command to ``app``."""
    app.command("play", short_help="Play one episode in the terminal, or watch an agent play it.")(play_cmd)
