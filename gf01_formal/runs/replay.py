"""The one replay of a run record: its step log played again, checked step by step. ``gf01 validate`` (with a bundle)
and the browser's replay page call :func:`replay`, the inspect importer its step part (:func:`replay_steps`, on the
steps the log holds), so they accept and refuse the same records. A replay drives the one
:class:`~gf01_formal.runs.recorder.EpisodeRecorder` with the record's actions and faults, on a fresh episode.

What is checked, in order (the first step that disagrees ends the replay):

- the log's shape: step i has ``t`` = i, and commits only atoms ``[i, input, 0|1]``;
- each step's action (``submitted``, ``commit``, and the step a ``wrong_step`` refusal names) played again gives the
  atoms, refusals and commit the step records, the episode voids exactly the actions the log says were void
  (``bad_action``), and the log does not go on after the episode ended; a finished run's log reaches its end;
- the record's certificate is every atom its steps committed, and its ``refusals`` and ``agent_errors`` are the
  steps' counts.

Without the instance (``gf01 validate`` without a bundle) only what needs no engine is checked
(:func:`log_faults`). A record with no step log (an imported peer row) is replayed from its certificate, one step at a
time (``reconstructed``). Steps recorded under the older per-atom rule (refusals ``unknown_input``, ``bad_value``)
are replayed under it (:mod:`gf01_formal.play.episode`).

>>> from gf01_formal.agents.base import AgentSpec
>>> from gf01_formal.runs.runner import play_run
>>> from gf01_formal.scoring.scores import Scorer
>>> record = play_run(instance, problem, AgentSpec("oracle", "EVAL-OC"), seed=0, scorer=Scorer(problem)).record
>>> replay(record, problem).faults
[]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from encoders.problem import Certificate, Problem
from gf01_formal.play.episode import Episode, StepLog
from gf01_formal.play.protocol import Action, GoalPanel, Observation
from gf01_formal.runs.record import FINAL_STATUSES, HARNESS_VERSION, RunRecord, Step
from gf01_formal.runs.recorder import EpisodeRecorder
from gf01_formal.scoring.certificates import certificate_to_json
from gf01_formal.scoring.values import SCORE_FIELDS, Scores
from hoa.errors import quote

#: Refusal reasons of the per-atom rule of older records (the episode now voids such an action).
PER_ATOM_REASONS = ("unknown_input", "bad_value")
#: The play rule of each harness version (record.HARNESS_VERSION): ``void``, an action with an unknown input or a
#: value not 0/1 is void; ``legacy``, harness.1, whose records were played under either rule (the void rule came in
#: without a version bump), so a step that shows the per-atom refusals is replayed under the per-atom rule. A
#: version not here is refused: nobody knows its rules.
PLAY_RULES = {"gf01-formal.harness.1": "legacy", HARNESS_VERSION: "void"}


@dataclass(frozen=True)
class Fault:
    """One way a record disagrees with its own replay: the field, and what is wrong."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True)
class Replay:
    """What a replay gave: the goal panel, the observations of the steps replayed, and the faults (none: the record
    replays as recorded)."""

    goal: GoalPanel
    observations: list[Observation] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    reconstructed: bool = False
    certificate: Certificate = ()


def replay(record: RunRecord, problem: Problem) -> Replay:
    """Play ``record`` again on ``problem`` (its instance's) and check it (module docstring)."""
    recorder = EpisodeRecorder(problem, record.instance_id)
    goal = recorder.start()
    observations: list[Observation] = []
    final = record.status in FINAL_STATUSES
    if not record.steps:
        faults = _reconstruct(record, recorder.episode, observations)
    elif record.harness_version not in PLAY_RULES:
        faults = [Fault("harness_version", f"{quote(record.harness_version, 60)} is not a harness whose play rules "
                                           f"this toolkit knows ({', '.join(PLAY_RULES)})")]
    else:
        faults = replay_steps(record.steps, recorder, observations, final=final,
                              rule=PLAY_RULES[record.harness_version])
        faults = faults or _total_faults(record) or (_status_faults(record, recorder) if final else [])
    return Replay(goal, observations, faults, not record.steps, recorder.certificate)


def replay_steps(steps: list[Step], recorder: EpisodeRecorder, observations: list[Observation], *,
                 final: bool, rule: str = "void") -> list[Fault]:
    """Drive ``recorder`` (just started) with the actions and faults of ``steps``, checking each step it logs
    against the recorded one; ``final``: the log must reach the episode's end; ``rule``: the play rule of the
    record's harness (:data:`PLAY_RULES`). The first fault ends it."""
    shape = list(_shape_faults(steps))
    if shape:
        return shape
    inputs = recorder.episode.problem.system.inputs
    for i, step in enumerate(steps):
        if recorder.done:
            return [Fault(f"steps.{i}", "the record goes on after its episode ended")]
        after = _after_fatal(step, recorder, i)
        if after is not None:
            return [after]
        per_atom = rule == "legacy" and any(r.reason in PER_ATOM_REASONS for r in step.refused)
        action = Action(set=step.submitted, commit=step.commit, t=_wrong_step(step))
        observations.append(recorder.step(action, step.agent_error, per_atom=per_atom))
        fault = _step_fault(step, recorder.episode.log[-1], recorder.steps[-1], inputs, i)
        if fault is not None:
            return [fault]
    if final and not recorder.done:
        return [Fault("steps", f"the step log ends at step {len(steps)}, before its episode does")]
    return []


