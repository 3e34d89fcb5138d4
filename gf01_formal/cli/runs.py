"""Commands on runs: ``evaluate`` (play a bundle with agents, resumable), ``validate`` (policy checks and
re-verification of run records), ``import runs`` (the peer's run records, re-scored) and ``import inspect`` (an
inspect_ai eval log, :mod:`gf01_formal.cli.llm`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gf01_formal.cli.common import (
    DEFAULT_MEMORY,
    MAX_JOBS,
    MAX_SECONDS,
    SCORING_SECONDS,
    AgentNameOpt,
    AgentNetworkOpt,
    AgentOutputOpt,
    GoldSetOpt,
    JsonOpt,
    LimitOpt,
    OutputOpt,
    SandboxOpt,
    ScoringMemoryOpt,
    ScoringSecondsOpt,
    SignKeyOpt,
    StepTimeoutOpt,
    check_output,
    cmd_params,
    emit,
    progress_bar,
    with_adaptation_options,
)
from gf01_formal.cli.llm import (
    DEFAULT_MAX_PROVIDER_FAILURES,
    ApiKeyEnvOpt,
    BaseUrlOpt,
    MaxProviderFailuresOpt,
    MaxTokensOpt,
    ModelOpt,
    RequestTimeoutOpt,
    TemperatureOpt,
    TokenProgress,
    import_inspect_cmd,
    with_llm_options,
)

TrackName = Literal["EVAL-CB", "EVAL-TA", "EVAL-OC"]
BundleOpt = Annotated[
    Path | None, typer.Option("--bundle", metavar="BUNDLE", help="The bundle the runs were played on.")
]


@with_adaptation_options
def evaluate_cmd(
    source: Annotated[
        Path | None, typer.Argument(metavar="BUNDLE", help="A bundle (or one instance file) to play (none with "
                                    "--remote: the server holds the instances).", show_default=False)
    ] = None,
    output: OutputOpt = None,  # type: ignore[assignment]
    agent: Annotated[
        list[str] | None,
        typer.Option("--agent", metavar="NAME", help="A built-in agent (random, greedy, search, tool, oracle), or "
                     "llm (a model behind an OpenAI-compatible endpoint: --model, docs/llm.md); repeat for a panel."),
    ] = None,
    agent_cmd: Annotated[
        str | None,
        typer.Option("--agent-cmd", metavar="CMD", help="An external agent: a command speaking gf01.agent.v1 on "
                     "stdin/stdout (docs/agent-protocol.md)."),
    ] = None,
    track: Annotated[
        TrackName | None, typer.Option("--track", help="The evaluation track (default: the agent's; EVAL-CB for "
                                       "--agent-cmd).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", metavar="N", min=0, help="The runs' seed (part of the run id).")] = 0,
    jobs: Annotated[int, typer.Option("--jobs", metavar="N", min=1, max=MAX_JOBS, help="Worker processes (threads with "
                                      "--agent llm).")] = 1,
    executor: Annotated[str | None, typer.Option(
        "--executor", metavar="local|threads|dask://HOST:PORT", help="Where episodes run: a local process pool of "
        "--jobs workers (the default; threads with --agent llm), --jobs threads of this process (agents that wait "
        "on I/O), or an existing Dask scheduler.")] = None,
    step_timeout: StepTimeoutOpt = 30.0,
    subset_min: Annotated[
        bool, typer.Option("--subset-min", help="Also run the exact SubsetMin diagnostic on each certificate.")
    ] = False,
    diagnostic_seconds: Annotated[
        float | None, typer.Option("--diagnostic-seconds", metavar="S", min=0.0, max=MAX_SECONDS,
                                   help="Cap of each diagnostic; past it the diagnostic is 'infeasible'.")
    ] = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    api_key_env: ApiKeyEnvOpt = "OPENAI_API_KEY",
    temperature: TemperatureOpt = None,
    max_tokens: MaxTokensOpt = None,
    request_timeout: RequestTimeoutOpt = 60.0,
    max_provider_failures: MaxProviderFailuresOpt = DEFAULT_MAX_PROVIDER_FAILURES,
    agent_name: AgentNameOpt = None,
    limit: LimitOpt = None,
    sandbox: SandboxOpt = "auto",
    agent_network: AgentNetworkOpt = False,
    agent_output: AgentOutputOpt = None,
    adaptation_flags: Any = None,
    gold_set: GoldSetOpt = "M",
    memory: ScoringMemoryOpt = DEFAULT_MEMORY,
    scoring_seconds: ScoringSecondsOpt = SCORING_SECONDS,
    sign_key: SignKeyOpt = None,
    remote: Annotated[str | None, typer.Option(
        "--remote", metavar="URL", help="Play on an evaluation server's sealed split (gf01 eval serve; docs/"
        "remote.md): the agent runs here, the episodes there; -o gets the runs' signed receipts.")] = None,
    token: Annotated[str | None, typer.Option(
        "--token", metavar="TOKEN", envvar="GF01_TOKEN", show_envvar=True,
        help="Your team's token for --remote (better in the environment variable than on the command line).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Play every instance with every agent, appending one run record per episode to the output as it finishes.

    Run again after an interruption: finished runs are skipped by run id, the rest are played.
    """
    from hoa.errors import Gf01Error

    if output is None:
        raise Gf01Error("give the output file (-o FILE)", field="--output")
    if remote is not None:
        _check_remote(source, remote, token, {
            "--jobs": jobs != 1, "--executor": executor is not None, "--subset-min": subset_min,
            "--diagnostic-seconds": diagnostic_seconds is not None, "--sign-key": sign_key is not None,
            "--gold-set": gold_set != "M"})
    elif source is None:
        raise Gf01Error("give the bundle to play (BUNDLE), or an evaluation server (--remote URL)", field="BUNDLE")
    from gf01_formal.campaign.evaluate import Settings, evaluate
    from gf01_formal.campaign.executors import parse_executor

    kind, address = (None, None) if executor is None else parse_executor(executor)
    if kind == "dask":
        from gf01_formal.extras import require

        require("cluster", f"gf01 evaluate --executor {executor}")
    check_output(output, inputs=[source, sign_key], reread=True)
    if agent_output is not None:
        from gf01_formal.agents.subprocess_agent import check_output_file

        check_output_file(agent_output, [source, output, sign_key])
    adaptation = adaptation_flags.declared()
    if agent_name is not None:
        from gf01_formal.agents import check_label
        from hoa.errors import Gf01Error

        check_label(agent_name)
        if (agent_cmd is None) == ("llm" not in (agent or [])):
            raise Gf01Error("--agent-name names the one --agent-cmd program or the --agent llm model",
                            field="--agent-name")
    specs = with_llm_options(agent_specs(agent or [], agent_cmd, track, step_timeout, sandbox, agent_network,
                                         agent_output, agent_name if agent_cmd is not None else None),
                             model=model,
                             base_url=base_url, api_key_env=api_key_env, temperature=temperature,
                             max_tokens=max_tokens, request_timeout=request_timeout,
                             label=agent_name if agent_cmd is None else None)
    specs = [s.adapted(adaptation) for s in specs]
    from gf01_formal.agents import check, check_hidden

    for spec in specs:  # before any episode: an agent that cannot be played is a user error, not 100 agent errors
        check(spec)
        if remote is None:  # the sandbox must not show the bundle, the runs file or the key to the program
            check_hidden(spec, [source, output, sign_key])
    if any(s.name == "llm" for s in specs):
        from gf01_formal.agents.llm import LLMConfig, preflight

        # One request now: a wrong or dead endpoint is one line in seconds, not every run's retries.
        for config in sorted({LLMConfig.from_params(s.params) for s in specs if s.name == "llm"}, key=repr):
            preflight(config)
    if remote is not None and token:
        _evaluate_remote(remote, token, specs, output, seed=seed, limit=limit, json_out=json_out)
        return
    settings = Settings(seed=seed, subset_min=subset_min, diagnostic_seconds=diagnostic_seconds, gold_set=gold_set,
                        memory=memory, scoring_seconds=scoring_seconds)
    failed: list[str] = []  # the first run that did not complete: the cause shown when none completed

    def first_failure(rec: Any) -> None:
        if rec.status != "completed" and not failed:
            failed.append(f"{rec.agent_name} on {rec.instance_id}: {rec.status}: {rec.error}")

    if any(s.name == "llm" for s in specs):  # I/O bound: threads, and the tokens spent on the bar
        with TokenProgress() as tok:
            summary = evaluate(source, specs, output, settings=settings, jobs=jobs, progress=tok.progress,
                               threads=True, on_record=lambda rec: (tok.on_record(rec), first_failure(rec)),
                               executor=kind, address=address, sign_key=sign_key,
                               max_provider_failures=max_provider_failures, limit=limit)
        record = {"file": str(output), **summary.to_json(), "tokens": dict(sorted(tok.tokens.items()))}
    else:
        with progress_bar("runs") as bar:
            summary = evaluate(source, specs, output, settings=settings, jobs=jobs, progress=bar, executor=kind,
                               address=address, on_record=first_failure, sign_key=sign_key,
                               max_provider_failures=max_provider_failures, limit=limit)
        record = {"file": str(output), **summary.to_json()}

    def human(r: dict[str, Any]) -> list[str]:
        lines = [f"{r['played']} runs played, {r['skipped']} already done -> {r['file']}"]
        if r["repaired_bytes"]:
            lines.append(f"note: cut a torn last record ({r['repaired_bytes']} bytes) left by an interrupted run")
        lines += [f"{a}: Score_C {v['certified']}/{v['runs']}" for a, v in r["score_c"].items()]
        lines += [f"status {s}: {n}" for s, n in r["statuses"].items() if s != "completed"]
        if "tokens" in r:
            t = r["tokens"]
            unknown = f", unknown for {t['unknown_runs']} runs" if t.get("unknown_runs") else ""
            lines.append(f"tokens: {t.get('input_tokens', 0)} in, {t.get('output_tokens', 0)} out{unknown} "
                         f"({t.get('calls', 0)} requests, {t.get('retries', 0)} retried)")
        return lines

    emit(record, json_out, human)
    if record.get("tokens", {}).get("unknown_runs"):  # once per run set, not once per reply
        print(f"gf01: warning: the endpoint sent replies without token usage: {record['tokens']['unknown_runs']} "
              "run(s) record their tokens as unknown (null), not 0", file=sys.stderr)
    if summary.stopped is not None:  # one line: why, and that the same command resumes
        print(f"gf01: stopped: {summary.stopped}; {summary.unplayed} run{'s' if summary.unplayed != 1 else ''} not "
              "played and the failed ones are left for the same command to play, once the service is back "
              "(--max-provider-failures)", file=sys.stderr)
        raise typer.Exit(1)
    note = unscored_note(summary.statuses)
    if note is not None:  # the runs file is not complete: a script chaining `evaluate && report` must not go on
        print(f"gf01: {note}", file=sys.stderr)
        raise typer.Exit(1)
    if summary.played and not summary.statuses.get("completed"):  # e.g. an agent that cannot start
        from hoa.errors import quote

        cause = quote(failed[0], 300, bare=True) if failed else "see the runs file"
        print(f"gf01: no run completed ({summary.played} played); the first: {cause}", file=sys.stderr)
        raise typer.Exit(1)


