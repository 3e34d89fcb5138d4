"""Circuits measured end to end: per AIGER design, import, Suff/Min1 of a certificate, the proven oracle, the count.

Run: ``python bench/aiger.py [DIR] [--horizon T] [--seconds S] [--seed N] [--json]``.

DIR holds ``.aag``/``.aig`` files (a SYNTCOMP or HWMCC set, say); without it the benchmark runs on the project's own
circuit families (aig.build) and on seeded random sequential circuits at the issue's target sizes (50 inputs and
100 latches; 1,000 latches). For each design the task is: a seeded random base trace of T steps, the effect = the
first bad-state property (else the first output) at t* = T - 1, hard mode, B_T = T. Columns:

- import: parse, canonical text, Mealy view and the instance's checked Problem (``instance_from_aiger``, unmeasured);
- suff+min1: both checks of one certificate (the oracle's, else a seeded random one) by bit-parallel simulation;
- oracle: the (Eff_t, Eff_a)-least valid certificate by SAT on the unrolling (proven optimal), or none;
- count: |M_B(I)| by the BDD backend under ``--seconds``, or ``unknown`` past it.

Targets (issue 22): about 50 inputs and 100 latches at T = 32: import < 1 s, suff+min1 < 100 ms, oracle < 10 s;
1,000 latches at T = 16: oracle < 60 s. Timings are wall-clock on whatever else the machine runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
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
    if circuit.bad:
        effect = names.get(("b", 0), "b0")
    elif circuit.outputs:
        effect = names.get(("o", 0), "o0")
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


def measure(path: Path, horizon: int, seconds: float, seed: int) -> dict[str, object]:
    """One design's row."""
    opts = task(path, horizon, seed)
    t0 = time.perf_counter()
    inst = instance_from_aiger(path.read_bytes(), opts, source=str(path), measure=False)
    problem = instance_problem(inst)
    t_import = time.perf_counter() - t0
    view = problem.system
    row: dict[str, object] = {"design": path.name, "inputs": view.num_inputs, "latches": view.num_latches,
                              "ands": view.num_ands, "T": horizon, "import_s": round(t_import, 3)}
    t0 = time.perf_counter()
    try:
        best = api.oracle(problem, problem.budget_t, limits=Limits(seconds=seconds))
        row["oracle"] = None if best is None else [best.eff_t, best.eff_a]
    except Unknown as ex:
        best = None
        row["oracle"] = f"unknown ({ex.reason})"
    row["oracle_s"] = round(time.perf_counter() - t0, 3)
    if best is not None:
        cert = list(best.certificate)
    else:
        rng = np.random.Generator(np.random.PCG64(seed + 1))
        cert = sorted({(int(rng.integers(0, horizon)), int(rng.integers(0, view.num_inputs)), 1) for _ in range(4)})
        cert = list({(t, i): (t, i, v) for t, i, v in cert}.values())
    api.suff(problem, cert)  # the base run is cached per problem, as in play; time the checks themselves
    t0 = time.perf_counter()
    s, m = api.suff(problem, cert), api.min1(problem, cert)
    row["suff_min1_ms"] = round(1000 * (time.perf_counter() - t0), 2)
    row["cert_valid"] = bool(s and m)
    t0 = time.perf_counter()
    try:
        row["count"] = api.count(problem, problem.budget_t, limits=Limits(seconds=seconds))
    except Unknown as ex:
        row["count"] = f"unknown ({ex.reason})"
    row["count_s"] = round(time.perf_counter() - t0, 3)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory", nargs="?", type=Path, help="AIGER files (.aag/.aig); default: our own designs")
    ap.add_argument("--horizon", type=int, default=32, help="T (default 32)")
    ap.add_argument("--seconds", type=float, default=60.0, help="cap of the oracle and of the count (default 60)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="one JSON object per design")
    args = ap.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        if args.directory is None:
            paths = own_designs(Path(tmp))
        else:
            paths = sorted(p for p in args.directory.iterdir() if p.suffix in (".aag", ".aig"))
        for path in paths:
            horizon = 16 if "1000l" in path.name and args.directory is None else args.horizon
            try:
                row = measure(path, horizon, args.seconds, args.seed)
            except Gf01Error as ex:
                row = {"design": path.name, "error": str(ex)}
            if args.json:
                print(json.dumps(row, sort_keys=True), flush=True)
            else:
                print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
