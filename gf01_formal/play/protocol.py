"""canonical-json-v1: the messages an agent exchanges with the harness, as pydantic models and as exact JSON text.

The text of a message is its canonical JSON (sorted keys, compact separators, UTF-8), so two harnesses send the same
bytes for the same game, and parsing a text back gives an equal object. Protocol ``gf01.agent.v1`` (docs/
agent-protocol.md) carries these messages one per line:

- harness -> agent: :class:`Start` (with the :class:`GoalPanel`), then one :class:`Observation` per step, then
  :class:`End` (with the scored result);
- agent -> harness: one action per step, ``{"set": {"<input>": 0|1, ...}}`` with an optional ``"commit": true``
  (end the episode after this step) and an optional ``"t"`` (the step the action is for; a mismatch is refused).

Nothing in a message before :class:`End` reveals hidden state (the system, its states, the base trace, M(I)):
the goal panel is static, and an observation holds O(s_t) of spec Definition 7 and the refusals of the step.

>>> Refusal(input="a", value=2, reason="bad_value", message="value 2 must be 0 or 1").model_dump()["reason"]
'bad_value'
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gf01_formal.scoring.values import Result
from hoa.errors import Gf01Error, quote

PROTOCOL = "gf01.agent.v1"
RENDERER_PROFILE = "canonical-json-v1"

_MESSAGE = ConfigDict(extra="forbid", frozen=True, strict=True)


class GoalPanel(BaseModel):
    """The static goal panel, shown from the episode's start (DEC-045): what to achieve and with what budgets."""

    model_config = _MESSAGE
    effect: str = Field(description="Boolean expression over output names that must hold")
    t_star: int = Field(description="the target step t*")
    mode: Literal["hard", "normal"] = Field(description="hard: the effect at t*; normal: at some step of the window")
    window: int | None = Field(description="normal mode: w, the effect counts at steps [max(0, t*-w), t*]; "
                               "hard mode: null")
    effect_steps: list[int] = Field(description="[first, last]: the steps at which the effect counts")
    horizon: int = Field(description="T: the episode has steps 0 .. T-1")
    inputs: list[str] = Field(description="AP_in, the inputs an action may set")
    outputs: list[str] = Field(description="AP_out, the outputs observed each step")
    budget_t: int = Field(description="B_T: the most distinct steps with edits")
    budget_a: int = Field(description="B_A: the most atoms (edits) in all")


class EffectStatus(BaseModel):
    """Where the objective stands after a step (derived from y_t and the goal panel only)."""

    model_config = _MESSAGE
    holds: bool = Field(description="the effect holds on this step's outputs")
    in_window: bool = Field(description="this step is one at which the effect counts")
    achieved: bool = Field(description="the effect has held at a step where it counts (so far)")


class Refusal(BaseModel):
    """A submitted atom (or a whole action) the harness did not commit, and why."""

    model_config = _MESSAGE
    input: str | None = Field(description="the input named, or null for the whole action")
    value: Any = Field(default=None, description="the value submitted")
    reason: Literal["unknown_input", "bad_value", "wrong_step", "budget_t", "budget_a", "bad_action"]
    message: str


class Observation(BaseModel):
    """O(s_t) of spec Definition 7, sent after the system stepped at t, with the step's refusals."""

    model_config = _MESSAGE
    type: Literal["observation"] = "observation"
    t: int
    y: dict[str, int] = Field(description="the outputs y_t, one 0/1 per output")
    effect_status: EffectStatus
    b_T_rem: int = Field(description="distinct steps with edits still allowed (B_T minus those used)")
    b_A_rem: int = Field(description="atoms still allowed (B_A minus those committed)")
    certificate: list[list[Any]] = Field(description="C_<=t: every committed atom [t, input, v] so far, sorted")
    mode: Literal["hard", "normal"]
    t_star: int
    refused: list[Refusal] = Field(default_factory=list, description="what this step's action had refused")
    done: bool = Field(description="the episode has ended (no action is expected for this observation)")


class Start(BaseModel):
    """The first message of an episode."""

    model_config = _MESSAGE
    type: Literal["start"] = "start"
    protocol: Literal["gf01.agent.v1"] = PROTOCOL
    renderer_profile_id: Literal["canonical-json-v1"] = RENDERER_PROFILE
    instance_id: str
    goal: GoalPanel
    tools: list[str] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="the tools this track allows during a turn (EVAL-TA: local-planner-v1, EVAL-OC: "
        "oracle-exact-search-v1); absent on EVAL-CB")


class ToolRequest(BaseModel):
    """A tool call an agent may send before its action, any number of times per turn (EVAL-TA and EVAL-OC)."""

    model_config = _MESSAGE
    type: Literal["tool"]
    tool: str = Field(description="local-planner-v1 or oracle-exact-search-v1, the one the track allows")
    atoms: list[Any] | None = Field(description="[[t, input, v], ...]; null asks the oracle for a certificate")


