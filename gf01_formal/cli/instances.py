"""Commands that make and manage instances: ``generate``, ``import peer``, ``import hoa``, ``split``,
``split-policy-check``, ``export-schemas``. Every output path is checked before the work starts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gf01_formal.cli.common import (
    MAX_COUNT,
    MAX_JOBS,
    MAX_MEMORY,
    MAX_SECONDS,
    JsonOpt,
    OutputOpt,
    check_output,
    emit,
    progress_bar,
    warn_trivial,
    with_instance_options,
)

import_app = typer.Typer(help="Import instances from other formats.", no_args_is_help=True, rich_markup_mode=None,
                         context_settings={"max_content_width": 100})

SplitName = Literal["public_dev", "public_val", "private_eval"]
MeasureOpt = Annotated[
    bool,
    typer.Option("--measure/--no-measure", help="Measure the complexity knobs and certify with the exact solvers."),
]


def generate_cmd(
    output: OutputOpt,
    seed: Annotated[int, typer.Option("--seed", metavar="N", min=0, help="The generator seed.")] = 0,
    count: Annotated[int, typer.Option("--count", metavar="N", min=0, max=MAX_COUNT,
                                       help="Number of instance slots.")] = 200,
    cfg: Annotated[
        Path | None, typer.Option("--cfg", metavar="FILE", help="Generator config JSON (docs/instances.md).")
    ] = None,
    split: Annotated[SplitName | None, typer.Option("--split", help="Label every instance with a split.")] = None,
    key_file: Annotated[
        Path | None,
        typer.Option("--key-file", metavar="FILE",
                     help="The split key: slot seeds derive from it, so the public seed and cfg regenerate nothing "
                          "without it (a sealed release: docs/release.md)."),
    ] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", metavar="N", min=1, max=MAX_JOBS,
                          help="Worker processes (the output does not depend on it).")
    ] = 2,
    slot_seconds: Annotated[
        float | None, typer.Option("--slot-seconds", metavar="S", min=0.0, max=MAX_SECONDS,
                                   help="Time limit of each slot; past it the answer is 'unknown' (exit 3) and "
                                   "nothing is written.")
    ] = None,
    memory: Annotated[
        float | None, typer.Option("--memory", metavar="MIB", min=1.0, max=MAX_MEMORY,
                                   help="Memory limit of each slot (resident MiB of its process and of its count's "
                                   "helper process); past it the answer is 'unknown' (exit 3) and nothing is "
                                   "written.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Generate a bundle of solver-certified instances (bit-identical for the same seed, cfg and version)."""
    from gf01_formal.artifacts import read_json
    from gf01_formal.instances.generator import generate, load_config, summary
    from gf01_formal.instances.io import save_artifact
    from gf01_formal.instances.keys import read_key
    from solvers.limits import Limits

    check_output(output, inputs=[cfg])
    config = load_config(read_json(cfg) if cfg else None, file=str(cfg) if cfg else None)
    key = read_key(key_file) if key_file is not None else None
    with progress_bar("generate", count) as advance:
        bundle = generate(seed, count, config, split_id=split, key=key, jobs=jobs, progress=advance,
                          slot_limits=None if slot_seconds is None and memory is None
                          else Limits(seconds=slot_seconds, memory=memory))
    save_artifact(output, bundle)
    info = summary(bundle)
    record = {"file": str(output), **info, "skipped_slots": [s.model_dump(mode="json") for s in bundle.skipped]}

    def human(r: dict[str, Any]) -> list[str]:
        import json

        lines = [f"wrote {r['instances']} instances to {r['file']} ({r['skipped']} slots skipped)"]
        lines += [f"skipped slot {s['slot']}: {json.dumps(s['reasons'], sort_keys=True)}" for s in r["skipped_slots"]]
        keys = ("oracle_eff_t", "windows", "modes", "families", "single_timestep_fraction", "single_atom_fraction",
                "greedy_fraction")
        lines.append(json.dumps({k: r[k] for k in keys}, sort_keys=True))
        return lines

    emit(record, json_out, human)


MeasureSecondsOpt = Annotated[
    float,
    typer.Option("--seconds", metavar="S", min=0.0, max=MAX_SECONDS,
                 help="Time for each instance's measurement (default 60 s)."),
]
ImportSecondsOpt = Annotated[
    float,
    typer.Option("--seconds", metavar="S", min=0.0, max=MAX_SECONDS,
                 help="Time for the whole import, counted from the command's start: the measurement's counts, its "
                 "oracle over M(I) and its greedy certifier share what reading the file left; what they did not "
                 "decide by then is recorded as unknown, with the reason, never a hang (the instance's optimal "
                 "certificate within B_T is always decided)."),
]
#: The time of ``import hoa`` and ``import aiger``: a user importing one file waits seconds, not minutes, for the
#: knobs (issue 28); what needs longer is recorded as unknown with its reason.
IMPORT_MEASURE_SECONDS = 5.0
#: What the import does after its measurement (the instance checked, hashed and written, the process's exit): about
#: 0.1-0.2 s on a SYNTCOMP design; the measurement ends that much before ``--seconds`` so the command ends within it.
IMPORT_FINISH_SECONDS = 0.3


