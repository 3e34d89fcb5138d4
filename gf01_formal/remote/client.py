"""The participant's side of remote evaluation (``gf01 evaluate --remote URL --token T``; docs/remote.md): the agent
runs here, with its owner, and the harness relays its lines to the evaluation server and the server's messages back.

- An external program (``--agent-cmd``) runs sandboxed as locally (:class:`~gf01_formal.agents.subprocess_agent.
  SubprocessAgent`: bubblewrap, its own process group, the local step timeout); its lines are relayed as it wrote
  them, and the server judges them (not JSON, not an action, a tool the track denies: the local adapter's rules). A
  program that crashes or stays silent past the local step timeout is reported as that fault, fatal as locally.
- A built-in agent or ``--agent llm`` plays here with the tools of its track reached over the wire: the planner of
  ``tool`` and the tool calls of a model are requests the server answers (it holds the instance); ``oracle`` asks
  ``oracle-exact-search-v1`` for its certificate. Each agent gets the seed a local run gives it, so a built-in agent
  plays the same moves remotely and locally.

Robustness: every request is sent again, the same, after a lost connection or a 502/503/504 (the server restarting
behind its proxy), for up to ``retry_seconds``; a line carries its sequence number, so the server applies it once.
An episode the server no longer knows (it was killed and restarted) is opened again and replayed from its start with
a fresh agent. An evaluation run again after an interruption plays only the runs the server has not recorded, and
collects the receipts of the others.

The connection is the standard library's ``http.client`` (HTTP/1.1 keep-alive): the participant's install needs no
extra. ``https://`` checks the server's certificate against the system's store, or against the certificates of the
file ``SSL_CERT_FILE`` names (OpenSSL's own variable: a private CA, a self-signed test server). A plain ``http://``
URL to a host other than this machine is played, with a warning: the token crosses the network in the clear.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gf01_formal.agents.base import Access, Agent, AgentFault, AgentSpec, ProviderError
from gf01_formal.artifacts import canonical_json
from gf01_formal.play.protocol import Action, End, Observation, Start, ToolResult, text
from gf01_formal.remote.protocol import LINES_PATH, OPEN_PATH, PLAN_PATH
from hoa.errors import Gf01Error, quote

#: HTTP statuses after which a request is sent again (a proxy in front of a restarting server).
RETRY_STATUSES = (502, 503, 504)
DEFAULT_RETRY_SECONDS = 120.0
#: Times one episode is opened again from its start (the server restarted mid-episode) before the relay gives up.
MAX_REPLAYS = 5


def cleartext_warning(url: str) -> str | None:
    """The warning for a plain ``http://`` URL whose host is not this machine (None: https, or loopback). Played
    all the same (a private network, an SSH tunnel's far end): docs/remote.md, "For a team"."""
    import ipaddress

    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme != "http" or host == "localhost":
        return None
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_loopback:
            return None
    return (f"{quote(url, 80)} is plain http to another machine: your token and every message cross the network in "
            "the clear (ask the operator for its https:// address)")


class Refusal(Exception):
    """The server refused a request: its HTTP status and one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class Replay(Exception):
    """The server no longer knows the episode (it restarted): open it again and play it from its start."""


class Connection:
    """Requests to one server with one token, sent again on connection failures (module docstring)."""

    def __init__(self, url: str, token: str, *, retry_seconds: float = DEFAULT_RETRY_SECONDS,
                 timeout: float = 660.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Gf01Error(f"{quote(url, 80)}: the server's address starts with http:// or https://",
                            field="--remote")
        if not token or any(c.isspace() for c in token):
            raise Gf01Error("the token is empty or holds white space", field="--token")
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, parts.port
        self.base = parts.path.rstrip("/")
        self.token = token
        self.retry_seconds = retry_seconds
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        #: Every answer body received, in order, when kept (the wire's leak test reads it).
        self.trace: list[bytes] | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self.scheme == "https":
                self._conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                                         context=ssl.create_default_context())
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body``; the answer's JSON, or :class:`Refusal` for a 4xx (and a 5xx past the retries)."""
        return self._request("POST", path, canonical_json(body).encode("utf-8"))

    def get(self, path: str) -> dict[str, Any]:
        return self._request("GET", path, None)

    def _request(self, method: str, path: str, payload: bytes | None) -> dict[str, Any]:
        deadline = time.monotonic() + self.retry_seconds
        pause = 0.1
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        while True:
            status, data = None, b""
            try:
                conn = self._connect()
                conn.request(method, self.base + path, body=payload, headers=headers)
                response = conn.getresponse()
                status, data = response.status, response.read()
            except ssl.SSLCertVerificationError as ex:
                # Not a passing failure: sending again would meet the same certificate.
                self.close()
                raise Gf01Error(f"the server's certificate is not trusted ({ex.verify_message or ex}); for a private "
                                "CA or a self-signed server, name its certificate in SSL_CERT_FILE",
                                field="--remote") from None
            except (OSError, http.client.HTTPException):
                self.close()
            if status is not None and status not in RETRY_STATUSES:
                if self.trace is not None:
                    self.trace.append(data)
                try:
                    answer = json.loads(data)
                except ValueError:
                    answer = None
                if not isinstance(answer, dict):
                    raise Refusal(status, f"the server's answer is not a JSON object ({quote(data[:80], 90)})")
                if status >= 400:
                    raise Refusal(status, str(answer.get("error", "refused")))
                return answer
            if time.monotonic() + pause > deadline:
                what = f"HTTP {status}" if status is not None else "no connection"
                raise Gf01Error(f"the server at {self.scheme}://{self.host} did not answer for "
                                f"{self.retry_seconds:g} s ({what}); run the same command again to resume",
                                field="--remote")
            time.sleep(pause)
            pause = min(2.0, pause * 2)


@dataclass
class Channel:
    """One open episode: its lines, numbered, and the messages the server answered."""

    conn: Connection
    episode: str
    seq: int = 0
    done: bool = False
    answer: dict[str, Any] = field(default_factory=dict)

    def send(self, *, line: str | None = None, fault: AgentFault | None = None) -> list[str]:
        """Send one line (or the fault that took its place); the messages answered (:class:`Replay` when the server
        no longer knows the episode)."""
        body: dict[str, Any] = {"seq": self.seq}
        if fault is not None:
            body["fault"] = {"kind": fault.kind, "message": fault.message[:2000]}
        else:
            body["line"] = line
        try:
            answer = self.conn.post(LINES_PATH.format(episode=self.episode), body)
        except Refusal as ex:
            if ex.status == 404:
                raise Replay(ex.message) from None
            raise
        self.seq += 1
        self.done = bool(answer.get("done"))
        self.answer = answer
        return [str(m) for m in answer.get("messages", [])]


class EpisodeOver(Exception):
    """The server ended the episode while the agent was calling a tool (a denied tool ends the agent's part)."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("the episode ended")
        self.messages = messages


class RemoteTools:
    """The track's tool, answered by the server: what ``TrackTools`` is to a local agent (agents/tools.py)."""

    def __init__(self, channel: Channel, allowed: str | None) -> None:
        from gf01_formal.agents.planner import DEFAULT_MAX_QUERIES, TOOL_ID

        self.channel = channel
        self.allowed = allowed
        self.oracle = None  # the server keeps the run's tool log
        self.planner = RemotePlanner(self, DEFAULT_MAX_QUERIES) if allowed == TOOL_ID else None

    def call(self, tool: str, atoms: Any) -> dict[str, Any]:
        messages = self.channel.send(line=canonical_json({"type": "tool", "tool": tool, "atoms": atoms}))
        if len(messages) != 1 or '"type":"tool_result"' not in messages[0]:
            raise EpisodeOver(messages)
        return ToolResult.model_validate_json(messages[0]).result


class RemotePlanner:
    """``local-planner-v1`` over the wire, for the ``tool`` baseline (what ``agents.planner.Planner`` offers it)."""

    tool_id = "local-planner-v1"

    def __init__(self, tools: RemoteTools, max_queries: int) -> None:
        self._tools = tools
        self.max_queries = max_queries
        self._left = max_queries
        self.log: list[dict[str, Any]] = []

    @property
    def queries_left(self) -> int:
        return self._left

    def simulate(self, atoms: Any) -> dict[str, Any]:
        answer = self._tools.call(self.tool_id, atoms)
        self._left = int(answer.get("queries_left", 0))
        self.log.append({"call": len(self.log), "tool": self.tool_id, "query": atoms, "answer": answer})
        return answer


class RemoteOracle(Agent):
    """The ``oracle`` baseline over the wire: asks ``oracle-exact-search-v1`` for an optimal certificate, then
    plays it (what ``agents.oracle_agent.OracleAgent`` does with the problem in hand)."""

    def __init__(self, tools: RemoteTools) -> None:
        self._tools = tools
        self._plan: dict[int, dict[str, int]] = {}

    def start(self, message: Start) -> None:
        answer = self._tools.call("oracle-exact-search-v1", None)
        self._plan = {}
        for t, name, v in answer.get("certificate") or []:
            self._plan.setdefault(int(t), {})[str(name)] = int(v)

    def act(self, observation: Observation | None) -> Action:
        t = 0 if observation is None else observation.t + 1
        return Action(set=self._plan.get(t, {}))


def _local_agent(spec: AgentSpec, seed: int, tools: RemoteTools) -> Agent:
    """The agent of ``spec`` as it plays here: a built-in with the seed a local run gives it, its tools remote."""
    from gf01_formal.agents import build

    if spec.name == "tool":
        from gf01_formal.agents.tool_agent import ToolAgent

        assert tools.planner is not None
        return ToolAgent(tools.planner, seed)  # type: ignore[arg-type]
    if spec.name == "oracle":
        return RemoteOracle(tools)
    if spec.name == "llm":
        from gf01_formal.agents.llm import LLMAgent, LLMConfig

        return LLMAgent(LLMConfig.from_params(spec.params), seed,
                        tools=tools if tools.allowed else None)  # type: ignore[arg-type]
    return build(spec, Access(seed=seed))


def _program(spec: AgentSpec) -> Agent:
    """An external program, started as locally (sandboxed unless stated; built with no tools here: its tool lines go
    to the server like its actions)."""
    from gf01_formal.agents import build

    return build(spec, Access(seed=0))


def wire_spec(spec: AgentSpec) -> dict[str, Any]:
    """What the server is told of the agent: its spec without what lies on this machine only (the program's output
    file), with the sandbox it runs in stated (an ``auto`` sandbox resolved)."""
    data = spec.to_json()
    params = {k: v for k, v in data["params"].items() if k != "output"}
    if spec.name == "cmd":
        from gf01_formal.agents.sandbox import resolve

        params["sandbox"] = resolve(str(spec.params.get("sandbox", "auto")))
    data["params"] = params
    return data


def _play_program(channel: Channel, messages: list[str], agent: Any) -> None:
    """Relay an external program's lines as it wrote them, and the server's messages to it."""
    agent.start(Start.model_validate_json(messages[0]))
    for m in messages[1:]:
        agent.send_line(m)
    while not channel.done:
        try:
            line = agent.next_line()
            if line is None:
                raise AgentFault("bad_action", f"an action line is longer than {agent.max_line} bytes")
            answer = channel.send(line=line.decode("utf-8", "replace"))
        except AgentFault as fault:
            answer = channel.send(fault=fault)
        for m in answer:
            with contextlib.suppress(AgentFault):  # a program that is gone gets nothing more
                agent.send_line(m)


def _play_object(channel: Channel, messages: list[str], agent: Agent) -> None:
    """Play a built-in agent (or a model) here: its actions go to the server as action lines."""
    fault: AgentFault | None = None
    try:
        agent.start(Start.model_validate_json(messages[0]))
    except AgentFault as ex:
        fault = ex
    except EpisodeOver as over:
        _deliver(agent, over.messages)
        return
    observation: Observation | None = None
    while not channel.done:
        try:
            if fault is not None:
                answer = channel.send(fault=fault)
            else:
                try:
                    action = agent.act(observation)
                except AgentFault as ex:
                    answer = channel.send(fault=ex)
                else:
                    answer = channel.send(line=text(action))
        except EpisodeOver as over:
            answer = over.messages
        fault = None
        observation = _deliver(agent, answer) or observation


def _deliver(agent: Agent, messages: list[str]) -> Observation | None:
    """Hand the server's messages to the agent; returns the last observation that asks for an action."""
    ask = None
    for m in messages:
        kind = json.loads(m).get("type")
        if kind == "observation":
            obs = Observation.model_validate_json(m)
            if obs.done:
                agent.observe(obs)
            else:
                ask = obs
        elif kind == "end":
            agent.end(End.model_validate_json(m))
    return ask


@dataclass(frozen=True)
class Outcome:
    """One run as the relay saw it: its receipt (None when the server did not score it), or the error."""

    instance_id: str
    run_id: str
    receipt: dict[str, Any] | None
    error: str | None = None
    replays: int = 0


def play_remote_run(conn: Connection, spec: AgentSpec, seed: int, instance_id: str) -> Outcome:
    """Open the run's episode, play it with the agent here, and return the receipt (replays from the start when the
    server restarted)."""
    from gf01_formal.runs.runner import episode_seed

    body = {"agent": wire_spec(spec), "seed": seed, "instance_id": instance_id}
    for replay in range(MAX_REPLAYS + 1):
        opened = conn.post(OPEN_PATH, body)
        rid = str(opened.get("run_id"))
        if "episode" not in opened:
            return Outcome(instance_id, rid, opened.get("receipt"), opened.get("error"), replay)
        channel = Channel(conn, str(opened["episode"]), done=bool(opened.get("done")))
        messages = [str(m) for m in opened.get("messages", [])]
        channel.answer = opened
        from gf01_formal.agents.tools import ORACLE_ID

        allowed = {"EVAL-TA": "local-planner-v1", "EVAL-OC": ORACLE_ID}.get(spec.track)
        agent: Any = None
        stopping = False
        try:
            if spec.name == "cmd":
                agent = _program(spec)
                _play_program(channel, messages, agent)
            else:
                agent = _local_agent(spec, episode_seed(instance_id, seed), RemoteTools(channel, allowed))
                _play_object(channel, messages, agent)
        except Replay:
            continue
        except BaseException:
            stopping = True
            raise
        finally:
            if agent is not None:
                (agent.abort if stopping else agent.close)()
        last = channel.answer
        return Outcome(instance_id, rid, last.get("receipt"), last.get("error"), replay)
    return Outcome(instance_id, "", None, f"the server restarted the episode {MAX_REPLAYS + 1} times", MAX_REPLAYS)


def plan(conn: Connection, spec: AgentSpec, seed: int) -> list[dict[str, Any]]:
    """The submission's runs on the server: instance id, run id, recorded or not."""
    rows = conn.post(PLAN_PATH, {"agent": wire_spec(spec), "seed": seed}).get("runs")
    if not isinstance(rows, list):
        raise Refusal(500, "the server's plan holds no runs")
    return rows


def evaluate_remote(url: str, token: str, specs: list[AgentSpec], out: str | os.PathLike[str], *, seed: int = 0,
                    limit: int | None = None, retry_seconds: float = DEFAULT_RETRY_SECONDS,
                    progress: Callable[[int, int], None] | None = None,
                    connection: Connection | None = None) -> dict[str, Any]:
    """Play every run of every spec that the server has not recorded, and append each run's receipt to ``out``
    (JSON Lines, one fsync'd line each; a receipt already there is not written again). Returns a summary."""
    from gf01_formal.runs.store import cut_torn_tail, read_lines

    conn = connection or Connection(url, token, retry_seconds=retry_seconds)
    warning = cleartext_warning(url)
    if warning is not None:
        import sys

        print(f"gf01 evaluate: warning: {warning}", file=sys.stderr, flush=True)
    out_path = os.fspath(out)
    cut_torn_tail(out_path)
    have = {obj.get("run_id") for _, obj in read_lines(out_path)} if os.path.exists(out_path) else set()
    try:
        todo = []
        for spec in specs:
            rows = plan(conn, spec, seed)
            todo += [(spec, row) for row in (rows if limit is None else rows[:limit])]
        played = skipped = 0
        statuses: dict[str, int] = {}
        errors: list[str] = []
        for k, (spec, row) in enumerate(todo):
            if row.get("done") and row.get("run_id") in have:
                skipped += 1
            else:
                result = play_remote_run(conn, spec, seed, str(row["instance_id"]))
                played += not row.get("done")
                skipped += bool(row.get("done"))
                if result.receipt is not None and result.receipt.get("run_id") not in have:
                    _append(out_path, result.receipt)
                    have.add(result.receipt.get("run_id"))
                if result.receipt is not None:
                    status = str(result.receipt.get("status"))
                    statuses[status] = statuses.get(status, 0) + 1
                else:
                    errors.append(f"{row['instance_id']}: {result.error or 'no receipt'}")
            if progress is not None:
                progress(k + 1, len(todo))
    except Refusal as ex:
        raise Gf01Error(f"the server refused: {ex.message} (HTTP {ex.status})", field="--remote") from None
    except ProviderError as ex:
        # Not the agent's fault, but the server cannot tell it from a team giving an episode up to look again: the
        # episode it was in ends as the agent's crash when reopened (its timeout, when not), unless the agent had
        # sent no line yet (then it is played from its start). docs/remote.md, "kill -9 and restart".
        raise Gf01Error(f"the model provider failed ({ex}); run the same command again: the runs not yet played "
                        "are played (the episode it was in is recorded as the agent's crash if the model had "
                        "answered in it)", field="--remote") from None
    finally:
        conn.close()
    return {"file": out_path, "played": played, "skipped": skipped, "statuses": dict(sorted(statuses.items())),
            "errors": errors}


def _append(path: str, receipt: dict[str, Any]) -> None:
    line = (canonical_json(receipt) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
