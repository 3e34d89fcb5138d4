"""Generator benchmark: certified instances per second by size, and the largest size that certifies within 10 s.

Usage: ``python bench/generate.py [--quick]``. Prints plain lines; ratios are against the named baseline size
(random_mealy, T = 16, |AP_in| = 3, |Q| = 8, the middle of the default generator's range).

``python bench/generate.py --peer DIR [--count N] [--seeds 0,1000,7100] [--repeat R]``: side by side with the
peer's generator instead (issue 33 item 4), DIR a checkout of the peer's repository (official-Auralin/Benchmark-game,
its ``gf01`` package). At the peer's sizes (3 inputs, 2 outputs, 3-6 states, T 6-12) each seed S runs, each in a
fresh process with its imports: ``gf01 generate --seed S --count N --jobs 1`` with random_mealy at those sizes, once
with the default targets and once with targets off (the peer's acceptance rule: no caps on easy optima), and the
peer's ``generate_instance`` over seeds S .. S+N-1 (a seed whose attempts all fail counts as failed, as the peer's
suite would stop there). Figures: CPU seconds (user + system of the process, start-up included) per instance
produced, wall seconds, and our CPU per instance over the peer's, for every run; with ``--repeat R`` each seed runs
the three commands R times in turn (on a loaded machine one run's CPU time varies by 20 % or more) and a second
table gives the medians per seed.

1. Throughput: for each (T, |AP_in|, |Q|), generate a few random_mealy instances with the default targets and count
   (BDD) and report certified instances per second and the ratio to the baseline.
2. Ladder: one certification per size (T, |AP_in|, |Q|), growing about 2x a step, each in a fresh process killed at
   10 s, with targets off (certify = the solvers prove M_B(I) non-empty and the base trace misses the effect), once
   with the default count guard and once counting |M_B(I)| always. The largest size that finishes is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gf01_formal.instances.generator import generate, generate_slot, load_config  # noqa: E402

BASELINE = (16, 3, 8)
THROUGHPUT_SIZES = [(8, 2, 4), (16, 3, 8), (24, 4, 12), (32, 5, 16)]
LADDER = [(16, 3, 8), (32, 4, 16), (64, 5, 32), (128, 6, 64), (256, 7, 128), (512, 8, 256), (768, 8, 384),
          (1024, 9, 512)]
LIMIT_S = 10.0
#: The peer's default machine sizes (its GeneratorConfig: 3-6 states, T 6-12; 3 inputs, 2 outputs).
PEER_SIZES = {"families": [{"kind": "random_mealy", "states": [3, 6], "inputs": [3, 3], "outputs": [2, 2]}],
              "horizon": [6, 12]}
NO_TARGETS = {"max_single_timestep_fraction": None, "max_single_atom_fraction": None, "max_greedy_fraction": None}
#: Drives the peer's own generator (its public API) over seeds start .. start+count-1; prints instances and failures.
PEER_DRIVER = """
import sys
sys.path.insert(0, sys.argv[1])
from gf01.generator import generate_instance
start, count = int(sys.argv[2]), int(sys.argv[3])
made = failed = 0
for seed in range(start, start + count):
    try:
        generate_instance(seed=seed, split_id="public_dev")
        made += 1
    except RuntimeError:
        failed += 1
print(made, failed)
"""


def cfg_for(T: int, n_in: int, q: int, *, targets: bool = True, count_always: bool = False) -> dict:
    """A generator cfg drawing only random_mealy systems of exactly this size."""
    cfg: dict = {
        "families": [{"kind": "random_mealy", "states": q, "inputs": n_in, "outputs": 2}],
        "horizon": [T, T],
        "max_attempts": 20,
    }
    if not targets:
        cfg["targets"] = {"max_single_timestep_fraction": None, "max_single_atom_fraction": None,
                          "max_greedy_fraction": None}
    if count_always:
        cfg["count_max_positions"] = None
    return cfg


def throughput(count: int) -> dict[tuple[int, int, int], float]:
    """Certified instances per second for each size in THROUGHPUT_SIZES."""
    rates = {}
    for size in THROUGHPUT_SIZES:
        cfg = load_config(cfg_for(*size))
        t0 = time.perf_counter()
        bundle = generate(1, count, cfg)
        dt = time.perf_counter() - t0
        rates[size] = len(bundle.instances) / dt
    return rates


def _one(size: tuple[int, int, int], count_always: bool) -> float | None:
    """Seconds for one certification in a fresh process, or None past the limit."""
    code = (
        f"import sys, json, time; sys.path.insert(0, {str(ROOT)!r});"
        "from gf01_formal.instances.generator import generate_slot, load_config;"
        "cfg = load_config(json.loads(sys.argv[1])); t = time.perf_counter();"
        "r = generate_slot(1, 0, cfg); print(json.dumps([time.perf_counter() - t, type(r).__name__]))"
    )
    cfg = json.dumps(cfg_for(*size, targets=False, count_always=count_always))
    try:
        out = subprocess.run([sys.executable, "-c", code, cfg], capture_output=True, text=True, timeout=LIMIT_S + 5,
                             check=True).stdout
    except subprocess.TimeoutExpired:
        return None
    seconds, kind = json.loads(out)
    return seconds if kind == "Instance" and seconds <= LIMIT_S else None


def _timed(cmd: list[str]) -> tuple[str, float, float]:
    """(stdout, CPU seconds, wall seconds) of a command run to its end in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, cpu, wall


