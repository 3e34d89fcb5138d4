"""The ``gf01 agent`` commands: ``check`` a program that speaks gf01.agent.v1 before it is evaluated.

``check`` plays the program exactly as ``gf01 evaluate`` does (sandbox, limits, the track's tool) and exits 0 when
it played every episode without a protocol fault, 1 when it made some (each printed in plain words:
docs/agent-protocol.md, "Checking an agent"), 2 for a user error (a command that cannot be started, a bad bundle,
no sandbox without --sandbox none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gf01_formal.cli.common import AgentNetworkOpt, AgentOutputOpt, JsonOpt, SandboxOpt, StepTimeoutOpt, emit

agent_app = typer.Typer(help="External agents (gf01.agent.v1): check a program against the protocol.",
                        no_args_is_help=True, rich_markup_mode=None, context_settings={"max_content_width": 100})


@agent_app.command("check", short_help="Play a program through a few episodes and report every protocol fault.")
def check_cmd(
    cmd: Annotated[str, typer.Argument(metavar="CMD", help="The agent's command line (POSIX shell words, run "
                                       "directly, not through a shell).", show_default=False)],
    bundle: Annotated[
        Path | None, typer.Option("--bundle", metavar="BUNDLE", help="Play these instances (a bundle or an "
                                  "instance file) instead of the small built-in bundle.")
    ] = None,
    episodes: Annotated[int, typer.Option("--episodes", metavar="N", min=1, max=1000,
                                          help="Episodes to play (the instances in order, cycled).")] = 3,
    step_timeout: StepTimeoutOpt = 30.0,
    track: Annotated[Literal["EVAL-CB", "EVAL-TA", "EVAL-OC"], typer.Option(
        "--track", help="The track to play on: EVAL-TA answers local-planner-v1 tool lines, EVAL-OC "
        "oracle-exact-search-v1, EVAL-CB none.")] = "EVAL-CB",
    sandbox: SandboxOpt = "auto",
    agent_network: AgentNetworkOpt = False,
    agent_output: AgentOutputOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Play CMD as an evaluation would (in its sandbox, with its limits) and report every protocol fault in plain
    words: exit 1 when there is one."""
    from gf01_formal.agents.subprocess_agent import check_output_file
    from gf01_formal.runs.agent_check import check_program

    check_output_file(agent_output, [bundle])
    found = check_program(cmd, bundle, episodes=episodes, step_timeout=step_timeout, track=track, sandbox=sandbox,
                          network=agent_network, output=agent_output)

    def human(r: dict[str, Any]) -> list[str]:
        lines = [str(f) for f in found.faults]
        n = len(found.faults)
        lines.append(f"{n} protocol fault{'' if n == 1 else 's'} in {r['episodes']} episode"
                     f"{'' if r['episodes'] == 1 else 's'} ({r['steps']} steps)" if n else
                     f"no protocol fault in {r['episodes']} episode{'' if r['episodes'] == 1 else 's'} "
                     f"({r['steps']} steps)")
        return lines

    emit(found.to_json(), json_out, human)
    if not found.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``agent`` command group (check) to ``app``."""
    app.add_typer(agent_app, name="agent")
