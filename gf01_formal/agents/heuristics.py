"""What the observation-only baselines steer by: how far outputs are from the effect, and what single edits did.

Both are computed from what every agent may know, the goal panel and the observations. The distance of outputs y to
the effect e is the least number of outputs read by e that must change for e to hold (0 when y satisfies e): the
Hamming distance from y, restricted to e's variables, to the nearest model of e. :class:`EditStats` credits each
single edit (input, value) with how much closer the outputs came after it than at the unedited steps.

>>> d = EffectDistance("g0 & !busy", ["g0", "busy"])
>>> d({"g0": 0, "busy": 1}), d({"g0": 1, "busy": 0})
(2, 0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from gf01_formal.agents.base import Agent
from gf01_formal.instances.traces import parse_effect
from gf01_formal.play.protocol import GoalPanel, Observation, Start
from hoa.label import evaluate, variables

#: Effects reading more outputs than this get the coarse distance 0 (holds) / 1 (does not): listing the models
#: of e takes 2^k evaluations (instant at 16; generated effects read a handful).
MAX_EXACT_VARIABLES = 16


class EffectDistance:
    """The distance of an output valuation (output name -> 0/1) to the effect (module docstring)."""

    def __init__(self, effect: str, outputs: Sequence[str]) -> None:
        self.expr = parse_effect(effect, outputs)
        self._outputs = list(outputs)
        self._vars = sorted(variables(self.expr))
        self._coarse = len(self._vars) > MAX_EXACT_VARIABLES
        models = []
        for sub in range(0 if self._coarse else 1 << len(self._vars)):
            full = 0
            for j, v in enumerate(self._vars):
                full |= ((sub >> j) & 1) << v
            if evaluate(self.expr, full):
                models.append(sub)
        self._models = models
        self._cache: dict[int, int] = {}

    def __call__(self, y: Mapping[str, int]) -> int:
        if self._coarse:
            full = sum((int(y.get(name, 0)) & 1) << j for j, name in enumerate(self._outputs))
            return 0 if evaluate(self.expr, full) else 1
        sub = 0
        for j, v in enumerate(self._vars):
            sub |= (int(y.get(self._outputs[v], 0)) & 1) << j
        if sub not in self._cache:
            self._cache[sub] = min((bin(sub ^ m).count("1") for m in self._models), default=len(self._vars) + 1)
        return self._cache[sub]


#: A single edit: (input name, value).
Edit = tuple[str, int]


class EditStats:
    """The credit of single edits (input, value), learned from the outputs seen after them."""

    def __init__(self, goal: GoalPanel, rng: np.random.Generator) -> None:
        edits = [(name, v) for name in goal.inputs for v in (1, 0)]
        self.order = [edits[int(k)] for k in rng.permutation(len(edits))]
        self.credit: dict[Edit, list[float]] = {e: [] for e in edits}
        self.unedited: list[int] = []

    def record(self, observation: Observation, distance: int) -> None:
        """Learn from one step: the edits committed at it (from the certificate) and its outputs' effect distance."""
        edits = [(a, v) for t, a, v in observation.certificate if t == observation.t]
        if not edits:
            self.unedited.append(distance)
            return
        reference = float(np.mean(self.unedited)) if self.unedited else distance
        for edit in edits:
            self.credit[edit].append(reference - distance)

    def best(self) -> Edit | None:
        """The first untried edit in the seeded order, else the one with the best mean credit (None: no inputs)."""
        untried = [e for e in self.order if not self.credit[e]]
        if untried:
            return untried[0]
        # max keeps the first of equals, so ties go by the seeded order
        return max(self.order, key=lambda e: float(np.mean(self.credit[e])), default=None)

    def mean(self, edit: Edit) -> float | None:
        """The edit's mean credit, None when never tried."""
        return float(np.mean(self.credit[edit])) if self.credit[edit] else None


class DistanceAgent(Agent):
    """The part the ``greedy`` and ``search`` agents share: a seeded generator, and per episode the goal panel, the
    effect distance and the statistics of their own edits (``start`` sets them; subclasses add their plan)."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.Generator(np.random.PCG64(seed))

    def start(self, message: Start) -> None:
        self._goal = message.goal
        self._distance = EffectDistance(message.goal.effect, message.goal.outputs)
        self._stats = EditStats(message.goal, self._rng)
