"""GF-01 as a Gymnasium environment: a thin skin over the episode engine (:mod:`.episode`), same rules, same scores.

Gymnasium 1.x has no plugin discovery, so the environment is registered when this module is imported; the id may
name the module itself, which ``gymnasium.make`` imports first:

>>> import gymnasium
>>> env = gymnasium.make("gf01_formal.play.gym_env:gf01/GF01-v0", instance="bundle.json", instance_id="gf01f-...")
... # doctest: +SKIP
>>> obs, info = env.reset()                                                                     # doctest: +SKIP

``instance`` is a path (an instance file, or a bundle with ``instance_id``) or an ``(Instance, Problem)`` pair.

Spaces (T = horizon, n = |AP_in|, m = |AP_out|). An observation is O(s_t) of spec Definition 7:

- ``t``: the step just played, -1 after reset; ``y``: its outputs (m bits, zeros after reset);
- ``effect_status``: [holds, in_window, achieved] for that step; ``b_T_rem``, ``b_A_rem``: the budgets left;
- ``certificate``: C_<=t as a T x n array, 0 = no edit, 1 = set 0, 2 = set 1 (committed atoms only);
- ``mode``: 0 hard, 1 normal; ``t_star``: the target step.

An action is one entry per input in AP_in order: 0 unchanged, 1 set 0, 2 set 1. The episode always runs to step
T-1 (the protocol's early commit only saves steps with no edits).

Reward: Score_C of the final certificate (0 or 1) on the last step, 0 before. It is the benchmark's primary metric
(MET-C), it cannot be gained by shaping (intermediate progress is not what is scored), and it makes the return of
an episode exactly the score a run record would carry. ``info`` holds each step's refusals and, on the last step,
``result``: the scored record (Suff, Min1, Valid, goal, Eff_t, Eff_a, Score_C, kappa, AP/TS P/R/F1, best match).
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from encoders.problem import Problem
from gf01_formal.instances.model import Instance
from gf01_formal.play.episode import Episode
from gf01_formal.play.protocol import Observation, text
from gf01_formal.scoring.scores import Scorer
from gf01_formal.scoring.values import NOT_RUN, Result

ENV_ID = "gf01/GF01-v0"
#: Action values per input.
UNCHANGED, SET_0, SET_1 = 0, 1, 2


class GF01Env(gymnasium.Env[dict[str, Any], np.ndarray]):
    """One GF-01 instance as a Gymnasium environment (module docstring)."""

    # Gymnasium asks for an fps; ansi frames are returned, never timed.
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        instance: str | os.PathLike[str] | tuple[Instance, Problem],
        instance_id: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        if isinstance(instance, tuple):
            inst, problem = instance
        else:
            from gf01_formal.instances.sources import open_instance

            inst, problem = open_instance(instance, instance_id)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.instance = inst
        self._episode = Episode(problem, inst.instance_id)
        self._scorer = Scorer(problem)
        self.goal = self._episode.goal
        g = self.goal
        T, n, m = g.horizon, len(g.inputs), len(g.outputs)
        self.observation_space = spaces.Dict({
            "t": spaces.Discrete(T + 1, start=-1),
            "y": spaces.MultiBinary(m),
            "effect_status": spaces.MultiBinary(3),
            "b_T_rem": spaces.Discrete(g.budget_t + 1),
            "b_A_rem": spaces.Discrete(g.budget_a + 1),
            "certificate": spaces.MultiDiscrete(np.full((T, n), 3, dtype=np.int64)),
            "mode": spaces.Discrete(2),
            "t_star": spaces.Discrete(T),
        })
        self.action_space = spaces.MultiDiscrete(np.full(n, 3, dtype=np.int64))
        self._last: Observation | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict]:
        """Start the episode at step 0; info holds the goal panel. (The game has no randomness: ``seed`` only
        seeds the spaces' samplers, as Gymnasium asks.)"""
        super().reset(seed=seed)
        goal = self._episode.reset()
        self._last = None
        return self._observation(), {"goal": goal.model_dump(mode="json")}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play the current step with ``action`` (one of unchanged / set 0 / set 1 per input)."""
        a = np.asarray(action)
        if a.dtype.kind not in "iu" or not self.action_space.contains(a.astype(np.int64)):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        assignment = {name: int(v) - 1 for name, v in zip(self.goal.inputs, a.tolist(), strict=True) if v != UNCHANGED}
        obs = self._episode.step(assignment)
        self._last = obs
        info: dict[str, Any] = {"refused": [r.model_dump(mode="json") for r in obs.refused]}
        reward = 0.0
        if obs.done:
            result = self._scorer.score(self._episode.certificate)
            info["result"] = Result.of(result, NOT_RUN).to_json()
            reward = float(result.score_c)
        return self._observation(), reward, obs.done, False, info

    def render(self) -> str | None:
        """``ansi``: the canonical-json-v1 text of the last observation (the goal panel before the first step)."""
        if self.render_mode != "ansi":
            return None
        return text(self._last) if self._last is not None else text(self.goal)

    def _observation(self) -> dict[str, Any]:
        g, obs = self.goal, self._last
        cert = np.zeros((g.horizon, len(g.inputs)), dtype=np.int64)
        index = {name: j for j, name in enumerate(g.inputs)}
        if obs is not None:
            for t, name, v in obs.certificate:
                cert[t, index[name]] = SET_1 if v else SET_0
        status = obs.effect_status if obs is not None else None
        return {
            "t": np.int64(-1 if obs is None else obs.t),
            "y": np.array([0 if obs is None else obs.y[o] for o in g.outputs], dtype=np.int8),
            "effect_status": np.array([0, 0, 0] if status is None else
                                      [status.holds, status.in_window, status.achieved], dtype=np.int8),
            "b_T_rem": np.int64(g.budget_t if obs is None else obs.b_T_rem),
            "b_A_rem": np.int64(g.budget_a if obs is None else obs.b_A_rem),
            "certificate": cert,
            "mode": np.int64(g.mode == "normal"),
            "t_star": np.int64(g.t_star),
        }


if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="gf01_formal.play.gym_env:GF01Env")
