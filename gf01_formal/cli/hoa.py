"""The ``gf01 hoa`` commands: ``check`` HOA files, ``print`` them canonically, show a controller's ``mealy`` view.

``check`` exits 0 when every file is valid, 1 when some file is not valid HOA (a verdict, with line:col), and 2 when
some file cannot be read as text (a user error); with ``--json`` it prints one object per file per line
(:func:`hoa.check.check_text`).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from gf01_formal.cli.common import JsonOpt, emit

hoa_app = typer.Typer(help="HOA v1 files: check, print canonically, show the Mealy view.", no_args_is_help=True,
                      rich_markup_mode=None, context_settings={"max_content_width": 100})

FileArg = Annotated[str, typer.Argument(metavar="FILE", help="An HOA file.", show_default=False)]


@hoa_app.command("check", short_help="Validate HOA files (line:col errors).")
def check(
    files: Annotated[
        list[str], typer.Argument(metavar="FILE...", help="HOA files (each may hold a stream of automata).")
    ],
    json_out: JsonOpt = False,
) -> None:
    """Parse and validate HOA files: exit 0 if all are valid, 1 if one is not, 2 if one cannot be read."""
    from hoa.check import check_text
    from hoa.errors import Gf01Error
    from hoa.files import read_text

    status = 0
    for path in files:
        try:
            text = read_text(path)
        except Gf01Error as err:
            print(f"gf01: error: {err}", file=sys.stderr)
            status = 2
            continue
        record = check_text(text, path)
        if not record["ok"]:
            status = max(status, 1)
        emit(record, json_out, _check_line)
    if status:
        raise typer.Exit(status)


def _check_line(r: dict[str, Any]) -> list[str]:
    if r["ok"]:
        auts = r["automata"]
        sizes = ", ".join(f"{a['states']} states/{a['edges']} edges" for a in auts[:3])
        more = f", ... ({len(auts)} automata)" if len(auts) > 3 else ""
        return [f"{r['file']}: ok ({len(auts)} automat{'on' if len(auts) == 1 else 'a'}: {sizes}{more})"]
    err = r["error"]
    where = ":".join(str(p) for p in (err["line"], err["col"]) if p is not None)
    return [f"{r['file']}:{where + ':' if where else ''} error: {err['message']}"]


@hoa_app.command("print", short_help="Print HOA files canonically.")
def print_cmd(file: FileArg) -> None:
    """Print the canonical HOA text of every automaton in FILE."""
    from hoa.check import NO_AUTOMATON
    from hoa.errors import Gf01Error
    from hoa.parser import parse_file
    from hoa.writer import write

    automata = parse_file(file)
    if not automata:
        raise Gf01Error(NO_AUTOMATON, file=file)
    for aut in automata:
        sys.stdout.write(write(aut))


@hoa_app.command("mealy", short_help="Show a controller's Mealy view.")
def mealy(
    file: FileArg,
    outputs: Annotated[
        str | None, typer.Option("--outputs", metavar="A,B", help="The output APs (default: controllable-AP).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Show the Mealy view of a controller: inputs, outputs, states, input-completeness and output-determinism
    (exit 1 if it is not input-complete or not output-deterministic: a game arena, not a controller)."""
    from hoa.mealy import load_mealy

    names = [o.strip() for o in outputs.split(",") if o.strip()] if outputs is not None else None
    view = load_mealy(file, names)
    missing = view.first_missing()
    # Output-determinism is read off the dense tables; a view too large to tabulate is not judged (null).
    amb = view.first_ambiguity() if missing is None and view.has_tables else None
    judged = missing is None and view.has_tables
    record = {
        "inputs": list(view.inputs),
        "outputs": list(view.outputs),
        "states": view.num_states,
        "initial": view.state_name(view.initial),
        "input_complete": missing is None,
        "missing": None if missing is None else {"state": view.state_name(missing[0]),
                                                 "input": view.valuation_text(missing[1])},
        "output_deterministic": (amb is None) if judged else None,
        "ambiguity": None if amb is None else {
            "state": view.state_name(amb.state), "input": view.valuation_text(amb.x),
            "edges": [amb.first, amb.other],
            "outcomes": [_outcome(view, *amb.first_outcome), _outcome(view, *amb.other_outcome)]},
    }

    def human(r: dict[str, Any]) -> list[str]:
        gap = r["missing"]
        complete = "input-complete" if gap is None else (
            f"not input-complete: state {gap['state']} has no edge for input {gap['input']}")
        lines = [f"inputs: {', '.join(r['inputs']) or '(none)'}", f"outputs: {', '.join(r['outputs']) or '(none)'}",
                 f"states: {r['states']}", f"initial: {r['initial']}", complete]
        a = r["ambiguity"]
        if a is not None:
            (k, m), (o1, o2) = a["edges"], a["outcomes"]
            lines.append(f"not output-deterministic (a game arena, not a controller): state {a['state']} under input "
                         f"{a['input']} has edges {k} ({o1}) and {m} ({o2}) enabled; the first-edge rule would pick "
                         f"edge {k} silently")
        elif r["output_deterministic"]:
            lines.append("output-deterministic")
        elif gap is None:
            lines.append("output-determinism not checked (too large for dense tables)")
        return lines

    emit(record, json_out, human)
    if missing is not None or amb is not None:
        raise typer.Exit(1)


def _outcome(view: Any, dest: int, y: int) -> str:
    outs = " ".join(f"{o}={(y >> j) & 1}" for j, o in enumerate(view.outputs)) or "no outputs"
    return f"{outs} -> state {view.state_name(dest)}"


def register(app: typer.Typer) -> None:
    """Add the ``hoa`` command group (check, print, mealy) to ``app``."""
    app.add_typer(hoa_app, name="hoa")
