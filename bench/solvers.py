"""Solver benchmark: exact counts of M(I) and M_B(I) on the forward and bdd backends against brute force, the
explicit backend at scale, batch certificate checks, and the BDD variable order. One command:
``python bench/solvers.py`` (``--quick``: a subset; ``--only SECTION``; ``--seed S``).

Issue 10's family (section ``family``): random input-complete Mealy machines written as HOA, |Q| states, |AP_in|
inputs, 2 outputs; each state reads a random subset of the inputs (each input with probability 1/2) and has one edge
per cube over them, labelled with random output literals (every output, random polarity) and a random destination;
hard mode, effect a conjunction of one or two output literals, t* = T - 2, a random base trace redrawn until it
misses the effect. The machine comes from ``Generator(PCG64(seed))``, the trace of horizon T from
``Generator(PCG64([seed, T]))``. Section ``controller``: a 404-state arbiter with 3 request inputs (round robin,
grant leases of up to 133 steps, written as HOA like an ltlsynt controller).

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
from hoa.label import Var, parse_named  # noqa: E402
from hoa.mealy import MealyView  # noqa: E402
from hoa.parser import parse  # noqa: E402


def random_problem(states: int, inputs: int, steps: int, budget: int | None, seed: int) -> Problem:
    """A random Mealy table problem (module docstring), reproducible from ``seed``."""
    rng = Generator(PCG64(seed))
    nxt = rng.integers(0, states, size=(states, 1 << inputs))
    out = rng.integers(0, 2, size=(states, 1 << inputs))
    view = MealyView.from_table(tuple(f"i{k}" for k in range(inputs)), ("o",), nxt, out)
    trace = tuple(int(x) for x in rng.integers(0, 1 << inputs, size=steps))
    return Problem(view, trace, Var(0), steps - 1, "hard", 1, budget)


def cube_hoa(seed: int, states: int = 16, inputs: int = 4, outputs: int = 2) -> tuple[str, str]:
    """Issue 10's random machine as HOA text, and its effect (module docstring), reproducible from ``seed``."""
    rng = Generator(PCG64(seed))
    aps = [f"i{k}" for k in range(inputs)] + [f"o{k}" for k in range(outputs)]
    lines = ["HOA: v1", f'name: "cube-{states}-{inputs}-{outputs}-{seed}"', f"States: {states}", "Start: 0",
             f"AP: {len(aps)} " + " ".join(f'"{a}"' for a in aps), "acc-name: all", "Acceptance: 0 t",
             "controllable-AP: " + " ".join(str(inputs + j) for j in range(outputs)), "--BODY--"]
    for q in range(states):
        reads = [i for i in range(inputs) if rng.random() < 0.5]
        lines.append(f"State: {q}")
        for pat in range(1 << len(reads)):
            dest = int(rng.integers(states))
            lits = [str(i) if (pat >> j) & 1 else f"!{i}" for j, i in enumerate(reads)]
            lits += [str(inputs + o) if rng.integers(2) else f"!{inputs + o}" for o in range(outputs)]
            lines.append(f"[{' & '.join(lits)}] {dest}")
    lines.append("--END--")
    k = int(rng.integers(1, 3))
    chosen = sorted(int(o) for o in rng.choice(outputs, size=k, replace=False))
    effect = " & ".join(f"o{o}" if rng.integers(2) else f"!o{o}" for o in chosen)
    return "\n".join(lines) + "\n", effect


