"""``search`` (EVAL-CB): a systematic online exploration policy on the goal panel and the observations only.

It splits its budget in two phases:

- **probe**: half of B_T (rounded down) goes to probe steps spread evenly over the steps before the effect steps.
  At each it makes one single edit, sweeping the edits (input, value) in a seeded order, and credits the edit with
  how much closer to the effect the outputs came than at its unedited steps (as ``greedy`` does);
- **exploit**: the rest is spent at the effect steps (the window in normal mode, t* in hard mode): at each, one edit
  per input whose best value earned positive credit, best first, up to an even share of what B_A has left over the
  remaining effect steps (when no edit earned credit: the first untried edit, else the best-credited one); it
  stops once the effect is achieved.

Probing buys information with atoms that are rarely necessary, so ``search`` trades Min1 for a better aim; the
baseline panel reports where that trade lands. Seeded (numpy PCG64): the same seed and observations give the
same actions.
"""

from __future__ import annotations

import numpy as np

from gf01_formal.agents.heuristics import DistanceAgent
from gf01_formal.play.protocol import Action, Observation, Start


class SearchAgent(DistanceAgent):
    """Probe early, exploit at the effect steps (module docstring)."""

    def start(self, message: Start) -> None:
        super().start(message)
        goal = message.goal
        first, _ = goal.effect_steps
        probes = min(goal.budget_t // 2, first)
        # Evenly spaced over [0, first): probes far apart see different states, and the last one is not adjacent
        # to the window, whose steps must keep their budget.
        self._probes = {int(t) for t in np.linspace(0, first, probes, endpoint=False)} if probes else set()
        self._sweep = 0

    def act(self, observation: Observation | None) -> Action:
        goal = self._goal
        t, b_a = 0, goal.budget_a
        if observation is not None:
            self._stats.record(observation, self._distance(observation.y))
            t, b_a = observation.t + 1, observation.b_A_rem
            if observation.effect_status.achieved or observation.b_T_rem <= 0 or b_a <= 0:
                return Action()
        first, last = goal.effect_steps
        if t in self._probes:
            edit = self._stats.order[self._sweep % len(self._stats.order)]
            self._sweep += 1
            return Action(set={edit[0]: edit[1]})
        if not first <= t <= last:
            return Action()
        share = max(1, b_a // (last - t + 1))
        chosen: dict[str, int] = {}
        for name in goal.inputs:
            means = {v: self._stats.mean((name, v)) for v in (1, 0)}
            v, gain = max(((v, m) for v, m in means.items() if m is not None), key=lambda vm: vm[1],
                          default=(None, None))
            if v is not None and gain is not None and gain > 0:
                chosen[name] = v
        if not chosen:
            edit = self._stats.best()
            if edit is not None:
                chosen[edit[0]] = edit[1]
        ranked = sorted(chosen.items(), key=lambda e: -(self._stats.mean(e) or 0.0))
        return Action(set=dict(ranked[:share]))
