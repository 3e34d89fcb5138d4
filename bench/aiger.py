"""Circuits measured end to end: per AIGER design, import, the proven oracle, verify, best match and the count.

Run: ``python bench/aiger.py [DIR] [--horizons 8,16,32] [--budget-t 4] [--seconds S] [--seed N] [--json]``;
``python bench/aiger.py --table ROWS.jsonl`` prints the markdown table of docs/performance.md from ``--json`` rows.

DIR holds ``.aag``/``.aig`` files (a SYNTCOMP or HWMCC set, say); without it the benchmark runs on the project's own
circuit families (aig.build) and on seeded random sequential circuits at issue 22's target sizes (50 inputs and
100 latches; 1,000 latches). For each design and each T the task is: a seeded random base trace of T steps, the
effect = the first bad-state property (else the first output) at t* = T - 1, hard mode, B_T = ``--budget-t``
(issue 28's targets: B_T = 4). Every (design, T) runs in a fresh process, so its peak resident memory (``peak_mib``,
the process and the query processes it waited for: ``getrusage``'s maxrss) is its own. Columns:

- import: ``instance_from_aiger`` with the measurement (knobs and certification) within a budget of 5 s for the
  whole measurement, as ``gf01 import aiger`` has by default (the command counts its 5 s from its start, interpreter
  start-up included; here they count from the measurement's start);
- oracle: the (Eff_t, Eff_a)-least valid certificate by SAT on the unrolling (proven optimal), or none;
- verify: Suff and Min1 of the oracle's certificate (else a seeded random one) by bit-parallel simulation;
- best match: the DEC-025 gold of the empty certificate and of a seeded random one (SAT optimisation);
- count: |M_B(I)| by the default backend (the SAT search that learns Min1, then Ganak when installed);
  each query under ``--seconds``, past it ``unknown``.

Every timing is given as wall and CPU seconds (``*_s``, ``*_cpu_s``: user + system of the row's process and of the
query processes it waited for), with the load average as the row started (``load``): on a shared machine the wall
caps are what the row's share of a core allowed, the CPU seconds what the work cost.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aig import Aig, And, Latch, binary, parse_file
from aig.build import arbiter, counter, fifo, shift_register
from aig.view import CircuitView
from encoders.problem import Problem
from gf01_formal.instances.io import instance_problem
from gf01_formal.instances.sources import InstanceOptions, instance_from_aiger
from gf01_formal.instances.traces import parse_effect
from hoa.errors import Gf01Error
from hoa.label import name_text
from solvers import api
from solvers.limits import Limits, Unknown


def random_circuit(n_i: int, n_l: int, n_a: int, seed: int) -> Aig:
    """A seeded random sequential circuit: gates over inputs, latches and earlier gates (mostly recent ones, so the
    logic has depth), latches fed by gates, two outputs and one bad-state property."""
    rng = np.random.Generator(np.random.PCG64(seed))
    first = n_i + n_l
    ands = []
    for k in range(n_a):
        top = first + k
        picks = []
        for _ in range(2):
            if k and rng.random() < 0.6:
                var = first + 1 + int(rng.integers(max(0, k - 64), k))
            else:
                var = 1 + int(rng.integers(0, first))
            picks.append(2 * var + int(rng.integers(0, 2)))
        ands.append(And(2 * (top + 1), max(picks), min(picks)))
    gate_lits = [2 * (first + 1 + k) for k in range(n_a)]
    latches = tuple(Latch(2 * (n_i + 1 + k), int(rng.choice(gate_lits)) ^ int(rng.integers(0, 2)), 0)
                    for k in range(n_l))
    outs = tuple(int(x) for x in rng.choice(gate_lits[-n_a // 4:], 3))
    return Aig(first + n_a, tuple(2 * (k + 1) for k in range(n_i)), latches, outs[:2], tuple(ands), bad=outs[2:])


def own_designs(tmp: Path) -> list[Path]:
    """The project's families and the random designs at the target sizes, written as .aig files."""
    designs = {
        "counter5": counter(5), "shift24": shift_register(24), "arbiter8": arbiter(8), "fifo8x4": fifo(8, 4),
        "random-50i-100l": random_circuit(50, 100, 2000, 1),
        "random-50i-1000l": random_circuit(50, 1000, 10000, 2),
    }
    paths = []
    for name, circuit in designs.items():
        path = tmp / f"{name}.aig"
        path.write_bytes(binary(circuit))
        paths.append(path)
    return paths


