"""The ``gf01`` command line: a thin shell over the library. Each command group lives in its own ``cli_*`` module."""

from __future__ import annotations

import sys

import typer

from gf01_formal import cli_hoa, cli_instances, cli_solve
from hoa.errors import Gf01Error

app = typer.Typer(
    name="gf01",
    help="GF-01 reference toolkit: HOA systems, exact certificate checks, instances and runs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cli_hoa.register(app)
cli_solve.register(app)
cli_instances.register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; a user-caused error (Gf01Error) prints one line on stderr and exits with status 2."""
    try:
        # In non-standalone mode click returns a typer.Exit's code instead of raising it.
        status = app(args=argv, standalone_mode=False)
    except Gf01Error as err:
        print(f"gf01: error: {err}", file=sys.stderr)
        return 2
    except typer.Exit as ex:
        return ex.exit_code
    except typer.Abort:
        print("gf01: aborted", file=sys.stderr)
        return 130
    except Exception as ex:
        # Usage errors (missing argument, bad option value) arrive here in non-standalone mode. Typer vendors its
        # own click, so match click's exception interface rather than one click's class.
        if callable(getattr(ex, "show", None)) and isinstance(getattr(ex, "exit_code", None), int):
            ex.show()
            return ex.exit_code
        raise
    return status if isinstance(status, int) else 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
