"""The root command group ``gf01``: its ``--version`` option and the command groups registered under it.

Built on first use of :data:`gf01_formal.cli.app` or :func:`gf01_formal.cli.main`, so that importing the
``gf01_formal.cli`` package stays cheap (see there).
"""

from __future__ import annotations

from typing import Annotated

import typer

from gf01_formal.cli import agent, bundle, hoa, instances, play, query, report, runs, serve

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
agent.register(app)
bundle.register(app)


__all__ = ["app"]
