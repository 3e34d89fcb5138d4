"""``gf01 agent check CMD``: a program played through a few episodes, every protocol fault reported in plain words.

In the manner of Gymnasium's ``check_env``: the program is played exactly as an evaluation plays it (the
``cmd`` adapter built from the same spec, :mod:`gf01_formal.agents.subprocess_agent`, in the same sandbox with the
same limits, through :func:`gf01_formal.runs.runner.play_run`, on a track whose tool answers its tool lines), on
the instances of a small built-in bundle (``examples/check_bundle.json``) or of one given, and everything the
protocol (docs/agent-protocol.md) asks of it is checked on the way:

- every step's answer: a line that is not JSON, an action that is not one (unknown keys, wrong types), a ``set``
  naming something that is not an input or a value other than 0 and 1, a line too long; an action for another step
  (its ``t``: a line late or ahead); no line within the step timeout; the program exiting mid-episode;
- extra lines: a line already written before the harness sent the observation it would answer, or any line after an
  observation with ``done`` true or after ``end``;
- the exit: still running one grace period after its input closed (it needed SIGTERM or SIGKILL);
- children left behind: processes of the program's session still alive once the program itself has exited
  (unsandboxed only: in the sandbox they die with it);
- tool requests the track refuses (``tool_denied``: another track's tool, a malformed request, too many calls).

A fault is never fatal to the check itself: each episode is played to its end and the next one starts afresh.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from gf01_formal.agents.base import AgentFault, AgentSpec
from gf01_formal.agents.subprocess_agent import DEFAULT_STEP_TIMEOUT, GRACE, SubprocessAgent, check_command
from gf01_formal.play.protocol import Action, End, Observation
from hoa.errors import Gf01Error

#: Episodes played by default: enough to see a start, steps with edits, a commit and several ends.
DEFAULT_EPISODES = 3
#: Seconds waited after an answer for a second line the program may be writing for the same step.
EXTRA_LINE_WAIT = 0.05


@dataclass(frozen=True)
class Fault:
    """One protocol fault: where (episode, instance, step; None for the program's exit) and what, in plain words."""

    episode: int
    instance_id: str
    step: int | None
    kind: str
    message: str

    def to_json(self) -> dict[str, Any]:
        """The fault as JSON."""
        return {"episode": self.episode, "instance_id": self.instance_id, "step": self.step, "kind": self.kind,
                "message": self.message}

    def __str__(self) -> str:
        where = f"step {self.step}" if self.step is not None else "after the episode"
        return f"episode {self.episode} ({self.instance_id}), {where}: {self.message}"


@dataclass
class AgentCheck:
    """What :func:`check_program` found: the episodes and steps played, and the faults."""

    command: str
    episodes: int = 0
    steps: int = 0
    faults: list[Fault] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No fault at all."""
        return not self.faults

    def to_json(self) -> dict[str, Any]:
        """The check as JSON."""
        return {"command": self.command, "episodes": self.episodes, "steps": self.steps, "ok": self.ok,
                "faults": [f.to_json() for f in self.faults]}


class _Watched(SubprocessAgent):
    """The ``cmd`` adapter with eyes: lines written ahead of their turn, and how the program ends."""

    def __init__(self, played: SubprocessAgent) -> None:
        """Watch the program as the evaluation's adapter ``played`` runs it (its sandbox, limits, tools, output)."""
        super().__init__(played.argv, played.step_timeout, max_line=played.max_line, sandbox=played.sandbox,
                         network=played.network, tools=played.tools, output=played.output)
        self.notes: list[tuple[int | None, str, str]] = []  # (step, kind, message)
        self._t = 0

    def act(self, observation: Observation | None) -> Action:
        if observation is not None:
            self._extra_lines(f"after its answer for step {self._t}, before the observation of that step was sent")
        self._t = 0 if observation is None else observation.t + 1
        return super().act(observation)

    def observe(self, observation: Observation) -> None:
        self._extra_lines(f"after its answer for step {self._t}, the last step")
        super().observe(observation)

    def end(self, message: End) -> None:
        self._extra_lines("in answer to the last observation (done: true), which needs none")
        super().end(message)

    def close(self) -> None:
        proc = self._proc
        if proc is not None:
            self._watch_exit(proc)
        super().close()

    def _extra_lines(self, when: str) -> None:
        """Lines the program has written that no message asked for: reported, then dropped, so that the steps after
        are judged on their own (the harness would read them as the next answers, out of step)."""
        if self._proc is None or self._dead is not None:
            return
        self._peek(EXTRA_LINE_WAIT)
        if self._lines:
            n = len(self._lines)
            self.notes.append((self._t, "extra_line", f"{n} extra line{'s' if n > 1 else ''} written {when}: the "
                               "protocol asks for exactly one line per start and per observation with done false"))
            self._lines.clear()

    def _peek(self, wait: float) -> None:
        """Read what the program writes within ``wait`` seconds, without the step's deadline (nothing is killed)."""
        proc = self._proc
        assert proc is not None
        until = time.monotonic() + wait
        try:
            while not self._lines and self._stdout_open and time.monotonic() < until:
                self._serve(proc, until - time.monotonic())
        except AgentFault:  # the program is gone: the next step reports it
            return

    def _watch_exit(self, proc: subprocess.Popen[bytes]) -> None:
        """After ``end``: close the program's input and see whether it exits within the grace period, and what
        of its session outlives it."""
        self._extra_lines("after end")
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(GRACE)
        except subprocess.TimeoutExpired:
            self.notes.append((None, "no_exit", f"still running {GRACE:g} s after its input closed (the harness "
                               "then sends SIGTERM, then SIGKILL): exit when stdin reaches end of file"))
            return
        # In the sandbox nothing outlives the program: its init ends with it, and the kernel kills the namespace.
        left = _session_members(proc.pid) if self.sandbox == "none" else []
        if left:
            shown = ", ".join(f"{pid} ({name})" for pid, name in left[:5])
            self.notes.append((None, "children_left", f"left {len(left)} process{'es' if len(left) > 1 else ''} "
                               f"of its session running after it exited: {shown}; the harness kills them, but an "
                               "agent should end its children itself"))


def _session_members(sid: int) -> list[tuple[int, str]]:
    """Processes (pid, command name) whose session id is ``sid`` (Linux /proc; empty elsewhere)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name_end = stat.rfind(")")
        fields = stat[name_end + 2:].split()
        # fields after the name: state ppid pgrp session ...
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == sid and int(entry.name) != sid:
            found.append((int(entry.name), stat[stat.find("(") + 1:name_end]))
    return sorted(found)


def builtin_bundle() -> Path:
    """The small bundle the check plays by default (three generated instances, hard and normal mode)."""
    return Path(str(resources.files("gf01_formal") / "examples" / "check_bundle.json"))


def check_program(
    cmd: str,
    bundle: str | os.PathLike[str] | None = None,
    *,
    episodes: int = DEFAULT_EPISODES,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    seed: int = 0,
    track: str = "EVAL-CB",
    sandbox: str = "auto",
    network: bool = False,
    output: str | os.PathLike[str] | None = None,
) -> AgentCheck:
    """Play the program ``cmd`` through ``episodes`` episodes (the first instances of ``bundle``, cycled; default
    :func:`builtin_bundle`) on ``track`` (its tool answering tool lines) and collect every protocol fault (module
    docstring). The program runs exactly as ``gf01 evaluate`` runs it: the adapter is built from the same spec
    (``sandbox``, ``network``, ``output`` as evaluate's options), so an agent that cannot run in the sandbox fails
    the check. A command that cannot be started at all, or no sandbox where one is asked for, is a Gf01Error, as
    for ``gf01 evaluate``."""
    from gf01_formal import agents
    from gf01_formal.instances.io import load_set
    from gf01_formal.runs.runner import play_run
    from gf01_formal.scoring.scores import Scorer

    if episodes < 1:
        raise Gf01Error("play at least one episode", field="--episodes")
    try:
        check_command(cmd)
    except Gf01Error as ex:
        raise Gf01Error(ex.message, field="CMD") from None
    params: dict[str, Any] = {"cmd": cmd, "step_timeout": step_timeout}
    if sandbox != "auto":
        params["sandbox"] = sandbox
    if network:
        params["network"] = True
    if output is not None:
        params["output"] = str(output)
    spec = AgentSpec(agents.CMD, track, params)  # type: ignore[arg-type]  # a track name the CLI has checked
    agents.check(spec)
    agents.check_hidden(spec, [bundle])  # the built-in bundle is public: a program may read it
    loaded = load_set(builtin_bundle() if bundle is None else bundle)
    result = AgentCheck(cmd)
    for k in range(episodes):
        inst = loaded.instances[k % len(loaded.instances)]
        problem = loaded.problem(inst)
        watched: list[_Watched] = []

        def build(s: AgentSpec, access: Any, watched: list[_Watched] = watched) -> _Watched:
            played = agents.build(s, access)
            assert isinstance(played, SubprocessAgent)
            watched.append(_Watched(played))
            return watched[-1]

        record = play_run(inst, problem, spec, seed=seed, scorer=Scorer(problem), build=build).record
        agent = watched[0]
        episode = k + 1
        result.episodes += 1
        result.steps += len(record.steps)
        found = [Fault(episode, inst.instance_id, t, kind, message) for t, kind, message in agent.notes]
        for step in record.steps:
            if step.agent_error is not None:
                kind = step.agent_error.kind
                found.append(Fault(episode, inst.instance_id, step.t, kind,
                                   f"{_KIND_WORDS.get(kind, kind)}: {step.agent_error.message}"))
            for refusal in step.refused:
                if refusal.reason == "wrong_step":
                    found.append(Fault(episode, inst.instance_id, step.t, "wrong_step",
                                       f"the action was for another step ({refusal.message}): a line written "
                                       "late, or one too many earlier, puts every later answer out of step"))
        result.faults += sorted(found, key=lambda f: (f.step is None, f.step or 0))
    return result


_KIND_WORDS = {
    "not_json": "the line is not JSON",
    "bad_action": "the line is not a valid action",
    "timeout": "no answer in time",
    "crash": "the program stopped (in the sandbox: one that cannot start there, e.g. a file it needs but does not "
             "name, stops here)",
    "tool_denied": "a tool request refused",
}


__all__ = ["DEFAULT_EPISODES", "AgentCheck", "Fault", "builtin_bundle", "check_program"]