def _check_remote(source: Path | None, remote: str | None, token: str | None, local: dict[str, bool]) -> None:
    """Refuse what ``gf01 evaluate --remote`` cannot take: a bundle (the server holds the instances), a missing
    URL or token, an option of local evaluation only."""
    from hoa.errors import Gf01Error

    if remote is None or not token:
        raise Gf01Error("--remote URL and --token TOKEN (or $GF01_TOKEN) go together",
                        field="--remote" if remote is None else "--token")
    if source is not None:
        raise Gf01Error("the server holds the instances: give no BUNDLE with --remote", field="BUNDLE")
    unsupported = [name for name, given in local.items() if given]
    if unsupported:
        raise Gf01Error(f"{unsupported[0]} is for local evaluation; the server scores and records remote runs",
                        field=unsupported[0])
    from gf01_formal.remote.client import Connection

    Connection(remote, token)  # the URL's and the token's form, before any agent starts


def _evaluate_remote(remote: str, token: str, specs: list[Any], output: Path, *, seed: int, limit: int | None,
                     json_out: bool) -> None:
    """``gf01 evaluate --remote URL --token T``: the agents play here, the episodes on the server
    (:func:`gf01_formal.remote.client.evaluate_remote`); the receipts are appended to ``output``."""
    from gf01_formal.remote.client import evaluate_remote

    with progress_bar("runs") as bar:
        summary = evaluate_remote(remote, token, specs, output, seed=seed, limit=limit, progress=bar)

    def human(r: dict[str, Any]) -> list[str]:
        return [f"{r['played']} runs played, {r['skipped']} already recorded -> receipts in {r['file']}",
                *(f"status {s}: {n}" for s, n in r["statuses"].items()), *(f"error: {e}" for e in r["errors"])]

    emit(summary, json_out, human)
    if summary["errors"]:
        print(f"gf01: {len(summary['errors'])} run(s) have no receipt; the same command run again plays them",
              file=sys.stderr)
        raise typer.Exit(1)


