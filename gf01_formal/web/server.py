"""``gf01 serve``: open the games of a bundle, bind the socket, and run the application on uvicorn until Ctrl-C.

Everything that can be wrong with the command line (the bundle, the pilot file, the runs file, the port) is found
before the server starts and raised as a Gf01Error (exit 2). Ctrl-C stops the server within about a second: an
in-flight request gets that long to finish, and what it saved is whole (:mod:`.games` writes line by line, fsync'd).
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gf01_formal.artifacts import check_output
from gf01_formal.runs.scoring_limit import SERVE_SCORING_SECONDS
from gf01_formal.web.app import LOOPBACK_NAMES, create_app
from gf01_formal.web.games import Games

if TYPE_CHECKING:
    from gf01_formal.agents.adaptation import Adaptation
from hoa.errors import Gf01Error, quote

#: Seconds an in-flight request may take to finish once Ctrl-C is pressed.
GRACE_SECONDS = 1


def http_protocol(head_seconds: float) -> type:
    """uvicorn's h11 HTTP protocol, closing a connection that waits longer than ``head_seconds`` for a request's
    head (a new connection, or one kept alive after a response). uvicorn kept such a connection open for ever
    (ninth red-team round: 3,000 idle ones, some with half a request's headers), so one client could hold them up
    to the open-file limit; a request whose head has arrived is never cut here (its body has the app's timeout)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadTimeout(H11Protocol):
        _head_timer: object = None

        def connection_made(self, transport) -> None:  # type: ignore[no-untyped-def]
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # waiting for the next request's head

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(head_seconds, self._expire)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()  # type: ignore[attr-defined]
                self._head_timer = None

        def _expire(self) -> None:
            self._head_timer = None
            if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()  # no request in progress: none was begun since the timer was armed

    return HeadTimeout


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1 or localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port), or a Gf01Error that says why there cannot be one."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror:
        raise Gf01Error(f"cannot listen on {quote(host, 80)}: no such address", field="--host") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart may follow a stop at once
        sock.bind(address)
        sock.listen(128)
    except OSError as ex:
        sock.close()
        if ex.errno == errno.EADDRINUSE:
            raise Gf01Error(f"port {port} on {host} is in use (is another server running?)", field="--port") from None
        if ex.errno == errno.EACCES:
            raise Gf01Error(f"port {port} on {host} needs privileges this user lacks", field="--port") from None
        raise Gf01Error(f"cannot listen on {host} port {port}: {ex.strerror or ex}", field="--host") from None
    return sock


def url_of(sock: socket.socket) -> str:
    """The base URL a socket serves."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(bundle: str | os.PathLike[str], *, host: str = "127.0.0.1", port: int = 8000,
          runs_out: str | os.PathLike[str] | None = None, pilot: str | os.PathLike[str] | None = None,
          body_timeout: float = 30.0, adaptation: Adaptation | None = None, proxy: str | None = None,
          scoring_seconds: float = SERVE_SCORING_SECONDS) -> None:
    """Serve GF-01-R1 for ``bundle`` until interrupted (KeyboardInterrupt reaches the caller after a clean stop).
    A client is the peer of its connection; only with ``proxy`` (the proxy's address) does an ``X-Forwarded-For``
    header sent by that peer name the client (uvicorn would otherwise trust it from loopback, and free play's
    per-client cap would count whatever a client claims). ``scoring_seconds``: the time limit of scoring one episode
    (:mod:`gf01_formal.runs.scoring_limit`)."""
    import uvicorn

    if proxy is not None:
        try:
            ipaddress.ip_address(proxy)
        except ValueError:
            raise Gf01Error(f"{quote(proxy, 80)} is not an IP address (the proxy's, as the server sees it)",
                            field="--proxy") from None
    if pilot is not None and runs_out is None:
        raise Gf01Error("a pilot records every episode: give the runs file (--runs-out)", field="--runs-out")
    if runs_out is not None:
        key = None if pilot is None else f"{os.fspath(pilot)}.key"
        check_output(runs_out, inputs=[bundle, pilot, key], reread=True)
    games = Games.open(bundle, runs_out=runs_out, pilot=pilot, adaptation=adaptation,
                       scoring_seconds=scoring_seconds)
    sock = bind(host, port)
    loopback = is_loopback(host)
    app = create_app(games, allowed_hosts=LOOPBACK_NAMES | {host.lower()} if loopback else None,
                     body_timeout=body_timeout)
    base = url_of(sock)
    print(f"gf01 serve: {len(games.served)} instance{'s' if len(games.served) != 1 else ''} of "
          f"{Path(bundle).name} at {base}/", flush=True)
    if games.pilot is not None:
        print(f"pilot {games.pilot.pilot_id}: participants open the links of 'gf01 pilot issue' "
              f"({base}/pilot?participant=ID&sig=SIG); other ids are refused")
    if games.runs is not None:
        resumed = sum(1 for g in games.games.values() if not g.engine.done)
        print(f"recording to {runs_out}; steps are saved in {games.journal.path if games.journal else ''} "
              f"({resumed} episode{'s' if resumed != 1 else ''} to resume)")
    else:
        print("not recording (no --runs-out): episodes live in memory only")
    if not loopback:
        print(f"gf01 serve: note: listening on {host}: anyone who can reach this machine can play", file=sys.stderr)
    print("Ctrl-C stops the server", flush=True)
    if proxy is not None:
        print(f"clients are named by the X-Forwarded-For header of the proxy at {proxy}")
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False,
                            timeout_graceful_shutdown=GRACE_SECONDS, proxy_headers=proxy is not None,
                            forwarded_allow_ips=proxy, http=http_protocol(body_timeout))
    uvicorn.Server(config).run(sockets=[sock])
