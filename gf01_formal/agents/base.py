"""The agent interface of the harness, agent specs, and what each evaluation track lets an agent access.

An agent plays one episode: ``start`` gets the :class:`~gf01_formal.play.protocol.Start` message, ``act`` is asked
for one action per step (with the previous step's observation; None before step 0), ``end`` gets the scored result.
The harness never hands an agent more than its track allows, by construction: an agent is built by its factory
from an :class:`Access`, which holds only what the track grants (docs/runs.md, "Tracks and access"):

- EVAL-CB (closed book): nothing; the agent sees the messages only.
- EVAL-TA (tool-augmented): a :class:`Planner`, the allowlisted black-box simulator ``local-planner-v1``.
- EVAL-OC (oracle ceiling): the Problem itself, for the exact solvers (``oracle-exact-search-v1``).

An agent that misbehaves raises :class:`AgentFault` from ``act``; the harness records it as an agent error and the
step proceeds with no edit.

Every agent subclasses :class:`Agent` and implements ``act``; everything else the harness calls or reads is declared
there with a default, so an agent overrides only what it has:

- ``observe(observation)``: the episode's last observation (``done`` true, no action expected), before ``end``; the
  external-agent adapter forwards it, as gf01.agent.v1 promises. Default: ignored.
- ``abort()``: called instead of ``close`` when the harness is stopping (Ctrl-C): release at once, without the grace
  a normal end may give (the adapter SIGKILLs its program's process group). Default: ``close()``.
- read after the episode: ``tool_log`` (JSON objects, one per call and answer, for the EVAL-OC tool log), ``meta``
  (what the agent reports about itself), ``usage`` (tokens, calls; None when it spends none), ``side_files`` (path
  relative to the runs' side directory -> text, e.g. a transcript by its hash), ``sandbox`` (how its program was
  confined). Defaults: empty (None).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from gf01_formal.artifacts import canonical_json, sha256_hex, spec_digest

# The protocol's pydantic models (about 0.2 s of CPU to import) are the hooks' types only: `gf01 --help` registers
# `gf01 play`, whose players subclass Agent, without playing anything.
if TYPE_CHECKING:
    from encoders.problem import Problem
    from gf01_formal.agents.adaptation import Adaptation
    from gf01_formal.agents.planner import Planner
    from gf01_formal.play.protocol import Action, End, Observation, Start

Track = Literal["EVAL-CB", "EVAL-TA", "EVAL-OC"]
TRACKS: tuple[Track, ...] = ("EVAL-CB", "EVAL-TA", "EVAL-OC")
#: What an agent may access, by track (a run whose agent's access exceeds its track is refused by validation).
ACCESS_OF_TRACK = {"EVAL-CB": "observations", "EVAL-TA": "observations+planner", "EVAL-OC": "full"}
#: DEC-053: the tool allowlist id each track requires.
ALLOWLIST_OF_TRACK = {"EVAL-CB": "none", "EVAL-TA": "local-planner-v1", "EVAL-OC": "oracle-exact-search-v1"}

#: Longest agent command line accepted (Linux's MAX_ARG_STRLEN, the most one argument may hold).
MAX_COMMAND = 128 * 1024


class AgentFault(Exception):
    """An agent failed to give a usable action for a step: ``kind`` is one of ``not_json``, ``bad_action``,
    ``timeout``, ``crash``; ``fatal`` faults (crash, timeout) end the agent's part: the rest of the episode has no
    edits and the run's status is ``agent_error``."""

    def __init__(self, kind: str, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.fatal = fatal


class ProviderError(Exception):
    """The service behind an agent (a model provider) failed past its retries: the run is recorded with status
    ``provider_error``, never scored as the agent's, and ``gf01 evaluate`` plays it again on the next invocation."""


_EMPTY: Mapping[str, Any] = MappingProxyType({})


class Agent(ABC):
    """One agent, for one episode at a time: ``act`` is its own; every other hook has a default (module docstring)."""

    #: What the agent reports about itself (the record's ``agent_meta``).
    meta: Mapping[str, Any] = _EMPTY
    #: Tokens and calls spent (the record's ``usage``); None for an agent that spends none.
    usage: dict[str, Any] | None = None
    #: Files to keep beside the runs file (path relative to its side directory -> text).
    side_files: Mapping[str, str] = _EMPTY
    #: The agent's own tool calls and answers (EVAL-OC), one JSON object each.
    tool_log: Sequence[dict[str, Any]] = ()
    #: How the agent's program was confined (the record's ``sandbox``: ``bwrap`` or ``none``); None for an agent that
    #: runs no program.
    sandbox: str | None = None

    def start(self, message: Start) -> None:  # noqa: B027 - a hook with a default, not an abstract method
        """The episode begins: the goal panel and the instance id."""

    @abstractmethod
    def act(self, observation: Observation | None) -> Action:
        """The action for the current step, given the last observation (None before step 0)."""

    def observe(self, observation: Observation) -> None:  # noqa: B027
        """The episode's last observation (``done`` true): no action is expected."""

    def end(self, message: End) -> None:  # noqa: B027
        """The episode is over: its scored result."""

    def close(self) -> None:  # noqa: B027
        """Release what the agent holds (a process, a connection); called once, whatever happened."""

    def abort(self) -> None:
        """Release at once: the harness is stopping (called instead of :meth:`close`)."""
        self.close()


#: An agent's name (``--agent-name``): what a report's tables call it.
LABEL = r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}"


