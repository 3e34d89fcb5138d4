"""CLI commands for the exact queries on one instance: ``verify``, ``enumerate``, ``oracle``, and ``cnf`` (DIMACS).

INSTANCE is an instance file or bundle (``--id`` picks one instance of a bundle), or an HOA file (a Mealy
controller) plus flags that give the rest of the instance: ``--trace`` (a JSON list of ``{input: 0|1}`` objects or a
Spot-style word ``a&!b;!a&b``), ``--effect``, ``--t-star`` (default T-1), ``--mode``, ``--window``, ``--budget-t``
(B_T) and ``--outputs`` (when the file has no ``controllable-AP``). A query that runs out of ``--seconds`` prints
``unknown (...)`` and exits with status 3.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from encoders.cnf import encode
from encoders.problem import Atom, Problem
from gf01_formal.artifacts import read_json, write_text_atomic
from gf01_formal.certificates import best_match_record, parse_certificate, score
from gf01_formal.traces import atoms_to_json, parse_effect, parse_trace
from hoa.errors import Gf01Error
from solvers import api
from solvers.limits import Limits, Unknown

T = TypeVar("T")

#: Exit status of a query that ran out of its limits (docs/semantics.md).
EXIT_UNKNOWN = 3


def problem_from_flags(
    hoa_path: str,
    trace: str | None,
    effect: str | None,
    t_star: int | None,
    mode: str,
    window: int,
    budget: int | None,
    outputs: str | None,
) -> Problem:
    """The Problem given by an HOA file and the instance flags (``outputs``: comma-separated output names)."""
    from hoa import load_mealy

    names = [o.strip() for o in outputs.split(",") if o.strip()] if outputs else None
    system = load_mealy(hoa_path, names)
    system.check_input_complete()
    if trace is None:
        raise Gf01Error("an HOA instance needs --trace (JSON list of {input: 0|1} or a word like 'a&!b;!a&b')",
                        field="trace")
    if effect is None:
        raise Gf01Error("an HOA instance needs --effect (an expression over output names)", field="effect")
    tau = parse_trace(trace, system.inputs, field="trace")
    e = parse_effect(effect, system.outputs)
    return Problem(system, tau, e, len(tau) - 1 if t_star is None else t_star, mode, window, budget)


def load_problem(instance: str, instance_id: str | None, flags: dict[str, Any]) -> Problem:
    """The Problem of the INSTANCE argument: an HOA file (text starting ``HOA:``) with flags, else an instance file
    or bundle (``--id`` picks the instance), whose fields the HOA flags must not try to override."""
    if _is_hoa(instance):
        return problem_from_flags(instance, **flags)
    hoa_only = {"trace": "--trace", "effect": "--effect", "t_star": "--t-star", "budget": "--budget-t",
                "outputs": "--outputs"}
    given = [opt for key, opt in hoa_only.items() if flags[key] is not None]
    if given:
        raise Gf01Error(f"{', '.join(given)} apply to HOA files only; {instance} is an instance file", file=instance)
    from gf01_formal.instance_io import load_checked

    return load_checked(instance, instance_id)[1]


def _is_hoa(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    except OSError as ex:
        raise Gf01Error(f"cannot read: {ex.strerror or ex}", file=path) from ex
    # HOA files may start with comments (/* ... */) before the HOA: header
    return "HOA:" in head.split("--BODY--")[0] and not head.lstrip().startswith("{")


# -- shared options ---------------------------------------------------------------------------------------------

InstanceArg = Annotated[str, typer.Argument(help="Instance file or bundle, or an HOA file with the instance flags.")]
IdOpt = Annotated[str | None, typer.Option("--id", help="Instance id inside a bundle (unused for HOA files).")]
TraceOpt = Annotated[str | None, typer.Option("--trace", help="Base trace: JSON list of {input: 0|1} or 'a&!b;!a&b'.")]
EffectOpt = Annotated[str | None, typer.Option("--effect", help="Effect: expression over output names.")]
TStarOpt = Annotated[int | None, typer.Option("--t-star", help="Target time t* (default T-1).")]
ModeOpt = Annotated[str, typer.Option("--mode", help="hard (effect at t*) or normal (in the window).")]
WindowOpt = Annotated[int, typer.Option("--window", help="Window w of normal mode: [t*-w, t*].")]
BudgetTOpt = Annotated[int | None, typer.Option("--budget-t", help="B_T: most distinct timesteps (default none).")]
OutputsOpt = Annotated[str | None, typer.Option("--outputs", help="Comma-separated output APs (no controllable-AP).")]
SecondsOpt = Annotated[float | None, typer.Option("--seconds", help="Time limit; past it the answer is unknown.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
BackendOpt = Annotated[str, typer.Option("--backend", help="explicit, sat or bdd.")]


def _flags(trace, effect, t_star, mode, window, budget_t, outputs) -> dict[str, Any]:
    return {"trace": trace, "effect": effect, "t_star": t_star, "mode": mode, "window": window,
            "budget": budget_t, "outputs": outputs}


def _answer(fn: Callable[[], T]) -> T:
    """Run a query; an Unknown prints ``unknown (...)`` and exits with status 3."""
    try:
        return fn()
    except Unknown as ex:
        typer.echo(f"unknown ({ex.reason}; spent {json.dumps(ex.spent, sort_keys=True)})")
        raise typer.Exit(EXIT_UNKNOWN) from None


def _cert_json(problem: Problem, atoms: tuple[Atom, ...]) -> list[list[Any]]:
    return atoms_to_json(atoms, problem.system.inputs)


def _cert_text(problem: Problem, atoms: tuple[Atom, ...] | None) -> str:
    if atoms is None:
        return "none"
    return "{" + ", ".join(f"({t}, {a}, {v})" for t, a, v in _cert_json(problem, atoms)) + "}"


# -- commands ---------------------------------------------------------------------------------------------------


def verify(
    instance: InstanceArg,
    cert: Annotated[str, typer.Argument(help='Certificate JSON file: a list of [t, "input", v] atoms.')],
    subset_min: Annotated[bool, typer.Option("--subset-min", help="Also decide exact subset-minimality.")] = False,
    best_match: Annotated[
        bool, typer.Option("--best-match", help="Also score AP/TS precision, recall and F1 against the exact M_B(I).")
    ] = False,
    backend: BackendOpt = "explicit",
    seconds: SecondsOpt = None,
    json_out: JsonOpt = False,
    instance_id: IdOpt = None,
    trace: TraceOpt = None,
    effect: EffectOpt = None,
    t_star: TStarOpt = None,
    mode: ModeOpt = "hard",
    window: WindowOpt = 1,
    budget_t: BudgetTOpt = None,
    outputs: OutputsOpt = None,
) -> None:
    """Check a certificate: Suff, Min1, Valid, goal, Eff_t, Eff_a, Score_C, kappa (and SubsetMin)."""
    problem = load_problem(instance, instance_id, _flags(trace, effect, t_star, mode, window, budget_t, outputs))
    atoms, errors = parse_certificate(read_json(cert), problem.system.inputs, problem.horizon, problem.budget_t)
    record = score(problem, atoms, errors, subset_min=subset_min, backend=backend)
    if best_match:
        record["best_match"] = _answer(lambda: best_match_record(problem, atoms, limits=Limits(seconds=seconds)))
    if json_out:
        typer.echo(json.dumps(record, sort_keys=True))
        return
    table = Table(show_header=False)
    table.add_row("certificate", _cert_text(problem, atoms))
    for key in ("suff", "min1", "valid", "goal", "subset_min", "eff_t", "eff_a", "score_c", "kappa"):
        if record[key] is not None:
            table.add_row(key, str(record[key]))
    if best_match:
        bm = record["best_match"]
        table.add_row("best-match gold", "{" + ", ".join(f"({t}, {a}, {v})" for t, a, v in bm["gold"]) + "}")
        for level in ("ap", "ts"):
            p, r, f = (bm[f"{level}_{m}"] for m in ("precision", "recall", "f1"))
            table.add_row(f"{level.upper()} P / R / F1", f"{p:.3f} / {r:.3f} / {f:.3f}")
    for err in record["errors"]:
        table.add_row("error", err)
    Console().print(table)


def enumerate_cmd(
    instance: InstanceArg,
    count_only: Annotated[bool, typer.Option("--count", help="Only count M(I) / M_B(I), exactly.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", help="List at most N certificates.")] = None,
    use_budget: Annotated[bool, typer.Option("--budget/--no-budget", help="M_B(I) (within B_T) or M(I).")] = True,
    backend: BackendOpt = "bdd",
    seconds: SecondsOpt = None,
    json_out: JsonOpt = False,
    instance_id: IdOpt = None,
    trace: TraceOpt = None,
    effect: EffectOpt = None,
    t_star: TStarOpt = None,
    mode: ModeOpt = "hard",
    window: WindowOpt = 1,
    budget_t: BudgetTOpt = None,
    outputs: OutputsOpt = None,
) -> None:
    """Count or list the valid certificates M_B(I) (or M(I) with --no-budget) in canonical order."""
    problem = load_problem(instance, instance_id, _flags(trace, effect, t_star, mode, window, budget_t, outputs))
    budget = problem.budget_t if use_budget else None
    limits = Limits(seconds=seconds)
    certs: list[tuple[Atom, ...]] = []
    if count_only:
        total = _answer(lambda: api.count(problem, budget, backend, limits=limits))
    else:
        certs = _answer(lambda: list(api.enumerate_certificates(problem, budget, limit, backend, limits=limits)))
        complete = limit is None or len(certs) < limit
        total = len(certs) if complete else _answer(lambda: api.count(problem, budget, backend, limits=limits))
    if json_out:
        typer.echo(json.dumps({"count": total, "certificates": [_cert_json(problem, c) for c in certs]},
                              sort_keys=True))
        return
    which = "M(I)" if budget is None else f"M_B(I), B_T = {budget}"
    typer.echo(f"{which}: {total} valid certificate{'s' if total != 1 else ''}")
    if certs:
        table = Table("#", "Eff_t", "Eff_a", "certificate")
        for k, c in enumerate(certs):
            table.add_row(str(k), str(len({a[0] for a in c})), str(len(c)), _cert_text(problem, c))
        Console().print(table)


def oracle_cmd(
    instance: InstanceArg,
    use_budget: Annotated[bool, typer.Option("--budget/--no-budget", help="Within B_T (default) or unbounded.")] = True,
    backend: BackendOpt = "explicit",
    seconds: SecondsOpt = None,
    json_out: JsonOpt = False,
    instance_id: IdOpt = None,
    trace: TraceOpt = None,
    effect: EffectOpt = None,
    t_star: TStarOpt = None,
    mode: ModeOpt = "hard",
    window: WindowOpt = 1,
    budget_t: BudgetTOpt = None,
    outputs: OutputsOpt = None,
) -> None:
    """The valid certificate minimising (Eff_t, Eff_a), with its optimality proven."""
    problem = load_problem(instance, instance_id, _flags(trace, effect, t_star, mode, window, budget_t, outputs))
    budget = problem.budget_t if use_budget else None
    res = _answer(lambda: api.oracle(problem, budget, backend, limits=Limits(seconds=seconds)))
    record = {
        "certificate": None if res is None else _cert_json(problem, res.certificate),
        "eff_t": None if res is None else res.eff_t,
        "eff_a": None if res is None else res.eff_a,
        "optimal": True if res is None else res.optimal,
    }
    if json_out:
        typer.echo(json.dumps(record, sort_keys=True))
        return
    if res is None:
        typer.echo("no valid certificate" + ("" if budget is None else f" within B_T = {budget}") + " (proven)")
        return
    proven = "optimal (proven)" if res.optimal else "best found, not proven optimal"
    typer.echo(f"{_cert_text(problem, res.certificate)}  Eff_t = {res.eff_t}, Eff_a = {res.eff_a}, {proven}")


def cnf_cmd(
    instance: InstanceArg,
    out: Annotated[str, typer.Argument(help="DIMACS file to write.")],
    query: Annotated[str, typer.Option("--query", help="suff or valid (M(I) / M_B(I)).")] = "valid",
    use_budget: Annotated[bool, typer.Option("--budget/--no-budget", help="Add 'at most B_T timesteps'.")] = True,
    instance_id: IdOpt = None,
    trace: TraceOpt = None,
    effect: EffectOpt = None,
    t_star: TStarOpt = None,
    mode: ModeOpt = "hard",
    window: WindowOpt = 1,
    budget_t: BudgetTOpt = None,
    outputs: OutputsOpt = None,
) -> None:
    """Write the CNF unrolling as DIMACS: its models' flip variables (1 .. P, see comments) are the answers."""
    if query not in ("suff", "valid"):
        raise Gf01Error(f"--query must be suff or valid, not {query!r}", field="query")
    problem = load_problem(instance, instance_id, _flags(trace, effect, t_star, mode, window, budget_t, outputs))
    enc = encode(problem, with_valid=query == "valid")
    fp = io.StringIO()
    enc.write_dimacs(fp, assert_lits=[enc.valid if query == "valid" else enc.suff],
                     budget=problem.budget_t if use_budget else None)
    write_text_atomic(out, fp.getvalue())
    typer.echo(f"wrote {out}: {enc.pool.top} variables, {len(enc.clauses) + 1} clauses, flips 1..{len(enc.flips)}")


def register(app: typer.Typer) -> None:
    """Add ``verify``, ``enumerate``, ``oracle`` and ``cnf`` to ``app``."""
    app.command("verify")(verify)
    app.command("enumerate")(enumerate_cmd)
    app.command("oracle")(oracle_cmd)
    app.command("cnf")(cnf_cmd)