def versus_peer(peer: str, seeds: list[int], count: int, repeat: int = 1) -> None:
    """The side-by-side table (module docstring): every run of every seed, then per seed the medians of ``repeat``
    runs (each run is the peer's, ours and ours with targets off, in turn)."""
    import statistics

    print("| seed | run | generator | instances | CPU s | wall s | CPU ms/instance | x peer |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    medians = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            per_run: dict[str, list[float]] = {"peer": [], "ours": [], "ours, targets off": []}
            for run in range(1, repeat + 1):
                out, cpu, wall = _timed([sys.executable, "-c", PEER_DRIVER, peer, str(seed), str(count)])
                made, failed = map(int, out.split())
                peer_ms = 1000 * cpu / made
                per_run["peer"].append(peer_ms)
                print(f"| {seed} | {run} | peer ({failed} seeds failed) | {made} | {cpu:.2f} | {wall:.2f} | "
                      f"{peer_ms:.1f} | 1 |", flush=True)
                for label, cfg in (("ours", PEER_SIZES), ("ours, targets off", {**PEER_SIZES, "targets": NO_TARGETS})):
                    cfg_file = os.path.join(tmp, "cfg.json")
                    with open(cfg_file, "w", encoding="utf-8") as f:
                        json.dump(cfg, f)
                    bundle = os.path.join(tmp, "bundle.json")
                    _, cpu, wall = _timed([sys.executable, "-m", "gf01_formal", "generate", "--seed", str(seed),
                                           "--count", str(count), "--jobs", "1", "--cfg", cfg_file, "-o", bundle])
                    with open(bundle, encoding="utf-8") as f:
                        made = len(json.load(f)["instances"])
                    ms = 1000 * cpu / made
                    per_run[label].append(ms)
                    print(f"| {seed} | {run} | {label} | {made} | {cpu:.2f} | {wall:.2f} | {ms:.1f} | "
                          f"{ms / peer_ms:.1f} |", flush=True)
            medians.append((seed, {k: statistics.median(v) for k, v in per_run.items()}))
    if repeat > 1:
        print()
        print("| seed | peer CPU ms/inst | ours | x peer | ours, targets off | x peer |")
        print("|---:|---:|---:|---:|---:|---:|")
        for seed, m in medians:
            p_ms, o_ms, n_ms = m["peer"], m["ours"], m["ours, targets off"]
            print(f"| {seed} | {p_ms:.1f} | {o_ms:.1f} | {o_ms / p_ms:.2f} | {n_ms:.1f} | {n_ms / p_ms:.2f} |")


def main() -> None:
    """Run both parts and print the figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer instances per size")
    ap.add_argument("--peer", metavar="DIR", help="a checkout of the peer's repository: compare with its generator")
    ap.add_argument("--count", type=int, default=200, help="instances per seed (with --peer)")
    ap.add_argument("--seeds", default="0,1000,7100", help="comma-separated seeds (with --peer)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per seed (with --peer); medians when more than one")
    args = ap.parse_args()
    if args.peer:
        versus_peer(args.peer, [int(x) for x in args.seeds.split(",")], args.count, args.repeat)
        return
    generate_slot(0, 0, load_config(cfg_for(8, 2, 4)))  # warm imports and caches outside the timings
    rates = throughput(3 if args.quick else 8)
    base = rates[BASELINE]
    print(f"baseline: random_mealy T={BASELINE[0]} |AP_in|={BASELINE[1]} |Q|={BASELINE[2]}: {base:.2f} inst/s")
    for (T, n, q), r in rates.items():
        print(f"throughput T={T:<4d} |AP_in|={n} |Q|={q:<4d} {r:7.2f} certified inst/s  ratio {r / base:5.2f}")
    for count_always in (False, True):
        label = "count always" if count_always else "default count guard"
        largest = None
        for size in LADDER:
            sec = _one(size, count_always)
            T, n, q = size
            print(f"ladder ({label}) T={T:<4d} |AP_in|={n} |Q|={q:<4d} "
                  + (f"{sec:6.2f} s" if sec is not None else f"> {LIMIT_S:.0f} s"))
            if sec is None:
                break
            largest = size
        print(f"largest certified within {LIMIT_S:.0f} s ({label}): (T, |AP_in|, |Q|) = {largest}")


if __name__ == "__main__":
    main()
