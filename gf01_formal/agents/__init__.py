"""The agents: the baseline panel of DEC-056 (:data:`PANELS`, defined here once; tracks: docs/runs.md), the adapter to
agents outside the process (``gf01 agent check`` plays one through a few episodes:
:mod:`gf01_formal.runs.agent_check`).

Every agent subclasses :class:`~.base.Agent` (its hooks have defaults there). ``check(spec)`` refuses a spec that
cannot be played (before any episode); ``build(spec, access)`` makes the agent a spec names from what its track
grants (:mod:`.base`). Agents (docs/agents.md):

========  ========  ============================================================================
name      track     what it does
========  ========  ============================================================================
random    EVAL-CB   random edits up to t*, within its budgets (shortcut detector)
greedy    EVAL-CB   one edit per step near the effect steps, steered by the effect distance
search    EVAL-CB   probes single edits before the effect steps, then exploits the best
tool      EVAL-TA   plans a valid certificate with local-planner-v1, then plays it
oracle    EVAL-OC   plays the exact oracle's optimal certificate (ceiling)
llm       EVAL-CB   a language model behind an OpenAI-compatible endpoint (params: model, base_url, ...)
cmd       EVAL-CB   an external program speaking gf01.agent.v1, sandboxed (params: cmd, step_timeout,
                    sandbox, network, output)
========  ========  ============================================================================

Every factory reads from :class:`Access` only what its track grants: the CB factories the seed, ``tool`` the seed and
the planner, ``oracle`` the problem (tests/test_agents.py holds them to it).

>>> spec = AgentSpec("cmd", "EVAL-CB", {"cmd": "python3 examples/agent_example.py", "step_timeout": 30.0})
>>> check(spec)
>>> check(AgentSpec("random", "EVAL-OC"))
Traceback (most recent call last):
hoa.errors.Gf01Error: track: agent random plays on EVAL-CB, not EVAL-OC
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gf01_formal.agents.base import Access, Agent, AgentSpec, Track, check_label
from hoa.errors import Gf01Error, quote

#: The external-agent adapter's name in an AgentSpec.
CMD = "cmd"


@dataclass(frozen=True)
class BuiltIn:
    """An agent the harness can build: its track, how to make it from what the track grants, the params it takes."""

    track: Track
    make: Callable[[AgentSpec, Access], Agent]
    summary: str
    params: tuple[str, ...] = ()
    check: Callable[[dict[str, Any]], None] | None = None  # refuses bad params before any episode
    #: Other tracks it may play on (its tools then come from the track: agents/tools.py); the baselines have none.
    also: tuple[Track, ...] = ()

    def plays(self, track: str) -> bool:
        """Whether it may play on ``track``."""
        return track == self.track or track in self.also


def _random(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.random_agent import RandomAgent

    return RandomAgent(access.seed)


def _greedy(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.greedy_agent import GreedyAgent

    return GreedyAgent(access.seed)


def _search(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.search_agent import SearchAgent

    return SearchAgent(access.seed)


def _tool(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.tool_agent import ToolAgent

    assert access.planner is not None  # EVAL-TA grants the planner
    return ToolAgent(access.planner, access.seed)


def _oracle(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.oracle_agent import OracleAgent

    assert access.problem is not None  # EVAL-OC grants the problem
    return OracleAgent(access.problem)


def _llm(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.llm import LLMAgent, LLMConfig
    from gf01_formal.agents.tools import for_access

    tools = for_access(access)
    return LLMAgent(LLMConfig.from_params(spec.params), access.seed, tools=tools if tools.allowed else None)


def _check_llm(params: dict[str, Any]) -> None:
    from gf01_formal.agents.llm import LLMConfig

    LLMConfig.from_params(params)


def _check_cmd(params: dict[str, Any]) -> None:
    from gf01_formal.agents.sandbox import check_named_files, resolve
    from gf01_formal.agents.subprocess_agent import check_command

    argv = check_command(params.get("cmd"))
    check_label(params.get("label"))
    _step_timeout(params)
    if resolve(_sandbox(params)) == "bwrap":
        check_named_files(argv)
    if not isinstance(params.get("network", False), bool):
        raise Gf01Error("network must be true or false", field="network")
    output = params.get("output")
    if output is not None:
        import os

        from gf01_formal.agents.subprocess_agent import open_output

        if not isinstance(output, str) or not output:
            raise Gf01Error("output must be a file name", field="--agent-output")
        os.close(open_output(output))


def check_hidden(spec: AgentSpec, files: list[Any]) -> None:
    """Refuse (Gf01Error) a sandboxed external agent whose sandbox would show it one of the command's own
    ``files`` (the bundle, the runs file, a key, its output): agents/sandbox.py, :func:`~.sandbox.check_hidden`.
    Other agents run no program of the model's: nothing to check."""
    if spec.name != CMD:
        return
    from gf01_formal.agents.sandbox import check_hidden as hidden
    from gf01_formal.agents.sandbox import resolve
    from gf01_formal.agents.subprocess_agent import check_command

    if resolve(_sandbox(spec.params)) == "bwrap":
        hidden(check_command(spec.params.get("cmd")), [*files, spec.params.get("output")],
               network=spec.params.get("network") is True)


