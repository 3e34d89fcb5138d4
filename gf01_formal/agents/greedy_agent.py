"""``greedy`` (EVAL-CB): an online heuristic on the goal panel and the observations only.

It steers by the effect distance of the outputs (:mod:`.distance`) and learns as it plays which single edits
(input, value) bring the outputs closer to the effect: after each step it credits the edits it made with how much
closer y_t came than the outputs of its unedited steps so far (the base behaviour it has seen). It spends its budget
only where an edit can count:

- it edits at the steps of its *action zone*: the effect steps (the window in normal mode, t* in hard mode), preceded
  by as many steps as B_T has left beyond them, so that state-shaping edits just before the window are possible;
- at each such step it makes one edit (one atom, so that each can be necessary: Min1), the untried edit first (in a
  seeded order), else the one with the best mean credit;
- it stops editing as soon as the effect is achieved (normal mode), since any later edit could only break Min1.

Seeded (numpy PCG64): the same seed and observations give the same actions.
"""

from __future__ import annotations

from gf01_formal.agents.heuristics import DistanceAgent
from gf01_formal.play.protocol import Action, Observation, Start


class GreedyAgent(DistanceAgent):
    """Online greedy edits near the effect steps (module docstring)."""

    def start(self, message: Start) -> None:
        super().start(message)
        goal = message.goal
        first, last = goal.effect_steps
        width = last - first + 1
        self._zone = range(max(0, first - max(0, goal.budget_t - width)), last + 1)

    def act(self, observation: Observation | None) -> Action:
        t = 0
        if observation is not None:
            self._stats.record(observation, self._distance(observation.y))
            t = observation.t + 1
            if observation.effect_status.achieved or observation.b_T_rem <= 0 or observation.b_A_rem <= 0:
                return Action()
        if t not in self._zone:
            return Action()
        edit = self._stats.best()
        return Action() if edit is None else Action(set={edit[0]: edit[1]})
