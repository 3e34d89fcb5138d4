"""The HTTP skin of GF-01-R1: a list of routes over plain async functions (pages, assets, the JSON API), and the
guard every request passes (host check, security headers). The state is :class:`~gf01_formal.web.games.Games`;
this module parses requests, calls it in a worker thread and writes its answers as canonical JSON.

Routes (docs/browser.md describes the API):

=========================================  ======================================================================
``GET /``                                   free play: the instances (a pilot's server sends participants to /pilot)
``GET /pilot``                              a pilot's consent page
``GET /play/{token}``                       an episode's page (the token is the episode's only key)
``GET /replay``                             step through any run record
``GET /static/{name}``                      the package's own assets, by exact name; nothing else is served
``GET /api/instances``                      free play: what the instance list shows
``POST /api/episodes``                      free play: begin an episode ``{"instance_id"}``
``GET /api/pilot``, ``POST /api/pilot``     the consent text; begin ``{"participant_id", "consent": true, "sig"}``
``POST /api/pilot/resume``                  a started participant's episode ``{"participant_id", "sig"}``
``GET /api/episodes/{token}``               the goal panel and observations so far; the result after the end
``POST /api/episodes/{token}/steps``        commit one step ``{"action": {"t", "set", "commit"}, "response_ms"}``
``POST /api/replay``                        ``{"record": <run record>}``: its observations, played again
=========================================  ======================================================================

A bad request gets a 4xx with ``{"error": message}`` and changes nothing: bodies are JSON (415 otherwise) within a
size limit (413), and :mod:`.games` checks their schema and the step order.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gf01_formal.artifacts import canonical_json
from gf01_formal.web.games import TOKEN, Games, RequestError

#: Body limits: a step is a few dozen bytes; a run record to replay can be long (its step log).
STEP_LIMIT = 16 * 1024
START_LIMIT = 4 * 1024
REPLAY_LIMIT = 4 * 1024 * 1024
MEDIA_TYPES = {"html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8",
               "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"}
#: No inline script or style, nothing from elsewhere, no framing, no plugins, no forms posted off the page.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
}
LOOPBACK_NAMES = {"127.0.0.1", "localhost", "::1"}


#: Where a page holds the rules ("How to play", static/how-to-play.part): free play and a pilot's first page show
#: the same text, from one file.
HOW_TO_PLAY = b"<!-- how-to-play -->"


def load_assets() -> dict[str, tuple[bytes, str]]:
    """The static assets shipped in the package (name -> bytes and media type), read once."""
    static = resources.files("gf01_formal.web") / "static"
    rules = (static / "how-to-play.part").read_bytes().strip()
    out = {}
    for entry in static.iterdir():
        ext = entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and ext in MEDIA_TYPES:
            out[entry.name] = (entry.read_bytes().replace(HOW_TO_PLAY, rules), MEDIA_TYPES[ext])
    return out


class Canonical(Response):
    """A JSON response in canonical JSON (sorted keys, compact), the form every message of the protocol has."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return canonical_json(content).encode("utf-8")


def error(status: int, message: str) -> Response:
    """The one shape of a refusal: ``{"error": message}``."""
    return Canonical({"error": message}, status_code=status)


async def read_json(request: Request, limit: int) -> Any:
    """The request's JSON body, refused (RequestError) when it is not JSON or longer than ``limit`` bytes."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise RequestError(415, "send the body as JSON (Content-Type: application/json)")
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise RequestError(413, f"the body is {declared} bytes; this request takes at most {limit}")
    body = bytearray()
    seconds = request.app.state.body_timeout
    try:
        # A client that sends its headers and then too little of its body would hold the request (and its memory)
        # open forever: the body has a deadline.
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:  # a body without a length (chunked) is cut off the same way
                    raise RequestError(413, f"the body is longer than {limit} bytes, the most this request takes")
    except TimeoutError:
        raise RequestError(408, f"the request's body did not arrive within {seconds:g} s") from None
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as ex:
        raise RequestError(400, f"the body is not JSON ({str(ex)[:80]})") from None


def _games(request: Request) -> Games:
    games: Games = request.app.state.games
    return games


def _page(request: Request, name: str) -> Response:
    body, media = request.app.state.assets[name]
    return Response(body, media_type=media)


async def index(request: Request) -> Response:
    """Free play: the instance list; under a pilot, the pilot's page (how to play, consent)."""
    if _games(request).pilot is not None:
        return _page(request, "pilot.html")
    return _page(request, "index.html")


