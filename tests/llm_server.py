"""A local OpenAI-compatible chat-completions server for tests, answering from a script (no model, no network).

The script is a function of the request: it gets a :class:`Call` (the conversation so far, which step of it this
is, and how many times the very same request was seen before) and returns a :class:`Reply` (a text, an HTTP error,
a delay). Replies depend only on the request, never on arrival order, so concurrent episodes (``--jobs``) and
different harnesses (our CLI, inspect_ai) get the same answers for the same conversation. Every request is logged
(body and headers) so a test can check what the client sent, and the server reports the token usage it charged.

>>> with ScriptedServer(lambda call: Reply('{"set": {}}')) as server:   # doctest: +SKIP
...     client = OpenAI(base_url=server.url, api_key="k")
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: The longest a scripted reply may be delayed (a "hang" is a delay past the client's timeout, then it ends).
MAX_DELAY = 5.0


@dataclass(frozen=True)
class Reply:
    """What the server answers: ``content`` with HTTP 200, or an error ``status``; after ``delay`` seconds. ``raw``,
    when given, is sent as the whole body instead (with ``content_type``): a web page, a body cut short, anything a
    broken endpoint or a wrong URL can answer."""

    content: str = ""
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    usage: bool = True
    raw: str | None = None
    content_type: str = "application/json"
    #: Tool calls (OpenAI function calling) instead of a final answer: each ``(name, arguments)``, arguments a
    #: JSON-able object sent as its JSON text.
    tool_calls: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Call:
    """One request as the script sees it."""

    body: dict[str, Any]
    messages: list[dict[str, Any]]
    instance_id: str | None
    turn: int
    attempt: int

    @property
    def last_user(self) -> str:
        """The text of the last user message."""
        users = [m for m in self.messages if m.get("role") == "user"]
        return _text(users[-1]) if users else ""


def tokens(text: str) -> int:
    """The server's token count of a text (whitespace-separated words): deterministic, no tokenizer needed."""
    return len(text.split())


class ScriptedServer:
    """The server, on a free loopback port, in a thread; use it as a context manager."""

    def __init__(self, script: Callable[[Call], Reply], *, model: str = "scripted-1", models_status: int = 200) -> None:
        self.script = script
        self.model = model
        #: The status of ``GET /v1/models`` (the client's preflight request): 200 lists ``model``.
        self.models_status = models_status
        self.requests: list[dict[str, Any]] = []
        #: The paths of the GET requests (the preflight's), apart from ``requests`` (the chat completions).
        self.gets: list[str] = []
        self.charged = Counter[str]()
        self._seen = Counter[str]()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True, name="scripted-llm")

    @property
    def url(self) -> str:
        """The base URL of the OpenAI-compatible API (``.../v1``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes, float]:
        messages = body.get("messages") or []
        key = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        with self._lock:
            attempt = self._seen[key]
            self._seen[key] += 1
            self.requests.append({"body": body, "headers": headers})
        call = Call(body, messages, _instance_id(messages), sum(m.get("role") == "assistant" for m in messages),
                    attempt)
        reply = self.script(call)
        delay = min(reply.delay, MAX_DELAY)
        headers = {"content-type": reply.content_type, **reply.headers}
        if reply.raw is not None:  # sent as it is, with the status asked for; nothing is charged for it
            return reply.status, headers, reply.raw.encode(), delay
        if reply.status != 200:
            err = {"error": {"message": f"scripted {reply.status}", "type": "scripted", "code": str(reply.status)}}
            return reply.status, headers, json.dumps(err).encode(), delay
        prompt = sum(tokens(_text(m)) for m in messages)
        completion = tokens(reply.content)
        out: dict[str, Any] = {
            "id": f"chatcmpl-{key[:12]}-{attempt}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply.content}}],
        }
        if reply.tool_calls:
            out["choices"][0]["finish_reason"] = "tool_calls"
            out["choices"][0]["message"] = {"role": "assistant", "content": reply.content or None, "tool_calls": [
                {"id": f"call_{key[:8]}_{k}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}
                for k, (name, args) in enumerate(reply.tool_calls)]}
        if reply.usage:
            out["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                            "total_tokens": prompt + completion}
            with self._lock:
                self.charged["input"] += prompt
                self.charged["output"] += completion
        return 200, headers, json.dumps(out).encode(), delay

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read server.requests instead
                pass

            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {}, b'{"error": {"message": "not found"}}')
                    return
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {}, b'{"error": {"message": "not JSON"}}')
                    return
                status, headers, data, delay = server._answer(body, {k.lower(): v for k, v in self.headers.items()})
                if delay:
                    time.sleep(delay)
                self._send(status, headers, data)

            def do_GET(self) -> None:
                with server._lock:
                    server.gets.append(self.path)
                if not self.path.rstrip("/").endswith("/models"):
                    self._send(404, {}, b'{"error": {"message": "not found"}}')
                elif server.models_status == 200:
                    listing = {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "t"}]}
                    self._send(200, {}, json.dumps(listing).encode())
                else:
                    err = {"error": {"message": f"scripted {server.models_status}", "type": "scripted"}}
                    self._send(server.models_status, {}, json.dumps(err).encode())

            def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-length", str(len(data)))
                    for k, v in {"content-type": "application/json", **headers}.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout): nothing to do
                    pass

        return Handler


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _instance_id(messages: list[dict[str, Any]]) -> str | None:
    """The instance the conversation is about: the instance_id of the Start message in its first user message."""
    for m in messages:
        if m.get("role") == "user":
            found = re.search(r'"instance_id":"([^"]+)"', _text(m))
            return found.group(1) if found else None
    return None


# -- scripting GF-01 conversations ---------------------------------------------------------------------------------

#: Reply styles: the same action as bare JSON, fenced, and after some prose with a decoy object (the last one counts).
STYLES = (
    "{action}",
    "Here is my move.\n```json\n{action}\n```",
    'Thinking: an object like {{"note": 1}} is not an action. My action:\n{action}\nDone.',
)


def step_of(call: Call) -> int:
    """The step a GF-01 conversation asks an action for (every prompt of gf01.prompt.v1 ends "... for step N.")."""
    found = re.findall(r"for step (\d+)", call.last_user)
    if not found:
        raise AssertionError(f"not a GF-01 prompt: {call.last_user[-200:]!r}")
    return int(found[-1])


def reply_for(action: dict[str, Any], style: int) -> str:
    """A model reply carrying ``action`` in one of the :data:`STYLES`."""
    return STYLES[style % len(STYLES)].format(action=json.dumps(action))
