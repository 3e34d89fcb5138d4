"""What browser tests share: Debian's Chromium under Playwright (never a downloaded browser), a record of every
response a page receives, the trace and a screenshot kept when a test fails, and a ``gf01 serve`` subprocess.

A test module launches Debian's headless Chromium once, for its own tests only:

    @pytest.fixture(scope="module")
    def chromium():
        with browser.chromium() as launched:
            yield launched

and wraps a test's page in ``with browser.artifacts_on_failure(context, page, output_path): ...`` (``output_path``
is pytest-playwright's per-test folder under ``test-results/``). pytest-playwright's own ``browser`` and ``page``
fixtures are not used: they keep one Playwright for the whole session, and Playwright's sync API marks its asyncio
loop as running in the main thread while it lives, so every later test that calls ``asyncio.run`` (the inspect
paths, the browser's replay) would fail in the same process. Outside pytest, ``browser.LAUNCH`` are the keyword
arguments of ``playwright.chromium.launch``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
#: Headless, no sandbox (containers), nothing fetched by the browser on its own.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
LAUNCH: dict[str, Any] = {"executable_path": CHROMIUM, "headless": True, "args": ARGS}
ROOT = Path(__file__).resolve().parent.parent


def launch_args() -> dict[str, Any]:
    """The launch arguments of Debian's Chromium; fails the test (not skips it) when it is missing, since nothing may
    be downloaded at test time (``.ci/run`` installs the ``chromium`` package)."""
    if not os.access(CHROMIUM, os.X_OK):
        import pytest

        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)")
    return dict(LAUNCH)


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium under a Playwright of its own, closed (Playwright and its loop with it) when the
    block ends."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(**launch_args())
        try:
            yield launched
        finally:
            launched.close()


@dataclass(frozen=True)
class Received:
    """One response a page received."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


@dataclass
class Responses:
    """Every response the pages of a browser context receive, in order, with their bodies.

    Requests go through a route that fetches them, keeps the response, and hands it to the page unchanged
    (redirects included: they are passed on, not followed here).
    """

    context: Any
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.context.route("**/*", self._pass)

    def _pass(self, route: Any) -> None:
        response = route.fetch(max_redirects=0)
        body = response.body()
        with self._lock:
            self.received.append(Received(response.url, response.status, dict(response.headers), body))
        route.fulfill(response=response, body=body)

    def mark(self) -> int:
        """A position to read from later (:meth:`since`)."""
        with self._lock:
            return len(self.received)

    def since(self, position: int = 0) -> list[Received]:
        """The responses received from ``position`` on."""
        with self._lock:
            return list(self.received[position:])


@contextmanager
def artifacts_on_failure(context: Any, page: Any, directory: str | os.PathLike[str]) -> Iterator[None]:
    """Trace the context (screenshots, DOM snapshots, sources) while the block runs; if it raises, keep the trace
    (``trace.zip``, open with ``playwright show-trace``) and a full-page screenshot in ``directory``."""
    context.tracing.start(screenshots=True, snapshots=True, sources=True)
    try:
        yield
    except BaseException:
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=str(out / "failure.png"), full_page=True)
        finally:
            context.tracing.stop(path=str(out / "trace.zip"))
        raise
    context.tracing.stop()


def focus_to(page: Any, selector: str, *, limit: int = 60, key: str = "Tab") -> None:
    """Press ``key`` (Tab by default) until the focused element matches ``selector``: moving by keyboard alone."""
    for _ in range(limit):
        if page.evaluate("s => document.activeElement !== null && document.activeElement.matches(s)", selector):
            return
        page.keyboard.press(key)
    raise AssertionError(f"{key} x {limit} never focused {selector}")


class Server:
    """``python -m gf01_formal serve ...`` of this checkout, on 127.0.0.1 and a free port, stopped by Ctrl-C.

    >>> with Server(["--bundle", "b.json"]) as server:      # doctest: +SKIP
    ...     httpx.get(server.url)
    """

    def __init__(self, args: Sequence[str], *, root: Path = ROOT, cwd: str | os.PathLike[str] | None = None) -> None:
        self.args = [sys.executable, "-m", "gf01_formal", "serve", "--host", "127.0.0.1", "--port", "0", *args]
        self.env = {**os.environ, "PYTHONPATH": str(root)}
        self.cwd = cwd
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.banner: list[str] = []

    def start(self) -> Server:
        """Start the server and wait until it listens (its first line names the URL)."""
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=self.env, cwd=self.cwd)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = re.search(r"http://\S+?/(?=\s|$)", line)
        if found is None:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=10)
            raise AssertionError(f"gf01 serve did not start: {line!r} {err!r}")
        self.url = found.group(0)
        self.banner.append(line)
        # The rest of stdout is read by a thread, so the server never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.banner.append(line)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 10) -> tuple[int, str]:
        """Stop the server with ``sig`` (Ctrl-C by default); returns its exit status and stderr."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stderr is not None
        return self.proc.returncode, self.proc.stderr.read()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.stop()
