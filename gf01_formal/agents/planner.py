"""``local-planner-v1``: the allowlisted tool of the EVAL-TA track, a budgeted black-box counterfactual simulator.

Given a set of atoms ``[t, "input", v]``, it answers the outputs y_0 .. y_{T-1} of the run with those edits and
whether the effect is achieved: what the agent would see by playing them, never the system's text, its states or
the base trace. It answers at most ``max_queries`` calls; every call and its answer go to :attr:`Planner.log`,
whose canonical JSON Lines text is the run's tool log (its sha256 is the run's ``tool_log_hash``).

>>> planner = Planner(problem)
>>> planner.simulate([[20, "r2", 1], [21, "r2", 1]])["effect"]
True
"""

from __future__ import annotations

from typing import Any

from encoders.problem import Problem
from gf01_formal.artifacts import canonical_json
from gf01_formal.scoring.certificates import parse_certificate
from hoa.label import evaluate
from solvers.simulate import run_many

TOOL_ID = "local-planner-v1"
#: Calls a planner answers by default (a run may set another budget; it is recorded in the tool log).
DEFAULT_MAX_QUERIES = 256


class BudgetedTool:
    """A track's tool on one instance: a query budget and a log of every call (the run's tool log)."""

    #: The tool's allowlist id (DEC-053), written in every log entry and the log's header.
    tool_id = ""

    def __init__(self, problem: Problem, max_queries: int) -> None:
        self._problem = problem
        self.max_queries = max_queries
        self.log: list[dict[str, Any]] = []

    @property
    def queries_left(self) -> int:
        """Calls the tool will still answer."""
        return self.max_queries - len(self.log)

    def _logged(self, atoms: Any, answer: dict[str, Any]) -> dict[str, Any]:
        self.log.append({"call": len(self.log), "tool": self.tool_id, "query": atoms, "answer": answer})
        return answer

    def log_text(self) -> str:
        """The tool log as canonical JSON Lines, header first (what the run's ``tool_log_hash`` is the sha256 of)."""
        header = {"tool": self.tool_id, "max_queries": self.max_queries}
        return "".join(canonical_json(entry) + "\n" for entry in [header, *self.log])


class Planner(BudgetedTool):
    """The black-box simulator of one instance, with a query budget and a log of every call."""

    tool_id = TOOL_ID

    def __init__(self, problem: Problem, max_queries: int = DEFAULT_MAX_QUERIES) -> None:
        super().__init__(problem, max_queries)

    def simulate(self, atoms: Any) -> dict[str, Any]:
        """The outputs of the run with ``atoms`` applied, and whether the effect is achieved.

        An answer is ``{"outputs": [{out: bit}, ...], "effect": bool, "queries_left": n}``, or ``{"error": ...}``
        for a malformed query or when the budget is spent (both count as calls and are logged).
        """
        p = self._problem
        if self.queries_left <= 0:
            answer: dict[str, Any] = {"error": f"query budget of {self.max_queries} calls spent", "queries_left": 0}
        else:
            parsed = parse_certificate(atoms, p.system.inputs, horizon=p.horizon, budget_t=None)
            if parsed.errors:
                answer = {"error": parsed.errors[0], "queries_left": self.queries_left - 1}
            else:
                _, outs = run_many(p, [p.apply(parsed.atoms)])
                bits = outs[0].astype(int).tolist()  # [t][j]
                ys = [sum(b << j for j, b in enumerate(row)) for row in bits]
                names = p.system.outputs
                achieved = any(evaluate(p.effect, ys[t]) for t in p.effect_steps)
                answer = {"outputs": [dict(zip(names, row, strict=True)) for row in bits],
                          "effect": achieved, "queries_left": self.queries_left - 1}
        return self._logged(atoms, answer)
