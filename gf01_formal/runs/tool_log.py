"""The replay of a run's tool log (EVAL-TA, EVAL-OC): every call answered again from the instance, by a fresh tool of
the record's track, and compared with what the log says the agent was told.

A tool log is canonical JSON Lines (docs/runs.md, "Tool logs"): the header ``{"tool": ID, "max_queries": N}``, then
one entry ``{"call": k, "tool": ID, "query": ..., "answer": ...}`` per call, in order. The header must name the
track's tool (DEC-053) with the harness's budget (256 planner calls, 64 oracle calls: no option changes them), every
entry the same tool, numbered 0, 1, ..., and each answer must be what the tool answers that query after the calls
before it (the ``queries_left`` count and the over-budget errors included). The ``oracle`` baseline logs its one
solver call in its own shape (no header; ``query`` ``"oracle"`` with ``args``), answered again by the same solver
call.

What this cannot show: a call the agent made that the log leaves out at its end (its answers after it would be
the same), or that the log belongs to this agent's run at all (it is tied to the record by ``tool_log_hash``, the
record to the harness by the signature, runs/signing.py).
"""

from __future__ import annotations

import json
from typing import Any

from encoders.problem import Problem
from hoa.errors import quote

#: The tools of the tracks (DEC-053); the budget each is given by the harness (agents/planner.py, agents/tools.py)
#: is what a log's header must state.
PLANNER_ID = "local-planner-v1"
ORACLE_ID = "oracle-exact-search-v1"
#: The oracle baseline's own entry (agents/oracle_agent.py): one exact oracle query, no header.
ORACLE_BASELINE_QUERY = "oracle"


def tool_log_faults(text: str, tool: str, problem: Problem) -> list[tuple[str, str]]:
    """How the tool log ``text`` of a run whose track allows ``tool`` differs from the tool's own answers on
    ``problem`` (field, message); the first difference ends the check. ``[]``: every call answers as logged."""
    entries: list[Any] = []
    for number, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
        try:
            entries.append(json.loads(line, parse_constant=_no_constant))
        except ValueError as ex:
            return [("tool_log", f"line {number} is not JSON ({quote(str(ex), 80, bare=True)})")]
    if not text.endswith("\n") or not entries:
        return [("tool_log", "not JSON Lines (every line, the last included, ends with a newline)")]
    if not all(isinstance(e, dict) for e in entries):
        return [("tool_log", "a line is not a JSON object")]
    first = entries[0]
    if tool == ORACLE_ID and first.get("query") == ORACLE_BASELINE_QUERY:
        return _baseline_faults(entries, problem)
    return _budgeted_faults(entries, tool, problem)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _budgeted_faults(entries: list[dict[str, Any]], tool: str, problem: Problem) -> list[tuple[str, str]]:
    from gf01_formal.agents.planner import DEFAULT_MAX_QUERIES, Planner
    from gf01_formal.agents.tools import DEFAULT_ORACLE_QUERIES, OracleSearch

    budget = DEFAULT_MAX_QUERIES if tool == PLANNER_ID else DEFAULT_ORACLE_QUERIES
    header = {"tool": tool, "max_queries": budget}
    if not _same(entries[0], header):
        return [("tool_log", f"its header is {quote(_shown(entries[0]), 120, bare=True)}, not the harness's "
                             f"{quote(_shown(header), 120, bare=True)}")]
    fresh = Planner(problem, budget) if tool == PLANNER_ID else OracleSearch(problem, budget)
    for k, entry in enumerate(entries[1:]):
        if set(entry) != {"call", "tool", "query", "answer"}:
            return [("tool_log", f"call {k}: not a call entry (call, tool, query, answer)")]
        if entry["tool"] != tool:
            return [("tool_log", f"call {k} is to {quote(entry['tool'], 60)}: the track's one tool is {tool}")]
        if type(entry["call"]) is not int or entry["call"] != k:
            return [("tool_log", f"entry {k} is numbered {quote(entry['call'], 20)} (a call left out or moved)")]
        answer = fresh.simulate(entry["query"]) if isinstance(fresh, Planner) else fresh.search(entry["query"])
        if not _same(answer, entry["answer"]):
            return [("tool_log", f"call {k}: the logged answer is not the tool's "
                                 f"({quote(_shown(entry['answer']), 80, bare=True)} logged, "
                                 f"{quote(_shown(answer), 80, bare=True)} answered again)")]
    return []


def _baseline_faults(entries: list[dict[str, Any]], problem: Problem) -> list[tuple[str, str]]:
    """The oracle baseline's log: exactly one exact oracle query within B_T, answered as the solver answers it."""
    from gf01_formal.scoring.certificates import certificate_to_json
    from solvers import api

    if len(entries) != 1:
        return [("tool_log", f"the oracle baseline makes one solver call; the log has {len(entries)}")]
    entry = entries[0]
    args = {"budget_t": problem.budget_t, "backend": api.DEFAULT_BACKEND["oracle"]}
    if set(entry) != {"call", "tool", "query", "args", "answer"} or not _same(entry["call"], 0) or \
            entry["tool"] != ORACLE_ID:
        return [("tool_log", "not the oracle baseline's entry (call 0, tool, query, args, answer)")]
    if not _same(entry["args"], args):
        return [("tool_log", f"the oracle baseline's call has args {quote(_shown(entry['args']), 80, bare=True)}, "
                             f"not {quote(_shown(args), 80, bare=True)}")]
    res = api.oracle(problem, problem.budget_t)
    answer = None if res is None else {"certificate": certificate_to_json(res.certificate, problem.system.inputs),
                                       "eff_t": res.eff_t, "eff_a": res.eff_a, "optimal": res.optimal}
    if not _same(answer, entry["answer"]):
        return [("tool_log", "call 0: the logged answer is not the oracle's")]
    return []


def _same(answer: Any, logged: Any) -> bool:
    """The answer exactly as it was logged: the same canonical JSON text (``true`` is not ``1``, a tuple is a list)."""
    return _shown(answer) == _shown(logged)


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