def task(path: Path, horizon: int, seed: int) -> InstanceOptions:
    """The benchmark's task on a design: the first bad-state property (else output) at t* = T - 1, on the first of
    16 seeded random traces whose base run does not show it (so the oracle has something to find), else the last."""
    circuit = parse_file(path)
    view = CircuitView.from_aig(circuit)
    names = dict(circuit.symbols)
    n = len(circuit.inputs)
    # A name like `accept<0>` (cycle_sched, mult_matrix, LTL2DBA) is named in double quotes (docs/instances.md).
    if circuit.bad:
        effect = name_text(names.get(("b", 0), "b0"))
    elif circuit.outputs:
        effect = name_text(names.get(("o", 0), "o0"))
    else:
        raise Gf01Error("no output and no bad-state property to take as the effect", file=str(path))
    rng = np.random.Generator(np.random.PCG64(seed))
    inputs = [names.get(("i", i), f"i{i}") for i in range(n)]
    for _ in range(16):
        bits = rng.integers(0, 2, (horizon, n))
        xs = tuple(sum(int(b) << i for i, b in enumerate(row)) for row in bits)
        problem = Problem(view, xs, parse_effect(effect, view.outputs), horizon - 1)
        if not api.suff(problem, ()):
            break
    trace = [{name: int(b) for name, b in zip(inputs, row, strict=True)} for row in bits]
    return InstanceOptions(trace=trace, effect=effect)


def cpu_seconds() -> float:
    """User + system CPU of this process and of the query processes it waited for (a loaded machine inflates wall
    time, not this)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(row: dict[str, object], key: str, fn: Callable[[], object]) -> object:
    """Run ``fn``; store its answer (or ``unknown (reason)``) under ``key``, its wall seconds under ``key_s`` and its
    CPU seconds under ``key_cpu_s``."""
    t0, c0 = time.perf_counter(), cpu_seconds()
    try:
        got = fn()
    except Unknown as ex:
        got = f"unknown ({ex.reason})"
    row[f"{key}_s"] = round(time.perf_counter() - t0, 3)
    row[f"{key}_cpu_s"] = round(cpu_seconds() - c0, 3)
    return got


def measure(path: Path, horizon: int, seconds: float, seed: int, budget_t: int | None = None) -> dict[str, object]:
    """One (design, T) row."""
    opts = dataclasses.replace(task(path, horizon, seed), budget_t=budget_t)
    # The machine's load as the row starts: wall times are only as good as the share of a core the row got.
    row: dict[str, object] = {"design": path.name, "T": horizon, "load": round(os.getloadavg()[0], 1)}
    t0, c0 = time.perf_counter(), cpu_seconds()
    inst = instance_from_aiger(binary(parse_file(path)), opts, source=str(path), measure=True,
                               count_limits=Limits(seconds=5.0))
    problem = instance_problem(inst)
    row["import_s"] = round(time.perf_counter() - t0, 3)
    row["import_cpu_s"] = round(cpu_seconds() - c0, 3)
    view = problem.system
    row.update(inputs=view.num_inputs, latches=view.num_latches, ands=view.num_ands)
    lim = Limits(seconds=seconds)
    best = _timed(row, "oracle", lambda: api.oracle(problem, problem.budget_t, limits=lim))
    row["oracle"] = best if isinstance(best, str) else (None if best is None else [best.eff_t, best.eff_a])
    rng = np.random.Generator(np.random.PCG64(seed + 1))
    rand = sorted({(int(rng.integers(0, horizon)), int(rng.integers(0, view.num_inputs))): 1 for _ in range(3)})
    rand_cert = [(t, i, 1 - ((problem.trace[t] >> i) & 1)) for t, i in rand]
    cert = list(best.certificate) if best is not None and not isinstance(best, str) else rand_cert
    row["valid"] = _timed(row, "verify", lambda: api.check(problem, cert).valid)
    for name, agent in (("bm_empty", []), ("bm_random", rand_cert)):
        got = _timed(row, name, lambda agent=agent: api.best_match(problem, agent, problem.budget_t, limits=lim))
        row[name] = got if isinstance(got, str) else round(got.ap_f1, 3)
    row["count"] = _timed(row, "count", lambda: api.count(problem, problem.budget_t, limits=lim))
    return row


def run_child(path: Path, horizon: int, seconds: float, seed: int, budget_t: int | None) -> dict[str, object]:
    """:func:`measure` in a fresh process (its row says its own peak memory)."""
    cmd = [sys.executable, __file__, "--one", str(path), "--horizons", str(horizon), "--seconds", str(seconds),
           "--seed", str(seed), *([] if budget_t is None else ["--budget-t", str(budget_t)])]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    lines = proc.stdout.decode().strip().splitlines()
    row = json.loads(lines[-1]) if proc.returncode == 0 and lines else {
        "design": path.name, "T": horizon, "error": f"exit {proc.returncode}: {proc.stderr.decode().strip()[-300:]}"}
    if proc.stderr.strip():
        row["stderr"] = proc.stderr.decode().strip()[-300:]
    return row


def peak_mib() -> float:
    """The peak resident memory of this process and of the query processes it waited for, in MiB."""
    return round(max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                     resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024, 1)


def _cell(row: dict[str, object], key: str) -> str:
    """A query's cell: its answer (or ``unknown``), wall seconds, and CPU seconds beside them."""
    value, secs, cpu = row.get(key), row.get(f"{key}_s"), row.get(f"{key}_cpu_s")
    if isinstance(value, str) and value.startswith("unknown"):
        reason = value[len("unknown ("):-1]
        return f"unknown ({reason}) {secs} s / {cpu} s"
    if isinstance(value, list):
        value = f"({value[0]}, {value[1]})"
    return f"{'none' if value is None else value} in {secs} s / {cpu} s"


