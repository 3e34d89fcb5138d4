"""The episode engine: one scored commit episode of GF-01 on a checked instance (spec §3.3, §11.3; docs/runs.md).
Pure: no I/O, no clock, no randomness.

``reset()`` returns the static goal panel. ``step(assignment)`` judges the action, applies what it commits at the
current step t, steps the system, and returns O(s_t). This engine is the only judge of an action, whatever brought
it (a program's JSON line, a model's reply, a built-in agent, the browser, a replayed record; docs/
agent-protocol.md):

- an action that names something that is not an input, or gives a value other than the integers 0 and 1, is void:
  none of its atoms is committed, its commit does not count, nothing is listed as refused, and the step's log says
  why (:attr:`StepLog.void`; the harness records it as the agent's ``bad_action``);
- an action for another step (``at``) is refused whole (``wrong_step``);
- otherwise every atom is committed as submitted, no-op or not (so no acknowledgment reveals the base trace),
  unless it would exceed B_T (distinct steps with edits) or B_A (atoms): such an atom is refused with its reason
  in the observation and the episode goes on. Atoms of one action are taken in AP_in order, so which atom a
  budget refuses is determined.

The episode ends after step T-1, or after a step whose action commits (the remaining steps have no edits). Only
then is the certificate final; :mod:`gf01_formal.scoring.scores` scores it.

Records played before this rule (built-in, LLM and inspect runs of toolkit versions that refused such atoms one by
one, reasons ``unknown_input`` and ``bad_value``) are replayed with ``per_atom=True``, the rule they were played with.

>>> ep = Episode(problem, "gf01f-0123")
>>> goal = ep.reset()
>>> obs = ep.step({"r0": 1})
>>> obs.t, obs.certificate, obs.done
(0, [[0, 'r0', 1]], False)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from encoders.problem import Atom, Certificate, Problem
from gf01_formal.instances.traces import effect_text
from gf01_formal.play.protocol import EffectStatus, GoalPanel, Observation, Refusal
from gf01_formal.scoring.certificates import certificate_to_json
from hoa.errors import Gf01Error, quote
from hoa.label import evaluate


@dataclass(frozen=True)
class StepLog:
    """What happened at one step: the assignment as submitted, the atoms committed, the refusals, an early commit,
    and why the whole action was void (None: it was not)."""

    t: int
    submitted: dict[str, Any]
    committed: tuple[Atom, ...]
    refused: tuple[Refusal, ...]
    commit: bool
    void: str | None = None


@dataclass
class Episode:
    """One commit episode on ``problem`` (a checked instance's Problem; ``instance_id`` only labels it)."""

    problem: Problem
    instance_id: str = ""
    t: int = field(default=0, init=False)
    done: bool = field(default=False, init=False)
    log: list[StepLog] = field(default_factory=list, init=False)
    _q: int = field(default=0, init=False)
    _atoms: dict[tuple[int, int], int] = field(default_factory=dict, init=False)
    _steps_used: set[int] = field(default_factory=set, init=False)
    _achieved: bool = field(default=False, init=False)
    _started: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        p = self.problem
        self._inputs = p.system.inputs
        self._index = {name: i for i, name in enumerate(self._inputs)}
        self._effect_steps = frozenset(p.effect_steps)
        self._budget_t = p.horizon if p.budget_t is None else p.budget_t
        self._budget_a = p.horizon * p.system.num_inputs if p.budget_a is None else p.budget_a
        steps = sorted(self._effect_steps)
        self.goal = GoalPanel(
            effect=effect_text(p.effect, p.system.outputs),
            t_star=p.t_star,
            mode=p.mode,  # type: ignore[arg-type]
            window=p.window if p.mode == "normal" else None,
            effect_steps=[steps[0], steps[-1]],
            horizon=p.horizon,
            inputs=list(self._inputs),
            outputs=list(p.system.outputs),
            budget_t=self._budget_t,
            budget_a=self._budget_a,
        )

    def reset(self) -> GoalPanel:
        """Start (or restart) the episode at step 0; returns the static goal panel."""
        self.t, self.done, self.log = 0, False, []
        self._q = self.problem.system.initial
        self._atoms, self._steps_used, self._achieved, self._started = {}, set(), False, True
        return self.goal

    def judge(self, assignment: Mapping[str, Any] | None) -> str | None:
        """Why an action with ``assignment`` is void (module docstring), or None when it is not: the first
        malformed atom in AP_in order, and how many more there are."""
        bad = [r for r in (malformed_atom(k, v, self._index) for k, v in self._ordered(assignment)) if r is not None]
        if not bad:
            return None
        return bad[0].message + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else "")

    def step(
        self, assignment: Mapping[str, Any] | None = None, *, commit: bool = False, at: int | None = None,
        per_atom: bool = False,
    ) -> Observation:
        """Play step t with ``assignment`` (input name -> 0/1; omitted inputs unchanged) and return O(s_t).

        ``commit`` ends the episode after this step; ``at``, when given, must be the current step (else the whole
        action is refused). ``per_atom`` replays the rule of older records: malformed atoms refused one by one
        instead of voiding the action (module docstring). Raises Gf01Error when the episode has not started or has
        ended.
        """
        if not self._started:
            raise Gf01Error("reset() the episode before the first step", field="episode")
        if self.done:
            raise Gf01Error("the episode has ended", field="episode")
        t = self.t
        submitted = {str(k): _shown(v) for k, v in (assignment or {}).items()}
        refused: list[Refusal] = []
        committed: list[Atom] = []
        void = None if per_atom else self.judge(assignment)
        if void is not None:
            # A move the agent did not make is never played: not even the action's well-formed atoms, nor its commit.
            commit = False
        elif at is not None and at != t:
            refused.append(Refusal(input=None, value=_shown(at), reason="wrong_step",
                                   message=f"the action is for step {quote(at, 40)}, the current step is {t}"))
        else:
            for name, value in self._ordered(assignment):
                atom = self._check_atom(t, name, value, refused)
                if atom is not None:
                    committed.append(atom)
        p = self.problem
        x = p.trace[t]
        for _, i, v in committed:
            x = (x | (1 << i)) if v else (x & ~(1 << i))
        self._q, y = p.system.step(self._q, x)
        holds = evaluate(p.effect, y)
        in_window = t in self._effect_steps
        self._achieved = self._achieved or (holds and in_window)
        self.log.append(StepLog(t, submitted, tuple(committed), tuple(refused), commit, void))
        self.t += 1
        self.done = commit or self.t == p.horizon
        return Observation(
            t=t,
            y={name: (y >> j) & 1 for j, name in enumerate(p.system.outputs)},
            effect_status=EffectStatus(holds=holds, in_window=in_window, achieved=self._achieved),
            b_T_rem=self._budget_t - len(self._steps_used),
            b_A_rem=self._budget_a - len(self._atoms),
            certificate=certificate_to_json(self.certificate, self._inputs),
            mode=p.mode,  # type: ignore[arg-type]
            t_star=p.t_star,
            refused=refused,
            done=self.done,
        )

    def _ordered(self, assignment: Mapping[str, Any] | None) -> list[tuple[Any, Any]]:
        """The atoms of an assignment in AP_in order (names that are not inputs last, by their text)."""
        return sorted((assignment or {}).items(), key=lambda kv: (self._index.get(kv[0], len(self._index)),
                                                                 str(kv[0])))

    def _check_atom(self, t: int, name: Any, value: Any, refused: list[Refusal]) -> Atom | None:
        """Commit the atom (t, name, value) and return it if the rules allow; else append its refusal, return None."""
        bad = malformed_atom(name, value, self._index)
        if bad is not None:
            refused.append(bad)
            return None
        i = self._index[name]
        if t not in self._steps_used and len(self._steps_used) >= self._budget_t:
            refused.append(Refusal(input=name, value=value, reason="budget_t",
                                   message=f"{name}: no step with edits left (B_T = {self._budget_t})"))
            return None
        if len(self._atoms) >= self._budget_a:
            refused.append(Refusal(input=name, value=value, reason="budget_a",
                                   message=f"{name}: no atom left (B_A = {self._budget_a})"))
            return None
        self._steps_used.add(t)  # the step counts from its first committed atom on
        self._atoms[(t, i)] = int(value)
        return (t, i, int(value))

    @property
    def certificate(self) -> Certificate:
        """C_<=t: every committed atom so far, canonical (sorted by step, input name, value)."""
        names = self._inputs
        return tuple(sorted(((t, i, v) for (t, i), v in self._atoms.items()),
                            key=lambda a: (a[0], names[a[1]], a[2])))

    @property
    def refusals(self) -> int:
        """How many atoms (or whole actions for another step) were refused so far."""
        return sum(len(s.refused) for s in self.log)


def malformed_atom(name: Any, value: Any, inputs: Mapping[str, Any]) -> Refusal | None:
    """The refusal of a submitted atom that names no input (a key of ``inputs``, in AP_in order) or whose value is
    not the integer 0 or 1; None for a well-formed atom (the budgets are the episode's to check).

    >>> malformed_atom("r1", 1.0, {"r0": 0, "r1": 1}).message
    'r1: value 1.0 must be 0 or 1'
    """
    if not isinstance(name, str) or name not in inputs:
        return Refusal(input=quote(name, 60, bare=True), value=_shown(value), reason="unknown_input",
                       message=f"{quote(name, 60)} is not an input ({', '.join(inputs)})")
    if type(value) is not int or value not in (0, 1):  # 1.0 and True are not the integers 0 and 1
        return Refusal(input=name, value=_shown(value), reason="bad_value",
                       message=f"{name}: value {quote(value, 40)} must be 0 or 1")
    return None


def _shown(value: Any) -> Any:
    """A submitted value as it may be echoed back: JSON scalars as they are, anything else (or long) cut to text."""
    if value is None or (isinstance(value, bool | int | float) and abs(value) < 1 << 53):
        return value
    if isinstance(value, str) and len(value) <= 60:
        return value
    return quote(value, 60)