def _import_limits(seconds: float) -> Any:
    """The measurement's limits: what is left of ``seconds`` since the command started (the process's start under
    the console script; an unknown answer names ``seconds`` as given)."""
    import time

    from gf01_formal.cli import command_started
    from solvers.limits import Limits

    left = seconds - IMPORT_FINISH_SECONDS - (time.monotonic() - command_started())
    return Limits(seconds=max(0.0, left), given_seconds=seconds)


def import_peer_cmd(
    bundle: Annotated[
        Path, typer.Argument(metavar="BUNDLE", help="A peer gf01.instance_bundle.v1 file.", show_default=False)
    ],
    output: OutputOpt,
    measure: MeasureOpt = True,
    seconds: MeasureSecondsOpt = 60.0,
    json_out: JsonOpt = False,
) -> None:
    """Import the peer implementation's instance bundle, keeping its instance ids."""
    from gf01_formal.instances.io import save_artifact
    from gf01_formal.instances.peer import import_peer_bundle
    from solvers.limits import Limits

    check_output(output, inputs=[bundle])
    ours = import_peer_bundle(bundle, measure=measure, count_limits=Limits(seconds=seconds))
    save_artifact(output, ours)
    record = {"file": str(output), "instances": len(ours.instances),
              "instance_ids": [i.instance_id for i in ours.instances]}
    emit(record, json_out, lambda r: [f"imported {r['instances']} instances to {r['file']}"])


@with_instance_options
def import_hoa_cmd(
    system: Annotated[
        Path, typer.Argument(metavar="SYSTEM", help="An HOA file with one Mealy controller.", show_default=False)
    ],
    output: OutputOpt,
    measure: MeasureOpt = True,
    seconds: ImportSecondsOpt = IMPORT_MEASURE_SECONDS,
    json_out: JsonOpt = False,
    options: Any = None,
) -> None:
    """Make an instance from any Mealy HOA file (e.g. an ltlsynt controller), a trace and an effect."""
    from gf01_formal.instances.io import save_artifact
    from gf01_formal.instances.sources import InstanceOptions, instance_from_hoa
    from hoa.files import read_text

    check_output(output, inputs=[system])
    with progress_bar("measuring (exact queries)") as bar:
        inst = instance_from_hoa(read_text(system), options or InstanceOptions(), source=str(system),
                                 measure=measure, count_limits=_import_limits(seconds), progress=bar)
    save_artifact(output, inst)
    _imported(inst, output, json_out, system)


@with_instance_options
def import_aiger_cmd(
    system: Annotated[
        Path, typer.Argument(metavar="CIRCUIT", help="An AIGER 1.9 circuit (.aag or .aig).", show_default=False)
    ],
    output: OutputOpt,
    observe: Annotated[
        str | None,
        typer.Option("--observe", metavar="LATCH,...", help="Latches (by name) added to the outputs, after the "
                     "circuit's outputs and bad-state properties."),
    ] = None,
    measure: MeasureOpt = True,
    seconds: ImportSecondsOpt = IMPORT_MEASURE_SECONDS,
    json_out: JsonOpt = False,
    options: Any = None,
) -> None:
    """Make an instance from an AIGER circuit (a SYNTCOMP controller, an HWMCC design), a trace and an effect."""
    import dataclasses

    from gf01_formal.instances.io import save_artifact
    from gf01_formal.instances.sources import InstanceOptions, instance_from_aiger
    from hoa.files import read_bytes

    check_output(output, inputs=[system])
    opts = options or InstanceOptions()
    if observe is not None:
        opts = dataclasses.replace(opts, observe=tuple(n.strip() for n in observe.split(",") if n.strip()))
    with progress_bar("measuring (exact queries)") as bar:
        inst = instance_from_aiger(read_bytes(system), opts, source=str(system), measure=measure,
                                   count_limits=_import_limits(seconds), progress=bar)
    save_artifact(output, inst)
    _imported(inst, output, json_out, system)


