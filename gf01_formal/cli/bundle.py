"""``gf01 bundle subset``: a valid bundle of some instances of another (a smoke test, a pilot's few instances), its
instances hash made anew, so that every command (evaluate, serve, the inspect task) takes it as any bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gf01_formal.cli.common import JsonOpt, check_output, emit

bundle_app = typer.Typer(help="Work on bundles: take a subset.", no_args_is_help=True)


@bundle_app.command("subset", short_help="Write a bundle of some instances of another (--ids or --count).")
def subset_cmd(
    bundle: Annotated[Path, typer.Argument(metavar="BUNDLE", help="The bundle to take instances from.",
                                           show_default=False)],
    output: Annotated[Path, typer.Option("-o", "--output", metavar="FILE", help="The new bundle (written "
                                         "atomically).", show_default=False)],
    ids: Annotated[list[str] | None, typer.Option("--ids", metavar="ID[,ID...]", help="The instances to keep, by "
                                                  "id (repeatable, or comma-separated); kept in the bundle's order.")]
    = None,
    count: Annotated[int | None, typer.Option("--count", metavar="N", min=1, max=10_000_000,
                                              help="Keep the bundle's first N instances.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Write a bundle of the instances of BUNDLE that --ids names, or of its first --count; the new bundle's
    instances hash is its own (a bundle cut by hand fails its hash), its provenance names the source."""
    from gf01_formal.instances.io import load_bundle, save_artifact
    from gf01_formal.instances.subset import subset
    from hoa.errors import Gf01Error

    if (ids is None) == (count is None):
        raise Gf01Error("give the instances to keep: --ids ID,... or --count N (one of them)", field="--ids")
    check_output(output, inputs=[bundle])
    wanted = None if ids is None else [i.strip() for item in ids for i in item.split(",") if i.strip()]
    if wanted is not None and not wanted:
        raise Gf01Error("names no instance", field="--ids")
    out = subset(load_bundle(bundle), file=str(bundle), ids=wanted, count=count)
    save_artifact(output, out)
    record = {"file": str(output), "instances": [i.instance_id for i in out.instances],
              "instances_hash": out.instances_hash}

    def human(r: dict[str, Any]) -> list[str]:
        n = len(r["instances"])
        return [f"{n} instance{'s' if n != 1 else ''} of {bundle} -> {r['file']} (instances hash "
                f"{r['instances_hash'][:16]})"]

    emit(record, json_out, human)


def register(app: typer.Typer) -> None:
    """Add ``bundle subset`` to ``app``."""
    app.add_typer(bundle_app, name="bundle")