def arbiter_hoa(lease: int = 133) -> str:
    """A 3-client round-robin arbiter with grant leases, as HOA: 2 + 3 + 3 * lease states (404 for lease 133).

    ``init`` grants nobody and goes to ``idle0``; ``idle_p`` grants the first requester in the order p, p+1, p+2
    and moves to ``busy_c_1``; ``busy_c_k`` keeps granting c while c requests (k counts the steps held), releases
    to ``idle_{c+1}`` when c stops, and when the lease runs out grants nobody and cools down for a step (``cool``).
    """
    req, n = ["r0", "r1", "r2"], 3
    aps = [*req, "g0", "g1", "g2"]

    def grant(c: int | None) -> str:
        return " & ".join(str(n + k) if k == c else f"!{n + k}" for k in range(n))

    names = ["init", *(f"idle{p}" for p in range(n)), *(f"busy{c}_{k}" for c in range(n) for k in range(1, lease + 1)),
             "cool"]
    index = {name: q for q, name in enumerate(names)}
    body = ['State: 0 "init"', f"[t & {grant(None)}] {index['idle0']}"]
    for p in range(n):
        body.append(f'State: {index[f"idle{p}"]} "idle{p}"')
        order = [(p + k) % n for k in range(n)]
        for k, c in enumerate(order):
            cond = " & ".join([str(c), *(f"!{d}" for d in order[:k])])
            body.append(f"[{cond} & {grant(c)}] {index[f'busy{c}_1']}")
        body.append(f"[{' & '.join(f'!{c}' for c in range(n))} & {grant(None)}] {index[f'idle{p}']}")
    for c in range(n):
        for k in range(1, lease + 1):
            body.append(f'State: {index[f"busy{c}_{k}"]} "busy{c}_{k}"')
            if k < lease:
                body.append(f"[{c} & {grant(c)}] {index[f'busy{c}_{k + 1}']}")
            else:
                body.append(f"[{c} & {grant(None)}] {index['cool']}")
            body.append(f"[!{c} & {grant(None)}] {index[f'idle{(c + 1) % n}']}")
    body.append(f'State: {index["cool"]} "cool"')
    body.append(f"[t & {grant(None)}] {index['idle0']}")
    head = ["HOA: v1", f'name: "lease-arbiter-3-{lease}"', f"States: {len(names)}", "Start: 0",
            f"AP: {len(aps)} " + " ".join(f'"{a}"' for a in aps), "acc-name: all", "Acceptance: 0 t",
            "controllable-AP: 3 4 5", "--BODY--"]
    return "\n".join([*head, *body, "--END--"]) + "\n"


def hoa_problem(text: str, effect: str, steps: int, budget: int | None, seed: int, density: float = 0.5) -> Problem:
    """Hard mode at t* = T - 2 on the HOA machine, a base trace (input density ``density``) from
    ``Generator(PCG64([seed, T]))`` redrawn until the base run misses the effect."""
    from solvers.explicit import suff

    view = MealyView.from_automaton(parse(text)[0])
    eff = parse_named(effect, view.outputs)
    rng = Generator(PCG64([seed, steps]))
    n = view.num_inputs
    weights = 1 << np.arange(n)
    for _ in range(1000):
        trace = tuple(int(x) for x in ((rng.random((steps, n)) < density) * weights).sum(axis=1))
        problem = Problem(view, trace, eff, steps - 2, "hard", 1, budget)
        if not suff(problem, []):
            return problem
    raise RuntimeError("no base trace missing the effect in 1000 draws")


def make_problem(kind: str, seed: int, steps: int, inputs: int, budget: int | None, states: int = 16) -> Problem:
    """The bench instance ``kind`` ("cube": issue 10's family, "arbiter": the 404-state lease controller,
    "wide-arbiter": issue 28's 404-state controller class, "table": a uniformly random table with ``states`` states,
    t* = T - 1)."""
    if kind == "cube":
        text, effect = cube_hoa(seed, 16, inputs, 2)
        return hoa_problem(text, effect, steps, budget, seed)
    if kind == "arbiter":
        return hoa_problem(arbiter_hoa(), "g2", steps, budget, seed)
    if kind == "wide-arbiter":
        return wide_arbiter_problem(steps, budget, seed)
    return random_problem(states, inputs, steps, budget, seed)


def wide_arbiter_problem(steps: int, budget: int | None, seed: int) -> Problem:
    """Issue 28's case: the 404-state arbiter-like controller of ``tests/backend_common.py`` (266 classes at one step
    of 8), effect g_2 at t* = T - 1; seed 0: the issue's trace, every step s_0&s_1&s_2; seed s > 0: random request
    letters from ``Generator(PCG64([s, T]))``."""
    from backend_common import arbiter_view

    view = arbiter_view()
    trace = (7,) * steps if seed == 0 else tuple(int(x) for x in Generator(PCG64([seed, steps])).integers(0, 8, steps))
    return Problem(view, trace, parse_named("g_2", view.outputs), steps - 1, budget_t=budget)


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


def work_backend_count(kind: str, seed: int, steps: int, inputs: int, budget: int | None, backend: str,
                       states: int = 16) -> dict:
    """Time one exact count through ``solvers.api`` (tables compiled and libraries imported before the clock)."""
    from solvers import api, forward

    if backend.startswith("bdd"):
        import dd.cudd  # noqa: F401 - import time is not part of a query
    problem = make_problem(kind, seed, steps, inputs, budget, states)
    problem.system.tables  # noqa: B018
    start = time.perf_counter()
    if backend == "forward":
        prof = forward.profile(problem, budget)
        n, keys = prof["count"], prof["keys_max"]
    else:
        n, keys = api.count(problem, budget, backend), None
    return {"count": str(n), "seconds": time.perf_counter() - start, "keys": keys,
            "states": problem.system.num_states}


