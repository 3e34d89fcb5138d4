"""The server's side of one remote episode: :class:`RelayAgent`, the agent that ``runs.runner.play_run`` drives on
the server as it drives any agent, whose lines come from the participant's relay over the wire, and
:class:`LiveEpisode`, the mailbox between that agent (in the episode's thread) and the requests that carry the lines.

The end message carries the run's scores without the best match's gold certificate (a member of M(I) of a sealed
instance: an answer the public must not hold before the reveal); the record keeps it.

The relay agent judges every line as the local adapter of external programs does
(:func:`gf01_formal.agents.subprocess_agent.action_of_line`, ``tool_result_of_line``): not JSON, not an action, a
tool the track denies; it answers tool requests on the server, with the track's tools (they see the hidden
instance; every call goes to the run's tool log as locally); and it enforces the per-step deadline: no line within
``step_timeout`` seconds of the message that asked for it is the agent's fatal ``timeout``, as locally. The
server's episode engine, recorder and scorer are the local ones, so a remote record is a local record.

Each line has a sequence number: the answer to line k is the messages the server sent between its k-th and
(k+1)-th wait for a line (or up to the end), so a line sent again (its answer was lost) is answered again, the
same, and applied once.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gf01_formal.agents.base import Access, Agent, AgentFault
from gf01_formal.agents.subprocess_agent import action_of_line, is_tool_line, tool_result_of_line
from gf01_formal.play.protocol import Action, End, Observation, Start, text
from gf01_formal.remote.protocol import Fault, LineRequest
from gf01_formal.scoring.values import GOLD_FIELDS

#: The fault of an agent whose team opened its instance again mid-episode (:meth:`LiveEpisode.reopen`).
REOPENED = ("the team opened the instance again mid-episode (its harness restarted?): the episode ends here as the "
            "agent's crash, since a look at the instance given up and started again would be a free one")


class Abandoned(BaseException):
    """The episode was given up: its instance was opened again (a new harness replays it from its start) or the
    server is stopping. Nothing of it is recorded."""


class Conflict(Exception):
    """A line request that does not fit the episode (a sequence number ahead of the next one, or a line sent again
    with other content): HTTP 409."""


@dataclass(frozen=True)
class Answer:
    """What the server answers to an open or a line: the messages, whether the episode is over, and whether the
    line came after the episode had ended (not applied)."""

    seq: int
    messages: list[str]
    done: bool
    late: bool = False


class LiveEpisode:
    """One open episode: its messages out, the lines in, and where the relay agent waited (module docstring)."""

    def __init__(self, episode_id: str, team: str, run_id: str, step_timeout: float) -> None:
        self.episode_id = episode_id
        self.team = team
        self.run_id = run_id
        self.step_timeout = step_timeout
        self._cond = threading.Condition()
        self._outbox: list[str] = []
        self._marks: list[int] = []  # len(outbox) each time the relay agent began to wait for a line
        self._inbox: list[LineRequest] = []
        self._taken = 0
        self.finished = False
        self._abandoned = False
        self._reopened = False
        self._expired = False
        #: Set by whoever records the run, before ``finish``: what the last answer carries beside the messages.
        self.extra: dict[str, Any] = {}
        self.thread: threading.Thread | None = None
        #: One-shot wake-ups of requests waiting on the server's event loop (:meth:`submit`).
        self._listeners: list[Callable[[], None]] = []

    # -- the relay agent's side (the episode's thread) --------------------------------------------------------------

    def emit(self, message: str) -> None:
        with self._cond:
            self._outbox.append(message)

    def next_line(self) -> LineRequest:
        """The next line of the participant: waits at most ``step_timeout`` seconds (then the fatal ``timeout``)."""
        with self._cond:
            self._marks.append(len(self._outbox))
            self._cond.notify_all()
            self._changed()
            deadline = time.monotonic() + self.step_timeout
            while self._reopened or self._taken >= len(self._inbox):
                if self._reopened:
                    self._expired = True  # no line is taken any more
                    raise AgentFault("crash", REOPENED, fatal=True)
                if self._abandoned:
                    raise Abandoned
                left = deadline - time.monotonic()
                if left <= 0:
                    self._expired = True  # no line is taken any more: the agent's part ended here
                    raise AgentFault("timeout", f"no line within {self.step_timeout:g} s (the server's per-step "
                                     "deadline)", fatal=True)
                self._cond.wait(left)
            item = self._inbox[self._taken]
            self._taken += 1
            return item

    def finish(self) -> None:
        """The episode's thread is done (recorded, failed or abandoned)."""
        with self._cond:
            self.finished = True
            self._cond.notify_all()
            self._changed()

    def reopen(self) -> bool:
        """The team opened the instance again: an episode its agent has sent lines to ends as the agent's crash at
        its next wait (recorded: a look at the instance is never free); True then. An episode without a line yet
        (the open's answer was lost, the agent saw the goal panel only) is left to :meth:`abandon`: False."""
        with self._cond:
            if self.finished or not self._inbox:
                return False
            self._reopened = True
            self._cond.notify_all()
            return True

    def wait_finished(self, ceiling: float) -> bool:
        """Wait up to ``ceiling`` seconds for the episode's thread to be done; whether it is."""
        with self._cond:
            return self._cond.wait_for(lambda: self.finished, ceiling)

    def abandon(self) -> None:
        """Give the episode up (its thread stops at its next wait; nothing is recorded)."""
        with self._cond:
            self._abandoned = True
            self._cond.notify_all()

    # -- the requests' side -----------------------------------------------------------------------------------------

    def opened(self, ceiling: float) -> Answer:
        """The answer to the open: the messages up to the relay agent's first wait (the start message)."""
        with self._cond:
            self._cond.wait_for(lambda: self._marks or self.finished, ceiling)
            end = self._marks[0] if self._marks else len(self._outbox)
            return Answer(0, self._outbox[:end], done=not self._marks and self.finished)

    def _admit(self, request: LineRequest) -> bool:
        """Take line ``request.seq`` in (once; hold ``_cond``): whether it came late (not applied);
        :class:`Conflict` for a line out of order or sent again with other content."""
        k = request.seq
        if k < len(self._inbox):
            if self._inbox[k] != request:
                raise Conflict(f"line {k} was sent before with other content; the next line is {len(self._inbox)}")
            return False
        if k > len(self._inbox):
            raise Conflict(f"line {k} is ahead of the episode: the next line is {len(self._inbox)}")
        if self.finished or self._expired:
            # The step's deadline passed (or the episode ended) before this line came: it is not applied.
            return True
        if len(self._marks) <= k:
            # Sent before the answer to the line before it: nothing asks for it yet.
            raise Conflict(f"line {k} was not asked for yet: wait for the answer to line {k - 1}")
        self._inbox.append(request)
        self._cond.notify_all()
        return False

    def _ready(self, k: int, late: bool) -> bool:
        """Whether the answer to line ``k`` is complete (hold ``_cond``)."""
        return self.finished if late else len(self._marks) > k + 1 or self.finished

    def _answer_of(self, k: int, late: bool) -> Answer:
        """The answer to line ``k`` as it stands (hold ``_cond``; complete once :meth:`_ready`)."""
        if late:
            start = self._marks[-1] if self._marks else 0
            return Answer(k, self._outbox[start:] if self.finished else [], done=self.finished, late=True)
        start = self._marks[k]
        if len(self._marks) > k + 1:
            return Answer(k, self._outbox[start:self._marks[k + 1]], done=False)
        return Answer(k, self._outbox[start:], done=self.finished)

    async def submit(self, request: LineRequest, ceiling: float) -> Answer:
        """Apply line ``request.seq`` (once) and answer it (module docstring); :class:`Conflict` for a line out of
        order or sent again with other content. It waits on the server's event loop, woken by the episode's thread:
        no worker thread in between (docs/performance.md, "Remote evaluation")."""
        import asyncio

        k = request.seq
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ceiling
        with self._cond:
            late = self._admit(request)
        while True:
            woken = asyncio.Event()
            with self._cond:
                if self._ready(k, late) or loop.time() >= deadline:
                    return self._answer_of(k, late)
                self._listeners.append(functools.partial(loop.call_soon_threadsafe, woken.set))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), max(0.0, deadline - loop.time()))

    def _changed(self) -> None:
        """Wake the requests waiting on the loop (hold ``_cond``): each checks again whether its answer is ready."""
        listeners, self._listeners = self._listeners, []
        for wake in listeners:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the server is stopping
                wake()