async def pilot_page(request: Request) -> Response:
    """The consent page of the pilot."""
    if _games(request).pilot is None:
        return PlainTextResponse("this server runs no pilot", status_code=404)
    return _page(request, "pilot.html")


async def play_page(request: Request) -> Response:
    """An episode's page: the same static page for every episode, which reads its token from the address."""
    token = request.path_params["token"]
    if not TOKEN.fullmatch(token) or token not in _games(request).games:
        return PlainTextResponse("no episode has this token (check the link)", status_code=404)
    return _page(request, "play.html")


async def replay_page(request: Request) -> Response:
    """The replay page."""
    return _page(request, "replay.html")


async def asset(request: Request) -> Response:
    """One of the package's assets, by its exact name (no path is ever joined, so nothing else can be reached)."""
    found = request.app.state.assets.get(request.path_params["name"])
    if found is None:
        return PlainTextResponse("no such asset", status_code=404)
    body, media = found
    return Response(body, media_type=media, headers={"cache-control": "no-cache"})


async def _begin(request: Request, start: Callable[..., Any], keys: tuple[str, ...], hint: str) -> Response:
    """Begin an episode by ``start(*values of keys)`` from a JSON object with no keys but ``keys``."""
    body = await read_json(request, START_LIMIT)
    if not isinstance(body, dict) or set(body) - set(keys):
        raise RequestError(422, hint)
    game = await run_in_threadpool(start, *(body.get(k) for k in keys))
    return Canonical({"token": game.token, "play": f"/play/{game.token}"}, status_code=201)


async def api_instances(request: Request) -> Response:
    """Free play: the instances, as their goal panels describe them."""
    return Canonical({"instances": _games(request).instances()})


async def api_start(request: Request) -> Response:
    """Free play: begin an episode of one instance."""
    client = request.client.host if request.client is not None else None
    return await _begin(request, functools.partial(_games(request).start_free, client=client),
                        ("instance_id", "participant_id"), 'send {"instance_id": ID} (and optionally "participant_id")')


async def api_pilot(request: Request) -> Response:
    """The pilot's consent text and title."""
    return Canonical(_games(request).pilot_info())


async def api_pilot_start(request: Request) -> Response:
    """A participant who accepted the consent text begins the pilot's first episode."""
    return await _begin(request, _games(request).start_pilot, ("participant_id", "consent", "sig", "platform_id"),
                        'send {"participant_id": ID, "consent": true, "sig": SIG} (and optionally "platform_id")')


async def api_pilot_resume(request: Request) -> Response:
    """An issued participant's link opened again (in any browser): the episode they are at, 404 before they start."""
    body = await read_json(request, START_LIMIT)
    if not isinstance(body, dict) or set(body) - {"participant_id", "sig"}:
        raise RequestError(422, 'send {"participant_id": ID, "sig": SIG}')
    game = await run_in_threadpool(_games(request).resume_pilot, body.get("participant_id"), body.get("sig"))
    return Canonical({"token": game.token, "play": f"/play/{game.token}"})


async def api_state(request: Request) -> Response:
    """An episode's state (:meth:`Games.state`)."""
    return Canonical(await run_in_threadpool(_games(request).state, request.path_params["token"]))


async def api_step(request: Request) -> Response:
    """Commit one step of an episode (:meth:`Games.step`)."""
    games = _games(request)
    token = request.path_params["token"]
    if token not in games.games:  # checked before the body is read, so a bad link says so whatever it sends
        raise RequestError(404, "no episode has this token (check the link)")
    body = await read_json(request, STEP_LIMIT)
    return Canonical(await run_in_threadpool(games.step, token, body))