WORKERS = {"count": work_count, "backend_count": work_backend_count}


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
    print("\n## Exact count of M_B(I) on random tables: bdd and forward vs brute force (B_T = 3, hard mode, "
          "t* = T - 1)\n")
    print("| |Q| | |AP_in| | T | |M_B(I)| | bdd | BDD nodes (Suff / Valid) | forward | bdd / forward | "
          "twin 2^(T n) | ratio | peer (by size, within B_T) | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
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
        fw = run_worker("backend_count", cap, kind="table", seed=seed, steps=t, inputs=n, budget=budget,
                        backend="forward", states=q)
        if fw is not None and res is not None:
            assert fw["count"] == res["count"], (q, n, t, fw, res)
        fw_s = f"> {cap:g} s" if fw is None else fmt_s(fw["seconds"])
        if fw is None:
            vs = "-" if res is None else "≤ " + ratio(ours, cap, False)
        else:
            vs = ("≥ " + ratio(cap, fw["seconds"], False)) if res is None else ratio(ours, fw["seconds"], False)
        per_run = suff_seconds(problem, seed)
        if t * n <= 14:
            from brute import brute_valid_set

            start = time.perf_counter()
            twin_n = len(brute_valid_set(problem, budget))
            twin, twin_bound = time.perf_counter() - start, False
            assert res is None or int(res["count"]) == twin_n, (res, twin_n)
            assert fw is None or int(fw["count"]) == twin_n, (fw, twin_n)
        else:
            twin, twin_bound = _times_power_of_two(per_run, t * n), True
        if measure:
            peer_n, peer = peer_count(problem, budget)
            peer_bound = False
            assert res is None or int(res["count"]) == peer_n, (res, peer_n)
            assert fw is None or int(fw["count"]) == peer_n, (fw, peer_n)
        else:
            peer, peer_bound = per_run * peer_subsets(t, n, budget), True
        count_s = ("> cap" if fw is None else fw["count"]) if res is None else res["count"]
        bdd_s = f"> {cap:g} s" if res is None else fmt_s(ours)
        nodes = "-" if res is None else f"{res['suff_nodes']} / {res['valid_nodes']}"
        twin_s = ("≈ " if twin_bound else "") + fmt_s(twin)
        peer_s = ("≈ " if peer_bound else "") + fmt_s(peer)
        print(f"| {q} | {n} | {t} | {count_s} | {bdd_s} | {nodes} | {fw_s} | {vs} | {twin_s} | "
              f"{ratio(twin, ours, twin_bound)} | {peer_s} | {ratio(peer, ours, peer_bound)} |", flush=True)
    print("\n≈: extrapolated lower bound (per-run time of brute_suff on a sample x runs needed, Min1 not counted); "
          "≥: lower-bound ratio; > cap: the bdd count did not finish within the cap (no answer, not a wrong one).")


def _bits(n: str) -> str:
    v = int(n)
    return str(v) if v < 10**12 else f"{v:.4e} (2^{math.log2(v):.1f})"


def _family_rows(kind: str, rows: list[tuple[int, int]], quick: bool, seed: int, bdd_cap: float, fw_cap: float) -> None:
    """One table row per (T, |AP_in|) and budget: forward count (and keys), bdd count (capped), brute force."""
    print("| T | |AP_in| | B_T | count | forward | keys/step (max) | bdd | forward vs bdd | twin | peer | "
          "forward vs peer |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for steps, n in rows:
        for budget in (None, 3):
            fw = run_worker("backend_count", fw_cap, kind=kind, seed=seed, steps=steps, inputs=n, budget=budget,
                            backend="forward")
            bd = run_worker("backend_count", bdd_cap, kind=kind, seed=seed, steps=steps, inputs=n, budget=budget,
                            backend="bdd")
            if fw is not None and bd is not None:
                assert fw["count"] == bd["count"], (steps, n, budget, fw, bd)
            problem = make_problem(kind, seed, steps, n, budget)
            positions = problem.horizon * n
            per_run = suff_seconds(problem, seed)
            twin = _times_power_of_two(per_run, positions)
            peer = twin if budget is None else per_run * peer_subsets(problem.horizon, n, budget)
            peer_bound = True
            if peer < 5:
                # The peer's method finishes here: run it (every flip set, or the subsets within B_T by size).
                if budget is None:
                    from brute import brute_valid_set

                    start = time.perf_counter()
                    peer_n = len(brute_valid_set(problem, None))
                    peer = time.perf_counter() - start
                else:
                    peer_n, peer = peer_count(problem, budget)
                peer_bound = False
                assert fw is None or int(fw["count"]) == peer_n, (steps, n, budget, fw, peer_n)
            fw_s = "> cap" if fw is None else fmt_s(fw["seconds"])
            bd_s = f"> {bdd_cap:g} s" if bd is None else fmt_s(bd["seconds"])
            ours = None if fw is None else fw["seconds"]
            vs_bdd = ("≥ " + ratio(bdd_cap, ours, False)) if bd is None else ratio(bd["seconds"], ours, False)
            count_s = "-" if fw is None else _bits(fw["count"])
            keys = "-" if fw is None else str(fw["keys"])
            b_s = "none" if budget is None else budget
            peer_s = ("≈ " if peer_bound else "") + fmt_s(peer)
            print(f"| {steps} | {n} | {b_s} | {count_s} | {fw_s} | {keys} | {bd_s} | {vs_bdd} | ≈ {fmt_s(twin)} | "
                  f"{peer_s} | {ratio(peer, ours, peer_bound)} |", flush=True)


def section_family(quick: bool, seed: int) -> None:
    print("\n## Issue 10's family: exact |M(I)| and |M_B(I)| (B_T = 3), |Q| = 16, hard mode, t* = T - 2\n")
    rows = [(5, 4), (16, 4), (32, 4), (64, 4)]
    if not quick:
        rows += [(128, 4), (256, 4), (32, 8)]
    _family_rows("cube", rows, quick, seed, 10.0 if quick else 60.0, 120.0 if quick else 600.0)
    print("\nforward and bdd run in fresh processes (imports and table compilation excluded); bdd is capped "
          "(> cap: no answer, never a wrong one); where both answer the counts are asserted equal. keys/step: the "
          "most live (q, S, b) keys of any step. twin: brute force over all 2^(T |AP_in|) flip sets, peer: the "
          "peer's method (every flip set without a budget, else the subsets by size within B_T), run in full where "
          "its extrapolation is under 5 s (counts asserted equal), elsewhere extrapolated (≈) like the twin from the "
          "measured time of one brute_suff.")


def section_controller(quick: bool, seed: int) -> None:
    print("\n## The 404-state lease arbiter (3 inputs), effect g2 at t* = T - 2\n")
    _family_rows("arbiter", [(32, 3)], quick, seed, 10.0 if quick else 60.0, 120.0 if quick else 600.0)


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
    parser.add_argument("--only", choices=("family", "controller", "count", "explicit", "check_many", "order"),
                        default=None)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--emit", nargs=4, metavar=("KIND", "T", "INPUTS", "DIR"),
                        help="write the instance's HOA file and JSON trace to DIR and print the matching "
                             "`gf01 import hoa` command (to time the CLI on it)")
    parser.add_argument("--count-one", nargs=5, metavar=("KIND", "T", "INPUTS", "BUDGET", "BACKEND"),
                        help="print one exact count (kind cube|arbiter|wide-arbiter|table, BUDGET an int or none) and "
                             "exit: for timing whole commands")
    args = parser.parse_args()
    if args.emit:
        kind, steps, inputs, where = args.emit
        problem = make_problem(kind, args.seed, int(steps), int(inputs), None)
        text = arbiter_hoa() if kind == "arbiter" else cube_hoa(args.seed, 16, int(inputs), 2)[0]
        effect = "g2" if kind == "arbiter" else cube_hoa(args.seed, 16, int(inputs), 2)[1]
        out = Path(where)
        out.mkdir(parents=True, exist_ok=True)
        stem = f"{kind}-{inputs}-T{steps}-seed{args.seed}"
        (out / f"{stem}.hoa").write_text(text, encoding="utf-8")
        names = problem.system.inputs
        trace = [{a: (x >> i) & 1 for i, a in enumerate(names)} for x in problem.trace]
        (out / f"{stem}.trace.json").write_text(json.dumps(trace), encoding="utf-8")
        print(f"gf01 import hoa {out / stem}.hoa -o {out / stem}.instance.json --trace-file {out / stem}.trace.json "
              f"--effect '{effect}' --t-star {problem.t_star}")
        return
    if args.count_one:
        from solvers import api

        kind, steps, inputs, budget_s, backend = args.count_one
        budget = None if budget_s == "none" else int(budget_s)
        print(api.count(make_problem(kind, args.seed, int(steps), int(inputs), budget), budget, backend))
        return
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(WORKERS[spec["name"]](**spec["kwargs"])))
        return
    print(f"# Solver benchmark ({'quick' if args.quick else 'full'}; seed {args.seed}; python "
          f"{platform.python_version()}; numpy {np.__version__})")
    sections = {"family": section_family, "controller": section_controller, "count": section_count,
                "explicit": section_explicit, "check_many": section_check_many, "order": section_order}
    for name, fn in sections.items():
        if args.only in (None, name):
            fn(args.quick, args.seed)


if __name__ == "__main__":
    main()
