"""The tools a track allows an agent during its turn (DEC-053), behind one call: ``local-planner-v1`` on EVAL-TA,
``oracle-exact-search-v1`` on EVAL-OC, none on EVAL-CB (docs/agent-protocol.md, "Tools").

``local-planner-v1`` is :class:`gf01_formal.agents.planner.Planner`: atoms in, the outputs of the run with those
edits, whether the effect is achieved and the queries left out (or an error). ``oracle-exact-search-v1`` answers
exact solver queries:

- ``atoms`` a list of ``[t, "input", v]``: ``{"suff": b, "min1": b, "valid": b, "queries_left": n}``, the exact
  Suff, Min1 and Valid of that candidate (Definitions 10-12; B_T is not a validity constraint, so a candidate over
  it is judged all the same), or ``{"error": ..., "queries_left": n}`` for a malformed candidate;
- ``atoms`` null: ``{"certificate": [...], "eff_t": n, "eff_a": n, "queries_left": n}``, the valid certificate
  within B_T minimising (Eff_t, Eff_a), an optimal member of M_B(I) (what the ``oracle`` baseline plays), or
  ``{"certificate": null, ...}`` when M_B(I) is empty.

Both count every call against a budget (256 planner calls, 64 oracle calls by default); a call past it is answered
with an error and still logged. Every call and answer goes to the run's tool log, whose sha256 is the record's
``tool_log_hash``. Nothing answered names the system's text, states or their number, or the base trace beyond what
the run with the agent's edits shows: the planner's outputs are that run's; the oracle's answers are verdicts and
certificates, which EVAL-OC (full access) allows.
"""

from __future__ import annotations

from typing import Any

from encoders.problem import Problem
from gf01_formal.agents.base import Access, AgentFault
from gf01_formal.agents.planner import TOOL_ID as PLANNER_ID
from gf01_formal.agents.planner import BudgetedTool, Planner
from gf01_formal.scoring.certificates import certificate_to_json, parse_certificate

ORACLE_ID = "oracle-exact-search-v1"
DEFAULT_ORACLE_QUERIES = 64
#: Calls past the budget an agent may still make in one episode before it is an agent error (each is logged).
OVER_BUDGET = 16


class OracleSearch(BudgetedTool):
    """``oracle-exact-search-v1`` on one instance, with a query budget and a log of every call."""

    tool_id = ORACLE_ID

    def __init__(self, problem: Problem, max_queries: int = DEFAULT_ORACLE_QUERIES) -> None:
        super().__init__(problem, max_queries)

    def search(self, atoms: Any) -> dict[str, Any]:
        """The answer to one call (module docstring)."""
        from solvers import api

        p = self._problem
        left = self.queries_left - 1
        answer: dict[str, Any]
        if self.queries_left <= 0:
            answer = {"error": f"query budget of {self.max_queries} calls spent", "queries_left": 0}
        elif atoms is None:
            res = api.oracle(p, p.budget_t)
            answer = {"certificate": None if res is None else certificate_to_json(res.certificate, p.system.inputs),
                      "eff_t": None if res is None else res.eff_t, "eff_a": None if res is None else res.eff_a,
                      "queries_left": left}
        else:
            parsed = parse_certificate(atoms, p.system.inputs, horizon=p.horizon, budget_t=None)
            if parsed.errors:
                answer = {"error": parsed.errors[0], "queries_left": left}
            else:
                suff, min1 = api.suff(p, parsed.atoms), api.min1(p, parsed.atoms)
                answer = {"suff": suff, "min1": min1, "valid": suff and min1, "queries_left": left}
        return self._logged(atoms, answer)


class TrackTools:
    """The one tool a track allows (None on EVAL-CB), answering the agent's tool requests."""

    def __init__(self, planner: Planner | None = None, oracle: OracleSearch | None = None) -> None:
        self.planner = planner
        self.oracle = oracle
        self.calls = 0

    @property
    def allowed(self) -> str | None:
        """The allowlisted tool's id, or None (EVAL-CB)."""
        return PLANNER_ID if self.planner is not None else ORACLE_ID if self.oracle is not None else None

    def call(self, tool: str, atoms: Any) -> dict[str, Any]:
        """The answer to one request; AgentFault (fatal) for a tool the track does not allow, or for an agent that
        keeps calling past its budget."""
        allowed = self.allowed
        if tool != allowed:
            grant = f"its tool is {allowed}" if allowed else "EVAL-CB allows no tool"
            raise AgentFault("tool_denied", f"asked for tool {tool!r}: {grant}", fatal=True)
        self.calls += 1
        budget = self.planner.max_queries if self.planner is not None else self.oracle.max_queries if \
            self.oracle is not None else 0
        if self.calls > budget + OVER_BUDGET:
            raise AgentFault("tool_denied", f"more than {budget + OVER_BUDGET} tool calls (the budget and "
                             f"{OVER_BUDGET} more)", fatal=True)
        if self.planner is not None:
            return self.planner.simulate(atoms)
        assert self.oracle is not None  # allowed is not None: the track has one of the two
        return self.oracle.search(atoms)

    def log_text(self) -> str:
        """The run's tool log ("" on EVAL-CB)."""
        if self.planner is not None:
            return self.planner.log_text()
        return self.oracle.log_text() if self.oracle is not None else ""


def for_access(access: Access) -> TrackTools:
    """The tools of the track ``access`` was made for: its planner (EVAL-TA), an oracle search on its problem
    (EVAL-OC), nothing (EVAL-CB)."""
    if access.planner is not None:
        return TrackTools(planner=access.planner)
    if access.problem is not None:
        return TrackTools(oracle=OracleSearch(access.problem))
    return TrackTools()
