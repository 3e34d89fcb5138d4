"""The counting frontier (issues 23 and 33): exact counts and best matches of the forward backend on families of
random machines the toolkit was not tuned on, T x |AP_in|, CPU and wall time and peak memory, one fresh process per
cell, every seed reported.

One command: ``python bench/frontier.py`` (``--family declist|labels``; ``--quick``: the small corner; ``--seed S
--seeds N``: seeds S .. S + N - 1, every one a row; ``--grid 8:256,12:64``: the cells; ``--seconds`` / ``--memory``:
the query's limits, past which it answers ``unknown``; ``--cell KIND T N`` runs a single cell in this process and
prints its JSON line; ``--cap`` seconds per cell, a backstop past the limits).

Family ``declist`` (issue 23), written here from the issue's description only: 16 states, |AP_in| inputs named
``x0 ..``, 2 outputs. Each state has 2-6 edges tried in file order (the first edge whose label holds fires, as in
TempoBench's executor); every edge but the last is labelled by a cube over its own random subset of 1-4 inputs
(random polarities), the last by ``t`` (so the state is input-complete); every edge constrains each output to 1, to 0
or not at all (a third each) and goes to a uniformly random state.

Family ``labels`` (issue 33: random Mealy machines with random label subsets per state, from the user's seed): 16
states, |AP_in| inputs, 2 outputs. Each state reads its own random subset of the inputs (each input with
probability 3/4, at least one, at most :data:`MAX_READ` of them, so a state's labels stay a few hundred cubes) and
has 2-6 transitions, each with a uniformly random destination and a random, fully specified output letter; every
letter of the read inputs goes to one of the state's transitions uniformly at random, so a transition's label is a
random subset of the letters (written as one HOA edge per cube over the read inputs). Unlike issue 10's cube family
(one transition per cube, about half the inputs read), a flip usually changes the transition taken but often lands
on the same one, and most states read most inputs.

Both: hard mode, t* = T - 2, B_T = T, effect a random conjunction of one or two output literals; the base trace
(each input 1 with probability 1/2) is redrawn until its run misses the effect. Everything comes from
``Generator(PCG64([seed, |AP_in|]))`` (``[seed, |AP_in|, 33]`` for ``labels``: the machine) and
``Generator(PCG64([seed, |AP_in|, T]))`` (the trace), so a cell is the same on every run.

Every cell runs in a fresh process (``--cell``); the parent reads the child's peak RSS and CPU time (user + system,
its reaped helpers included) from ``wait4`` and, every 20 ms, the resident sets of the child and its descendants
together (the larger figure is printed), and kills it past ``--cap`` seconds. The child times the query alone (wall
and CPU, its own and its children's). Counts are cross-checked against the bdd backend where it answers within
``--bdd-cap``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from encoders.problem import Problem

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

STATES = 16
OUTPUTS = 2
#: Most inputs one state of the ``labels`` family reads (its labels are one cube per letter of them).
MAX_READ = 10
FAMILIES = ("declist", "labels")


def family_hoa(seed: int, inputs: int, states: int = STATES) -> tuple[str, str]:
    """The decision-list machine (module docstring) as HOA text, and its effect; reproducible from (seed, inputs)."""
    from numpy.random import PCG64, Generator

    rng = Generator(PCG64([seed, inputs]))
    aps = [f"x{k}" for k in range(inputs)] + [f"y{k}" for k in range(OUTPUTS)]
    head = ["HOA: v1", f'name: "declist-{states}-{inputs}-{seed}"', f"States: {states}", "Start: 0",
            f"AP: {len(aps)} " + " ".join(f'"{a}"' for a in aps), "acc-name: all", "Acceptance: 0 t",
            "controllable-AP: " + " ".join(str(inputs + j) for j in range(OUTPUTS)), "--BODY--"]
    body = []
    for q in range(states):
        body.append(f"State: {q}")
        edges = int(rng.integers(2, 7))
        for e in range(edges):
            lits = []
            if e < edges - 1:
                size = int(rng.integers(1, min(4, inputs) + 1))
                for i in sorted(int(v) for v in rng.choice(inputs, size=size, replace=False)):
                    lits.append(str(i) if rng.integers(2) else f"!{i}")
            for o in range(OUTPUTS):
                kind = int(rng.integers(3))
                if kind < 2:
                    lits.append(str(inputs + o) if kind else f"!{inputs + o}")
            body.append(f"[{' & '.join(lits) if lits else 't'}] {int(rng.integers(states))}")
    k = int(rng.integers(1, 3))
    chosen = sorted(int(o) for o in rng.choice(OUTPUTS, size=k, replace=False))
    effect = " & ".join(f"y{o}" if rng.integers(2) else f"!y{o}" for o in chosen)
    return "\n".join([*head, *body, "--END--"]) + "\n", effect


def labels_machine(seed: int, inputs: int, states: int = STATES) -> tuple[str, str, np.ndarray, np.ndarray]:
    """The random-labels machine (module docstring) as HOA text, its effect, and its dense tables ``next[q, x]``
    (int32), ``out[q, x]`` (the output letter) computed from the same draws; reproducible from (seed, inputs).

    The tables are the ones the HOA text compiles to (tests/test_frontier_bench.py checks it at a few sizes);
    computing them here saves the compilation of one letter at a time, about a minute at 16 inputs."""
    import numpy as np
    from numpy.random import PCG64, Generator

    rng = Generator(PCG64([seed, inputs, 33]))
    aps = [f"x{k}" for k in range(inputs)] + [f"y{k}" for k in range(OUTPUTS)]
    head = ["HOA: v1", f'name: "labels-{states}-{inputs}-{seed}"', f"States: {states}", "Start: 0",
            f"AP: {len(aps)} " + " ".join(f'"{a}"' for a in aps), "acc-name: all", "Acceptance: 0 t",
            "controllable-AP: " + " ".join(str(inputs + j) for j in range(OUTPUTS)), "--BODY--"]
    body = []
    letters = np.arange(1 << inputs, dtype=np.int64)
    nxt = np.zeros((states, 1 << inputs), dtype=np.int32)
    out = np.zeros((states, 1 << inputs), dtype=np.int64)
    for q in range(states):
        body.append(f"State: {q}")
        reads = [i for i in range(inputs) if rng.random() < 0.75] or [int(rng.integers(inputs))]
        if len(reads) > MAX_READ:
            reads = sorted(int(i) for i in rng.choice(reads, size=MAX_READ, replace=False))
        moves = int(rng.integers(2, 7))
        dest = rng.integers(states, size=moves)
        bits = rng.integers(2, size=(moves, OUTPUTS))
        outs = [[str(inputs + o) if bits[m, o] else f"!{inputs + o}" for o in range(OUTPUTS)] for m in range(moves)]
        move_of = rng.integers(moves, size=1 << len(reads))
        for pat, move in enumerate(move_of.tolist()):
            lits = [str(i) if (pat >> j) & 1 else f"!{i}" for j, i in enumerate(reads)]
            body.append(f"[{' & '.join(lits + outs[move])}] {int(dest[move])}")
        pat = np.zeros_like(letters)
        for j, i in enumerate(reads):
            pat |= ((letters >> i) & 1) << j
        nxt[q] = dest[move_of[pat]]
        out[q] = (bits[move_of[pat]] << np.arange(OUTPUTS)).sum(axis=1)
    k = int(rng.integers(1, 3))
    chosen = sorted(int(o) for o in rng.choice(OUTPUTS, size=k, replace=False))
    effect = " & ".join(f"y{o}" if rng.integers(2) else f"!y{o}" for o in chosen)
    return "\n".join([*head, *body, "--END--"]) + "\n", effect, nxt, out


def labels_hoa(seed: int, inputs: int, states: int = STATES) -> tuple[str, str]:
    """The random-labels machine (module docstring) as HOA text, and its effect."""
    text, effect, _, _ = labels_machine(seed, inputs, states)
    return text, effect


def family_problem(seed: int, inputs: int, steps: int, family: str = "declist") -> Problem:
    """The family's instance (hard, t* = T - 2, B_T = T) for (seed, |AP_in|, T)."""
    import numpy as np
    from numpy.random import PCG64, Generator

    from encoders.problem import Problem
    from hoa.label import parse_named
    from hoa.mealy import MealyView
    from hoa.parser import parse
    from solvers.explicit import suff

    tables = None
    if family == "labels":
        text, effect, *tables = labels_machine(seed, inputs)
    else:
        text, effect = family_hoa(seed, inputs)
    view = MealyView.from_automaton(parse(text)[0])
    if tables:
        # The same tables the text compiles to (labels_machine), without compiling them letter by letter.
        for table in tables:
            table.setflags(write=False)
        view.__dict__["tables"] = tuple(tables)
    eff = parse_named(effect, view.outputs)
    rng = Generator(PCG64([seed, inputs, steps]))
    weights = 1 << np.arange(inputs)
    for _ in range(1000):
        trace = tuple(int(x) for x in ((rng.random((steps, inputs)) < 0.5) * weights).sum(axis=1))
        problem = Problem(view, trace, eff, steps - 2, "hard", 1, steps)
        if not suff(problem, []):
            return problem
    raise RuntimeError("no base trace missing the effect in 1000 draws")