def _after_fatal(step: Step, recorder: EpisodeRecorder, i: int) -> Fault | None:
    """A step the harness could not have logged: an action on the step of a fatal fault or after it, or a fault
    after it (the agent was no longer asked)."""
    dead = recorder.dead
    fatal_here = step.agent_error is not None and step.agent_error.fatal
    if (dead is not None or fatal_here) and (step.submitted or step.commit):
        why = f"step {len(recorder.steps) - 1}'s" if dead is not None and not fatal_here else "this step's"
        return Fault(f"steps.{i}.submitted", f"an action after the agent's part ended ({why} fatal fault "
                                             f"{(dead or step.agent_error).kind})")  # type: ignore[union-attr]
    if dead is not None and step.agent_error is not None:
        return Fault(f"steps.{i}.agent_error", f"a fault after the agent's part ended (the fatal {dead.kind} of "
                                               "an earlier step): the harness no longer asked the agent")
    return None


def _status_faults(record: RunRecord, recorder: EpisodeRecorder) -> list[Fault]:
    """A finished record's status and error are what the recorder makes of its step log."""
    status, error = recorder.status()
    if record.status != status:
        why = f" ({quote(error, 120, bare=True)})" if error else ""
        return [Fault("status", f"recorded {record.status}, but its step log makes it {status}{why}")]
    if record.error != error:
        return [Fault("error", f"recorded {quote(record.error, 120)}, but its step log says {quote(error, 120)}")]
    return []


def _reconstruct(record: RunRecord, episode: Episode, observations: list[Observation]) -> list[Fault]:
    """A record with no step log played from its certificate, one step at a time."""
    if record.certificate is None or record.certificate_errors:
        return [Fault("steps", "the record has neither a step log nor a well-formed certificate to replay")]
    problem = episode.problem
    for t in range(problem.horizon):
        observations.append(episode.step({a: v for (s, a, v) in record.certificate if s == t}))
    if certificate_to_json(episode.certificate, problem.system.inputs) != record.certificate:
        return [Fault("certificate", "replaying it step by step does not give it (a budget refuses some of its "
                                     "atoms)")]
    return []


def log_faults(record: RunRecord) -> list[Fault]:
    """The faults of a record's step log that need no engine: its shape, and the record's totals against it. A
    record without a log (an imported peer row; validate faults any other finished one for that) has no totals to
    check: with its instance, :func:`replay` plays its certificate."""
    if not record.steps:
        return []
    return list(_shape_faults(record.steps)) or _total_faults(record)


def score_faults(record: RunRecord, exact: Scores) -> list[Fault]:
    """The record's scores that are not ``exact`` (the scores of its certificate), one fault per field."""
    return [Fault(k, f"recorded {getattr(record, k)!r}, re-verified {getattr(exact, k)!r}") for k in SCORE_FIELDS
            if getattr(record, k) != getattr(exact, k)]


def _shape_faults(steps: list[Step]) -> Iterator[Fault]:
    for i, step in enumerate(steps):
        if step.t != i:
            yield Fault(f"steps.{i}.t", f"{quote(step.t, 40)} at position {i} of the step log")
            return
        if not all(_is_atom(a, i) for a in step.committed):
            yield Fault(f"steps.{i}.committed", f"not a list of [{i}, input, 0 or 1] atoms")
            return


def _is_atom(atom: list[Any], t: int) -> bool:
    """``[t, input, 0|1]`` at step ``t`` (a bool is not an int here: JSON true is not 1)."""
    return (len(atom) == 3 and type(atom[0]) is int and atom[0] == t and isinstance(atom[1], str)
            and type(atom[2]) is int and atom[2] in (0, 1))


def _wrong_step(step: Step) -> int | None:
    """The step an action was for, when the record says it was refused as another step's."""
    wrong = [r.value for r in step.refused if r.reason == "wrong_step"]
    return wrong[0] if wrong and type(wrong[0]) is int else None


def _step_fault(step: Step, log: StepLog, replayed: Step, inputs: tuple[str, ...], i: int) -> Fault | None:
    """How the replayed step differs from the recorded one (None: it does not)."""
    if replayed.committed != step.committed:
        return Fault(f"steps.{i}.committed", f"replaying commits other atoms than the record says "
                                             f"({_shown_atoms(replayed.committed)})")
    if replayed.refused != step.refused:
        reasons = ", ".join(r.reason for r in replayed.refused) or "none"
        return Fault(f"steps.{i}.refused", f"replaying refuses other atoms than the record says ({reasons})")
    if replayed.commit != step.commit:
        return Fault(f"steps.{i}.commit", f"replaying {'ends' if replayed.commit else 'does not end'} the episode "
                                          "here")
    if log.void is not None and (step.agent_error is None or step.agent_error.kind != "bad_action"):
        return Fault(f"steps.{i}.agent_error", f"the episode voids this action ({quote(log.void, 120, bare=True)}): "
                                               "the step must record a bad_action")
    return None


def _total_faults(record: RunRecord) -> list[Fault]:
    if record.status not in FINAL_STATUSES:  # a failed run has no certificate, and counts nothing
        return []
    committed = sorted((a[0], a[1], a[2]) for s in record.steps for a in s.committed)
    played = [list(a) for a in committed]
    faults = []
    if record.certificate != played:
        faults.append(Fault("certificate", f"is not the atoms its step log committed ({_shown_atoms(played)})"))
    refusals = sum(len(s.refused) for s in record.steps)
    if record.refusals != refusals:
        faults.append(Fault("refusals", f"recorded {record.refusals}, the step log refuses {refusals}"))
    errors = sum(1 for s in record.steps if s.agent_error is not None)
    if record.agent_errors != errors:
        faults.append(Fault("agent_errors", f"recorded {record.agent_errors}, the step log has {errors}"))
    return faults


def _shown_atoms(atoms: list[list[Any]]) -> str:
    text = ", ".join(f"({t}, {a}, {v})" for t, a, v in atoms)
    return quote("{" + text + "}", 160, bare=True)
