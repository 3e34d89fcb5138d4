"""The one episode recorder: every transport that plays an episode (the runner's agents, the browser's people, the
inspect solver) and every importer that rebuilds one (the inspect importer) drives an :class:`EpisodeRecorder`, so
the step log and the record are made in one place.

``start()`` opens the episode and returns the goal panel; ``step(action, fault)`` plays one action through the
episode engine (the only judge of an action: :mod:`gf01_formal.play.episode`) and logs the step, with the agent's
fault on it: the transport's (no JSON, a timeout, ...) or the engine's verdict that the action was void
(``bad_action``); ``finish(base, scores, ...)`` and ``fail(base, error, ...)`` make the run record from the fields
fixed before play (:func:`gf01_formal.runs.record.record_base`: the inspect solver plays before the agent spec is
known, its importer records).

>>> from gf01_formal.agents.base import AgentSpec
>>> from gf01_formal.runs.record import record_base
>>> from gf01_formal.scoring.scores import Scorer
>>> rec = EpisodeRecorder(problem, instance.instance_id)
>>> goal = rec.start(); obs = rec.step(Action(set={"r0": 1}))
>>> base = record_base(instance, AgentSpec("random", "EVAL-CB"), seed=0)
>>> rec.finish(base, Scorer(problem).score(rec.certificate)).status
'completed'
"""

from __future__ import annotations

from typing import Any

from encoders.problem import Certificate, Problem
from gf01_formal.play.episode import Episode, StepLog
from gf01_formal.play.protocol import Action, GoalPanel, Observation
from gf01_formal.runs.record import AgentError, RunBase, RunRecord, Status, Step, failed_record, finished_record
from gf01_formal.scoring.certificates import certificate_to_json
from gf01_formal.scoring.values import NOT_RUN, Diagnostic, Scores

#: Protocol violations (not JSON, a malformed or void action) an agent may make in one episode before its run is an
#: agent_error; each such step still proceeds with no edit.
MAX_VIOLATIONS = 3


def step_entry(log: StepLog, inputs: tuple[str, ...], fault: AgentError | None = None) -> Step:
    """The step-log entry of one played step: the transport's ``fault``, else the engine's verdict that the action
    was void (a ``bad_action`` of the agent)."""
    if fault is None and log.void is not None:
        fault = AgentError(kind="bad_action", message=log.void)
    return Step(t=log.t, submitted=log.submitted, committed=certificate_to_json(log.committed, inputs),
                refused=list(log.refused), commit=log.commit, agent_error=fault)


class EpisodeRecorder:
    """One episode of ``problem`` (``instance_id`` labels it), its step log, and its run record."""

    def __init__(self, problem: Problem, instance_id: str) -> None:
        self.episode = Episode(problem, instance_id)
        self.steps: list[Step] = []
        #: Non-fatal faults so far (more than MAX_VIOLATIONS make the run an agent_error).
        self.violations = 0
        #: The first fatal fault (the agent's part ended there), or None.
        self.dead: AgentError | None = None

    @property
    def done(self) -> bool:
        """The episode has ended."""
        return self.episode.done

    @property
    def certificate(self) -> Certificate:
        """The atoms committed so far (final once the episode is done)."""
        return self.episode.certificate

    def start(self) -> GoalPanel:
        """Open the episode at step 0; returns the goal panel."""
        self.steps = []
        self.violations = 0
        self.dead = None
        return self.episode.reset()

    def step(self, action: Action, fault: AgentError | None = None, *, per_atom: bool = False) -> Observation:
        """Play ``action`` (an empty one when the agent gave none: ``fault`` says why) and log the step. A fatal
        fault (:attr:`AgentError.fatal`) ends the agent's part: this step and every later one must have no action.
        A non-fatal fault, or a void action, counts as a protocol violation. ``per_atom``: replay the rule of an
        older record (:meth:`Episode.step`)."""
        if self.dead is not None and (action.set or action.commit or fault is not None):
            raise ValueError("an action or a fault after the agent's fatal fault")  # the harness's own bug
        if fault is not None and fault.fatal and (action.set or action.commit):
            raise ValueError("an action on the step of a fatal fault")
        obs = self.episode.step(action.set, commit=action.commit, at=action.t, per_atom=per_atom)
        entry = step_entry(self.episode.log[-1], self.episode.problem.system.inputs, fault)
        self.steps.append(entry)
        if entry.agent_error is not None and entry.agent_error.fatal:
            self.dead = self.dead or entry.agent_error
        else:
            self.violations += entry.agent_error is not None
        return obs

    def status(self) -> tuple[Status, str | None]:
        """The run's status and error, from the step log alone: ``agent_error`` after a fatal fault or more than
        :data:`MAX_VIOLATIONS` violations, else ``completed``. The replay re-derives a record's status with it."""
        if self.dead is not None:
            return "agent_error", f"{self.dead.kind}: {self.dead.message}"
        if self.violations > MAX_VIOLATIONS:
            return "agent_error", f"{self.violations} protocol violations (more than {MAX_VIOLATIONS})"
        return "completed", None

    def finish(self, base: RunBase, scores: Scores, *, diagnostic: Diagnostic = NOT_RUN,
               status: Status = "completed", error: str | None = None, tool_log_hash: str = "",
               agent_meta: dict[str, Any] | None = None, usage: dict[str, Any] | None = None,
               timing: dict[str, Any] | None = None, sandbox: str | None = None) -> RunRecord:
        """The record of the ended episode, scored as ``scores`` (``sandbox``: an external agent's)."""
        inputs = self.episode.problem.system.inputs
        return finished_record(base, certificate_to_json(self.episode.certificate, inputs), scores,
                               steps=self.steps, diagnostic=diagnostic, status=status, error=error,
                               tool_log_hash=tool_log_hash, agent_meta=agent_meta, usage=usage, timing=timing,
                               sandbox=sandbox)

    def fail(self, base: RunBase, error: str, *, status: Status = "harness_error",
             usage: dict[str, Any] | None = None, agent_meta: dict[str, Any] | None = None,
             timing: dict[str, Any] | None = None, sandbox: str | None = None) -> RunRecord:
        """The record of a run that could not finish for a reason not the agent's (no scores)."""
        return failed_record(base, error, self.steps, status=status, usage=usage, agent_meta=agent_meta,
                             timing=timing, sandbox=sandbox)
