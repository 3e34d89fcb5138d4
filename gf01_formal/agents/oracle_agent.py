"""``oracle`` (EVAL-OC, tool ``oracle-exact-search-v1``): the ceiling of the baseline panel. With full access to the
instance it asks the exact solvers for the (Eff_t, Eff_a)-optimal valid certificate within B_T and plays it; every
solver call and its answer go to its tool log. On a certified instance (M_B(I) non-empty) it scores Score_C = 1."""

from __future__ import annotations

from typing import Any

from encoders.problem import Problem
from gf01_formal.agents.base import Agent
from gf01_formal.play.protocol import Action, Observation, Start
from gf01_formal.scoring.certificates import certificate_to_json
from solvers import api

TOOL_ID = "oracle-exact-search-v1"


class OracleAgent(Agent):
    """Plays the exact oracle's certificate (module docstring)."""

    def __init__(self, problem: Problem) -> None:
        self._problem = problem
        self.tool_log: list[dict[str, Any]] = []
        self._plan: dict[int, dict[str, int]] = {}

    def start(self, message: Start) -> None:
        p = self._problem
        res = api.oracle(p, p.budget_t)
        answer = None if res is None else {"certificate": certificate_to_json(res.certificate, p.system.inputs),
                                           "eff_t": res.eff_t, "eff_a": res.eff_a, "optimal": res.optimal}
        self.tool_log.append({"call": len(self.tool_log), "tool": TOOL_ID, "query": "oracle",
                              "args": {"budget_t": p.budget_t, "backend": api.DEFAULT_BACKEND["oracle"]},
                              "answer": answer})
        self._plan = {}
        for t, i, v in res.certificate if res is not None else ():
            self._plan.setdefault(t, {})[p.system.inputs[i]] = v

    def act(self, observation: Observation | None) -> Action:
        t = 0 if observation is None else observation.t + 1
        return Action(set=self._plan.get(t, {}))
