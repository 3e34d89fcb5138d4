"""Scoring benchmark (issue 33 item 3, issue 29 item 5): listing a gold set against counting it, and batch verify.

Usage: ``python bench/scoring.py [--steps N] [--certs N] [--horizon T ...] [--seed S]``. Prints plain lines; CPU is
user + system (this process, or the child's), peak RSS the child's.

1. The bundled arbiter (``gf01_formal/examples/arbiter.hoa``) left idle for ``--steps`` steps, effect g0 at the last:
   |M(I)| = 1. CPU of the count, and of the scorer's listing (``Scorer.gold_set``).
2. ``gf01 verify INSTANCE --certs FILE --json --best-match`` of ``--certs`` seeded random certificates (1-6 atoms) of
   that arbiter at each ``--horizon``, one process each: wall, CPU and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gf01_formal.instances.sources import InstanceOptions, open_instance  # noqa: E402

ARBITER = ROOT / "gf01_formal" / "examples" / "arbiter.hoa"


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def listing(steps: int) -> None:
    from gf01_formal.scoring.scores import Scorer
    from solvers import api

    options = InstanceOptions(trace=";".join(["!r0&!r1"] * steps), effect="g0")
    problem = open_instance(ARBITER, None, options)[1]
    t = cpu()
    n = api.count(problem, None)
    counted = cpu() - t
    t = cpu()
    golds = Scorer(problem).gold_set()
    listed = cpu() - t
    assert golds is not None and len(golds) == n
    print(f"arbiter idle {steps} steps, |M(I)| = {n}: count {counted:.3f} s CPU, listing {listed:.3f} s CPU "
          f"(ratio {listed / counted:.2f})")


def batch(horizon: int, count: int, seed: int) -> None:
    rng = np.random.Generator(np.random.PCG64(seed))
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.txt"
        trace.write_text(";".join(["!r0&!r1"] * horizon))
        inst = Path(tmp) / "inst.json"
        subprocess.run([sys.executable, "-m", "gf01_formal", "import", "hoa", str(ARBITER), "-o", str(inst),
                        "--trace-file", str(trace), "--effect", "g0", "--no-measure"], check=True,
                       stdout=subprocess.DEVNULL)
        certs = Path(tmp) / "certs.jsonl"
        lines = []
        for _ in range(count):
            atoms = {(int(rng.integers(horizon)), f"r{int(rng.integers(2))}"): int(rng.integers(2))
                     for _ in range(int(rng.integers(1, 7)))}
            lines.append(json.dumps({"certificate": [[t, a, v] for (t, a), v in atoms.items()]}))
        certs.write_text("\n".join(lines) + "\n")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gf01_formal", "verify", str(inst), "--certs", str(certs), "--json",
                        "--best-match"], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"batch verify --best-match, {count} certificates, T = {horizon}, seed {seed}: wall {wall:.2f} s, "
          f"CPU {used:.2f} s, peak RSS {after.ru_maxrss / 1024:.0f} MiB (largest child so far)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--certs", type=int, default=2000)
    ap.add_argument("--horizon", type=int, nargs="*", default=[16, 256])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    listing(args.steps)
    for horizon in args.horizon:
        batch(horizon, args.certs, args.seed)


if __name__ == "__main__":
    main()
