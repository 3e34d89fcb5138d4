"""The agents: the baseline panel of DEC-056 (DESIGN.md §3.5) and the adapters to agents outside the process.

``build(spec, access)`` makes the agent a spec names from what its track grants (:mod:`.base`). Built-in agents:

========  ========  ============================================================================
name      track     what it does
========  ========  ============================================================================
random    EVAL-CB   random edits up to t*, within its budgets (shortcut detector)
oracle    EVAL-OC   plays the exact oracle's optimal certificate (ceiling)
========  ========  ============================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gf01_formal.agents.base import Access, Agent, AgentSpec, Track
from hoa.errors import Gf01Error


@dataclass(frozen=True)
class BuiltIn:
    """A built-in agent: its track and how to make it from what the track grants."""

    track: Track
    make: Callable[[AgentSpec, Access], Agent]
    summary: str


def _random(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.random_agent import RandomAgent

    return RandomAgent(access.seed)


def _greedy(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.greedy_agent import GreedyAgent

    return GreedyAgent(access.seed)


def _search(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.search_agent import SearchAgent

    return SearchAgent(access.seed)


def _oracle(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.oracle_agent import OracleAgent

    assert access.problem is not None  # EVAL-OC grants the problem
    return OracleAgent(access.problem)


def _tool(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.tool_agent import ToolAgent

    assert access.planner is not None  # EVAL-TA grants the planner
    return ToolAgent(access.planner, access.seed)


BUILTIN: dict[str, BuiltIn] = {
    "random": BuiltIn("EVAL-CB", _random, "random edits up to t*, within its budgets"),
    "greedy": BuiltIn("EVAL-CB", _greedy, "online edits near the effect steps, steered by the effect distance"),
    "search": BuiltIn("EVAL-CB", _search, "probes single edits before the effect steps, then exploits the best"),
    "tool": BuiltIn("EVAL-TA", _tool, "plans a valid certificate with local-planner-v1, then plays it"),
    "oracle": BuiltIn("EVAL-OC", _oracle, "plays the exact oracle's optimal certificate"),
}


def default_track(name: str) -> Track:
    """The track a built-in agent plays on."""
    if name not in BUILTIN:
        raise Gf01Error(f"unknown agent {name!r} (built in: {', '.join(sorted(BUILTIN))})", field="agent")
    return BUILTIN[name].track


def build(spec: AgentSpec, access: Access) -> Agent:
    """The agent ``spec`` names, made from ``access`` (which holds only what ``spec.track`` grants)."""
    if spec.name not in BUILTIN:
        raise Gf01Error(f"unknown agent {spec.name!r} (built in: {', '.join(sorted(BUILTIN))})", field="agent")
    builtin = BUILTIN[spec.name]
    if builtin.track != spec.track:
        raise Gf01Error(f"agent {spec.name} plays on {builtin.track}, not {spec.track}", field="track")
    return builtin.make(spec, access)


__all__ = ["BUILTIN", "Access", "Agent", "AgentSpec", "BuiltIn", "build", "default_track"]
