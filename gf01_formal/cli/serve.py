"""``gf01 serve``: GF-01-R1 in the browser (human play, pilots, replay); docs/browser.md."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gf01_formal.cli.common import (
    AdaptBudgetOpt,
    AdaptConditionOpt,
    AdaptProtocolOpt,
    AdaptScopeOpt,
    adaptation_of,
)


def serve_cmd(
    bundle: Annotated[Path, typer.Option("--bundle", metavar="BUNDLE", help="The bundle (or one instance file) to "
                                         "play.", show_default=False)],
    host: Annotated[str, typer.Option("--host", metavar="HOST", help="Address to listen on (other than loopback: "
                                      "anyone who can reach it can play).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="N", min=0, max=65535, help="Port (0: any free one).")] = 8000,
    runs_out: Annotated[Path | None, typer.Option("--runs-out", metavar="FILE", help="Append each finished episode's "
                                                  "run record here; steps are saved beside it as they are played.")]
    = None,
    pilot: Annotated[Path | None, typer.Option("--pilot", metavar="FILE", help="A pilot file: consent text, "
                                               "instance order, completion code (needs --runs-out).")] = None,
    adaptation_condition: AdaptConditionOpt = None,
    adaptation_budget_tokens: AdaptBudgetOpt = None,
    adaptation_data_scope: AdaptScopeOpt = None,
    adaptation_protocol_id: AdaptProtocolOpt = None,
) -> None:
    """Serve the GF-01-R1 side-scroller in the browser until Ctrl-C: free play, or a pilot with --pilot."""
    from gf01_formal.web.server import serve

    adaptation = adaptation_of(adaptation_condition, adaptation_budget_tokens, adaptation_data_scope,
                               adaptation_protocol_id)
    serve(bundle, host=host, port=port, runs_out=runs_out, pilot=pilot, adaptation=adaptation)


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""
    app.command("serve", short_help="Play GF-01-R1 in the browser (human play, pilots, replay).")(serve_cmd)
