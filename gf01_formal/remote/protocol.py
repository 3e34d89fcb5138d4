"""The wire of remote evaluation (docs/remote.md, "The wire"): the requests a participant's relay sends, their size
limits, and the paths they go to. Every body is JSON; every answer is canonical JSON; a refusal is an HTTP status
with ``{"error": one line}``.

The agent's side of an episode crosses as the exact lines of gf01.agent.v1 (docs/agent-protocol.md): the relay sends
each line its agent wrote (an action or a tool request) with its sequence number, and the server answers with the
canonical-json-v1 messages it sent back until it waits for the next line (observations, tool results, the end).
Nothing else of an episode crosses: the server never sends a field of its own beside those messages but the
sequence number, whether the episode is over and, at its end, the signed receipt.

A line is applied once: ``seq`` counts the lines the relay sent before it, and the server answers a line it already
applied (a retry after a lost answer) with the messages it answered the first time, without applying it again.

>>> LineRequest.model_validate({"seq": 0, "line": '{"set": {}}'}).seq
0
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gf01_formal.agents.subprocess_agent import MAX_LINE
from hoa.errors import Gf01Error

WIRE = "gf01.remote.v1"
#: The largest body of a request that opens an episode or lists a submission's runs (an agent spec and a seed).
OPEN_LIMIT = 32 * 1024
#: The largest body of a line request: one agent line of at most MAX_LINE bytes, escaped in JSON (up to 6 bytes a
#: character for control characters), and the sequence number.
LINE_LIMIT = 6 * MAX_LINE + 1024
#: The longest message of a fault the relay reports for its agent.
MAX_FAULT_MESSAGE = 2000

PLAN_PATH = "/v1/runs"
OPEN_PATH = "/v1/episodes"
LINES_PATH = "/v1/episodes/{episode}/lines"
LEADERBOARD_JSON = "/v1/leaderboard"
LEADERBOARD_PAGE = "/leaderboard"

_WIRE = ConfigDict(extra="forbid", frozen=True, strict=True)


class Submission(BaseModel):
    """Who plays: the agent spec as ``AgentSpec.to_json`` writes it (name, track, params, adaptation) and the
    seed; with the team of the token, they fix the run ids."""

    model_config = _WIRE
    agent: dict[str, Any]
    seed: int = Field(ge=0, lt=1 << 63)


class OpenRequest(Submission):
    """Open (or restart) the episode of one instance of the submission."""

    instance_id: str = Field(min_length=1, max_length=200)


class Fault(BaseModel):
    """A fault of the participant's agent that its relay saw (its program crashed or timed out on the participant's
    machine, a model's reply that is no action): recorded on the step as the agent's, as locally."""

    model_config = _WIRE
    kind: Literal["not_json", "bad_action", "timeout", "crash"]
    message: str = Field(max_length=MAX_FAULT_MESSAGE)


class LineRequest(BaseModel):
    """One line of the agent (``line``), or the fault that took its place (``fault``), numbered ``seq``."""

    model_config = _WIRE
    seq: int = Field(ge=0, lt=1 << 31)
    line: str | None = None
    fault: Fault | None = None

    @model_validator(mode="after")
    def _one(self) -> LineRequest:
        if (self.line is None) == (self.fault is None):
            raise ValueError("give a line or a fault, not both and not neither")
        if self.line is not None and len(self.line.encode("utf-8")) > MAX_LINE:
            raise ValueError(f"the line is longer than {MAX_LINE} bytes")
        return self


def parse(model: type[BaseModel], data: Any) -> Any:
    """``data`` as ``model``, or a Gf01Error whose message names the first field at fault (a 422 on the server)."""
    try:
        return model.model_validate(data)
    except ValidationError as ex:
        err = ex.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "body"
        raise Gf01Error(f"{where}: {err['msg']}", field="body") from None
