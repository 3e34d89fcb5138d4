"""``gf01 eval``: remote evaluation on a sealed split (docs/remote.md): ``serve`` (the key holder's server), ``token
issue|revoke|list`` (teams' tokens and quotas) and ``receipt verify`` (a run's signed receipt). The participant's
side is ``gf01 evaluate --remote URL --token T`` (:mod:`gf01_formal.cli.runs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gf01_formal.cli.common import JsonOpt, emit

eval_app = typer.Typer(help="Remote evaluation on a sealed split: the server, teams' tokens, receipts.",
                       no_args_is_help=True)
token_app = typer.Typer(help="Teams' tokens (stored hashed) and quotas.", no_args_is_help=True)
receipt_app = typer.Typer(help="Receipts of remotely evaluated runs.", no_args_is_help=True)

TokensOpt = Annotated[Path, typer.Option("--tokens", metavar="FILE", help="The server's tokens file (hashes only; "
                                         "mode 0600).", show_default=False)]


@eval_app.command("serve", short_help="Serve a sealed split for remote evaluation until Ctrl-C.")
def serve_cmd(
    bundle: Annotated[Path, typer.Option("--bundle", metavar="BUNDLE", help="The split's bundle (e.g. "
                                         "private_eval.json): its instances never leave the server.",
                                         show_default=False)],
    manifest: Annotated[Path, typer.Option("--manifest", metavar="FILE", help="The split manifest (gf01 split): "
                                           "the commitments every receipt names.", show_default=False)],
    runs_out: Annotated[Path, typer.Option("--runs-out", metavar="FILE", help="The runs file the server writes "
                                           "(one writer; resumable).", show_default=False)],
    tokens: TokensOpt,
    sign_key: Annotated[Path, typer.Option("--sign-key", metavar="KEYFILE", help="The evaluator's Ed25519 private "
                                           "key (gf01 key new --kind signing): records and receipts are signed with "
                                           "it.", show_default=False)],
    host: Annotated[str, typer.Option("--host", metavar="HOST", help="Address to listen on (serve the public "
                                      "behind a TLS reverse proxy).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="N", min=0, max=65535, help="Port (0: any free one).")]
    = 8000,
    step_timeout: Annotated[float, typer.Option("--step-timeout", metavar="S", min=0.1, max=86400.0,
                                                help="The per-step deadline: seconds the server waits for an agent's "
                                                "next line (then the agent's timeout fault).")] = 30.0,
    body_timeout: Annotated[float, typer.Option("--body-timeout", metavar="S", min=0.1, max=3600.0,
                                                help="Seconds a request's body may take to arrive (then 408).")]
    = 30.0,
    proxy: Annotated[str | None, typer.Option("--proxy", metavar="ADDR", help="The IP address of the reverse proxy "
                                              "in front of the server.")] = None,
) -> None:
    """Hold the split's instances and play every episode here; teams' agents send only gf01.agent.v1 lines."""
    from gf01_formal.extras import require

    require("web", "gf01 eval serve")
    require("report", "gf01 eval serve (the leaderboard)")
    import ipaddress

    from gf01_formal.artifacts import check_output
    from gf01_formal.remote.server import serve
    from gf01_formal.remote.state import EvalServer
    from gf01_formal.runs.signing import load_signer
    from hoa.errors import Gf01Error, quote

    if proxy is not None:
        try:
            ipaddress.ip_address(proxy)
        except ValueError:
            raise Gf01Error(f"{quote(proxy, 80)} is not an IP address (the proxy's, as the server sees it)",
                            field="--proxy") from None
    check_output(runs_out, inputs=[bundle, manifest, tokens, sign_key], reread=True)
    signer = load_signer(sign_key)
    server = EvalServer(bundle, manifest, runs_out, tokens, signer, step_timeout=step_timeout)
    serve(server, host=host, port=port, body_timeout=body_timeout, proxy=proxy)


@token_app.command("issue", short_help="Issue a team's token (printed once; only its hash is kept).")
def token_issue_cmd(
    tokens: TokensOpt,
    team: Annotated[str, typer.Option("--team", metavar="NAME", help="The team (what the leaderboard shows).",
                                      show_default=False)],
    episodes_per_day: Annotated[int, typer.Option("--episodes-per-day", metavar="N", min=1, max=10_000_000,
                                                  help="Episodes the team may open per UTC day.")] = 1000,
    concurrent: Annotated[int, typer.Option("--concurrent", metavar="N", min=1, max=10_000,
                                            help="Episodes the team may have open at once.")] = 4,
    oracle: Annotated[bool, typer.Option("--oracle", help="The team may play EVAL-OC, whose tool answers optimal "
                                         "certificates of the sealed instances (e.g. the operator's baselines).")]
    = False,
    panel: Annotated[bool, typer.Option("--panel", help="The operator's own team: the leaderboard shows its runs as "
                                        "the baseline panel (every other team's agents are the team's, whatever "
                                        "they are called).")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Print a new token for TEAM (give it to the team over a private channel); the team's quotas become these."""
    from gf01_formal.artifacts import check_output
    from gf01_formal.remote.tokens import TokenStore, check_team

    check_team(team)
    check_output(tokens, reread=True)
    token = TokenStore(tokens).issue(team, episodes_per_day=episodes_per_day, concurrent=concurrent, oracle=oracle,
                                     panel=panel)
    emit({"team": team, "token": token, "token_id": token.split("_")[1], "episodes_per_day": episodes_per_day,
          "concurrent": concurrent, "oracle": oracle, "panel": panel}, json_out, lambda r: [r["token"]])


