"""The ``gf01`` command line: a thin shell over the library, one module per command group.

Exit status: 0 done; 1 a negative verdict where the command is a check (an invalid HOA file, a system that is not
input-complete); 2 a user error, printed as one line ``gf01: error: file:line:col: message``; 3 a query that ran out
of ``--seconds`` (it prints ``unknown (...)``, never a guess); 130 interrupted (Ctrl-C). docs/cli.md lists every
command and option.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from gf01_formal.cli import hoa, instances, play, query, report, runs, serve
from hoa.errors import Gf01Error
from solvers.limits import Unknown

#: Longest error line printed: a message may quote user input, which is cut well before this.
MAX_ERROR_CHARS = 2000
EXIT_USER_ERROR, EXIT_UNKNOWN, EXIT_INTERRUPTED = 2, 3, 130

app = typer.Typer(
    name="gf01",
    help="GF-01 reference toolkit: HOA systems, exact certificate checks, instances and runs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": 100},
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"gf01-formal {version('gf01-formal')}")
        except PackageNotFoundError:
            print("gf01-formal (not installed)")
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """GF-01 reference toolkit: HOA systems, exact certificate checks, instances and runs."""


hoa.register(app)
query.register(app)
instances.register(app)
runs.register(app, instances.import_app)
serve.register(app)
play.register(app)
report.register(app)


def _error(message: str) -> None:
    text = " ".join(message.split("\n"))
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 20] + f"... ({len(text)} characters)"
    print(f"gf01: error: {text}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit status (see the module docstring); never lets a traceback reach a user error."""
    try:
        # In non-standalone mode click returns a typer.Exit's code instead of raising it.
        status = app(args=argv, standalone_mode=False)
    except Gf01Error as err:
        _error(str(err))
        return EXIT_USER_ERROR
    except Unknown as ex:
        print(f"unknown ({ex.reason}; spent {json.dumps(ex.spent, sort_keys=True)})", flush=True)
        return EXIT_UNKNOWN
    except typer.Exit as ex:
        return ex.exit_code
    except (KeyboardInterrupt, typer.Abort):
        print("gf01: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (gf01 ... | head): not an error of ours; silence the flush at exit.
        sys.stdout = None  # type: ignore[assignment]
        return 0
    except MemoryError:
        _error("out of memory: the input is too large for this machine")
        return EXIT_USER_ERROR
    except Exception as ex:
        # Usage errors (missing argument, bad option value) arrive here in non-standalone mode. Typer vendors its
        # own click, so match click's exception interface rather than one click's class.
        if callable(getattr(ex, "format_message", None)) and isinstance(getattr(ex, "exit_code", None), int):
            _error(f"{ex.format_message()} (try --help)")
            return EXIT_USER_ERROR
        raise
    if status == EXIT_INTERRUPTED:  # typer turns a KeyboardInterrupt into this return value, silently
        print("gf01: interrupted", file=sys.stderr, flush=True)
    return status if isinstance(status, int) else 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


__all__ = ["app", "main", "run"]
