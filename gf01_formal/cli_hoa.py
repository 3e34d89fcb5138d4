"""The ``gf01 hoa`` command group: ``check`` HOA files, ``print`` them canonically, show a controller's ``mealy`` view.

``check`` exits 0 iff every file is valid (1 otherwise); with ``--json`` it prints one JSON object per file per line:
``{"file", "ok", "automata": [{"states", "aps", "acc_sets", "acceptance", "start", "controllable_ap", "edges"}],
"error": {"line", "col", "message"} | null}`` (``automata`` lists those read before an error).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from hoa import load_mealy
from hoa.errors import Gf01Error
from hoa.model import Automaton
from hoa.parser import iter_parse, parse_file
from hoa.writer import acceptance_text, write

hoa_app = typer.Typer(help="HOA v1 files: check, print canonically, Mealy view.", no_args_is_help=True)


def states_defined_or_declared(aut: Automaton) -> int:
    """``States:`` or one more than the largest ``State:`` number, whichever is larger.

    Unlike ``Automaton.num_states`` this ignores states only referenced (by ``Start:`` or an edge) and never listed.
    """
    return max([aut.states_declared or 0, *(s.index + 1 for s in aut.states)])


def automaton_summary(aut: Automaton) -> dict[str, Any]:
    """The per-automaton record of ``gf01 hoa check --json``."""
    return {
        "states": states_defined_or_declared(aut),
        "aps": len(aut.aps),
        "acc_sets": aut.acc_sets,
        "acceptance": acceptance_text(aut.acceptance),
        "start": [list(conj) for conj in aut.start],
        "controllable_ap": None if aut.controllable_ap is None else list(aut.controllable_ap),
        "edges": aut.num_edges,
    }


def check_file(path: str) -> dict[str, Any]:
    """The ``check --json`` record of one file: the automata read and the first error, if any."""
    automata: list[dict[str, Any]] = []
    error: dict[str, Any] | None = None
    try:
        text = Path(path).read_text(encoding="utf-8")
        for aut in iter_parse(text, path):
            automata.append(automaton_summary(aut))
    except Gf01Error as err:
        error = {"line": err.line, "col": err.col, "message": err.message}
    except (OSError, UnicodeDecodeError) as ex:
        error = {"line": None, "col": None, "message": f"cannot read: {ex}"}
    return {"file": path, "ok": error is None, "automata": automata, "error": error}


@hoa_app.command("check")
def check(
    files: Annotated[list[str], typer.Argument(help="HOA files (each may hold a stream of automata).")],
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per file, one per line.")] = False,
) -> None:
    """Parse and validate HOA files; exit 0 iff every file is valid."""
    all_ok = True
    for path in files:
        record = check_file(path)
        all_ok &= record["ok"]
        if json_out:
            typer.echo(json.dumps(record, sort_keys=True))
            continue
        if record["ok"]:
            auts = record["automata"]
            sizes = ", ".join(f"{a['states']} states/{a['edges']} edges" for a in auts[:3])
            more = f", ... ({len(auts)} automata)" if len(auts) > 3 else ""
            typer.echo(f"{path}: ok ({len(auts)} automat{'on' if len(auts) == 1 else 'a'}: {sizes or 'none'}{more})")
        else:
            err = record["error"]
            where = ":".join(str(p) for p in (err["line"], err["col"]) if p is not None)
            typer.echo(f"{path}:{where + ':' if where else ''} error: {err['message']}")
    if not all_ok:
        raise typer.Exit(1)


@hoa_app.command("print")
def print_cmd(file: Annotated[str, typer.Argument(help="HOA file.")]) -> None:
    """Print the canonical HOA text of every automaton in FILE."""
    for aut in parse_file(file):
        typer.echo(write(aut), nl=False)


@hoa_app.command("mealy")
def mealy(
    file: Annotated[str, typer.Argument(help="HOA file with one automaton (a controller).")],
    outputs: Annotated[
        str | None, typer.Option("--outputs", help="Comma-separated output APs (default: controllable-AP).")
    ] = None,
) -> None:
    """Show the Mealy view of a controller: inputs, outputs, states, input-completeness (exit 1 if incomplete)."""
    names = [o.strip() for o in outputs.split(",") if o.strip()] if outputs is not None else None
    view = load_mealy(file, names)
    typer.echo(f"inputs: {', '.join(view.inputs) or '(none)'}")
    typer.echo(f"outputs: {', '.join(view.outputs) or '(none)'}")
    typer.echo(f"states: {view.num_states}")
    typer.echo(f"initial: {view.state_name(view.initial)}")
    missing = view.first_missing()
    if missing is None:
        typer.echo("input-complete")
        return
    q, x = missing
    typer.echo(f"not input-complete: state {view.state_name(q)} has no edge for input {view.valuation_text(x)}")
    raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``hoa`` command group (check, print, mealy) to ``app``."""
    app.add_typer(hoa_app, name="hoa")