@token_app.command("revoke", short_help="Revoke a token (by id) or every token of a team.")
def token_revoke_cmd(
    which: Annotated[str, typer.Argument(metavar="TOKEN_OR_TEAM", help="A token id (8 hex digits), the token, or "
                                         "a team's name.", show_default=False)],
    tokens: TokensOpt,
) -> None:
    """Revoke tokens: the server refuses them (403) from its next request."""
    from gf01_formal.artifacts import check_output
    from gf01_formal.remote.tokens import TokenStore

    check_output(tokens, reread=True)
    rows = TokenStore(tokens).revoke(which)
    print(f"revoked {len(rows)} token{'s' if len(rows) != 1 else ''}" +
          "".join(f"\n{r.token_id} ({r.team})" for r in rows))


@token_app.command("list", short_help="List the tokens: id, team, revoked, quotas (never a secret).")
def token_list_cmd(tokens: TokensOpt, json_out: JsonOpt = False) -> None:
    """The tokens file's rows (the ids and teams; the file holds no secret)."""
    from gf01_formal.remote.tokens import TokenStore

    rows = [{"token_id": r.token_id, "team": r.team, "revoked": r.revoked, "episodes_per_day": r.episodes_per_day,
             "concurrent": r.concurrent, "oracle": r.oracle, "panel": r.panel}
            for r in TokenStore(tokens, must_exist=True).rows]
    emit({"tokens": rows}, json_out, lambda r: [
        f"{t['token_id']} {t['team']}{' (revoked)' if t['revoked'] else ''}: {t['episodes_per_day']} episodes a "
        f"day, {t['concurrent']} at once{', EVAL-OC' if t['oracle'] else ''}"
        f"{', the baseline panel' if t['panel'] else ''}" for t in r["tokens"]] or ["no token"])


@receipt_app.command("verify", short_help="Check receipts against the evaluator's public key (and its runs).")
def receipt_verify_cmd(
    receipts: Annotated[Path, typer.Argument(metavar="RECEIPTS", help="A receipt, or the JSON Lines of receipts "
                                             "gf01 evaluate --remote wrote.", show_default=False)],
    key: Annotated[Path, typer.Option("--key", metavar="KEYFILE", help="The evaluator's public key (published "
                                      "with the release).", show_default=False)],
    runs: Annotated[Path | None, typer.Option("--runs", metavar="FILE", help="The server's runs file (at a reveal): "
                                              "each receipt's record must be there, unchanged.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Exit 0 when every receipt is signed by KEY (and, with --runs, names a record there as it was signed); 1 with
    one line per bad receipt otherwise."""
    from gf01_formal.remote.receipts import read_receipts, read_runs, receipt_fault, record_fault
    from gf01_formal.runs.signing import load_verifier

    verifier = load_verifier(key)
    rows = read_receipts(receipts)
    records = None if runs is None else read_runs(runs)
    faults = []
    for line, receipt in rows:
        fault = receipt_fault(receipt, verifier)
        if fault is None and records is not None:
            fault = record_fault(receipt, records)
        if fault is not None:
            faults.append({"line": line, "run_id": receipt.run_id, "fault": fault})
    result: dict[str, Any] = {"receipts": len(rows), "valid": len(rows) - len(faults), "faults": faults}
    emit(result, json_out, lambda r: [f"{r['valid']} of {r['receipts']} receipts valid"] +
         [f"{receipts}:{f['line']}: {f['run_id']}: {f['fault']}" for f in r["faults"]])
    if faults:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``eval`` group (serve, token issue|revoke|list, receipt verify) to ``app``."""
    eval_app.add_typer(token_app, name="token")
    eval_app.add_typer(receipt_app, name="receipt")
    app.add_typer(eval_app, name="eval")
