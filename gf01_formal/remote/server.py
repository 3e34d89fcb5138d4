"""The HTTP skin of an evaluation server (``gf01 eval serve``): the routes of :mod:`.state` over plain async
functions, the same guard as ``gf01 serve`` (host check on loopback, security headers; :class:`gf01_formal.web.app.
Guard`), bodies read within their size limits and deadline (:func:`gf01_formal.web.app.read_json`), and
:func:`serve`, which runs it on uvicorn.

A line's request waits for the episode's answer on the event loop itself (the episode's thread wakes it): no
worker thread a line. An open (once an episode), the plan and the leaderboard run in worker threads of their own
limiter, so that they never hold up the loop.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from gf01_formal.remote.protocol import (
    LEADERBOARD_JSON,
    LEADERBOARD_PAGE,
    LINE_LIMIT,
    LINES_PATH,
    OPEN_LIMIT,
    OPEN_PATH,
    PLAN_PATH,
    LineRequest,
    OpenRequest,
    Submission,
    parse,
)
from gf01_formal.remote.state import EvalServer, RequestFailed
from gf01_formal.remote.tokens import Refused
from gf01_formal.web.app import Canonical, Guard, error, read_json
from gf01_formal.web.games import RequestError
from hoa.errors import Gf01Error

#: Requests waiting on episodes at once (each holds a worker thread while it waits).
WAITING = 512


def _state(request: Request) -> EvalServer:
    server: EvalServer = request.app.state.server
    return server


async def _blocking(request: Request, fn: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(fn, *args, limiter=request.app.state.limiter)


async def _body(request: Request, model: type[Any], limit: int) -> Any:
    data = await read_json(request, limit)
    try:
        return parse(model, data)
    except Gf01Error as ex:
        raise RequestError(422, ex.message) from None


async def api_plan(request: Request) -> Response:
    """A submission's runs (:meth:`EvalServer.plan`)."""
    server = _state(request)
    team = server.team(request.headers.get("authorization"))
    submission = await _body(request, Submission, OPEN_LIMIT)
    return Canonical(await _blocking(request, server.plan, team, submission))


async def api_open(request: Request) -> Response:
    """Open an instance's episode (:meth:`EvalServer.open`)."""
    server = _state(request)
    team = server.team(request.headers.get("authorization"))
    body = await _body(request, OpenRequest, OPEN_LIMIT)
    return Canonical(await _blocking(request, server.open, team, body), status_code=201)


async def api_line(request: Request) -> Response:
    """One line of an open episode (:meth:`EvalServer.line`)."""
    server = _state(request)
    team = server.team(request.headers.get("authorization"))
    body = await _body(request, LineRequest, LINE_LIMIT)
    return Canonical(await server.line(team, request.path_params["episode"], body))


async def api_leaderboard(request: Request) -> Response:
    """The leaderboard as JSON."""
    return Canonical(await _blocking(request, request.app.state.board))


async def leaderboard_page(request: Request) -> Response:
    """The leaderboard as a page."""
    from gf01_formal.remote.leaderboard import page

    return HTMLResponse(page(await _blocking(request, request.app.state.board)))


async def refused(request: Request, exc: Exception) -> Response:
    """A refusal (a token's, a request's) as its status and one line."""
    assert isinstance(exc, Refused | RequestFailed | RequestError)
    return error(exc.status, exc.message)


async def dropped(request: Request, exc: Exception) -> Response:
    """A client that went away mid-request: one line on stderr."""
    print(f"gf01 eval serve: a client dropped its request {request.method} {request.url.path}", file=sys.stderr,
          flush=True)
    return Response(status_code=499)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, wrong method), in the one shape."""
    assert isinstance(exc, HTTPException)
    message = {404: "no such path", 405: "this method is not allowed here"}.get(exc.status_code, str(exc.detail))
    return error(exc.status_code, message)


ROUTES = [
    Route(PLAN_PATH, api_plan, methods=["POST"]),
    Route(OPEN_PATH, api_open, methods=["POST"]),
    Route(LINES_PATH, api_line, methods=["POST"]),
    Route(LEADERBOARD_JSON, api_leaderboard, methods=["GET"]),
    Route(LEADERBOARD_PAGE, leaderboard_page, methods=["GET"]),
]


class _Board:
    """The leaderboard, made again only when the runs file or the operator's teams (the tokens file) changed."""

    def __init__(self, server: EvalServer) -> None:
        import threading

        self._server = server
        self._lock = threading.Lock()
        self._stamp: tuple[Any, ...] | None = None
        self._board: dict[str, Any] | None = None

    def __call__(self) -> dict[str, Any]:
        from gf01_formal.remote.leaderboard import leaderboard

        path = self._server.runs_path
        with self._lock:
            panel = self._server.tokens.panel_teams()
            st = path.stat() if path.exists() else None
            stamp = (None if st is None else (st.st_size, st.st_mtime_ns), panel)
            if self._board is None or stamp != self._stamp:
                self._board, self._stamp = leaderboard(path, panel), stamp
            return self._board


def create_app(server: EvalServer, *, allowed_hosts: set[str] | None = None, body_timeout: float = 30.0) -> ASGIApp:
    """The ASGI application of ``server`` (module docstring)."""
    handlers: dict[Any, Any] = {Refused: refused, RequestFailed: refused, RequestError: refused,
                                HTTPException: http_error, ClientDisconnect: dropped}
    app = Starlette(routes=ROUTES, exception_handlers=handlers)
    app.state.server = server
    app.state.body_timeout = body_timeout
    app.state.limiter = anyio.CapacityLimiter(WAITING)
    app.state.board = _Board(server)
    return Guard(app, allowed_hosts)


def serve(server: EvalServer, *, host: str, port: int, body_timeout: float = 30.0,
          proxy: str | None = None) -> None:
    """Run ``server`` on uvicorn until interrupted (Ctrl-C stops it; its open episodes are given up, unrecorded)."""
    import uvicorn

    from gf01_formal.web.app import LOOPBACK_NAMES
    from gf01_formal.web.server import GRACE_SECONDS, bind, http_protocol, is_loopback, url_of

    sock = bind(host, port)
    loopback = is_loopback(host)
    app = create_app(server, allowed_hosts=LOOPBACK_NAMES | {host.lower()} if loopback else None,
                     body_timeout=body_timeout)
    print(f"gf01 eval serve: {len(server.served)} instance{'s' if len(server.served) != 1 else ''} at "
          f"{url_of(sock)}/ ({len(server.records)} runs recorded in {os.fspath(server.runs_path)})", flush=True)
    if not loopback and proxy is None:
        print("gf01 eval serve: note: serve it behind a TLS reverse proxy (docs/remote.md); without one, tokens "
              "cross the network in the clear", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False,
                            timeout_graceful_shutdown=GRACE_SECONDS, proxy_headers=proxy is not None,
                            forwarded_allow_ips=proxy, http=http_protocol(body_timeout))
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        server.close()
