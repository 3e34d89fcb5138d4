"""Campaign benchmark: instances per second for the baseline panel, against the peer's figure, and scaling from one
worker to two, on the local pool and on Dask.

Usage: ``python bench/campaign.py [--count N] [--quick]``. Prints plain lines and a table.

Baseline (the peer's own figure, issue 12): a 5-agent panel on 100 instances took the peer about 14 minutes at its
default sizes (T 6-12, 3 inputs, 3-6 states, 2 outputs), i.e. 100 / 840 s = 0.119 instances per second, or 0.595
runs (agent episodes) per second; with fewer agents than 5 the runs/s ratio is the fair one. We play the
DEC-056 full panel (random, greedy, search, tool, oracle) restricted to the agents this installation has (the line
``panel:`` says which), on bundles of those sizes and of T = 64 (same machine sizes, the generator's cfg), with the
local executor on 1 and 2 worker processes (1 = in the driver) and on a dask.distributed LocalCluster of 1 and 2
single-thread worker processes. "play s" is from the first task to the last record appended (the scored episodes,
shared scorer per instance); "total s" adds validation, report (json, md, html) and pilot analysis. The bundles are
generated first and not timed. Wall time on a shared machine: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gf01_formal.agents import BUILTIN, PANELS  # noqa: E402
from gf01_formal.campaign.run import run_campaign  # noqa: E402
from gf01_formal.instances.generator import generate, load_config  # noqa: E402
from gf01_formal.instances.io import save_artifact  # noqa: E402

PEER_INSTANCES_PER_S = 100 / (14 * 60)
PEER_RUNS_PER_S = 5 * 100 / (14 * 60)  # the peer's panel had 5 agents; ours may have fewer (see "panel:")
SIZES = {"peer default (T 6-12)": [6, 12], "T = 64": [64, 64]}


def cfg(horizon: list[int]) -> dict:
    """The peer's default machine sizes: 3 inputs, 3-6 states, 2 outputs."""
    return {"families": [{"kind": "random_mealy", "states": [3, 6], "inputs": [3, 3], "outputs": [2, 2]}],
            "horizon": horizon}


def timed(bundle: Path, work: Path, agents: list[str], executor: str, jobs: int | None) -> tuple[float, float, int]:
    """(play seconds, total seconds, runs) of one fresh campaign."""
    marks: list[float] = []

    def progress(done: int, total: int) -> None:
        marks.append(time.perf_counter())

    out = work / f"c-{executor.replace('/', '_').replace(':', '_')}-{jobs}"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    summary = run_campaign(bundle, out, panel="full", agents=agents, executor=executor, jobs=jobs,
                           progress=progress)
    total = time.perf_counter() - t0
    return marks[-1] - t0, total, summary.played


def main() -> None:
    """Run the benchmark (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=100, help="instances per bundle (the peer's figure is for 100)")
    ap.add_argument("--quick", action="store_true", help="20 instances per bundle")
    args = ap.parse_args()
    count = 20 if args.quick else args.count
    agents = [a for a in PANELS["full"] if a in BUILTIN]
    print(f"panel: {', '.join(agents)} of the full panel {', '.join(PANELS['full'])} "
          f"(missing: {', '.join(a for a in PANELS['full'] if a not in BUILTIN) or 'none'})")
    print(f"peer: {PEER_INSTANCES_PER_S:.3f} instances/s, {PEER_RUNS_PER_S:.3f} runs/s (5 agents, 100 instances, "
          "about 14 min)")
    print(f"cores: {os.cpu_count()}, load average before: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    from distributed import LocalCluster

    work = Path(tempfile.mkdtemp(prefix="gf01-bench-campaign-"))
    rows = []
    try:
        bundles = {}
        for label, horizon in SIZES.items():
            path = work / f"bundle-{horizon[0]}.json"
            t0 = time.perf_counter()
            b = generate(7, count, load_config(cfg(horizon)), jobs=os.cpu_count() or 1)
            save_artifact(path, b)
            bundles[label] = (path, len(b.instances))
            print(f"bundle {label}: {len(b.instances)} instances generated in {time.perf_counter() - t0:.1f} s "
                  "(not timed below)")
        for label, (path, n) in bundles.items():
            for jobs in (1, 2):
                play, total, runs = timed(path, work, agents, "local", jobs)
                rows.append((label, "local", jobs, n, runs, play, total))
            for workers in (1, 2):
                with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
                    address = "dask://" + cluster.scheduler_address.removeprefix("tcp://")
                    play, total, runs = timed(path, work, agents, address, None)
                rows.append((label, "dask", workers, n, runs, play, total))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print()
    print("| sizes | executor | workers | instances | runs | play s | inst/s | x peer | runs/s | x peer | total s "
          "| 2 vs 1 workers |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    one: dict[tuple[str, str], float] = {}
    for label, ex, w, n, runs, play, total in rows:
        rate = n / play
        if w == 1:
            one[(label, ex)] = rate
        scale = f"{rate / one[(label, ex)]:.2f}x" if w == 2 else ""
        print(f"| {label} | {ex} | {w} | {n} | {runs} | {play:.2f} | {rate:.2f} | {rate / PEER_INSTANCES_PER_S:.0f} | "
              f"{runs / play:.1f} | {runs / play / PEER_RUNS_PER_S:.0f} | {total:.2f} | {scale} |")


if __name__ == "__main__":
    main()
