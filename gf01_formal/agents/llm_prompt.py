"""The chat side of an LLM player, shared by every harness (our ``llm`` agent, the inspect_ai task): the versioned
prompt template, one episode's conversation, and the reply parser.

The template (``gf01_formal/prompts/<id>.txt``) has four sections, each a :class:`string.Template`: ``system`` (the
rules, the action format, the budgets), ``start`` (the game's first message), ``observation`` (after each step) and
``reask`` (after a reply with no usable action). Every placeholder is filled from the canonical-json-v1 messages
only (the :class:`~gf01_formal.play.protocol.Start` message with its goal panel, and the observations), so the model
sees nothing an agent of EVAL-CB may not see. A template is frozen once released: a change is a new id.

One conversation per episode, one action per step: :meth:`Dialogue.turn` is a generator that yields the messages to
send and receives the reply text, so the same rules (one bounded re-ask, then an agent error) drive a synchronous
client and an async one alike.

>>> from gf01_formal.play.episode import Episode
>>> from gf01_formal.play.protocol import Start
>>> start = Start(instance_id=instance.instance_id, goal=Episode(problem, instance.instance_id).reset())
>>> d = Dialogue(load_template(), start)
>>> drive(d.turn(None), lambda kind, msgs: '{"set": {"r2": 1}}').set
{'r2': 1}
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from gf01_formal.agents.base import AgentFault
from gf01_formal.play.protocol import Action, Observation, Start, parse_action, text
from hoa.errors import Gf01Error

TEMPLATE_ID = "gf01.prompt.v1"
SECTIONS = ("system", "start", "observation", "reask")
#: At most this many JSON objects are tried in one reply (each from a '{'): bounds the work on a pathological reply.
MAX_CANDIDATES = 1000

Message = dict[str, str]
#: What a turn asks its harness: the kind of request ("action" or "reask") and the whole conversation to send.
Request = tuple[str, list[Message]]


@dataclass(frozen=True)
class PromptTemplate:
    """A released prompt template: its id, its exact text (hashed) and its sections."""

    id: str
    text: str
    sections: dict[str, string.Template]

    @property
    def sha256(self) -> str:
        """sha256 of the template file's UTF-8 text (recorded with every run)."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def system(self) -> str:
        """The system message: the game, the action format, the budgets."""
        return self.sections["system"].substitute()

    def start(self, start: Start) -> str:
        """The first user message, from the Start message and its goal panel."""
        g = start.goal
        if g.mode == "hard":
            when = f"at step t* = {g.t_star} (hard mode)"
        else:
            when = (f"at some step from {g.effect_steps[0]} to {g.effect_steps[1]} (normal mode: t* = {g.t_star}, "
                    f"window w = {g.window})")
        return self.sections["start"].substitute(
            start_json=text(start), inputs=", ".join(g.inputs), outputs=", ".join(g.outputs), effect=g.effect,
            when=when, last_step=g.horizon - 1, budget_t=g.budget_t, budget_a=g.budget_a)

    def observation(self, observation: Observation) -> str:
        """The user message after step ``observation.t`` (the episode goes on to the next step)."""
        return self.sections["observation"].substitute(observation_json=text(observation), t=observation.t,
                                                       next_t=observation.t + 1)

    def reask(self, t: int, error: str) -> str:
        """The one re-ask after a reply with no usable action for step ``t``."""
        return self.sections["reask"].substitute(t=t, error=error)


@lru_cache(maxsize=8)
def load_template(template_id: str = TEMPLATE_ID) -> PromptTemplate:
    """The packaged template ``template_id`` (a Gf01Error names the released ones when it is unknown)."""
    released = sorted(p.name[: -len(".txt")] for p in resources.files("gf01_formal.prompts").iterdir()
                      if p.name.endswith(".txt"))
    if template_id not in released:
        raise Gf01Error(f"unknown prompt template {template_id!r} (released: {', '.join(released)})",
                        field="prompt")
    body = resources.files("gf01_formal.prompts").joinpath(f"{template_id}.txt").read_text(encoding="utf-8")
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in body.splitlines():
        if line.startswith("=== ") and line.endswith(" ===") and line[4:-4] in SECTIONS:
            current = sections.setdefault(line[4:-4], [])
        elif current is not None:
            current.append(line)
    missing = [s for s in SECTIONS if s not in sections]
    if missing:
        raise Gf01Error(f"prompt template {template_id} lacks the section(s) {', '.join(missing)}", field="prompt")
    return PromptTemplate(template_id, body, {k: string.Template("\n".join(v).strip("\n")) for k, v in
                                              sections.items()})


class ReplyError(Exception):
    """A reply with no usable action: ``kind`` is ``not_json`` (no JSON object in it) or ``bad_action``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def parse_reply(reply: str) -> Action:
    """The action in a model's reply: the last JSON object in it (fenced or not, anywhere in the text) that is a
    valid action; a ReplyError says why there is none."""
    decoder = json.JSONDecoder()
    candidates: list[dict[str, Any]] = []
    i, tries = reply.find("{"), 0
    while i >= 0 and tries < MAX_CANDIDATES:
        tries += 1
        try:
            obj, end = decoder.raw_decode(reply, i)
        except (ValueError, RecursionError):
            i = reply.find("{", i + 1)
            continue
        candidates.append(obj)
        i = reply.find("{", end)  # objects nested in this one are its parts, not candidates
    if not candidates:
        raise ReplyError("not_json", "no JSON object in the reply")
    errors: list[str] = []
    for obj in reversed(candidates):
        try:
            return parse_action(json.dumps(obj))
        except Gf01Error as ex:
            errors.append(ex.message)
    # The last object is the one the model most likely meant: its error is the one worth telling it.
    raise ReplyError("bad_action", f"no JSON object in the reply is an action (the last one: {errors[0]})")


class Dialogue:
    """One episode's conversation with a model, in chat-completions form (``{"role", "content"}`` messages)."""

    def __init__(self, template: PromptTemplate, start: Start) -> None:
        self.template = template
        self.t = 0
        self.messages: list[Message] = [{"role": "system", "content": template.system()},
                                        {"role": "user", "content": template.start(start)}]

    def turn(self, observation: Observation | None) -> Generator[Request, str, Action]:
        """The action for the next step: yields each request (the whole conversation) and receives the reply
        text; a reply with no usable action gets one re-ask, then the turn raises AgentFault (no edit)."""
        if observation is not None:
            self.t = observation.t + 1
            self.messages.append({"role": "user", "content": self.template.observation(observation)})
        reply = yield "action", self.messages
        self.messages.append({"role": "assistant", "content": reply})
        try:
            return parse_reply(reply)
        except ReplyError as ex:
            first = ex
        self.messages.append({"role": "user", "content": self.template.reask(self.t, first.message)})
        reply = yield "reask", self.messages
        self.messages.append({"role": "assistant", "content": reply})
        try:
            return parse_reply(reply)
        except ReplyError as ex:
            raise AgentFault(ex.kind, f"no usable action after a re-ask: {ex.message}") from None


def drive(turn: Generator[Request, str, Action], complete: Callable[[str, list[Message]], str]) -> Action:
    """Run a turn with a synchronous ``complete(kind, messages) -> reply text``."""
    request = next(turn)
    while True:
        try:
            request = turn.send(complete(*request))
        except StopIteration as stop:
            return stop.value