def unscored_note(statuses: Mapping[str, int]) -> str | None:
    """One line on the runs played now that could not be scored (``provider_error``, ``harness_error``: the
    statuses that are not final), or None when every run played was scored."""
    from gf01_formal.runs.record import FINAL_STATUSES

    # The provider's first: it is the failure a rerun is expected to fix; a harness error is ours.
    order = {"provider_error": 0, "harness_error": 1}
    left = sorted(((s, n) for s, n in statuses.items() if s not in FINAL_STATUSES and n),
                  key=lambda sn: (order.get(sn[0], 2), sn[0]))
    if not left:
        return None
    (s0, n0), *rest = left
    counts = " and ".join([f"{n0} run{'s' if n0 != 1 else ''} ended {s0}", *(f"{n} {s}" for s, n in rest)])
    them = "it" if sum(n for _, n in left) == 1 else "them"
    return f"{counts}, not scored: the same command run again plays {them} again (finished runs are skipped)"


def agent_specs(names: list[str], cmd: str | None, track: str | None, step_timeout: float, sandbox: str = "auto",
                network: bool = False, output: Path | None = None, label: str | None = None) -> list[Any]:
    """The agent specs of ``--agent`` (built-ins, repeatable) and ``--agent-cmd`` (with its sandbox and, when given,
    its ``--agent-name`` ``label``)."""
    from gf01_formal.agents import BUILTIN, default_track
    from gf01_formal.agents.base import AgentSpec
    from hoa.errors import Gf01Error

    if not names and cmd is None:
        raise Gf01Error("name an agent: --agent NAME (repeatable) or --agent-cmd CMD", field="--agent")
    specs = []
    for name in names:
        if name == "cmd":
            raise Gf01Error("an external agent is given by its command: --agent-cmd CMD", field="--agent")
        own = default_track(name)
        if track is not None and not BUILTIN[name].plays(track):
            raise Gf01Error(f"agent {name} plays on {own}, not {track}", field="--track")
        specs.append(AgentSpec(name, own if track is None or track == own else track))
    if cmd is not None:
        if not cmd.strip():
            raise Gf01Error("the agent command is empty", field="--agent-cmd")
        specs.append(AgentSpec("cmd", track or "EVAL-CB", cmd_params(cmd, step_timeout, sandbox, network, output,
                                                                      label)))
    if len({s.digest for s in specs}) != len(specs):
        raise Gf01Error("the same agent is named twice", field="--agent")
    return specs