_LEFT = {"type": "integer", "minimum": 0, "description": "calls of the episode's budget still left"}
_ATOM = {"type": "array", "prefixItems": [{"type": "integer", "minimum": 0}, {"type": "string"},
                                         {"enum": [0, 1]}], "items": False, "minItems": 3,
         "description": "[t, input, v]"}
#: The shapes of a tool's answer (agents/planner.py, agents/tools.py), for the exported schema: one per row of the
#: table in docs/agent-protocol.md, "Tools".
TOOL_RESULTS: list[dict[str, Any]] = [
    {"title": "local-planner-v1: the run with the edits", "type": "object", "additionalProperties": False,
     "required": ["outputs", "effect", "queries_left"], "properties": {
         "outputs": {"type": "array", "items": {"type": "object", "additionalProperties": {"enum": [0, 1]}},
                     "description": "the outputs y_0 .. y_{T-1} of the run with those edits, one object per step"},
         "effect": {"type": "boolean", "description": "whether the effect holds on an effect step of that run"},
         "queries_left": _LEFT}},
    {"title": "oracle-exact-search-v1 with atoms: the exact checks of the candidate", "type": "object",
     "additionalProperties": False, "required": ["suff", "min1", "valid", "queries_left"], "properties": {
         "suff": {"type": "boolean", "description": "Definition 10: the edits make the effect happen"},
         "min1": {"type": "boolean", "description": "Definition 11: every edit is needed"},
         "valid": {"type": "boolean", "description": "suff and min1 (B_T is no validity constraint here)"},
         "queries_left": _LEFT}},
    {"title": "oracle-exact-search-v1 with atoms null: an optimal valid certificate", "type": "object",
     "additionalProperties": False, "required": ["certificate", "eff_t", "eff_a", "queries_left"], "properties": {
         "certificate": {"anyOf": [{"type": "array", "items": _ATOM}, {"type": "null"}],
                         "description": "the valid certificate within B_T minimising (Eff_t, Eff_a); null: none"},
         "eff_t": {"type": ["integer", "null"], "minimum": 0, "description": "its steps with edits"},
         "eff_a": {"type": ["integer", "null"], "minimum": 0, "description": "its edits"},
         "queries_left": _LEFT}},
    {"title": "a refused call: a malformed candidate, or the budget spent", "type": "object",
     "additionalProperties": False, "required": ["error", "queries_left"], "properties": {
         "error": {"type": "string", "description": "why, in one line"}, "queries_left": _LEFT}},
]


class ToolResult(BaseModel):
    """The harness's answer to one tool request (docs/agent-protocol.md, "Tools"); ``result`` has one of the shapes
    of :data:`TOOL_RESULTS`, which the exported schema states field by field."""

    model_config = _MESSAGE
    type: Literal["tool_result"] = "tool_result"
    tool: str = Field(description="the tool that answered: local-planner-v1 or oracle-exact-search-v1")
    result: dict[str, Any] = Field(description="the answer; its fields depend on the tool and the call",
                                   json_schema_extra={"oneOf": TOOL_RESULTS})


class End(BaseModel):
    """The last message of an episode: the scored result (only now may the gold certificate be shown)."""

    model_config = _MESSAGE
    type: Literal["end"] = "end"
    result: Result


class Action(BaseModel):
    """An agent's action for one step: a partial assignment over AP_in (omitted inputs unchanged)."""

    model_config = _MESSAGE
    set: dict[str, Any] = Field(default_factory=dict, description="input -> 0 or 1; {} is no edit")
    commit: bool = Field(default=False, description="end the episode after this step (the rest: no edits)")
    t: int | None = Field(default=None, description="the step this action is for (optional; checked)")


def text(message: BaseModel) -> str:
    """The exact canonical-json-v1 text of a message (sorted keys, compact, UTF-8, no trailing newline)."""
    return json.dumps(message.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse_action(line: str | bytes) -> Action:
    """An agent's action from one line of text; a Gf01Error (field ``action``) says what is wrong with it."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as ex:
        raise Gf01Error(f"not JSON: {quote(str(ex), 80, bare=True)}", field="action") from None
    if not isinstance(data, dict):
        raise Gf01Error('an action is a JSON object {"set": {...}}', field="action")
    try:
        return Action.model_validate(data)
    except ValidationError as ex:
        err = ex.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "action"
        raise Gf01Error(f"{where}: {err['msg']}", field="action") from None


def schema_documents() -> dict[str, dict[str, Any]]:
    """The JSON Schemas of the protocol messages, by file name under docs/schemas/."""
    return {
        "agent_start.v1.json": Start.model_json_schema(),
        "agent_observation.v1.json": Observation.model_json_schema(),
        "agent_action.v1.json": Action.model_json_schema(),
        "agent_end.v1.json": End.model_json_schema(),
        "agent_tool.v1.json": ToolRequest.model_json_schema(),
        "agent_tool_result.v1.json": ToolResult.model_json_schema(),
    }
