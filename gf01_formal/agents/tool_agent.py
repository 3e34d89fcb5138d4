"""``tool`` (EVAL-TA, tool ``local-planner-v1``): plans a certificate with the black-box simulator, then plays it.

It sees the goal panel, the observations and the planner's answers, never the system or the base trace. Before step
0 it searches, within the planner's query budget:

1. **a sufficient set**: random edits over the ``span + 1`` steps up to the last effect step (span 0, 1, 2, 4, ...
   up to all steps, round after round with fresh draws; each (step, input) is edited with probability 1, then 1/2
   in alternate rounds), each draw asked of the simulator once;
2. **a Min1 set inside it**: drop whole steps while the rest stays sufficient (in chunks halving down to one step,
   earliest first: far edits matter least), then single atoms until no single removal keeps the effect. The last
   pass asked the simulator about every single removal, so the set it keeps is valid (Suff and Min1), not merely
   believed to be;
3. a set that fits B_T and B_A is the plan; it plays its atoms step by step and commits after the last one.

When the queries run out before a valid set is found it plays the best it has under the ranking kappa =
(M, G, -Eff_t, -Eff_a): a sufficient set when it found one (G = 1), else no edit at all (an empty certificate ranks
above any insufficient one). Every call and answer is in the planner's log, the run's tool log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from gf01_formal.agents.base import Agent
from gf01_formal.agents.planner import Planner
from gf01_formal.play.protocol import Action, GoalPanel, Observation, Start

#: One atom of a plan: (t, input name, value).
PlanAtom = tuple[int, str, int]
#: Edit densities of the random draws, round by round: dense draws reach the effect more often, sparser ones shrink
#: to smaller sets (measured on generated bundles: docs/agents.md).
DENSITIES = (1.0, 0.5)


class ToolAgent(Agent):
    """Plans with local-planner-v1, then plays the plan (module docstring)."""

    def __init__(self, planner: Planner, seed: int) -> None:
        self._planner = planner
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._plan: dict[int, dict[str, int]] = {}
        self._last = -1
        self.meta: dict[str, Any] = {}

    def start(self, message: Start) -> None:
        atoms, verdict = plan(message.goal, self._planner, self._rng)
        self._plan = {}
        for t, name, v in atoms:
            self._plan.setdefault(t, {})[name] = v
        self._last = max(self._plan, default=-1)
        self.meta = {"plan": verdict, "planner_calls": len(self._planner.log)}

    def act(self, observation: Observation | None) -> Action:
        t = 0 if observation is None else observation.t + 1
        # Committing after the plan's last step ends the episode early: nothing after it could help.
        return Action(set=self._plan.get(t, {}), commit=t == self._last)



class _Oracle:
    """Sufficiency questions to the planner, each distinct set asked once."""

    def __init__(self, planner: Planner) -> None:
        self.planner = planner
        self._known: dict[frozenset[PlanAtom], bool] = {}

    @property
    def spent(self) -> bool:
        return self.planner.queries_left <= 0

    def suff(self, atoms: Iterable[PlanAtom]) -> bool | None:
        """Whether the effect is achieved with ``atoms``; None when the planner's budget is spent."""
        key = frozenset(atoms)
        if key not in self._known:
            if self.spent:
                return None
            answer = self.planner.simulate([list(a) for a in sorted(key)])
            if "error" in answer:
                return None
            self._known[key] = bool(answer["effect"])
        return self._known[key]


def plan(goal: GoalPanel, planner: Planner, rng: np.random.Generator) -> tuple[list[PlanAtom], str]:
    """The atoms to play and how sure the plan is: ``valid``, ``sufficient``, ``none`` (nothing found) or
    ``base`` (the base run already achieves the effect; nothing to do)."""
    oracle = _Oracle(planner)
    base = oracle.suff(())
    if base is not False:
        return [], "base" if base else "none"
    last = goal.effect_steps[1]
    spans = sorted({0, *(min(last, 1 << k) for k in range(last.bit_length() + 1))})
    best_sufficient: list[PlanAtom] | None = None
    rounds = 0
    while not oracle.spent:
        density = DENSITIES[rounds % len(DENSITIES)]
        rounds += 1
        for span in spans:
            candidate = _draw(goal, span, density, rng)
            if oracle.suff(candidate) is not True:
                if oracle.spent:
                    break
                continue
            kept, proven = _shrink(candidate, oracle)
            fits = len({a[0] for a in kept}) <= goal.budget_t and len(kept) <= goal.budget_a
            if fits and proven:
                return kept, "valid"
            if fits and (best_sufficient is None or _cost(kept) < _cost(best_sufficient)):
                best_sufficient = kept
            if oracle.spent:
                break
    if best_sufficient is not None:
        return best_sufficient, "sufficient"
    return [], "none"


def _draw(goal: GoalPanel, span: int, density: float, rng: np.random.Generator) -> list[PlanAtom]:
    """Random edits over the ``span + 1`` steps up to the last effect step: each (step, input) is edited with
    probability ``density``, to a uniform value (so about half the edits restate the base trace; shrinking drops
    those, since removing one never changes the run)."""
    last = goal.effect_steps[1]
    steps = range(last - span, last + 1)
    values = rng.integers(0, 2, size=(len(steps), len(goal.inputs)))
    edited = rng.random(size=values.shape) < density
    return [(t, name, int(values[k, j])) for k, t in enumerate(steps) for j, name in enumerate(goal.inputs)
            if edited[k, j]]


def _shrink(atoms: list[PlanAtom], oracle: _Oracle) -> tuple[list[PlanAtom], bool]:
    """A sufficient subset of the sufficient ``atoms``, and whether it is proven Min1 (every single removal was
    asked and breaks the effect); stops early, unproven, when the planner's budget runs out."""
    kept = list(atoms)
    steps = sorted({a[0] for a in kept})
    size = max(1, len(steps) // 2)
    while True:  # whole steps first, in chunks halving down to one step (ddmin's coarse-to-fine order)
        for k in range(0, len(steps), size):
            chunk = set(steps[k:k + size])
            rest = [a for a in kept if a[0] not in chunk]
            verdict = oracle.suff(rest)
            if verdict is None:
                return kept, False
            if verdict:
                kept = rest
        if size == 1:
            break
        steps = sorted({a[0] for a in kept})
        size = max(1, size // 2)
    changed = True
    while changed:
        changed = False
        for atom in list(kept):
            rest = [a for a in kept if a != atom]
            verdict = oracle.suff(rest)
            if verdict is None:
                return kept, False
            if verdict:
                kept, changed = rest, True
    return sorted(kept), True


def _cost(atoms: list[PlanAtom]) -> tuple[int, int]:
    return len({a[0] for a in atoms}), len(atoms)