def check_label(label: Any) -> None:
    """Refuse a bad ``--agent-name`` (absent is fine)."""
    import re

    from hoa.errors import Gf01Error, quote

    if label is not None and (not isinstance(label, str) or not re.fullmatch(LABEL, label)):
        raise Gf01Error(f"{quote(label, 60)}: 1 to 64 letters, digits, '.', '_', '+' or '-', starting with a letter "
                        "or digit", field="--agent-name")


def program_sha256(cmd: str) -> str | None:
    """The content hash of an external agent's program: sha256 over the file name and content of every word of
    ``cmd`` that names a regular file (the script, the binary), in order; None when no word does (``python3 -c
    ...``: the command is then all there is)."""
    import hashlib
    import os
    import shlex

    if len(cmd) > MAX_COMMAND:  # refused when the program is checked; shlex would take minutes on megabytes
        return None
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    files = []
    for w in words:
        if ("/" in w or os.path.exists(w)) and os.path.isfile(w):
            digest = hashlib.sha256()
            with open(w, "rb") as fh:
                for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    digest.update(chunk)
            files.append([os.path.basename(w), digest.hexdigest()])
    return sha256_hex(files) if files else None


@dataclass(frozen=True)
class AgentSpec:
    """Which agent plays, with what parameters, on which track; its hash enters the run id.

    ``name`` is a built-in agent (random, greedy, search, tool, oracle) or ``cmd`` (an external program speaking
    gf01.agent.v1, ``params["cmd"]``) or another adapter registered in :mod:`gf01_formal.agents`.
    """

    name: str
    track: Track
    params: dict[str, Any] = field(default_factory=dict)
    #: DEC-055's declaration (agents/adaptation.py); None is no_adaptation, the default, kept out of the spec's JSON.
    adaptation: Adaptation | None = None

    @property
    def access(self) -> str:
        """What the agent is given: ``observations``, ``observations+planner`` or ``full``."""
        return ACCESS_OF_TRACK[self.track]

    @property
    def tool_allowlist_id(self) -> str:
        """DEC-053's allowlist id for this track."""
        return ALLOWLIST_OF_TRACK[self.track]

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON (what the run record stores); a declared adaptation other than the default joins it."""
        out: dict[str, Any] = {"name": self.name, "track": self.track, "params": dict(sorted(self.params.items()))}
        if self.adaptation is not None and not self.adaptation.is_default:
            out["adaptation"] = self.adaptation.to_json()
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AgentSpec:
        """The spec :meth:`to_json` wrote (how specs travel to worker processes)."""
        from gf01_formal.agents.adaptation import from_json

        ad = data.get("adaptation")
        return cls(data["name"], data["track"], dict(data.get("params") or {}),
                   None if ad is None else from_json(ad))

    def adapted(self, adaptation: Adaptation | None) -> AgentSpec:
        """This spec with ``adaptation`` declared (the default declaration leaves it as it is)."""
        if adaptation is None or adaptation.is_default:
            return self
        return AgentSpec(self.name, self.track, self.params, adaptation)

    def adaptation_fields(self) -> dict[str, Any]:
        """The run record's DEC-055 fields for this spec."""
        from gf01_formal.agents.adaptation import Adaptation

        return (self.adaptation or Adaptation()).record_fields()

    @property
    def digest(self) -> str:
        """sha256 of the spec's identity (:func:`spec_digest`): what the run id and ``agent_hash`` hash."""
        return spec_digest(self.to_json())

    @property
    def label(self) -> str | None:
        """The name the user gave the agent (``--agent-name``), if any: reports show it."""
        value = self.params.get("label")
        return value if isinstance(value, str) else None

    def __str__(self) -> str:
        return f"{self.name}({canonical_json(self.params)}) on {self.track}"


@dataclass(frozen=True)
class Access:
    """What the harness gives an agent's factory: the seed, and only what the track grants."""

    seed: int
    planner: Planner | None = None
    problem: Problem | None = None