def _cmd(spec: AgentSpec, access: Access) -> Agent:
    from gf01_formal.agents.sandbox import resolve
    from gf01_formal.agents.subprocess_agent import SubprocessAgent, check_command
    from gf01_formal.agents.tools import for_access

    tools = for_access(access)
    return SubprocessAgent(check_command(spec.params.get("cmd")), _step_timeout(spec.params),
                           sandbox=resolve(_sandbox(spec.params)), network=spec.params.get("network") is True,
                           tools=tools if tools.allowed else None, output=spec.params.get("output"))


def _sandbox(params: dict[str, Any]) -> str:
    """The sandbox a cmd spec asks for: absent is ``auto`` (bubblewrap, or a refusal); ``none`` is stated."""
    value = params.get("sandbox", "auto")
    if not isinstance(value, str):
        raise Gf01Error("sandbox must be auto, bwrap or none", field="--sandbox")
    return value


BUILTIN: dict[str, BuiltIn] = {
    "random": BuiltIn("EVAL-CB", _random, "random edits up to t*, within its budgets"),
    "greedy": BuiltIn("EVAL-CB", _greedy, "one edit per step near the effect steps, steered by the effect distance"),
    "search": BuiltIn("EVAL-CB", _search, "probes single edits before the effect steps, then exploits the best"),
    "tool": BuiltIn("EVAL-TA", _tool, "plans a valid certificate with local-planner-v1, then plays it"),
    "oracle": BuiltIn("EVAL-OC", _oracle, "plays the exact oracle's optimal certificate"),
    "llm": BuiltIn("EVAL-CB", _llm, "a language model behind an OpenAI-compatible endpoint (--model)",
                   params=("api_key_env", "base_url", "label", "max_tokens", "model", "prompt", "request_timeout",
                           "temperature"), check=_check_llm, also=("EVAL-TA", "EVAL-OC")),
    CMD: BuiltIn("EVAL-CB", _cmd, "an external program speaking gf01.agent.v1",
                 params=("cmd", "label", "network", "output", "program_sha256", "sandbox", "step_timeout"),
                 check=_check_cmd, also=("EVAL-TA", "EVAL-OC")),
}

#: The baseline panels of DEC-056, defined here once: the full panel of official publication campaigns and the core
#: panel of smoke checks.
PANELS: dict[str, tuple[str, ...]] = {
    "full": ("random", "greedy", "search", "tool", "oracle"),
    "core": ("random", "greedy", "oracle"),
}
#: The full panel's agents, each on the one track its factory reads from (``check`` refuses another): a record of one
#: of them on another track was not played by it.
PANEL_TRACK: dict[str, Track] = {name: BUILTIN[name].track for name in PANELS["full"]}


def default_track(name: str) -> Track:
    """The track an agent plays on."""
    return _builtin(name).track


def check(spec: AgentSpec) -> None:
    """Refuse, with a Gf01Error, a spec that cannot be played: an unknown agent, the wrong track, unknown or bad
    params, or (``cmd``) a command that cannot be started. Call it before the first episode."""
    builtin = _builtin(spec.name)
    if not builtin.plays(spec.track):
        raise Gf01Error(f"agent {spec.name} plays on {builtin.track}, not {spec.track}", field="track")
    unknown = sorted(set(spec.params) - set(builtin.params))
    if unknown:
        takes = ", ".join(builtin.params) or "none"
        raise Gf01Error(f"agent {spec.name} takes no param {quote(unknown[0], 40)} (its params: {takes})",
                        field="params")
    if builtin.check is not None:
        builtin.check(spec.params)


def build(spec: AgentSpec, access: Access) -> Agent:
    """The agent ``spec`` names, made from ``access`` (which holds only what ``spec.track`` grants)."""
    builtin = _builtin(spec.name)
    if not builtin.plays(spec.track):
        raise Gf01Error(f"agent {spec.name} plays on {builtin.track}, not {spec.track}", field="track")
    return builtin.make(spec, access)


def _builtin(name: str) -> BuiltIn:
    if name not in BUILTIN:
        raise Gf01Error(f"unknown agent {quote(name, 40)} (known: {', '.join(sorted(BUILTIN))})", field="agent")
    return BUILTIN[name]


def _step_timeout(params: dict[str, Any]) -> float:
    from gf01_formal.agents.subprocess_agent import DEFAULT_STEP_TIMEOUT

    value = params.get("step_timeout", DEFAULT_STEP_TIMEOUT)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86400:
        raise Gf01Error(f"step_timeout must be a number of seconds in (0, 86400], not {quote(value, 40)}",
                        field="step_timeout")
    return float(value)


__all__ = ["BUILTIN", "CMD", "PANELS", "PANEL_TRACK", "Access", "Agent", "AgentSpec", "BuiltIn", "build", "check",
           "default_track"]
