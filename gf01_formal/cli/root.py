"""The root command group ``gf01``: its ``--version`` option and the commands registered under it, each command
module imported on demand.

:func:`tree` gives the command tree to parse one command line with: the root holding only the command (or group)
the line names, whose module alone is imported (``gf01 report`` loads no agent, no episode engine, no solver), or,
for ``--help``, ``--version`` and unknown names, every command in the order of :data:`COMMANDS` (so ``gf01 --help``
lists them all, each with its one-line help). ``app`` (:data:`gf01_formal.cli.app`) is the whole tree.

Built on first use of :data:`gf01_formal.cli.app` or :func:`gf01_formal.cli.main`, so that importing the
``gf01_formal.cli`` package stays cheap (see there).
"""

from __future__ import annotations

import copy
import importlib
from typing import Annotated, Any

import typer

#: Every top-level command and group, in ``gf01 --help``'s order, with the command modules that define it (the
#: ``import`` group takes commands from two). tests/test_cli.py checks this table against the modules' own.
COMMANDS: dict[str, tuple[str, ...]] = {
    "verify": ("query",), "enumerate": ("query",), "oracle": ("query",), "cnf": ("query",), "sim": ("sim",),
    "generate": ("instances",), "split": ("instances",), "split-policy-check": ("instances",),
    "export-schemas": ("instances",), "evaluate": ("runs",), "validate": ("runs",), "serve": ("serve",),
    "play": ("play",), "report": ("report",), "pilot-analyze": ("report",), "campaign": ("report",),
    "hoa": ("hoa",), "import": ("instances", "runs"), "pilot": ("serve",), "caps": ("report",),
    "release": ("report",), "agent": ("agent",), "key": ("keys",), "bundle": ("bundle",), "eval": ("remote",),
}
#: The command modules in the order they register; ``runs`` adds its commands to the ``import`` group of
#: ``instances``, so it needs that module loaded first.
MODULES = ("hoa", "query", "sim", "instances", "runs", "serve", "play", "report", "agent", "keys", "bundle", "remote")
_NEEDS = {"runs": ("instances",)}

_app = typer.Typer(
    name="gf01",
    help="GF-01 reference toolkit: HOA systems, exact certificate checks, instances and runs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": 100},
)
_loaded: dict[str, Any] = {}


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"gf01-formal {version('gf01-formal')}")
        except PackageNotFoundError:
            print("gf01-formal (not installed)")
        raise typer.Exit(0)


@_app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """GF-01 reference toolkit: HOA systems, exact certificate checks, instances and runs."""


def _load(modules: tuple[str, ...]) -> None:
    """Import ``modules`` (and what they need) and register their commands, each module once per process."""
    wanted = set(modules) | {need for m in modules for need in _NEEDS.get(m, ())}
    for name in MODULES:
        if name in wanted and name not in _loaded:
            module = importlib.import_module(f"gf01_formal.cli.{name}")
            if name == "runs":
                module.register(_app, _loaded["instances"].import_app)
            else:
                module.register(_app)
            _loaded[name] = module


def tree(name: str | None = None) -> typer.Typer:
    """The root with the command or group ``name`` alone (its modules imported), or with every command when
    ``name`` is None or no command's name."""
    modules = COMMANDS.get(name or "")
    _load(MODULES if modules is None else modules)
    order = {n: k for k, n in enumerate(COMMANDS)}
    keep = (lambda n: True) if modules is None else (lambda n: n == name)
    out = copy.copy(_app)  # the same settings and root callback (--version)
    out.registered_commands = sorted((c for c in _app.registered_commands if keep(c.name)),
                                     key=lambda c: order.get(c.name or "", len(order)))
    out.registered_groups = sorted((g for g in _app.registered_groups if keep(g.name)),
                                   key=lambda g: order.get(g.name or "", len(order)))
    return out


def __getattr__(name: str) -> Any:
    # ``app``, the whole tree, is built on first use: importing this module registers no command.
    if name == "app":
        return tree()
    raise AttributeError(f"module 'gf01_formal.cli.root' has no attribute {name!r}")


__all__ = ["COMMANDS", "tree"]  # and app, built on first use (__getattr__)
