"""``gf01 sim``: the base run and a certificate's edited run step by step (what ``aigsim`` shows), and the edited run
as a VCD waveform or an AIGER witness."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gf01_formal.cli.common import (
    Deadline,
    IdOpt,
    InstanceArg,
    JsonOpt,
    check_output,
    emit,
    open_instance,
    with_instance_options,
)


@with_instance_options
def sim(
    instance: InstanceArg,
    cert: Annotated[
        str | None,
        typer.Argument(metavar="[CERT]", help='A certificate file (a JSON list of [t, "input", v] atoms); without '
                       "it, the base run alone.", show_default=False),
    ] = None,
    states: Annotated[bool, typer.Option("--states", help="Also show each run's state before every step.")] = False,
    vcd_out: Annotated[
        Path | None, typer.Option("--vcd", metavar="FILE", help="Write both runs as a VCD waveform (scopes base and "
                                  "edited: every input and output, and the effect).")
    ] = None,
    witness_out: Annotated[
        Path | None, typer.Option("--witness", metavar="FILE", help="Circuits: write the edited run as an AIGER "
                                  "witness (HWMCC format) of the effect's bad-state property, up to the first step "
                                  "where it shows.")
    ] = None,
    json_out: JsonOpt = False,
    instance_id: IdOpt = None,
    options: Any = None,
) -> None:
    """Show the base run and the edited run of CERT step by step: inputs and outputs as bit strings (signal 0
    first), a * where the runs differ, where the effect holds (E) and counts ([ ]); exit 0 whatever the verdict."""
    from gf01_formal.artifacts import read_json, write_text_atomic
    from gf01_formal.scoring.certificates import parse_certificate
    from gf01_formal.scoring.simulation import simulate, to_json
    from hoa.errors import Gf01Error

    for out in (vcd_out, witness_out):
        if out is not None:
            check_output(out, inputs=[instance, cert])
    if vcd_out is not None and witness_out is not None and vcd_out.resolve() == witness_out.resolve():
        raise Gf01Error("--vcd and --witness name the same file", field="--witness")
    _, problem = open_instance(instance, instance_id, options, Deadline(None))
    atoms: tuple[Any, ...] = ()
    if cert is not None:
        parsed = parse_certificate(read_json(cert), problem.system.inputs, horizon=problem.horizon,
                                   budget_t=problem.budget_t)
        if not parsed.well_formed:
            raise Gf01Error(f"the certificate cannot be simulated: {parsed.errors[0]}", file=cert)
        atoms = tuple(parsed.atoms)
    result = simulate(problem, atoms)
    witness_text = _witness(result) if witness_out is not None else None
    if vcd_out is not None:
        from gf01_formal.scoring.waveform import vcd

        write_text_atomic(vcd_out, vcd(result))
    if witness_out is not None and witness_text is not None:
        write_text_atomic(witness_out, witness_text)
    record = to_json(result)
    emit(record, json_out, lambda r: _lines(r, states))


def _witness(result: Any) -> str:
    """The AIGER witness of the edited run, refused in one line where the format cannot say it."""
    from aig.witness import witness
    from hoa.errors import Gf01Error
    from hoa.label import Var

    problem = result.problem
    if not problem.circuit:
        raise Gf01Error("an AIGER witness is for circuits; this system is an HOA controller (use --vcd)",
                        field="--witness")
    if result.first_effect is None:
        raise Gf01Error("the edited run never shows the effect at an effect step: there is nothing to witness",
                        field="--witness")
    aig = problem.system.aig
    if not isinstance(problem.effect, Var):
        raise Gf01Error("an AIGER witness names one property: the effect must be one output (e.g. the error "
                        "output), not an expression (use --vcd)", field="--witness")
    j = problem.effect.index
    n_out = len(aig.outputs)
    if aig.bad and j >= n_out and j - n_out < len(aig.bad):
        prop = f"b{j - n_out}"
    elif not aig.bad and j < n_out:
        prop = f"b{j}"  # AIGER 1.9: without a B section, the outputs are the bad-state properties
    else:
        raise Gf01Error(f"the effect {problem.system.outputs[j]!r} is not one of the circuit's bad-state properties "
                        "(its B section, or its outputs when it has none); use --vcd", field="--witness")
    edited = problem.apply(result.atoms)
    return witness(aig, edited[: result.first_effect + 1], prop=prop)


def _lines(r: dict[str, Any], states: bool) -> list[str]:
    lo, hi = r["effect_steps"]
    where = f"at t* = {r['t_star']}" if r["mode"] == "hard" else f"in [{lo}, {hi}]"
    steps = r["steps"]
    # Each column as wide as its header or its widest cell; the * after an edited cell marks a difference.
    table = [("t", [str(s["t"]) for s in steps], None)]
    if states:
        table += [("state(base)", [s["base"]["state"] for s in steps], None),
                  ("state(edited)", [s["edited"]["state"] for s in steps], None)]
    table += [("in(base)", [s["base"]["inputs"] for s in steps], None),
              ("in(edited)", [s["edited"]["inputs"] for s in steps], [bool(s["inputs_differ"]) for s in steps]),
              ("out(base)", [s["base"]["outputs"] for s in steps], None),
              ("out(edited)", [s["edited"]["outputs"] for s in steps], [bool(s["outputs_differ"]) for s in steps]),
              ("effect", [("[{}/{}]" if s["effect_step"] else " {}/{} ").format(
                  "E" if s["base"]["effect"] else "-", "E" if s["edited"]["effect"] else "-") for s in steps], None)]
    widths = [max(len(h), *(len(c) + (m is not None) for c in cells)) for h, cells, m in table]
    lines = [f"inputs  {' '.join(r['inputs']) or '(none)'}", f"outputs {' '.join(r['outputs']) or '(none)'}",
             f"the effect must show {where} ({r['mode']} mode); E: it holds, [ ]: it counts there, *: the runs differ",
             "  ".join(h.rjust(w) if k == 0 else h.ljust(w) for k, ((h, _, _), w) in enumerate(zip(table, widths,
                                                                                                   strict=True)))]
    for i in range(len(steps)):
        row = []
        for k, ((_, cells, marks), w) in enumerate(zip(table, widths, strict=True)):
            cell = cells[i] + ("" if marks is None else "*" if marks[i] else " ")
            row.append(cell.rjust(w) if k == 0 else cell.ljust(w))
        lines.append("  ".join(row).rstrip())
    verdict = "shows the effect: sufficient" if r["suff"] else "does not show the effect: not sufficient"
    lines.append(f"edited run {verdict}" + ("  (the base run already shows it)" if r["base_effect"] else ""))
    return lines


def register(app: typer.Typer) -> None:
    """Add ``sim`` to ``app``."""
    app.command("sim", short_help="Show the base run and a certificate's edited run step by step.")(sim)
