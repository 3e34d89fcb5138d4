"""``random`` (EVAL-CB): the shortcut detector of the baseline panel. It sees the goal panel and the observations
only. At each step up to t* it edits with probability B_T / (t* + 1): one input, chosen uniformly, set to a uniform
value, while its budgets (from the observations) allow. Seeded, so a run is reproducible."""

from __future__ import annotations

import numpy as np

from gf01_formal.agents.base import Agent
from gf01_formal.play.protocol import Action, Observation, Start


class RandomAgent(Agent):
    """Random edits on observations only (module docstring)."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.Generator(np.random.PCG64(seed))

    def start(self, message: Start) -> None:
        self._goal = message.goal
        self._b_t, self._b_a, self._t = message.goal.budget_t, message.goal.budget_a, 0

    def act(self, observation: Observation | None) -> Action:
        if observation is not None:
            self._b_t, self._b_a, self._t = observation.b_T_rem, observation.b_A_rem, observation.t + 1
        g = self._goal
        rate = min(1.0, g.budget_t / (g.t_star + 1))
        if self._t > g.t_star or self._b_t <= 0 or self._b_a <= 0 or self._rng.random() >= rate:
            return Action()
        name = g.inputs[int(self._rng.integers(len(g.inputs)))]
        return Action(set={name: int(self._rng.integers(2))})