def _imported(inst: Any, output: Path, json_out: bool, system: Path) -> None:
    """Print what an import wrote: the instance id, and what the measurement found (a trivial instance, made of
    ``system``, is written with a warning on stderr)."""
    cert = inst.certification
    if cert is not None and cert.oracle_eff_t == 0:
        warn_trivial(system)
    record = {"file": str(output), "instance_id": inst.instance_id, "window": inst.window,
              "oracle_eff_t": None if cert is None else cert.oracle_eff_t,
              "gold_count": None if cert is None else cert.gold_count}

    def human(r: dict[str, Any]) -> list[str]:
        line = f"wrote instance {r['instance_id']} to {r['file']}"
        if cert is not None:
            count = r["gold_count"] if r["gold_count"] is not None else f"unknown: {cert.gold_count_note}"
            line += (f" (oracle Eff_t {r['oracle_eff_t']}, |M_B(I)| {count})"
                     if r["oracle_eff_t"] is not None else " (warning: no valid certificate within B_T)")
        return [line]

    emit(record, json_out, human)


def split_cmd(
    bundle: Annotated[Path, typer.Argument(metavar="BUNDLE", help="The bundle to split.", show_default=False)],
    output: OutputOpt,
    manifest: Annotated[Path, typer.Option("--manifest", metavar="FILE", help="Where to write the split manifest.")],
    key_file: Annotated[
        Path | None,
        typer.Option("--key-file", metavar="FILE", help="The split key (a private release must supply one)."),
    ] = None,
    release: Annotated[
        Path | None, typer.Option("--release", metavar="DIR", help="Also write the release layout into DIR.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Assign public_dev / public_val / private_eval by a keyed hash, stratified by mode and difficulty."""
    from gf01_formal.artifacts import write_json_atomic
    from gf01_formal.instances.io import load_bundle, save_artifact
    from gf01_formal.instances.splits import policy_check, read_key, split_bundle, write_release

    check_output(output, inputs=[bundle, key_file, manifest])
    check_output(manifest, inputs=[bundle, key_file, output])
    if release is not None:
        check_output(release / "split_manifest.json", inputs=[bundle, key_file])
    key = read_key(key_file)
    # The assignment and its policy check come first: a split that cannot meet the policy writes nothing.
    new, man = split_bundle(load_bundle(bundle), key)
    report = policy_check(man.model_dump(mode="json"), file=str(manifest))
    save_artifact(output, new)
    write_json_atomic(manifest, man.model_dump(mode="json"))
    if key_file is None:
        print("note: the public default split key was used; a private release must pass --key-file", file=sys.stderr)
    if release is not None:
        write_release(release, new, man)
    record = {s: r["count"] for s, r in report["splits"].items()}
    emit(record, json_out, lambda r: [", ".join(f"{k}: {v}" for k, v in sorted(r.items()))])


def split_policy_check_cmd(
    manifest: Annotated[
        Path,
        typer.Argument(metavar="MANIFEST", help="A split manifest (ours or gf01.split_manifest.v1).",
                       show_default=False),
    ],
    tolerance: Annotated[
        float | None, typer.Option("--tolerance", metavar="X", min=0.0, help="Override the manifest's tolerance.")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Check each split's fraction against gf01.split_policy.v1 (0.20/0.20/0.60, tolerance 0.05); exit 2 if off."""
    from gf01_formal.instances.splits import load_manifest_report

    report = load_manifest_report(manifest, tolerance)

    def human(r: dict[str, Any]) -> list[str]:
        return [f"ok: {r['instances']} instances within {r['tolerance']} of the targets"] + [
            f"{s}: {v['count']} ({v['fraction']:.3f}, target {v['target']})" for s, v in r["splits"].items()
        ]

    emit(report, json_out, human)


def export_schemas_cmd(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The target directory.")
    ] = Path("docs/schemas"),
    json_out: JsonOpt = False,
) -> None:
    """Write the JSON Schemas of every artifact (instance, bundle, generator cfg, split manifest)."""
    from gf01_formal import schemas

    check_output(directory / "instance.v2.json")  # DIR a file, unwritable, or a name too long: refused here
    paths = [str(p) for p in schemas.export(directory)]
    emit({"files": paths}, json_out, lambda r: r["files"])


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("generate", short_help="Generate a bundle of solver-certified instances.")(generate_cmd)
    app.command("split", short_help="Assign public/private splits by a keyed hash (DEC-054).")(split_cmd)
    app.command("split-policy-check", short_help="Check a split manifest against the split policy.")(
        split_policy_check_cmd
    )
    app.command("export-schemas", short_help="Write the JSON Schemas of every artifact.")(export_schemas_cmd)
    import_app.command("peer", short_help="Import the peer implementation's instance bundle.")(import_peer_cmd)
    import_app.command("hoa", short_help="Make an instance from a Mealy HOA file.")(import_hoa_cmd)
    import_app.command("aiger", short_help="Make an instance from an AIGER circuit.")(import_aiger_cmd)
    app.add_typer(import_app, name="import")
