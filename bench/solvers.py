"""Solver benchmark: exact counts of M_B(I) on the bdd backend against brute force, the explicit backend at scale,
batch certificate checks, and the BDD variable order. One command: ``python bench/solvers.py`` (``--quick``: subset).

Instances are random Mealy tables (seeded ``Generator(PCG64(seed))``): |Q| states, |AP_in| inputs, one output
``o``, a random base trace, effect ``o`` in hard mode at t* = T - 1, budget B_T. Every BDD measurement runs in its own
process with a wall-clock cap, so a configuration past the cap prints "> cap" instead of stalling the run.

Brute force is the twin of ``tests/brute.py`` (imported, one source of truth): it tabulates Suff over all 2^(T|AP_in|)
flip sets. Where that is hopeless the table gives an extrapolated lower bound: the measured time of one
``brute_suff`` (mean over a random sample of flip sets) times the number of sets it would simulate (at least one run
each, Min1 ignored). "peer" is the peer implementation's method restricted to the budget: enumerate flip subsets
by size, keep those with at most B_T timesteps, simulate each (same per-run lower bound, or measured when feasible).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import numpy as np  # noqa: E402
from numpy.random import PCG64, Generator  # noqa: E402

from encoders.problem import Problem  # noqa: E402
from hoa.label import Var  # noqa: E402
from hoa.mealy import MealyView  # noqa: E402


def random_problem(states: int, inputs: int, steps: int, budget: int | None, seed: int) -> Problem:
    """A random Mealy table problem (module docstring), reproducible from ``seed``."""
    rng = Generator(PCG64(seed))
    nxt = rng.integers(0, states, size=(states, 1 << inputs))
    out = rng.integers(0, 2, size=(states, 1 << inputs))
    view = MealyView.from_table(tuple(f"i{k}" for k in range(inputs)), ("o",), nxt, out)
    trace = tuple(int(x) for x in rng.integers(0, 1 << inputs, size=steps))
    return Problem(view, trace, Var(0), steps - 1, "hard", 1, budget)


# -- workers (run in a subprocess) ---------------------------------------------------------------------------------


def work_count(states: int, inputs: int, steps: int, budget: int | None, seed: int, order: str) -> dict:
    """Time the exact bdd count of M_B(I) (encode + Valid + big-int walk)."""
    import dd.cudd  # noqa: F401 - the extension's import time (about 0.3 s) is not part of a query

    from encoders.bdd import budget_bdd, encode, valid_bdd
    from solvers.bigcount import count, export

    problem = random_problem(states, inputs, steps, budget, seed)
    problem.system.tables  # noqa: B018 - compile the Mealy tables outside the timed region
    start = time.perf_counter()
    enc = encode(problem, "cudd", order=order)
    suff_s = time.perf_counter() - start
    v = valid_bdd(enc, budget_bdd(enc, budget))
    dag = export(enc.bdd, v, enc.num_vars)
    n = count(dag)
    total = time.perf_counter() - start
    return {"count": str(n), "seconds": total, "suff_seconds": suff_s, "suff_nodes": len(enc.suff),
            "valid_nodes": dag.size}


WORKERS = {"count": work_count}


def run_worker(name: str, cap: float, **kwargs: object) -> dict | None:
    """Run ``WORKERS[name](**kwargs)`` in a fresh process; None when it passes ``cap`` seconds."""
    cmd = [sys.executable, __file__, "--worker", json.dumps({"name": name, "kwargs": kwargs})]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=cap, check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- brute force ---------------------------------------------------------------------------------------------------


def suff_seconds(problem: Problem, seed: int, sample: int = 300) -> float:
    """Mean wall time of one brute-force ``brute_suff`` on random flip sets of ``problem``."""
    from brute import brute_suff

    rng = Generator(PCG64(seed))
    n = problem.system.num_inputs
    certs = []
    for _ in range(sample):
        mask = rng.integers(0, 2, size=(problem.horizon, n))
        certs.append([(t, i, 1 - ((problem.trace[t] >> i) & 1)) for t in range(problem.horizon) for i in range(n)
                      if mask[t, i]])
    start = time.perf_counter()
    for c in certs:
        brute_suff(problem, c)
    return (time.perf_counter() - start) / sample


def peer_subsets(steps: int, inputs: int, budget: int | None) -> int:
    """How many flip subsets have at most ``budget`` timesteps: sum_k C(T, k) (2^n - 1)^k."""
    top = steps if budget is None else min(budget, steps)
    return sum(math.comb(steps, k) * ((1 << inputs) - 1) ** k for k in range(top + 1))


def peer_count(problem: Problem, budget: int) -> tuple[int, float]:
    """The peer's method, run for real: flip subsets by size, at most ``budget`` timesteps, simulate each.

    Sizes go up to ``budget * |AP_in|``, the largest certificate the budget allows.
    """
    import itertools

    from brute import brute_valid

    positions = [(t, i) for t in range(problem.horizon) for i in range(problem.system.num_inputs)]
    start = time.perf_counter()
    found = 0
    for k in range(min(len(positions), budget * problem.system.num_inputs) + 1):
        for sub in itertools.combinations(positions, k):
            if len({t for t, _ in sub}) > budget:
                continue
            if brute_valid(problem, [(t, i, 1 - ((problem.trace[t] >> i) & 1)) for t, i in sub]):
                found += 1
    return found, time.perf_counter() - start


# -- sections ------------------------------------------------------------------------------------------------------


def _times_power_of_two(seconds: float, k: int) -> float:
    """``seconds * 2**k``, saturating at infinity (2^1024 does not fit a float)."""
    try:
        return math.ldexp(seconds, k)
    except OverflowError:
        return math.inf


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "> 1e+300 y"
    if x >= 86400 * 365:
        return f"{x / (86400 * 365):.1e} y"
    if x >= 86400:
        return f"{x / 86400:.1f} d"
    return f"{x:.3g} s"


def ratio(base: float | None, ours: float | None, bound: bool) -> str:
    if base is None or ours is None:
        return "-"
    if math.isinf(base):
        return "≥ 1e+300x"
    return ("≥ " if bound else "") + f"{base / ours:.3g}x"


def section_count(quick: bool, seed: int) -> None:
    print("\n## Exact count of M_B(I): bdd backend vs brute force (B_T = 3, hard mode, t* = T - 1)\n")
    print("| |Q| | |AP_in| | T | |M_B(I)| | bdd | BDD nodes (Suff / Valid) | twin 2^(T n) | ratio | "
          "peer (by size, within B_T) | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows: list[tuple[int, int, int, bool]] = [(16, 3, 4, True), (16, 3, 9, True)]
    if quick:
        rows += [(16, 4, t, False) for t in (8, 16, 32)]
        cap = 20.0
    else:
        rows += [(16, 4, 32, False), (16, 4, 64, False)]
        rows += [(q, n, t, False) for q in (16, 64, 256) for n in (4, 8) for t in (8, 16, 32, 64, 128)
                 if not (q == 16 and n == 4 and t in (32, 64))]
        cap = 60.0
    budget = 3
    for q, n, t, measure in rows:
        problem = random_problem(q, n, t, budget, seed)
        res = run_worker("count", cap, states=q, inputs=n, steps=t, budget=budget, seed=seed, order="time")
        ours = None if res is None else res["seconds"]
        per_run = suff_seconds(problem, seed)
        if t * n <= 14:
            from brute import brute_valid_set

            start = time.perf_counter()
            twin_n = len(brute_valid_set(problem, budget))
            twin, twin_bound = time.perf_counter() - start, False
            assert res is None or int(res["count"]) == twin_n, (res, twin_n)
        else:
            twin, twin_bound = _times_power_of_two(per_run, t * n), True
        if measure:
            peer_n, peer = peer_count(problem, budget)
            peer_bound = False
            assert res is None or int(res["count"]) == peer_n, (res, peer_n)
        else:
            peer, peer_bound = per_run * peer_subsets(t, n, budget), True
        count_s = "> cap" if res is None else res["count"]
        bdd_s = f"> {cap:g} s" if res is None else fmt_s(ours)
        nodes = "-" if res is None else f"{res['suff_nodes']} / {res['valid_nodes']}"
        twin_s = ("≈ " if twin_bound else "") + fmt_s(twin)
        peer_s = ("≈ " if peer_bound else "") + fmt_s(peer)
        print(f"| {q} | {n} | {t} | {count_s} | {bdd_s} | {nodes} | {twin_s} | {ratio(twin, ours, twin_bound)} | "
              f"{peer_s} | {ratio(peer, ours, peer_bound)} |", flush=True)
    print("\n≈: extrapolated lower bound (per-run time of brute_suff on a sample x runs needed, Min1 not counted); "
          "≥: lower-bound ratio; > cap: the bdd count did not finish within the cap (no answer, not a wrong one).")


def section_explicit(quick: bool, seed: int) -> None:
    from solvers import api

    print("\n## Witness and oracle at scale (explicit backend through solvers.api)\n")
    print("| |Q| | |AP_in| | T | B_T | witness | oracle | (Eff_t, Eff_a) | valid (check) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for q, n, t, b in [(256, 8, 128, 3), (256, 8, 128, None)]:
        problem = random_problem(q, n, t, b, seed)
        problem.system.tables  # noqa: B018 - table compilation is not part of the query
        start = time.perf_counter()
        w = api.witness(problem, b, backend="explicit")
        w_s = time.perf_counter() - start
        start = time.perf_counter()
        o = api.oracle(problem, b, backend="explicit")
        o_s = time.perf_counter() - start
        cost = "-" if o is None else f"({o.eff_t}, {o.eff_a})"
        ok = (w is None) == (o is None) and (w is None or (api.valid(problem, w) and api.valid(problem, o.certificate)))
        b_s = "none" if b is None else b
        print(f"| {q} | {n} | {t} | {b_s} | {fmt_s(w_s)} | {fmt_s(o_s)} | {cost} | {ok} |", flush=True)


def section_check_many(quick: bool, seed: int) -> None:
    from brute import brute_min1, brute_suff

    from solvers.simulate import check_many

    print("\n## suff + min1 of random certificates (check_many vs a plain Python loop, the twin)\n")
    print("| |Q| | |AP_in| | T | certificates | check_many | plain loop | ratio | answers agree |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    q, n, t = 64, 4, 64
    number = 2000 if quick else 10_000
    problem = random_problem(q, n, t, None, seed)
    problem.system.tables  # noqa: B018
    rng = Generator(PCG64(seed + 1))
    certs = []
    for _ in range(number):
        k = int(rng.integers(1, 7))
        cells = rng.choice(t * n, size=k, replace=False)
        certs.append(tuple(sorted((int(c) // n, int(c) % n, 1 - ((problem.trace[int(c) // n] >> (int(c) % n)) & 1))
                                  for c in cells)))
    start = time.perf_counter()
    s_arr, m_arr = check_many(problem, certs)
    fast = time.perf_counter() - start
    start = time.perf_counter()
    slow = [(brute_suff(problem, c), brute_min1(problem, c)) for c in certs]
    loop = time.perf_counter() - start
    agree = all(bool(s) == a and bool(m) == b for s, m, (a, b) in zip(s_arr, m_arr, slow, strict=True))
    print(f"| {q} | {n} | {t} | {number} | {fmt_s(fast)} | {fmt_s(loop)} | {loop / fast:.3g}x | {agree} |")


def section_order(quick: bool, seed: int) -> None:
    print("\n## BDD variable order (count of M_B(I), |Q| = 16, |AP_in| = 4, B_T = 3)\n")
    print("| T | order | bdd | Suff nodes | Valid nodes |")
    print("|---:|---|---:|---:|---:|")
    cap = 10.0 if quick else 60.0
    for t in (8,) if quick else (8, 12, 16):
        for order in ("time", "time-reversed", "input"):
            res = run_worker("count", cap, states=16, inputs=4, steps=t, budget=3, seed=seed, order=order)
            if res is None:
                print(f"| {t} | {order} | > {cap:g} s | - | - |", flush=True)
            else:
                print(f"| {t} | {order} | {fmt_s(res['seconds'])} | {res['suff_nodes']} | {res['valid_nodes']} |",
                      flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fast subset (about a minute)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=("count", "explicit", "check_many", "order"), default=None)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(WORKERS[spec["name"]](**spec["kwargs"])))
        return
    print(f"# Solver benchmark ({'quick' if args.quick else 'full'}; seed {args.seed}; python "
          f"{platform.python_version()}; numpy {np.__version__})")
    sections = {"count": section_count, "explicit": section_explicit, "check_many": section_check_many,
                "order": section_order}
    for name, fn in sections.items():
        if args.only in (None, name):
            fn(args.quick, args.seed)


if __name__ == "__main__":
    main()
