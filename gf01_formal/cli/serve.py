"""``gf01 serve``: GF-01-R1 in the browser (human play, pilots, replay); docs/browser.md."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gf01_formal.cli.common import MAX_SECONDS, SERVE_SCORING_SECONDS, with_adaptation_options


@with_adaptation_options
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
    body_timeout: Annotated[float, typer.Option("--body-timeout", metavar="S", min=0.1, max=3600.0,
                                                help="Seconds a request's body may take to arrive (then 408).")]
    = 30.0,
    proxy: Annotated[str | None, typer.Option("--proxy", metavar="ADDR", help="The IP address of a reverse proxy "
                                              "in front of the server: its X-Forwarded-For header names the client "
                                              "(otherwise the connection's peer is the client).")] = None,
    scoring_seconds: Annotated[float, typer.Option(
        "--scoring-seconds", metavar="S", min=0.001, max=MAX_SECONDS,
        help="Time limit of scoring one finished episode (wall seconds, its exact queries together); past it the "
             "record is harness_error and loading the episode's page again scores it again.")] = SERVE_SCORING_SECONDS,
    adaptation_flags: Any = None,
) -> None:
    """Serve the GF-01-R1 side-scroller in the browser until Ctrl-C: free play, or a pilot with --pilot."""
    from gf01_formal.extras import require

    require("web", "gf01 serve")
    from gf01_formal.web.server import serve

    adaptation = adaptation_flags.declared()
    serve(bundle, host=host, port=port, runs_out=runs_out, pilot=pilot, body_timeout=body_timeout,
          adaptation=adaptation, proxy=proxy, scoring_seconds=scoring_seconds)


PilotOpt = Annotated[Path, typer.Option("--pilot", metavar="FILE", help="The pilot file (its key is FILE.key).")]
pilot_app = typer.Typer(help="A pilot's participants: issue their links, check their completion codes, "
                        "reset test ids.",
                        no_args_is_help=True)


@pilot_app.command("issue", short_help="Issue per-participant links of a pilot (signed with the pilot's key).")
def pilot_issue_cmd(
    pilot: PilotOpt,
    count: Annotated[int, typer.Option("--count", metavar="N", min=1, max=100_000, help="Participants to issue.")],
    output: Annotated[Path, typer.Option("-o", "--output", metavar="FILE", help="Where to write the links, one a "
                                         "line.")],
    start: Annotated[int, typer.Option("--start", metavar="K", min=1, max=10_000_000, help="The first participant "
                                       "number (issue more later with --start past the last).")] = 1,
    base_url: Annotated[str, typer.Option("--base-url", metavar="URL", help="The server's public address.")]
    = "http://127.0.0.1:8000",
) -> None:
    """Write one link per participant (P00001, ...); the server admits no other id. Makes the pilot's key
    (FILE.key, readable by its owner only) on first use: keep it secret, it signs the links and completion codes."""
    from gf01_formal.artifacts import check_output, read_json, write_text_atomic
    from gf01_formal.web.pilot import Pilot, issued_ids, load_key, participant_sig
    from hoa.errors import Gf01Error

    check_output(output, inputs=[pilot, f"{pilot}.key"])
    if not base_url.startswith(("http://", "https://")):
        raise Gf01Error("the base URL starts with http:// or https://", field="--base-url")
    from gf01_formal.instances.model import validate_model

    spec: Pilot = validate_model(Pilot, read_json(pilot), file=str(pilot))
    key = load_key(pilot, create=True)
    base = base_url.rstrip("/")
    lines = [f"{base}/pilot?participant={pid}&sig={participant_sig(key, spec.pilot_id, pid)}"
             for pid in issued_ids(count, start)]
    # The links are the participants' credentials: readable by their owner only, like the key.
    write_text_atomic(output, "".join(line + "\n" for line in lines), mode=0o600)
    print(f"issued {count} links of pilot {spec.pilot_id} -> {output} (key: {pilot}.key)")


@pilot_app.command("check-code", short_help="Check a participant's completion code.")
def pilot_check_code_cmd(
    code: Annotated[str, typer.Argument(metavar="CODE", help="The code the participant reported.",
                                        show_default=False)],
    pilot: PilotOpt,
) -> None:
    """Say whose completion code CODE is (exit 0), or that it is no participant's (exit 1)."""
    from gf01_formal.artifacts import read_json
    from gf01_formal.instances.model import validate_model
    from gf01_formal.web.pilot import Pilot, code_participant, load_key

    spec: Pilot = validate_model(Pilot, read_json(pilot), file=str(pilot))
    who = code_participant(load_key(pilot), spec, code.strip())
    if who is None:
        print(f"not a completion code of pilot {spec.pilot_id}")
        raise typer.Exit(1)
    print(f"valid: participant {who} of pilot {spec.pilot_id} completed the study")


@pilot_app.command("reset", short_help="Let a (test) participant start the pilot afresh.")
def pilot_reset_cmd(
    participant: Annotated[str, typer.Argument(metavar="PARTICIPANT", help="The participant id, e.g. P00001.",
                                               show_default=False)],
    pilot: PilotOpt,
    runs_out: Annotated[Path, typer.Option("--runs-out", metavar="FILE", help="The runs file the server records "
                                           "to (its journal is beside it).", show_default=False)],
    force: Annotated[bool, typer.Option("--force", help="Reset even a participant with finished runs (real data): "
                                        "their records move to FILE.d/pilot-reset.jsonl.")] = False,
) -> None:
    """Forget a participant's episodes so that their link starts the pilot again (for ids the experimenter tried).
    The reset is an event of the server's journal; refused while the server runs (stop it first), and for a
    participant with finished runs unless --force."""
    from gf01_formal.artifacts import read_json
    from gf01_formal.instances.model import validate_model
    from gf01_formal.web.games import reset_participant
    from gf01_formal.web.pilot import Pilot

    spec: Pilot = validate_model(Pilot, read_json(pilot), file=str(pilot))
    done = reset_participant(runs_out, spec, participant, force=force)
    if done.episodes == 0 and done.records == 0:
        print(f"participant {participant} has not started pilot {spec.pilot_id}: nothing to reset")
        return
    moved = f"; {done.records} record{'s' if done.records != 1 else ''} moved to {done.aside}" if done.records else ""
    print(f"reset participant {participant} of pilot {spec.pilot_id}: {done.episodes} episode"
          f"{'s' if done.episodes != 1 else ''} forgotten{moved}; their link starts the pilot again")


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``pilot issue|check-code|reset`` to ``app``."""
    app.command("serve", short_help="Play GF-01-R1 in the browser (human play, pilots, replay).")(serve_cmd)
    app.add_typer(pilot_app, name="pilot")