class RelayAgent(Agent):
    """The agent of a remote episode, as the server's runner sees it (module docstring)."""

    def __init__(self, live: LiveEpisode, access: Access, *, meta: dict[str, Any], sandbox: str | None) -> None:
        from gf01_formal.agents.tools import for_access

        self.live = live
        tools = for_access(access)
        self.tools = tools if tools.allowed else None
        self.meta = dict(meta)
        self.sandbox = sandbox  # type: ignore[assignment]

    def start(self, message: Start) -> None:
        self.live.emit(text(message))

    def act(self, observation: Observation | None) -> Action:
        if observation is not None:
            self.live.emit(text(observation))
        while True:
            item = self.live.next_line()
            if item.fault is not None:
                raise _fault(item.fault)
            assert item.line is not None  # LineRequest holds a line or a fault
            line = item.line.encode("utf-8")
            if not is_tool_line(line):
                return action_of_line(line)
            # A tool request: answered on the server; the step's clock restarts at the next wait.
            self.live.emit(text(tool_result_of_line(line, self.tools)))

    @property
    def tool_log(self) -> list[dict[str, Any]]:
        """The oracle search's log (EVAL-OC); the runner takes EVAL-TA's from the planner itself."""
        import json

        if self.tools is None or self.tools.oracle is None:
            return []
        return [json.loads(x) for x in self.tools.oracle.log_text().splitlines()]

    def observe(self, observation: Observation) -> None:
        self.live.emit(text(observation))

    def end(self, message: End) -> None:
        # The scores are the team's; the best match's gold certificate would answer a sealed instance, and so would
        # the figures measured against it: one edit alone would tell whether it lies in a valid certificate and
        # that certificate's size (the record keeps them, a reveal publishes them).
        result = message.result.model_copy(update=dict.fromkeys(GOLD_FIELDS, None))
        self.live.emit(text(End(result=result)))


def _fault(fault: Fault) -> AgentFault:
    """The agent's fault its relay reported: crash and timeout end its part, as locally."""
    return AgentFault(fault.kind, f"{fault.message} (reported by the participant's relay)",
                      fatal=fault.kind in ("crash", "timeout"))

