"""The exact queries on one instance: ``verify`` (one certificate, or many with ``--certs``), ``enumerate``,
``oracle``, and ``cnf`` (the unrolling as DIMACS)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from gf01_formal.cli.common import (
    DEFAULT_MEMORY,
    BackendOpt,
    Deadline,
    GoldSetOpt,
    IdOpt,
    InstanceArg,
    JsonOpt,
    MemoryOpt,
    SecondsOpt,
    UnboundedOpt,
    check_output,
    emit,
    open_instance,
    progress_bar,
    with_instance_options,
)


@with_instance_options
def verify(
    instance: InstanceArg,
    cert: Annotated[
        str | None,
        typer.Argument(metavar="CERT", help='A certificate file: a JSON list of [t, "input", v] atoms.',
                       show_default=False),
    ] = None,
    certs: Annotated[
        Path | None,
        typer.Option("--certs", metavar="FILE", help='Score many certificates instead of CERT: a JSON Lines file, '
                     'one {"instance_id": ID, "certificate": [...]} per line; one result line each, in order.'),
    ] = None,
    subset_min: Annotated[bool, typer.Option("--subset-min", help="Also decide exact subset-minimality.")] = False,
    best_match: Annotated[
        bool, typer.Option("--best-match", help="Also score AP/TS precision, recall and F1 against the best-matching "
                           "member of the exact M(I) (M_B(I) with --gold-set MB).")
    ] = False,
    gold_set: GoldSetOpt = "M",
    backend: BackendOpt = None,
    seconds: SecondsOpt = None,
    memory: MemoryOpt = DEFAULT_MEMORY,
    json_out: JsonOpt = False,
    instance_id: IdOpt = None,
    options: Any = None,
) -> None:
    """Score a certificate: Suff, Min1, Valid, goal, Eff_t, Eff_a, Score_C and kappa (exit 0 whatever the verdict)."""
    from gf01_formal.cli.exits import EXIT_UNKNOWN
    from gf01_formal.cli.verify import certificate_report, undecided
    from gf01_formal.scoring.batch import verify_lines
    from hoa.errors import Gf01Error
    from hoa.files import iter_lines

    deadline = Deadline(seconds, memory)
    if (cert is None) == (certs is None):
        raise Gf01Error("give one certificate (CERT) or a file of them (--certs FILE)", field="CERT")
    if certs is not None:
        out_of_limits = False
        for record in verify_lines(instance, lambda: iter_lines(certs), options, file=str(certs),
                                   instance_id=instance_id, subset_min=subset_min, best_match=best_match,
                                   gold_set=gold_set, backend=backend, limits=deadline.limits):
            emit(record, json_out, _batch_line)
            out_of_limits = out_of_limits or undecided(record)
        if out_of_limits:
            raise typer.Exit(EXIT_UNKNOWN)
        return
    assert cert is not None
    _, problem = open_instance(instance, instance_id, options, deadline)
    record, human = certificate_report(problem, cert, subset_min=subset_min, best_match=best_match, gold_set=gold_set,
                                       backend=backend, deadline=deadline)
    emit(record, json_out, human)
    if undecided(record):
        raise typer.Exit(EXIT_UNKNOWN)


def _batch_line(r: dict[str, Any]) -> list[str]:
    verdict = "valid" if r["valid"] else ("sufficient" if r["suff"] else "not sufficient")
    errors = f"  ({len(r['certificate_errors'])} structural errors)" if r["certificate_errors"] else ""
    unknown = f"  best_match unknown ({r['unknown']['reason']})" if "unknown" in r else ""
    return [f"line {r['line']}  {r['instance_id']}  {verdict}  Eff_t {r['eff_t']}  Eff_a {r['eff_a']}{errors}"
            f"{unknown}"]


@with_instance_options
def enumerate_cmd(
    instance: InstanceArg,
    count_only: Annotated[bool, typer.Option("--count", help="Only count, exactly.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", metavar="N", min=0, help="List at most N.")] = None,
    sample: Annotated[
        int | None,
        typer.Option("--sample", metavar="K", min=0, help="List K distinct members drawn uniformly at random (all "
                     "of them when there are at most K), in canonical order."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", metavar="S", min=0, help="The seed of --sample.")] = 0,
    unbounded: UnboundedOpt = False,
    backend: BackendOpt = None,
    seconds: SecondsOpt = None,
    memory: MemoryOpt = DEFAULT_MEMORY,
    json_out: JsonOpt = False,
    instance_id: IdOpt = None,
    options: Any = None,
) -> None:
    """Count and list the valid certificates M_B(I) (M(I) with --unbounded) in canonical order, as they are found;
    or a uniform random sample of them (--sample)."""
    from gf01_formal.cli.exits import EXIT_UNKNOWN
    from gf01_formal.scoring.certificates import certificate_text, certificate_to_json
    from hoa.errors import Gf01Error
    from solvers import api
    from solvers.limits import Unknown

    if sample is not None and (count_only or limit is not None):
        raise Gf01Error("--sample lists a sample; it does not go with --count or --limit", field="--sample")
    if sample is not None and backend not in (None, "forward"):
        raise Gf01Error("--sample draws on the forward backend only (the one that samples)", field="--backend")
    deadline = Deadline(seconds, memory)
    _, problem = open_instance(instance, instance_id, options, deadline)
    budget = None if unbounded else problem.budget_t
    names = problem.system.inputs
    which = "M(I)" if budget is None else f"M_B(I), B_T = {budget}"
    if sample is not None:
        drawn = api.sample(problem, budget, sample, seed, limits=deadline.limits())
        total = api.count(problem, budget, backend, limits=deadline.limits())
        record = {"certificates": [certificate_to_json(c, names) for c in drawn], "count": total,
                  "sample": sample, "seed": seed}

        def human(r: dict[str, Any]) -> list[str]:
            rows = [f"{k:>4}  {len({a[0] for a in c}):>5}  {len(c):>5}  {certificate_text(c, names)}"
                    for k, c in enumerate(drawn)]
            return [f"{'#':>4}  Eff_t  Eff_a  certificate", *rows,
                    f"{which}: {total} valid certificates; a uniform sample of {len(drawn)} (seed {seed})"]

        emit(record, json_out, human)
        return
    if count_only:
        total = api.count(problem, budget, backend, limits=deadline.limits())
        emit({"count": total}, json_out, lambda r: [f"{which}: {r['count']} valid certificate"
                                                     f"{'' if r['count'] == 1 else 's'}"])
        return
    # Stream: each certificate is printed as soon as it is found; the count comes last (JSON keys stay sorted).
    out = sys.stdout
    out.write('{"certificates":[' if json_out else f"{'#':>4}  Eff_t  Eff_a  certificate\n")
    listed = 0
    try:
        for cert in api.enumerate_certificates(problem, budget, limit, backend, limits=deadline.limits()):
            if json_out:
                out.write(("," if listed else "") + json.dumps(certificate_to_json(cert, names)))
            else:
                out.write(f"{listed:>4}  {len({a[0] for a in cert}):>5}  {len(cert):>5}  "
                          f"{certificate_text(cert, names)}\n")
            out.flush()
            listed += 1
        total = listed if limit is None or listed < limit else api.count(problem, budget, backend,
                                                                         limits=deadline.limits())
    except Unknown as ex:
        if not json_out:
            raise
        # The stream's JSON stays one object: the certificates found, then why the list stops there.
        out.write(f'],"count":null,"unknown":{json.dumps(ex.to_json(), sort_keys=True)}}}\n')
        out.flush()
        raise typer.Exit(EXIT_UNKNOWN) from None
    out.write(f'],"count":{total}}}\n' if json_out else f"{which}: {total} valid certificate"
              f"{'' if total == 1 else 's'}{'' if total == listed else f' ({listed} listed)'}\n")


@with_instance_options
def oracle_cmd(
    instance: InstanceArg,
    unbounded: UnboundedOpt = False,
    backend: BackendOpt = None,
    seconds: SecondsOpt = None,
    memory: MemoryOpt = DEFAULT_MEMORY,
    json_out: JsonOpt = False,
    instance_id: IdOpt = None,
    options: Any = None,
) -> None:
    """The valid certificate minimising (Eff_t, Eff_a), with its optimality proven (or that none exists)."""
    from gf01_formal.scoring.certificates import certificate_text, certificate_to_json
    from solvers import api

    deadline = Deadline(seconds, memory)
    _, problem = open_instance(instance, instance_id, options, deadline)
    budget = None if unbounded else problem.budget_t
    res = api.oracle(problem, budget, backend, limits=deadline.limits())
    names = problem.system.inputs
    record = {
        "certificate": None if res is None else certificate_to_json(res.certificate, names),
        "eff_t": None if res is None else res.eff_t,
        "eff_a": None if res is None else res.eff_a,
        "optimal": True if res is None else res.optimal,
    }

    def human(r: dict[str, Any]) -> list[str]:
        if res is None:
            return ["no valid certificate" + ("" if budget is None else f" within B_T = {budget}") + " (proven)"]
        proven = "optimal (proven)" if res.optimal else "best found, not proven optimal"
        return [f"{certificate_text(res.certificate, names)}  Eff_t = {res.eff_t}, Eff_a = {res.eff_a}, {proven}"]

    emit(record, json_out, human)


@with_instance_options
def cnf_cmd(
    instance: InstanceArg,
    out: Annotated[Path, typer.Argument(metavar="OUT", help="The DIMACS file to write.", show_default=False)],
    query: Annotated[
        Literal["suff", "valid"], typer.Option("--query", help="Models: sufficient or valid flip sets.")
    ] = "valid",
    unbounded: UnboundedOpt = False,
    json_out: JsonOpt = False,
    instance_id: IdOpt = None,
    options: Any = None,
) -> None:
    """Write the CNF unrolling as DIMACS: the flip variables (1 .. P, named in comments) of its models answer."""
    from encoders.cnf import encode
    from gf01_formal.artifacts import write_text_atomic

    check_output(out, inputs=[instance])
    _, problem = open_instance(instance, instance_id, options, Deadline(None))
    # Progress bars on a terminal only (stderr): a 24-step Valid CNF of a 400-state controller takes seconds.
    with progress_bar("encoding steps") as bar:
        enc = encode(problem, with_valid=query == "valid", progress=bar)
    fp = io.StringIO()
    with progress_bar("writing clauses") as bar:
        enc.write_dimacs(fp, assert_lits=[enc.valid if query == "valid" else enc.suff],
                         budget=None if unbounded else problem.budget_t, progress=bar)
    write_text_atomic(out, fp.getvalue())
    record = {"file": str(out), "variables": enc.pool.top, "clauses": len(enc.clauses) + 1, "flips": len(enc.flips)}
    emit(record, json_out, lambda r: [f"wrote {r['file']}: {r['variables']} variables, {r['clauses']} clauses, "
                                      f"flips 1..{r['flips']}"])


def register(app: typer.Typer) -> None:
    """Add ``verify``, ``enumerate``, ``oracle`` and ``cnf`` to ``app``."""
    app.command("verify", short_help="Score a certificate exactly (Suff, Min1, Valid, kappa).")(verify)
    app.command("enumerate", short_help="Count and list the valid certificates, in canonical order.")(enumerate_cmd)
    app.command("oracle", short_help="The optimal valid certificate (least Eff_t, then Eff_a).")(oracle_cmd)
    app.command("cnf", short_help="Write the unrolling as DIMACS CNF.")(cnf_cmd)