def _cpu() -> float:
    """CPU seconds (user + system) of this process and of its reaped children so far."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def cell(kind: str, seed: int, steps: int, inputs: int, backend: str, family: str = "declist",
         seconds: float | None = None, memory: float | None = None) -> dict:
    """One measurement in this process: ``count`` (|M_B(I)| with B_T = T) or ``best-empty`` / ``best-oracle`` /
    ``best-random`` (the best match over M(I) of the empty certificate / the oracle's / six random atoms); under
    ``seconds`` / ``memory`` (MiB) limits the answer may be ``unknown``."""
    from solvers import api
    from solvers.limits import Limits, Unknown

    problem = family_problem(seed, inputs, steps, family)
    problem.system.tables  # noqa: B018 - compiling the tables is not part of the query
    limits = Limits(seconds=seconds, memory=memory) if seconds is not None or memory is not None else None
    atoms: tuple = ()
    if kind == "best-oracle":
        found = api.oracle(problem, None)
        atoms = found.certificate if found is not None else ()
    elif kind == "best-random":
        # Six random atoms at distinct (t, input), seeded: most such certificates are not valid.
        from numpy.random import PCG64, Generator

        rng = Generator(PCG64([seed, inputs, steps, 7]))
        cells = rng.choice(problem.horizon * inputs, size=6, replace=False)
        atoms = tuple(sorted((int(c) // inputs, int(c) % inputs, int(rng.integers(2))) for c in cells))
    cpu, start = _cpu(), time.perf_counter()
    try:
        if kind == "count":
            answer = str(api.count(problem, problem.budget_t, backend, limits=limits))
        else:
            got = api.best_match(problem, atoms, None, backend, limits=limits)
            answer = f"{got.ap_f1:.6g}/{got.ts_f1:.6g}/{len(got.gold)}"
    except Unknown as ex:
        answer = f"unknown ({ex.reason})"
    return {"answer": answer, "seconds": round(time.perf_counter() - start, 4), "cpu": round(_cpu() - cpu, 3)}


_TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) so far of process ``pid``, its reaped children and its live descendants."""
    total, todo = 0.0, [str(pid)]
    while todo:
        proc = todo.pop()
        try:
            with open(f"/proc/{proc}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / _TICK  # utime, stime, cutime, cstime
            for task in os.listdir(f"/proc/{proc}/task"):
                with open(f"/proc/{proc}/task/{task}/children", "rb") as fh:
                    todo.extend(k.decode() for k in fh.read().split())
        except (OSError, IndexError, ValueError):
            continue
    return total


def run_cell(kind: str, seed: int, steps: int, inputs: int, backend: str, cap: float, family: str = "declist",
             seconds: float | None = None, memory: float | None = None, cpu: float | None = None) -> dict:
    """``cell`` in a fresh process: its JSON, the wall and CPU time of the whole process and its peak RSS (MiB);
    ``answer`` None past ``cap`` seconds of wall time (the process is killed) or when it failed, ``unknown (CPU
    limit)`` once the process and its descendants have used ``cpu`` seconds of CPU (a limit that means the same
    on a loaded machine; the process is killed)."""
    cmd = [sys.executable, __file__, "--seed", str(seed), "--backend", backend, "--family", family,
           "--cell", kind, str(steps), str(inputs)]
    if seconds is not None:
        cmd += ["--seconds", str(seconds)]
    if memory is not None:
        cmd += ["--memory", str(memory)]
    from solvers.limits import tree_resident_mib

    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    killed = False
    over_cpu = None
    peak = 0.0  # the process and its helpers together (wait4's peak is the largest one, not their sum)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, tree_resident_mib(proc.pid) or 0.0)
        if cpu is not None and over_cpu is None:
            used = tree_cpu(proc.pid)
            if used > cpu:
                over_cpu = used
        if time.monotonic() - start > cap or over_cpu is not None:
            proc.kill()
            killed = True
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = proc.stdout.read() if proc.stdout else ""
    wall = time.monotonic() - start
    rss = max(usage.ru_maxrss / 1024, peak)
    base = {"wall": round(wall, 3), "process_cpu": round(usage.ru_utime + usage.ru_stime, 3), "rss_mib": round(rss, 1)}
    if over_cpu is not None:
        # wait4 counts only the descendants that were reaped: the killed tree's CPU is the one read before the kill.
        base["process_cpu"] = max(base["process_cpu"], round(over_cpu, 3))
        return {"answer": f"unknown (CPU limit {cpu:g} s)", "seconds": round(wall, 3), "cpu": round(over_cpu, 3),
                **base}
    if killed or proc.returncode != 0:
        return {"answer": None, "seconds": None, "cpu": None, **base}
    got = json.loads(out.strip().splitlines()[-1])
    return {**got, **base}


GRID = [(4, (64, 256, 1024)), (8, (64, 128, 256)), (12, (16, 32, 64))]
QUICK = [(4, (64, 256)), (8, (32, 64)), (12, (16,))]


def parse_grid(text: str) -> list[tuple[int, tuple[int, ...]]]:
    """``"8:256,12:64,4:256+1024"`` as [(inputs, (T, ...)), ...]."""
    out = []
    for part in text.split(","):
        inputs, _, horizons = part.partition(":")
        out.append((int(inputs), tuple(int(t) for t in horizons.split("+"))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--family", choices=FAMILIES, default="declist")
    parser.add_argument("--grid", help="cells as INPUTS:T[+T..],... (default: the issue-23 grid)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=1, help="seeds seed .. seed + N - 1 per cell")
    parser.add_argument("--seconds", type=float, help="the query's time limit (answers unknown past it)")
    parser.add_argument("--memory", type=float, help="the query's memory limit in MiB (unknown past it)")
    parser.add_argument("--cpu", type=float, help="CPU seconds of a cell's process tree (unknown past them)")
    parser.add_argument("--cap", type=float, help="kill a cell's process past this (default: --seconds + 30, or 120)")
    parser.add_argument("--bdd-cap", type=float, default=0.0, help="also count on bdd, capped (0: not)")
    parser.add_argument("--kind", choices=("count", "best-empty", "best-oracle", "best-random"), default="count")
    parser.add_argument("--backend", default="forward")
    parser.add_argument("--cell", nargs=3, metavar=("KIND", "T", "INPUTS"))
    args = parser.parse_args()
    if args.cell:
        kind, steps, inputs = args.cell
        res = cell(kind, args.seed, int(steps), int(inputs), args.backend, args.family, args.seconds, args.memory)
        res["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        print(json.dumps(res))
        return
    cap = args.cap if args.cap is not None else (args.seconds + 30 if args.seconds is not None else 120.0)
    limits = ", ".join(f"{k} {v:g}" for k, v in (("seconds", args.seconds), ("memory MiB", args.memory),
                                                 ("CPU seconds", args.cpu))
                       if v is not None) or "none"
    print(f"# Frontier ({args.family}, {args.kind}, seeds {args.seed}..{args.seed + args.seeds - 1}, limits "
          f"{limits}, cap {cap:g} s)\n")
    print("| |AP_in| | T | seed | answer | query wall s | query CPU s | process wall s | process CPU s | peak MiB "
          "| bdd |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
    grid = parse_grid(args.grid) if args.grid else QUICK if args.quick else GRID
    for inputs, horizons in grid:
        for steps in horizons:
            for seed in range(args.seed, args.seed + args.seeds):
                got = run_cell(args.kind, seed, steps, inputs, args.backend, cap, args.family, args.seconds,
                               args.memory, args.cpu)
                bdd = "-"
                if args.bdd_cap and args.kind == "count":
                    other = run_cell("count", seed, steps, inputs, "bdd", args.bdd_cap, args.family)
                    if other["answer"] is None:
                        bdd = f"> {args.bdd_cap:g} s"
                    else:
                        same = other["answer"] == got["answer"]
                        assert got["answer"] is None or got["answer"].startswith("unknown") or same, (
                            inputs, steps, seed, got, other)
                        bdd = f"agrees ({other['seconds']:.3g} s)"
                ans = got["answer"]
                if ans is None:
                    shown, q_s, q_cpu = f"killed > {cap:g} s", "-", "-"
                else:
                    shown = ans if len(ans) < 16 or not ans.isdigit() else f"{ans[0]}.{ans[1:5]}e{len(ans) - 1}"
                    q_s, q_cpu = f"{got['seconds']:.3g}", f"{got['cpu']:.3g}"
                print(f"| {inputs} | {steps} | {seed} | {shown} | {q_s} | {q_cpu} | {got['wall']:.3g} | "
                      f"{got['process_cpu']:.3g} | {got['rss_mib']:.0f} | {bdd} |", flush=True)


if __name__ == "__main__":
    main()
