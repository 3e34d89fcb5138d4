"""CLI commands for instances: generate, import peer, import hoa, split, split-policy-check, export-schemas."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from gf01_formal.artifacts import canonical_json, read_json
from gf01_formal.instances import SPLITS, export_schemas
from hoa.errors import Gf01Error

#: The ``gf01 import ...`` group; other modules may add their importers to it.
import_app = typer.Typer(help="Import instances from other formats.", no_args_is_help=True)

OutOpt = Annotated[Path, typer.Option("-o", "--output", help="where to write (atomically)")]


def generate_cmd(
    output: OutOpt,
    seed: Annotated[int, typer.Option(help="the generator seed (>= 0)")] = 0,
    count: Annotated[int, typer.Option(help="number of instance slots")] = 200,
    cfg: Annotated[Path | None, typer.Option(help="generator config JSON (see docs/instances.md)")] = None,
    split: Annotated[str | None, typer.Option(help=f"label every instance with a split ({', '.join(SPLITS)})")] = None,
    jobs: Annotated[int, typer.Option(help="worker processes (the output does not depend on it)")] = 2,
) -> None:
    """Generate a bundle of solver-certified instances (bit-identical for the same seed, cfg and version)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from gf01_formal.generator import generate, load_config, summary
    from gf01_formal.instance_io import save_artifact

    if split is not None and split not in SPLITS:
        raise Gf01Error(f"unknown split {split!r} (expected one of {', '.join(SPLITS)})", field="--split")
    config = load_config(read_json(cfg) if cfg else None, file=str(cfg) if cfg else None)
    console = Console(stderr=True)
    with Progress(
        TextColumn("generate"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, disable=not console.is_terminal, transient=True,
    ) as bar:
        task = bar.add_task("generate", total=count)
        bundle = generate(seed, count, config, split_id=split, jobs=max(1, jobs),
                          progress=lambda done: bar.update(task, completed=done))
    save_artifact(output, bundle)
    info = summary(bundle)
    print(f"wrote {info['instances']} instances to {output} ({info['skipped']} slots skipped)")
    for s in bundle.skipped:
        print(f"skipped slot {s.slot} (seed {s.seed}): {canonical_json(s.reasons)}")
    print(json.dumps({k: info[k] for k in ("oracle_eff_t", "windows", "modes", "families", "single_timestep_fraction",
                                           "single_atom_fraction", "greedy_fraction")}, sort_keys=True))


def import_peer_cmd(
    bundle: Annotated[Path, typer.Argument(help="a gf01.instance_bundle.v1 file")],
    output: OutOpt,
    measure: Annotated[bool, typer.Option(help="measure the complexity knobs and certify with the solvers")] = True,
) -> None:
    """Import the peer implementation's instance bundle, keeping its instance ids."""
    from gf01_formal.importers import import_peer_bundle
    from gf01_formal.instance_io import save_artifact

    ours = import_peer_bundle(bundle, measure=measure)
    save_artifact(output, ours)
    print(f"imported {len(ours.instances)} instances to {output}")


def import_hoa_cmd(
    system: Annotated[Path, typer.Argument(help="an HOA file with one Mealy controller")],
    output: OutOpt,
    trace: Annotated[str, typer.Option(help="JSON list of {input: 0|1}, a word 'a&!b;!a&b', or a file holding one")],
    effect: Annotated[str, typer.Option(help="Boolean expression over output names")],
    t_star: Annotated[int, typer.Option("--t-star", help="target step t*")],
    mode: Annotated[str, typer.Option(help="hard or normal")] = "hard",
    window: Annotated[int | None, typer.Option(help="normal-mode window (default: w(I) of the measured knobs)")] = None,
    budget: Annotated[int | None, typer.Option(help="B_T (default T)")] = None,
    budget_atoms: Annotated[int | None, typer.Option(help="B_A (default T x |AP_in|)")] = None,
    outputs: Annotated[str | None, typer.Option(help="comma-separated outputs, if the file has no controllable-AP")]
    = None,
    measure: Annotated[bool, typer.Option(help="measure the complexity knobs and certify with the solvers")] = True,
) -> None:
    """Make an instance from any Mealy HOA file (e.g. an ltlsynt controller), a trace and an effect."""
    from gf01_formal.importers import import_hoa_instance
    from gf01_formal.instance_io import save_artifact

    try:
        text = system.read_text(encoding="utf-8")
    except OSError as ex:
        raise Gf01Error(f"cannot read: {ex.strerror or ex}", file=str(system)) from ex
    trace_text = trace
    if not trace.lstrip().startswith("[") and Path(trace).is_file():
        trace_text = Path(trace).read_text(encoding="utf-8")
    outs = [o.strip() for o in outputs.split(",") if o.strip()] if outputs else None
    inst = import_hoa_instance(text, trace=trace_text, effect=effect, t_star=t_star, mode=mode, window=window,
                               budget_timesteps=budget, budget_atoms=budget_atoms, outputs=outs,
                               source=str(system), measure=measure)
    save_artifact(output, inst)
    cert = inst.certification
    line = f"wrote instance {inst.instance_id} to {output}"
    if cert is not None:
        line += (f" (oracle Eff_t {cert.oracle_eff_t}, |M_B(I)| {cert.gold_count})" if cert.oracle_eff_t is not None
                 else " (warning: no valid certificate within B_T)")
    print(line)


def split_cmd(
    bundle: Annotated[Path, typer.Argument(help="a bundle to split")],
    output: OutOpt,
    manifest: Annotated[Path, typer.Option(help="where to write the split manifest")],
    key_file: Annotated[Path | None, typer.Option(help="the split key (a private release must supply one)")] = None,
    release: Annotated[Path | None, typer.Option(help="also write the release layout into this directory")] = None,
) -> None:
    """Assign public_dev / public_val / private_eval by a keyed hash, stratified by mode and difficulty."""
    from gf01_formal.artifacts import write_json_atomic
    from gf01_formal.instance_io import load_bundle, save_artifact
    from gf01_formal.splits import policy_check, read_key, split_bundle, write_release

    key = read_key(key_file)
    new, man = split_bundle(load_bundle(bundle), key)
    save_artifact(output, new)
    write_json_atomic(manifest, man.model_dump(mode="json"))
    if key_file is None:
        print("note: the public default split key was used; a private release must pass --key-file", file=sys.stderr)
    if release is not None:
        write_release(release, new, man)
    report = policy_check(man.model_dump(mode="json"), file=str(manifest))
    print(json.dumps({s: r["count"] for s, r in report["splits"].items()}, sort_keys=True))


def split_policy_check_cmd(
    manifest: Annotated[Path, typer.Argument(help="a split manifest (ours or gf01.split_manifest.v1)")],
    tolerance: Annotated[float | None, typer.Option(help="override the manifest's tolerance")] = None,
) -> None:
    """Check each split's fraction against gf01.split_policy.v1 (0.20/0.20/0.60, tolerance 0.05)."""
    from gf01_formal.splits import load_manifest_report

    report = load_manifest_report(manifest, tolerance)
    print(json.dumps(report, sort_keys=True))


def other_schemas() -> dict[str, dict]:
    """JSON Schemas of the generator cfg and the split manifest (declared in generator.py and splits.py)."""
    from gf01_formal.generator import GenConfig
    from gf01_formal.splits import SplitManifest

    return {"gen_cfg.v1.json": GenConfig.model_json_schema(),
            "split_manifest.v1.json": SplitManifest.model_json_schema()}


def export_schemas_cmd(
    directory: Annotated[Path, typer.Argument(help="target directory (docs/schemas)")] = Path("docs/schemas"),
) -> None:
    """Write the JSON Schemas of the instance, bundle, generator cfg and split manifest artifacts."""
    for p in export_schemas(directory, other_schemas()):
        print(p)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("generate")(generate_cmd)
    app.command("split")(split_cmd)
    app.command("split-policy-check")(split_policy_check_cmd)
    app.command("export-schemas")(export_schemas_cmd)
    import_app.command("peer")(import_peer_cmd)
    import_app.command("hoa")(import_hoa_cmd)
    app.add_typer(import_app, name="import")
