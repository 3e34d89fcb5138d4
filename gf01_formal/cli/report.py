"""Commands on results: ``report`` (stratified, with intervals), ``pilot-analyze`` (DEC-014c/d calibration audit),
``caps derive`` (diagnostic caps, DEC-022/023), ``release check`` / ``release package`` and ``campaign`` (a panel
over a bundle, locally or on Dask). Heavy libraries (statsmodels, scipy, matplotlib, dask) load inside the command
that needs them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gf01_formal.cli.common import (
    DEFAULT_MEMORY,
    MAX_COUNT,
    MAX_JOBS,
    SCORING_SECONDS,
    GoldSetOpt,
    JsonOpt,
    LimitOpt,
    ScoringMemoryOpt,
    ScoringSecondsOpt,
    SignKeyOpt,
    check_output,
    emit,
    progress_bar,
    with_adaptation_options,
)

PanelName = Literal["full", "core"]
Format = Literal["json", "md", "html"]
RunsArg = Annotated[list[Path], typer.Argument(metavar="RUNS...", help="Runs files (JSON Lines).",
                                               show_default=False)]
OutOpt = Annotated[Path | None, typer.Option("-o", "--output", metavar="FILE",
                                             help="Where to write (atomically); default: standard output.")]
PanelOpt = Annotated[PanelName, typer.Option("--panel", help="The required baseline panel of DEC-056: full "
                                             "(random, greedy, search, tool, oracle) or core (random, greedy, "
                                             "oracle).")]
AllowProvisionalOpt = Annotated[bool, typer.Option("--allow-provisional-caps", help="Accept caps derived before "
                                                   "the DEC-021 checkpoint (240 pilot instances); the report says "
                                                   "they are provisional.")]
ManifestOpt = Annotated[Path | None, typer.Option("--manifest", metavar="FILE", help="The split manifest: coverage "
                                                  "per (split, mode, track, agent).")]


def _write(path: Path | None, text: str) -> None:
    """Write ``text`` to ``path`` atomically, or to standard output."""
    from gf01_formal.artifacts import write_text_atomic

    if path is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_text_atomic(path, text)


def _format(fmt: Format | None, output: Path | None) -> str:
    if fmt is not None:
        return fmt
    suffix = output.suffix.lower() if output is not None else ""
    return {".md": "md", ".html": "html", ".htm": "html"}.get(suffix, "json")


def parse_price(text: str) -> tuple[float, float]:
    """``IN,OUT`` (prices per million input and output tokens) as two finite non-negative numbers."""
    import math

    from hoa.errors import Gf01Error, quote

    parts = text.split(",")
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 2 or not all(math.isfinite(v) and v >= 0 for v in values):
        raise Gf01Error(f"{quote(text, 40)} is not IN,OUT (two non-negative prices per million tokens, e.g. "
                        "0.15,0.60)", field="--price-per-mtok")
    return values[0], values[1]


def report_cmd(
    runs: RunsArg,
    manifest: ManifestOpt = None,
    official: Annotated[bool, typer.Option("--official", help="Refuse unless every run passes validation against "
                                           "--bundle and the --panel covers every slice of --manifest.")] = False,
    bundle: Annotated[Path | None, typer.Option("--bundle", metavar="BUNDLE", help="The bundle the runs were played "
                                                "on (--official re-verifies every run against it).")] = None,
    panel: PanelOpt = "full",
    caps: Annotated[Path | None, typer.Option("--caps", metavar="FILE", help="The caps the runs' diagnostics ran "
                                              "under (caps.json, or the campaign's campaign.json): the report "
                                              "names them, provisional or frozen.")] = None,
    allow_provisional_caps: AllowProvisionalOpt = False,
    output: Annotated[list[Path] | None, typer.Option("-o", "--output", metavar="FILE", help="Where to write "
                                                      "(atomically); repeat for several formats, each from its "
                                                      "suffix; default: standard output.")] = None,
    fmt: Annotated[Format | None, typer.Option("--format", help="json, md or html (default: from the output's "
                                               "suffix, else json).")] = None,
    price: Annotated[str | None, typer.Option("--price-per-mtok", metavar="IN,OUT", help="Price per million input "
                                              "and output tokens: the headline adds each language model's cost.")]
    = None,
    key: Annotated[Path | None, typer.Option("--key", metavar="PUBKEY", help="With --official: the evaluator's "
                                             "Ed25519 public key; every run must be signed by it, unchanged (as "
                                             "gf01 validate --key).")] = None,
    private_results: Annotated[Path | None, typer.Option("--private-results", metavar="FILE", help="A public "
                                                         "package's private_eval.results.json: the report starts "
                                                         "with its private_eval headline (the key holder's runs, "
                                                         "attested; docs/release.md).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Report runs grouped by every spec §7.4 dimension, mode and agent, with 95 % intervals and their methods."""
    from gf01_formal.extras import require

    require("report", "gf01 report")
    from gf01_formal.artifacts import pretty_json
    from gf01_formal.report.build import build_report, official_checks, official_inputs
    from gf01_formal.report.coverage import load_manifest
    from gf01_formal.report.load import load_runs
    from hoa.errors import Gf01Error

    outputs: list[Path | None] = list(output) if output else [None]
    if key is not None and not official:
        raise Gf01Error("--key checks the runs' signatures as part of --official: give --official", field="--key")
    if len(outputs) > 1 and fmt is not None:
        raise Gf01Error("with several outputs each format comes from its file's suffix: drop --format",
                        field="--format")
    for path in outputs:
        if path is not None:
            check_output(path, inputs=[*runs, manifest, bundle, caps, key, private_results])
    if official:
        from gf01_formal.report.release import refuse_core

        refuse_core(panel, "report --official")
    capset = None
    if caps is not None:
        from gf01_formal.report.caps import load_caps

        capset = load_caps(caps)
        if official:
            capset.refuse_provisional(allow_provisional_caps, "report --official")
    if official:
        official_inputs(manifest, bundle)
    section = None
    if private_results is not None:  # read before the runs: a bad file is said before the report's statistics load
        from gf01_formal.report.release import private_section

        section = private_section(private_results)
        if section is None:
            raise Gf01Error("holds no private_eval headline (a package made before it carried one): leave out "
                            "--private-results", file=str(private_results))
    prices = None if price is None else parse_price(price)
    man = None if manifest is None else load_manifest(manifest)
    loaded = load_runs(runs)
    report = build_report(loaded, manifest=man, panel=panel if man is not None else None, price=prices,
                          caps=None if capset is None else capset.report_section())
    if official:
        official_checks(report, runs, bundle=None if bundle is None else str(bundle), manifest=man, panel=panel,
                        key=key)
    if section is not None:
        from gf01_formal.report.release import with_private

        report = with_private(report, section)
    written = []
    for path in outputs:
        kind = _format(fmt, path)
        if kind == "json":
            text = pretty_json(report)
        elif kind == "md":
            from gf01_formal.report.render import markdown

            text = markdown(report)
        else:
            from gf01_formal.report.render import html_page

            text = html_page(report)
        _write(path, text)
        if path is not None:
            written.append({"file": str(path), "format": kind})
    if not written:
        return
    record = {"files": written, "runs": report["inputs"]["runs"], "groups": len(report["groups"]),
              "official": official}

    def human(r: dict[str, Any]) -> list[str]:
        note = " (official: validated, panel covered)" if r["official"] else ""
        return [f"{r['runs']} runs in {r['groups']} groups -> {f['file']} ({f['format']}){note}" for f in r["files"]]

    emit(record, json_out, human)