def validate_cmd(
    runs: Annotated[list[Path], typer.Argument(metavar="RUNS...", help="Runs files (JSON Lines).")],
    bundle: BundleOpt = None,
    official: Annotated[
        bool, typer.Option("--official", help="Publication rules: the bundle is required, every run finished and "
                           "every EVAL-TA run's planner log is in the side directory.")
    ] = False,
    diagnostic_seconds: Annotated[
        float | None, typer.Option("--diagnostic-seconds", metavar="S", min=0.0,
                                   help="Cap of re-deciding each exact SubsetMin diagnostic (with --bundle; default "
                                        "10); past it, a note says it was not re-checked.")
    ] = None,
    pilot: Annotated[
        list[Path] | None, typer.Option("--pilot", metavar="FILE", help="With --official: a pilot file (its key "
                                        "FILE.key beside it) whose participants' runs are checked as issued; "
                                        "repeat for several pilots.")
    ] = None,
    gold_set: Annotated[
        Literal["M", "MB"] | None,
        typer.Option("--gold-set", help="Require every scored record's best match to be ranked in this set (M: "
                     "M(I); MB: M_B(I)); --official requires M. Re-scoring uses each record's own gold_set.")
    ] = None,
    key: Annotated[
        Path | None, typer.Option("--key", metavar="PUBKEY", help="The evaluator's Ed25519 public key (KEY.pub of "
                                  "gf01 key new --kind signing): every record must be signed by it, unchanged.")
    ] = None,
    scoring_seconds: Annotated[
        float, typer.Option("--scoring-seconds", metavar="S", min=0.001, max=MAX_SECONDS,
                            help="With --bundle: time limit of re-scoring one record (wall seconds, its exact "
                                 "queries together); past it the record is not re-scored: a note, a violation with "
                                 "--official.")
    ] = SCORING_SECONDS,
    json_out: JsonOpt = False,
) -> None:
    """Check run records against the policies (track, tools, access, adaptation, renderer, protocol, diagnostic,
    step log) and, with --bundle, re-verify every certificate to its recorded scores; exit 2 if anything is wrong."""
    from gf01_formal.runs.validate import check_runs
    from solvers.limits import Limits

    found = check_runs(runs, bundle=None if bundle is None else str(bundle), official=official,
                       recheck_limits=None if diagnostic_seconds is None else Limits(seconds=diagnostic_seconds),
                       issued=_issued_checker(pilot or []), gold_set=gold_set, key=key,
                       scoring_seconds=scoring_seconds)
    violations = found.violations
    record = {"ok": not violations, "violations": [str(v) for v in violations], "notes": [str(n) for n in found.notes]}

    def human(r: dict[str, Any]) -> list[str]:
        head = r["violations"] or [f"ok: no violation in {len(runs)} runs file{'s' if len(runs) != 1 else ''}"]
        return head + [f"note: {n}" for n in r["notes"]]

    emit(record, json_out, human)
    if violations:
        files = sorted({v.file for v in violations})
        against = f" (against {bundle})" if bundle is not None else ""
        print(f"gf01: error: {len(violations)} violation{'s' if len(violations) != 1 else ''} in "
              f"{', '.join(files)}{against}", file=sys.stderr)
        raise typer.Exit(2)