async def api_replay(request: Request) -> Response:
    """A run record played again (:meth:`Games.replay`)."""
    games = _games(request)
    games.check_replay()  # before reading a possibly long body
    body = await read_json(request, REPLAY_LIMIT)
    return Canonical(await run_in_threadpool(games.replay, body))


async def refused(request: Request, exc: Exception) -> Response:
    """A RequestError as its status and message."""
    assert isinstance(exc, RequestError)
    return error(exc.status, exc.message)


async def dropped(request: Request, exc: Exception) -> Response:
    """A client that went away mid-request: one line on the server's stderr (no traceback, no answer to send)."""
    client = request.client.host if request.client is not None else "a client"
    print(f"gf01 serve: {client} dropped its request {request.method} {request.url.path} before sending all of it",
          file=sys.stderr, flush=True)
    return Response(status_code=499)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, wrong method): JSON under /api, text elsewhere."""
    assert isinstance(exc, HTTPException)
    message = {404: "no such page", 405: "this method is not allowed here"}.get(exc.status_code, str(exc.detail))
    if request.url.path.startswith("/api/"):
        return error(exc.status_code, message)
    return PlainTextResponse(message, status_code=exc.status_code)


ROUTES = [
    Route("/", index, methods=["GET"]),
    Route("/pilot", pilot_page, methods=["GET"]),
    Route("/play/{token}", play_page, methods=["GET"]),
    Route("/replay", replay_page, methods=["GET"]),
    Route("/static/{name}", asset, methods=["GET"]),
    Route("/api/instances", api_instances, methods=["GET"]),
    Route("/api/episodes", api_start, methods=["POST"]),
    Route("/api/pilot", api_pilot, methods=["GET"]),
    Route("/api/pilot", api_pilot_start, methods=["POST"]),
    Route("/api/pilot/resume", api_pilot_resume, methods=["POST"]),
    Route("/api/episodes/{token}", api_state, methods=["GET"]),
    Route("/api/episodes/{token}/steps", api_step, methods=["POST"]),
    Route("/api/replay", api_replay, methods=["POST"]),
]


class Guard:
    """Wraps the application: refuses requests for other hosts (when serving on loopback, so that a web page
    elsewhere cannot reach the server by DNS rebinding) and cross-origin posts, and adds the security headers to
    every response, errors included."""

    def __init__(self, app: ASGIApp, allowed_hosts: set[str] | None) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1")
        name = host[1:].split("]")[0] if host.startswith("[") else host.rsplit(":", 1)[0]
        problem = None
        if self.allowed_hosts is not None and name.lower() not in self.allowed_hosts:
            problem = (400, f"host {name[:60]!r} is not served here")
        origin = headers.get(b"origin")
        if problem is None and scope["method"] not in ("GET", "HEAD") and origin is not None and \
                origin.decode("latin-1").split("://", 1)[-1] != host:
            problem = (403, "a request from another site is refused")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                for key, value in SECURITY_HEADERS.items():
                    out[key] = value
                if scope["path"].startswith("/api/"):
                    out["cache-control"] = "no-store"
            await send(message)

        if problem is not None:
            await error(*problem)(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


def create_app(games: Games, *, allowed_hosts: set[str] | None = None, body_timeout: float = 30.0) -> ASGIApp:
    """The ASGI application serving ``games``; with ``allowed_hosts``, requests for other Host names are refused;
    a request body that takes longer than ``body_timeout`` seconds to arrive is refused (408)."""
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        RequestError: refused, HTTPException: http_error, ClientDisconnect: dropped}
    app = Starlette(routes=ROUTES, exception_handlers=handlers)
    app.state.games = games
    app.state.body_timeout = body_timeout
    app.state.assets = load_assets()
    return Guard(app, allowed_hosts)
