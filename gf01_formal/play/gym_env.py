"""GF-01 as a Gymnasium environment: a thin skin over the episode engine (:mod:`.episode`), same rules, same scores.

Gymnasium 1.x has no plugin discovery, so the environment is registered when this module is imported; the id may
name the module itself, which ``gymnasium.make`` imports first:

>>> import gymnasium
>>> env = gymnasium.make("gf01_formal.play.gym_env:gf01/GF01-v0", bundle="bundle.json")
>>> obs, info = env.reset(seed=0)                   # draws one instance of the bundle
>>> int(obs["t"])
-1
>>> envs = gymnasium.make_vec("gf01_formal.play.gym_env:gf01/GF01-v0", num_envs=2, bundle="bundle.json")
>>> envs.num_envs
2

Instances: ``bundle`` (a bundle or an instance file; ``split`` keeps the instances of one split) gives the
environment every instance of it, and each ``reset(seed=...)`` draws one, uniformly, from the environment's seeded
generator (``options={"instance_id": ...}`` picks one instead); so a vector environment over a bundle plays many
instances at once, and the same seed draws the same instance. ``instance`` (a path, an instance file or a bundle with
``instance_id``, or an ``(Instance, Problem)`` pair) gives it one instance, played at every reset.

Spaces are those of the largest instance of the environment (T = most steps, n = most inputs, m = most outputs),
so that every instance of a bundle, and every copy of a vector environment, has the same spaces; an instance smaller
than that fills the rest with zeros and says its own sizes. An observation is O(s_t) of spec Definition 7:

- ``t``: the step just played, -1 after reset; ``y``: its outputs (m bits, zeros after reset);
- ``effect_status``: [holds, in_window, achieved] for that step; ``b_T_rem``, ``b_A_rem``: the budgets left;
- ``certificate``: C_<=t as a T x n array, 0 = no edit, 1 = set 0, 2 = set 1 (committed atoms only);
- ``mode``: 0 hard, 1 normal; ``t_star``: the target step;
- ``horizon``: this instance's T; ``inputs``, ``outputs``: n and m bits, 1 where this instance has the input or
  output of that position (in AP_in, AP_out order).

An action is one entry per input position: 0 unchanged, 1 set 0, 2 set 1; entries past this instance's inputs are
ignored. The episode always runs to step T-1 of its instance (the protocol's early commit only saves steps with no
edits).

Reward: Score_C of the final certificate (0 or 1) on the last step, 0 before. It is the benchmark's primary metric
(MET-C), it cannot be gained by shaping (intermediate progress is not what is scored), and it makes the return of
an episode exactly the score a run record would carry. ``reset``'s ``info`` holds the instance id and the goal
panel (without the fields that do not apply, such as a hard-mode window, so that a vector env can batch it);
``step``'s holds the instance id and the step's refusals and, on the last step, ``result``, the scored record.
Scoring (``scoring``):

- ``"exact"`` (the default): what a run record carries, Suff, Min1, Valid, goal, Eff_t, Eff_a, Score_C, kappa and
  the AP/TS P/R/F1 against the best match in M_B(I) (its gold set built once per instance);
- ``"valid"``: for training loops, Suff, Min1, Valid, goal, Eff_t, Eff_a, Score_C and kappa only: the best match is
  skipped, which on an instance with a large M_B(I) is nearly all of the environment's time (docs/performance.md).
  The reward is the same Score_C; only the precision/recall fields are missing from ``result``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import gymnasium
import numpy as np
from gymnasium import spaces

from encoders.problem import Problem
from gf01_formal.instances.model import Instance
from gf01_formal.play.episode import Episode
from gf01_formal.play.protocol import GoalPanel, Observation, text
from gf01_formal.scoring.certificates import ParsedCertificate, score
from gf01_formal.scoring.scores import Scorer
from gf01_formal.scoring.values import NOT_RUN, Result
from hoa.errors import Gf01Error, quote

ENV_ID = "gf01/GF01-v0"
#: Action values per input.
UNCHANGED, SET_0, SET_1 = 0, 1, 2
SCORING = ("exact", "valid")


@dataclass
class _Played:
    """One instance of the environment, made ready on its first draw (the gold set is built on first scoring)."""

    episode: Episode
    scorer: Scorer


class GF01Env(gymnasium.Env[dict[str, Any], np.ndarray]):
    """GF-01 instances as a Gymnasium environment (module docstring)."""

    # Gymnasium asks for an fps; ansi frames are returned, never timed.
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        instance: str | os.PathLike[str] | tuple[Instance, Problem] | None = None,
        instance_id: str | None = None,
        render_mode: str | None = None,
        *,
        bundle: str | os.PathLike[str] | None = None,
        split: str | None = None,
        scoring: Literal["exact", "valid"] = "exact",
    ) -> None:
        if (instance is None) == (bundle is None):
            raise Gf01Error("give one of instance= (one instance) or bundle= (an instance drawn at each reset)",
                            field="bundle")
        if scoring not in SCORING:
            raise Gf01Error(f"scoring {quote(scoring, 20)} is not one of {', '.join(SCORING)}", field="scoring")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r} is not one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.scoring = scoring
        self._problems: dict[str, Problem] = {}
        if bundle is not None:
            self.instances = _bundle_instances(bundle, split)
        elif isinstance(instance, tuple):
            inst, problem = instance
            self.instances = [inst]
            self._problems[inst.instance_id] = problem
        else:
            from gf01_formal.instances.sources import open_instance

            inst, problem = open_instance(instance, instance_id)
            self.instances = [inst]
            self._problems[inst.instance_id] = problem
        self._by_id = {i.instance_id: i for i in self.instances}
        self._played: dict[str, _Played] = {}
        self._current = self._ready(self.instances[0])
        self.instance = self.instances[0]
        self.goal = self._current.episode.goal
        # The largest instance's sizes: every instance, and every copy in a vector env, shares these spaces.
        T = max(len(i.base_trace) for i in self.instances)
        n = max(len(i.system.inputs) for i in self.instances)
        m = max(len(i.system.outputs) for i in self.instances)
        self._shape = (T, n, m)
        self.observation_space = spaces.Dict({
            "t": spaces.Discrete(T + 1, start=-1),
            "y": spaces.MultiBinary(m),
            "effect_status": spaces.MultiBinary(3),
            "b_T_rem": spaces.Discrete(max(i.budget_t for i in self.instances) + 1),
            "b_A_rem": spaces.Discrete(max(i.budget_a for i in self.instances) + 1),
            "certificate": spaces.MultiDiscrete(np.full((T, n), 3, dtype=np.int64)),
            "mode": spaces.Discrete(2),
            "t_star": spaces.Discrete(T),
            "horizon": spaces.Discrete(T + 1),
            "inputs": spaces.MultiBinary(n),
            "outputs": spaces.MultiBinary(m),
        })
        self.action_space = spaces.MultiDiscrete(np.full(n, 3, dtype=np.int64))
        self._last: Observation | None = None

    def _ready(self, inst: Instance) -> _Played:
        played = self._played.get(inst.instance_id)
        if played is None:
            problem = self._problems.pop(inst.instance_id, None)
            if problem is None:
                from gf01_formal.instances.io import instance_problem

                problem = instance_problem(inst)
            played = self._played[inst.instance_id] = _Played(Episode(problem, inst.instance_id), Scorer(problem))
        return played

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict]:
        """Start an episode at step 0 on an instance drawn from the environment's seeded generator (the only one
        when it has one; ``options["instance_id"]`` picks it); info holds the goal panel and the instance id."""
        super().reset(seed=seed)
        wanted = (options or {}).get("instance_id")
        if wanted is not None:
            if wanted not in self._by_id:
                raise Gf01Error(f"instance {quote(wanted, 60)} is not in this environment", field="instance_id")
            inst = self._by_id[wanted]
        elif len(self.instances) == 1:
            inst = self.instances[0]
        else:
            inst = self.instances[int(self.np_random.integers(len(self.instances)))]
        self._current = self._ready(inst)
        self.instance = inst
        self.goal = self._current.episode.reset()
        self._last = None
        # Fields that do not apply (a hard-mode window) are left out, not null: a vector env batches each info key
        # into one array per key, typed by its first value, and a null after a number breaks it.
        goal = self.goal.model_dump(mode="json", exclude_none=True)
        return self._observation(), {"goal": goal, "instance_id": inst.instance_id}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play the current step with ``action`` (one of unchanged / set 0 / set 1 per input position)."""
        a = np.asarray(action)
        if a.dtype.kind not in "iu" or not self.action_space.contains(a.astype(np.int64)):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        own = a.tolist()[:len(self.goal.inputs)]  # positions past this instance's inputs are ignored
        assignment = {name: int(v) - 1 for name, v in zip(self.goal.inputs, own, strict=True) if v != UNCHANGED}
        episode = self._current.episode
        obs = episode.step(assignment)
        self._last = obs
        info: dict[str, Any] = {"instance_id": self.instance.instance_id,
                                "refused": [r.model_dump(mode="json") for r in obs.refused]}
        reward = 0.0
        if obs.done:
            info["result"] = self._score(episode)
            reward = float(info["result"]["score_c"])
        return self._observation(), reward, obs.done, False, info

    def _score(self, episode: Episode) -> dict[str, Any]:
        if self.scoring == "exact":
            return Result.of(self._current.scorer.score(episode.certificate), NOT_RUN).to_json()
        s = score(episode.problem, ParsedCertificate.of_atoms(episode.problem, episode.certificate))
        return s.part("check")

    def render(self) -> str | None:
        """``ansi``: the canonical-json-v1 text of the last observation (the goal panel before the first step)."""
        if self.render_mode != "ansi":
            return None
        return text(self._last) if self._last is not None else text(self.goal)

    def _observation(self) -> dict[str, Any]:
        g: GoalPanel = self.goal
        obs = self._last
        T, n, m = self._shape
        cert = np.zeros((T, n), dtype=np.int64)
        index = {name: j for j, name in enumerate(g.inputs)}
        if obs is not None:
            for t, name, v in obs.certificate:
                cert[t, index[name]] = SET_1 if v else SET_0
        status = obs.effect_status if obs is not None else None
        y = np.zeros(m, dtype=np.int8)
        if obs is not None:
            y[:len(g.outputs)] = [obs.y[o] for o in g.outputs]
        return {
            "t": np.int64(-1 if obs is None else obs.t),
            "y": y,
            "effect_status": np.array([0, 0, 0] if status is None else
                                      [status.holds, status.in_window, status.achieved], dtype=np.int8),
            "b_T_rem": np.int64(g.budget_t if obs is None else obs.b_T_rem),
            "b_A_rem": np.int64(g.budget_a if obs is None else obs.b_A_rem),
            "certificate": cert,
            "mode": np.int64(g.mode == "normal"),
            "t_star": np.int64(g.t_star),
            "horizon": np.int64(g.horizon),
            "inputs": (np.arange(n) < len(g.inputs)).astype(np.int8),
            "outputs": (np.arange(m) < len(g.outputs)).astype(np.int8),
        }


def _bundle_instances(path: str | os.PathLike[str], split: str | None) -> list[Instance]:
    """The instances of the bundle (or instance file) at ``path``, those of ``split`` only when it is given."""
    from gf01_formal.instances.io import load_set

    every = load_set(path).instances
    instances = list(every)
    if split is not None:
        instances = [i for i in instances if i.split_id == split]
        if not instances:
            found = sorted({str(i.split_id) for i in every})
            raise Gf01Error(f"no instance of split {quote(split, 40)} in the bundle (its splits: {', '.join(found)})",
                            file=os.fspath(path), field="split")
    return instances


if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="gf01_formal.play.gym_env:GF01Env")