def table(rows: list[dict[str, object]]) -> str:
    """The markdown tables of docs/performance.md from the JSON rows: one per horizon, one line per design (the
    last row of a (design, T) pair when it was run twice), wall / CPU seconds in every cell."""
    latest = {(str(r["design"]), int(r["T"])): r for r in rows}  # type: ignore[call-overload]
    out: list[str] = []
    for horizon in sorted({t for _, t in latest}):
        out += [f"T = {horizon}:", "",
                "| design | I / L / A | load | import | oracle (Eff_t, Eff_a) | verify | best match, empty C: "
                "F1_AP | best match, random C: F1_AP | \\|M_B(I)\\| | peak MiB |", "|" + "---|" * 10]
        for (design, t), r in sorted(latest.items()):
            if t != horizon:
                continue
            if "error" in r:
                out.append(f"| {design} | | | error: {r['error']} | | | | | | |")
                continue
            out.append(f"| {design} | {r['inputs']} / {r['latches']} / {r['ands']} | {r.get('load', '')} | "
                       f"{r['import_s']} s / {r['import_cpu_s']} s | {_cell(r, 'oracle')} | "
                       f"{r['verify_s']} s / {r['verify_cpu_s']} s | {_cell(r, 'bm_empty')} | "
                       f"{_cell(r, 'bm_random')} | {_cell(r, 'count')} | {r.get('peak_mib', '')} |")
        out.append("")
    return "\n".join(out).rstrip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory", nargs="?", type=Path, help="AIGER files (.aag/.aig); default: our own designs")
    ap.add_argument("--horizons", default="8,16,32", help="the values of T (default 8,16,32)")
    ap.add_argument("--budget-t", type=int, default=4, help="B_T (default 4)")
    ap.add_argument("--seconds", type=float, default=60.0, help="cap of each query (default 60)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="one JSON object per row")
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # a child's single (design, T)
    ap.add_argument("--table", type=Path, metavar="ROWS", help="print the markdown table of a file of --json rows")
    args = ap.parse_args()
    if args.table is not None:
        print(table([json.loads(line) for line in args.table.read_text().splitlines() if line.strip()]))
        return
    horizons = [int(h) for h in args.horizons.split(",")]
    if args.one is not None:
        row = measure(args.one, horizons[0], args.seconds, args.seed, args.budget_t)
        print(json.dumps({**row, "peak_mib": peak_mib()}), flush=True)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        if args.directory is None:
            paths = own_designs(Path(tmp))
        else:
            paths = sorted(p for p in args.directory.iterdir() if p.suffix in (".aag", ".aig"))
        for path in paths:
            for horizon in horizons:
                row = run_child(path, horizon, args.seconds, args.seed, args.budget_t)
                if args.json:
                    print(json.dumps(row, sort_keys=True), flush=True)
                else:
                    print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