def pilot_cmd(
    runs: RunsArg,
    bundle: Annotated[Path, typer.Option("--bundle", metavar="BUNDLE", help="The bundle the runs were played on "
                                         "(its complexity knobs).")],
    output: OutOpt = None,
    plots: Annotated[Path | None, typer.Option("--plots", metavar="DIR", help="Also draw Score_C against each knob "
                                               "(SVG files) into DIR.")] = None,
    reference: Annotated[str | None, typer.Option("--reference", metavar="AGENT[#HASH]", help="Measure "
                                                  "discrimination on this agent spec only (default: every "
                                                  "non-baseline agent spec and the people in the runs).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """The DEC-014c/d calibration audit: the shortcut check on greedy, the discrimination check (z(I) quartiles) on
    the population calibrated for, the checkpoint at N = 240, per-knob diagnostics (DEC-058) and the
    recommendation, each fired trigger explained in one sentence."""
    from gf01_formal.extras import require

    require("report", "gf01 pilot-analyze")
    from gf01_formal.artifacts import pretty_json, write_text_atomic
    from gf01_formal.instances.io import load_bundle
    from gf01_formal.report.load import load_runs
    from gf01_formal.report.pilot import analyze, knob_plots, pilot_notes

    if output is not None:
        check_output(output, inputs=[*runs, bundle])
    if plots is not None:
        check_output(plots / "score_c-by-z.svg", inputs=[*runs, bundle])
    analysis = analyze(load_runs(runs), load_bundle(bundle), reference=reference)
    if plots is not None:
        for name, svg in sorted(knob_plots(analysis).items()):
            write_text_atomic(plots / name, svg)
    if output is None and json_out:  # the whole analysis, for a program
        _write(None, pretty_json(analysis))
        return
    if output is not None:
        _write(output, pretty_json(analysis))
    rec = analysis["recommendation"]
    record = {"file": None if output is None else str(output), "recommendation": rec["decision"],
              "reason": rec["reason"], "provisional": rec["provisional"],
              "discrimination_fired": analysis["discrimination"]["fired"],
              "discrimination_assessed": analysis["discrimination"]["assessed"],
              "shortcut_fired": analysis["shortcut"]["fired"], "sample": analysis["sample"],
              "triggers": [t["sentence"] for t in analysis["triggers"]], "notes": pilot_notes(analysis)}
    emit(record, json_out, lambda r: pilot_summary(analysis, r["file"]))


def pilot_summary(analysis: dict[str, Any], file: str | None) -> list[str]:
    """A few lines a person reads at the terminal: the recommendation, one sentence per fired trigger, what could not
    be assessed, the sample, and each discrimination group's Score_C per z(I) quartile; the whole analysis is in
    ``file`` (-o) or under --json."""
    from gf01_formal.report.pilot import pilot_notes

    rec, sample = analysis["recommendation"], analysis["sample"]
    lines = [f"{rec['decision']}{' (provisional)' if rec['provisional'] else ''}"]
    lines += [f"trigger: {t['sentence']}" for t in analysis["triggers"]]
    lines += [f"note: {n}" for n in pilot_notes(analysis)]
    if not analysis["triggers"]:
        lines.append(rec["reason"])
    lines.append(f"sample: {sample['instances']} of {sample['target']} instances"
                 + ("" if sample["reached"] else f" ({sample['remaining']} to go)"))
    for g in analysis["discrimination"]["groups"]:
        quarts = [q for q in g["quartiles"] if q["score_c"]["n"]]
        if quarts:
            lines.append(f"{g['agent']} ({g['eval_track']}) Score_C by z(I) quartile: " + ", ".join(
                f"Q{q['quartile']} {q['score_c']['k']}/{q['score_c']['n']}" for q in quarts))
    lines.append(f"-> {file}" if file is not None else "the whole analysis: -o FILE or --json")
    return lines


caps_app = typer.Typer(name="caps", help="Optional-diagnostic caps (DEC-019..023).", no_args_is_help=True,
                       add_completion=False, rich_markup_mode=None)


@caps_app.command("derive", short_help="Derive P_ref / A_ref caps from metered pilot runs.")
def caps_derive_cmd(
    runs: RunsArg,
    output: Annotated[Path, typer.Option("-o", "--output", metavar="FILE", help="Where to write caps.json.")],
    json_out: JsonOpt = False,
) -> None:
    """Derive the diagnostic caps from pilot runs by the dual-threshold rule (p = 0.90, k = 3; docs/reports.md)."""
    from gf01_formal.artifacts import write_json_atomic
    from gf01_formal.report.caps import derive
    from gf01_formal.report.load import load_runs

    check_output(output, inputs=runs)
    caps = derive(load_runs(runs))
    write_json_atomic(output, caps)
    record = {"file": str(output), "backend": caps["backend"], "sample": caps["sample"],
              **{r: v["cap"] for r, v in {**caps["platform"], **caps["algorithmic"]}.items()}}

    def human(r: dict[str, Any]) -> list[str]:
        caps_text = ", ".join(f"{k} {'-' if r[k] is None else r[k]}" for k in ("seconds", "memory_kib", "conflicts",
                                                                             "nodes"))
        return [f"caps from {r['sample']['runs']} metered diagnostics ({r['backend']}): {caps_text} -> {r['file']}"]

    emit(record, json_out, human)


release_app = typer.Typer(name="release", help="Publication checks and packages.", no_args_is_help=True,
                          add_completion=False, rich_markup_mode=None)
PreviousOpt = Annotated[Path | None, typer.Option("--previous", metavar="PATH", help="The previous release (its "
                                                  "directory or split_manifest.json), for the rotation check.")]
HolderOpt = Annotated[bool, typer.Option("--holder", help="The split-key holder's own release, private runs "
                                          "included (never to be published; docs/release.md).")]
PreviousKeyOpt = Annotated[Path | None, typer.Option("--key-file", metavar="FILE", help="The previous release's split "
                                                     "key: its private instances are committed under it, and "
                                                     "rotation needs it to match them.")]
ProvisionalCapsOpt = Annotated[bool, typer.Option("--allow-provisional-caps", help="State that the release's "
                                                  "diagnostic caps are provisional (before the DEC-021 checkpoint); "
                                                  "without it such a release fails the caps check.")]


def _previous_key(key_file: Path | None) -> bytes | None:
    from gf01_formal.instances.splits import read_key

    return None if key_file is None else read_key(key_file)


@release_app.command("check", short_help="Check a release directory (split policy, rotation, coverage).")
def release_check_cmd(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="The release directory or package.",
                                              show_default=False)],
    previous: PreviousOpt = None,
    panel: PanelOpt = "full",
    holder: HolderOpt = False,
    key_file: PreviousKeyOpt = None,
    allow_provisional_caps: ProvisionalCapsOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Check the split policy (DEC-054), rotation against a previous release, that report.json is the report of the
    runs and that it and report.md / report.html are byte for byte the report computed again from the runs, that
    the required panel covers every (split, mode) slice, and (unless --holder) that nothing in it regenerates or
    answers a private_eval instance; exit 2 if a check fails. The core panel is refused (DEC-056)."""
    from gf01_formal.extras import require

    require("report", "gf01 release check")  # it computes the report again
    from gf01_formal.report.release import check, failed_names

    result = check(directory, previous=previous, panel=panel, holder=holder, key=_previous_key(key_file),
                   provisional_caps=allow_provisional_caps)

    def human(r: dict[str, Any]) -> list[str]:
        return [f"{c['name']}: {'ok' if c['ok'] else 'FAILED'}" + (f" (skipped: {c['note']})" if c.get("skipped")
                                                                    else "") for c in r["checks"]]

    emit(result, json_out, human)
    if not result["ok"]:
        print(f"gf01: error: release check failed: {failed_names(result)}", file=sys.stderr, flush=True)
        raise typer.Exit(2)


@release_app.command("package", short_help="Package a release with sha256 sums and rerun instructions.")
def release_package_cmd(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="The release directory.", show_default=False)],
    output: Annotated[Path, typer.Option("-o", "--output", metavar="DIR", help="The package directory (new).")],
    previous: PreviousOpt = None,
    panel: PanelOpt = "full",
    holder: HolderOpt = False,
    key_file: PreviousKeyOpt = None,
    allow_provisional_caps: ProvisionalCapsOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Package a release that passes its checks with SHA256SUMS, package.json, RERUN.md and rerun.sh (which
    reproduces every table and figure of its report from the package alone). Public by default: public instances
    and runs in full, private_eval as aggregates and commitments only; --holder packages everything."""
    from gf01_formal.extras import require

    require("report", "gf01 release package")  # it checks the release first
    from gf01_formal.report.release import package

    check_output(output / "package.json")
    result = package(directory, output, panel=panel, previous=previous, holder=holder, key=_previous_key(key_file),
                     provisional_caps=allow_provisional_caps)
    emit(result, json_out, lambda r: [f"packaged {r['files']} files ({r['kind']}) -> {r['dir']} (check: sh "
                                      f"{r['dir']}/rerun.sh)"])


@release_app.command("reveal", short_help="Check a reveal (key, private bundle, runs) against a package's "
                     "commitments.")
def release_reveal_cmd(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="The public package (or its artifacts).",
                                              show_default=False)],
    bundle: Annotated[Path, typer.Option("--bundle", metavar="FILE", help="The revealed split bundle.")],
    key_file: Annotated[Path, typer.Option("--key-file", metavar="FILE", help="The revealed split key.")],
    runs: Annotated[Path | None, typer.Option("--runs", metavar="FILE", help="The revealed full runs file.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Check revealed private artifacts against the commitments a public package published; exit 2 on a mismatch."""
    from gf01_formal.report.release import reveal

    result = reveal(directory, bundle, key_file, runs)
    emit(result, json_out, lambda r: [f"{c['name']}: {'ok' if c['ok'] else 'MISMATCH'}" for c in r["checks"]])
    if not result["ok"]:
        bad = ", ".join(c["name"] for c in result["checks"] if not c["ok"])
        print(f"gf01: error: the reveal does not match the package's commitments: {bad}", file=sys.stderr, flush=True)
        raise typer.Exit(2)


@with_adaptation_options
def campaign_cmd(
    bundle: Annotated[Path, typer.Argument(metavar="BUNDLE", help="The bundle to play.", show_default=False)],
    output: Annotated[Path, typer.Option("-o", "--output", metavar="DIR", help="The campaign directory.")],
    panel: PanelOpt = "full",
    agents: Annotated[list[str] | None, typer.Option("--agents", metavar="A,B", help="Play these built-in agents "
                                                     "instead of the whole panel (comma-separated or repeated; "
                                                     "llm and --agent-cmd programs: gf01 evaluate).")] = None,
    executor: Annotated[str, typer.Option("--executor", metavar="local|threads|dask://HOST:PORT", help="Where "
                                          "episodes run: a local process pool, threads of this process, or an "
                                          "existing Dask scheduler.")] = "local",
    jobs: Annotated[int | None, typer.Option("--jobs", metavar="N", min=1, max=MAX_JOBS,
                                             help="Local worker processes (default: "
                                             "every core).")] = None,
    seed: Annotated[int, typer.Option("--seed", metavar="N", min=0, help="The runs' seed.")] = 0,
    subset_min: Annotated[bool, typer.Option("--subset-min", help="Run the SubsetMin diagnostic, metered (a pilot "
                                             "for 'gf01 caps derive').")] = False,
    caps: Annotated[Path | None, typer.Option("--caps", metavar="FILE", help="Run the diagnostic under these caps "
                                              "(caps.json).")] = None,
    allow_provisional_caps: AllowProvisionalOpt = False,
    diagnostic_backend: Annotated[Literal["sat", "bdd"], typer.Option("--diagnostic-backend", help="With "
                                  "--subset-min: the backend whose work is metered (conflicts or BDD nodes).")]
    = "sat",
    batch: Annotated[int, typer.Option("--batch", metavar="N", min=1, max=MAX_COUNT, help="Instances per task.")] = 4,
    gold_set: GoldSetOpt = "M",
    memory: ScoringMemoryOpt = DEFAULT_MEMORY,
    scoring_seconds: ScoringSecondsOpt = SCORING_SECONDS,
    manifest: ManifestOpt = None,
    sign_key: SignKeyOpt = None,
    limit: LimitOpt = None,
    adaptation_flags: Any = None,
    json_out: JsonOpt = False,
) -> None:
    """Play a DEC-056 panel over every instance, then validate, report and analyse; resumable (run it again)."""
    from gf01_formal.artifacts import check_output_dir
    from gf01_formal.extras import require

    require("report", "gf01 campaign")  # it ends with the report and the pilot analysis
    if executor != "local":
        require("cluster", f"gf01 campaign --executor {executor}")
    from gf01_formal.campaign.run import ARTIFACTS, run_campaign
    from gf01_formal.report.caps import CapSet, load_caps

    check_output_dir(output, inputs=[bundle, caps, manifest, sign_key], names=ARTIFACTS)
    check_output(output / "runs.jsonl", reread=True)
    adaptation = adaptation_flags.declared()
    names = [n.strip() for a in agents or [] for n in a.split(",") if n.strip()] or None
    cap_json = None
    if caps is not None:
        capset = load_caps(caps)
        capset.refuse_provisional(allow_provisional_caps, "campaign --caps")
        cap_json = capset.to_json()
    elif subset_min:
        cap_json = CapSet(backend=diagnostic_backend).to_json()
    with progress_bar("runs") as bar:
        summary = run_campaign(bundle, output, panel=panel, agents=names, executor=executor, jobs=jobs, seed=seed,
                               caps=cap_json, gold_set=gold_set, memory=memory, scoring_seconds=scoring_seconds,
                               batch=batch, manifest=manifest, progress=bar, adaptation=adaptation, sign_key=sign_key,
                               limit=limit)
    record = summary.to_json()

    def human(r: dict[str, Any]) -> list[str]:
        lines = [f"{r['played']} runs played, {r['skipped']} already done -> {r['dir']}"]
        if r["repaired_bytes"]:
            lines.append(f"note: cut a torn last record ({r['repaired_bytes']} bytes) left by an interrupted run")
        if r["missing_from_panel"]:
            lines.append(f"panel {r['panel']} without {', '.join(r['missing_from_panel'])}: not an official campaign")
        lines += [f"status {s}: {n}" for s, n in r["statuses"].items() if s != "completed"]
        lines.append("validation: ok" if not r["violations"] else f"validation: {r['violations']} violations")
        lines.append(PLAIN_ENDING.get(r["recommendation"], f"pilot analysis: {r['recommendation']}")
                     + f" (details: {r['dir']}/analysis.json)")
        lines += [f"  trigger: {t}" for t in r["triggers"]]
        lines += [f"  note: {n}" for n in r["pilot_notes"]]
        return lines

    emit(record, json_out, human)
    if summary.violations:
        print(f"gf01: error: {summary.violations} run(s) fail validation (see {output}/validation.json)",
              file=sys.stderr, flush=True)
        raise typer.Exit(2)


#: The campaign's last line, in plain words: what the pilot analysis found and what to do (docs/reports.md).
PLAIN_ENDING = {
    "keep_coefficients": "pilot analysis: the instances tell stronger agents from weaker ones as intended, and no "
                         "shortcut wins: keep the difficulty settings",
    "recalibrate_normal_window": "pilot analysis: the instances do not separate easy from hard as intended (the "
                                 "triggers below): recalibrate the normal-mode window before publishing results",
    None: "pilot analysis: not run",
}


def register(app: typer.Typer) -> None:
    """Add ``report``, ``pilot-analyze``, ``caps derive``, ``release check|package`` and ``campaign``."""
    app.command("report", short_help="Stratified report with 95 % intervals (json, md or html).")(report_cmd)
    app.command("pilot-analyze", short_help="Calibration audit of a pilot (DEC-014c/d, DEC-058).")(pilot_cmd)
    app.command("campaign", short_help="Play a baseline panel over a bundle (local or Dask), report it.")(
        campaign_cmd)
    app.add_typer(caps_app, name="caps")
    app.add_typer(release_app, name="release")