def _issued_checker(pilots: list[Path]) -> Any:
    """(pilot id, participant id, signature) -> issued? (None: not one of ``pilots``), from the pilots' keys."""
    from gf01_formal.artifacts import read_json
    from gf01_formal.instances.model import validate_model
    from gf01_formal.web.pilot import Pilot, is_issued, load_key

    keys = {validate_model(Pilot, read_json(p), file=str(p)).pilot_id: load_key(p) for p in pilots}

    def issued(pilot_id: str, participant_id: str, sig: Any) -> bool | None:
        key = keys.get(pilot_id)
        return None if key is None else is_issued(key, pilot_id, participant_id, sig)

    return issued


def import_runs_cmd(
    peer_runs: Annotated[
        Path, typer.Argument(metavar="PEER_RUNS", help="The peer's run records (gf01.run_record.v1, JSON Lines).",
                             show_default=False)
    ],
    output: OutputOpt,
    bundle: Annotated[
        Path, typer.Option("--bundle", metavar="BUNDLE", help="The peer's bundle imported with 'gf01 import peer'.")
    ],
    gold_set: GoldSetOpt = "M",
    json_out: JsonOpt = False,
) -> None:
    """Import the peer's run records, re-scored by the exact checks (its claims are kept beside)."""
    from gf01_formal.artifacts import canonical_json, write_text_atomic
    from gf01_formal.runs.peer import import_peer_runs
    from hoa.errors import Gf01Error, quote

    check_output(output, inputs=[peer_runs, bundle])
    got = import_peer_runs(peer_runs, bundle, gold_set=gold_set)
    if not got.outcomes:
        # An empty runs file is not a runs file (validate and report refuse it): write none, say why.
        first = f": {got.skipped[0]}" if got.skipped else ""
        raise Gf01Error(f"no row could be imported ({len(got.skipped)} skipped){first}",
                        file=quote(str(peer_runs), 200, bare=True))
    write_text_atomic(output, "".join(canonical_json(o.record.model_dump(mode="json")) + "\n" for o in got.outcomes))
    record = {"file": str(output), "imported": len(got.outcomes), "disagreements": got.disagreements,
              "skipped": got.skipped}

    def human(r: dict[str, Any]) -> list[str]:
        lines = [f"imported {r['imported']} runs to {r['file']} ({r['disagreements']} where the peer's scores differ "
                 "from the exact ones)"]
        return lines + [f"skipped {s}" for s in r["skipped"]]

    emit(record, json_out, human)


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add ``evaluate``, ``validate`` and ``import runs``."""
    app.command("evaluate", short_help="Play a bundle with agents into a runs file (resumable).")(evaluate_cmd)
    app.command("validate", short_help="Check run records against the policies; re-verify them.")(validate_cmd)
    import_app.command("runs", short_help="Import the peer's run records, re-scored.")(import_runs_cmd)
    import_app.command("inspect", short_help="Import an inspect_ai eval log of the GF-01 task as run records.")(
        import_inspect_cmd)
