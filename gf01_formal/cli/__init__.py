"""The ``gf01`` command line: a thin shell over the library, one module per command group (docs/cli.md).

Exit status: 0 done; 1 a negative verdict where the command is a check (an invalid HOA file, a system that is not
input-complete); 2 a user error, printed as one line ``gf01: error: file:line:col: message`` (a usage error too);
3 a query that ran out of ``--seconds`` (it prints ``unknown (...)``, never a guess); 70 an internal error (a bug:
one line naming the exception and where it was raised); 130 interrupted (Ctrl-C).

Importing this package is cheap: the command tree (:data:`app`, in :mod:`gf01_formal.cli.root`, with typer, numpy
and pydantic behind it) is imported inside :func:`main`, so a Ctrl-C during those imports is an exit 130 like any
other, and the console script's own import of this package cannot be interrupted with a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from gf01_formal.cli.exits import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_UNKNOWN, EXIT_USER_ERROR

#: Longest error line printed: a message may quote user input, which is cut well before this.
MAX_ERROR_CHARS = 2000


def __getattr__(name: str) -> Any:
    # ``app`` is built on first use (see the module docstring).
    if name == "app":
        from gf01_formal.cli.root import app

        return app
    raise AttributeError(f"module 'gf01_formal.cli' has no attribute {name!r}")


#: When the running command started (``time.monotonic()``): the process's start under the console script, else the
#: call of :func:`main`. A command's time a user waits for (``import aiger --seconds``) counts from it.
_started: float | None = None


def command_started() -> float:
    """When the running command started (``time.monotonic()``; now, outside a command)."""
    return time.monotonic() if _started is None else _started


def main(argv: list[str] | None = None, *, started: float | None = None) -> int:
    """Run the CLI and return its exit status (see the module docstring); no exception reaches the user as a
    traceback. ``started``: when the command started, if before this call (:func:`command_started`)."""
    global _started
    _started = time.monotonic() if started is None else started
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        return _invoke(args)
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as ex:  # every exception becomes one line and an exit status
        try:
            return _status_of(ex, json_out="--json" in args)
        except KeyboardInterrupt:
            return _interrupted()
    finally:
        _started = None  # outside a command, its time counts from now (command_started)


def _invoke(args: list[str]) -> int:
    """Parse ``args`` and run the command: the plain form of ``verify`` through the front door (no typer, no
    pydantic; :mod:`gf01_formal.cli.front`), everything else, and whatever the front door leaves, through typer.
    typer's own ``main`` is bypassed: it turns Ctrl-C into a silent exit 130 and a closed pipe into exit 1; here
    every outcome goes through :func:`_status_of`."""
    from gf01_formal.cli.front import verify

    status = verify(args)
    if status is not None:
        return status
    import typer

    command = _command_for(args)
    try:
        with command.make_context("gf01", args) as ctx:
            status = command.invoke(ctx)
    except typer.Exit as ex:  # --help, --version, a check's verdict
        return ex.exit_code
    return status if isinstance(status, int) else 0


#: The click command built for each command name (None: the whole tree), kept for the process's later calls of
#: :func:`main`: typer reads every option's signature and builds its converters, about 7 of the 10 ms of a refused
#: in-process call (the bad-input matrix makes about a thousand). A click command holds no state between parses.
_commands: dict[str | None, Any] = {}


def _command_for(args: list[str]) -> Any:
    """The click command that parses ``args`` (:func:`_tree_for`), built once per command name in a process."""
    from gf01_formal.cli.root import COMMANDS

    name = args[0] if args and args[0] in COMMANDS else None
    if name not in _commands:
        import typer

        _commands[name] = typer.main.get_command(_tree_for([name] if name else []))
    return _commands[name]


def _tree_for(args: list[str]) -> Any:
    """The command tree to parse ``args`` with (:func:`gf01_formal.cli.root.tree`): the root holding only the
    command (or group) ``args`` name, its module alone imported, or the whole of it for ``--help``, ``--version`` and
    unknown names. typer turns every registered command into a click command, reading its signature, before parsing
    anything: for one small query that was a sixth of its run; and importing every command module made ``gf01
    report`` load the agents and the episode engine."""
    from gf01_formal.cli.root import tree

    return tree(args[0] if args else None)


def _status_of(ex: Exception, *, json_out: bool = False) -> int:
    """Print what ``ex`` means for the user (one line; an unknown answer as JSON under ``--json``) and return the
    exit status."""
    from hoa.errors import Gf01Error

    if isinstance(ex, Gf01Error):
        _error(str(ex))
        return EXIT_USER_ERROR
    # Unknown can only have been raised if solvers.limits was imported; checking sys.modules spares a usage error
    # the import of the solver layer (and numpy behind it).
    limits = sys.modules.get("solvers.limits")
    if limits is not None and isinstance(ex, limits.Unknown):
        if json_out:
            print(json.dumps({"unknown": ex.to_json()}, sort_keys=True), flush=True)
        else:
            print(f"unknown ({ex.reason}; spent {json.dumps(ex.spent, sort_keys=True)})", flush=True)
        return EXIT_UNKNOWN
    name = type(ex).__name__
    if name == "Abort":  # click's Ctrl-C at a prompt
        return _interrupted()
    if name == "NoArgsIsHelpError":  # 'gf01' or 'gf01 hoa' alone: the help is the answer, as click prints it
        print(ex.format_message(), file=sys.stderr, flush=True)  # type: ignore[attr-defined]
        return EXIT_USER_ERROR
    if callable(getattr(ex, "format_message", None)) and isinstance(getattr(ex, "exit_code", None), int):
        # A usage error (missing argument, bad option value). Typer vendors its own click, so match click's
        # exception interface rather than one click's class.
        # typer coerces values through pydantic, whose messages start "Value error, ": noise to the user.
        message = ex.format_message().replace("Value error, ", "")  # type: ignore[attr-defined]
        _error(f"{message} (try --help)")
        return EXIT_USER_ERROR
    if isinstance(ex, BrokenPipeError):
        # The reader went away (gf01 ... | head): not an error of ours. Point stdout at /dev/null so that the
        # interpreter's final flush does not complain.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            sys.stdout = None  # type: ignore[assignment]
        return 0
    if isinstance(ex, MemoryError):
        _error("out of memory: the input is too large for this machine")
        return EXIT_USER_ERROR
    if isinstance(ex, RecursionError):
        _error("the input is nested too deeply to process")
        return EXIT_USER_ERROR
    where = ""
    tb = ex.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
    _error(f"internal error (a bug in gf01; please report it with the command line): {name}: {ex}{where}",
           prefix="gf01: ")
    return EXIT_INTERNAL


def _interrupted() -> int:
    print("gf01: interrupted", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


def _error(message: str, *, prefix: str = "gf01: error: ") -> None:
    """Print ``message`` as one line on stderr: line breaks folded, control characters escaped, length capped."""
    text = " ".join(message.splitlines())
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 20] + f"... ({len(text)} characters)"
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    print(prefix + text, file=sys.stderr, flush=True)


def run() -> None:
    """Console-script entry point."""
    import atexit

    # Registered before multiprocessing is imported, so it runs after multiprocessing's own exit handler (atexit is
    # last in, first out), which unregisters the semaphores of the pools first: the tracker then ends with nothing
    # to report.
    atexit.register(_reap_tracker)
    _single_threaded_blas()
    status = main(started=time.monotonic() - _process_age())
    # The process ends here: the interpreter's last garbage collection over every object the command made (numpy,
    # pydantic, the solvers' encodings) took about 0.5 s of a 5 s `import aiger` (docs/performance.md). Frozen
    # objects are left to the operating system; the outputs are written and closed by now.
    import gc

    gc.freeze()
    sys.exit(status)


def _process_age() -> float:
    """Seconds since this process started (Linux ``/proc``; 0 where it cannot be read): the interpreter's start-up
    and imports are part of the time a user waits (about 1 s of `import aiger`'s 5 s on a loaded machine)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        # starttime is field 22 of stat, the 20th after the command name's closing parenthesis.
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def _single_threaded_blas() -> None:
    """numpy with one OpenBLAS thread for this process (:func:`gf01_formal.blas.load_numpy_single_threaded`)."""
    from gf01_formal.blas import load_numpy_single_threaded

    load_numpy_single_threaded()


def _reap_tracker() -> None:
    if "gf01_formal.workers" in sys.modules:
        from gf01_formal.workers import reap_tracker

        reap_tracker()


__all__ = ["app", "main", "run"]
