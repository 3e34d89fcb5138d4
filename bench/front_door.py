"""Front-door benchmark: what one small query costs as a whole process, and many queries in one process.

Usage: ``python bench/front_door.py [--runs N] [--certs N] [--starts N]``. Prints plain lines; every figure is a
whole process (start-up, imports and the query), timed from outside; CPU is the child's user + system time. The
children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed from their environment), as an installed
toolkit runs: without it the toolkit's modules are compiled from source on every start.

1. One query: ``gf01 verify`` of the bundled example (``gf01_formal/examples/arbiter_priority.json`` and its
   certificate) against the named baseline ``python -c "import numpy"``, run in turn (A B A B ...) ``--runs`` times;
   medians and the ratio of the medians. Target (issue 23): at most 1.5x of CPU.
2. Many queries: ``--certs`` random certificates (seeded) of the same instance scored by one ``gf01 verify INSTANCE
   --certs FILE --json``, against one process per certificate, of which ``--starts`` are run and the rest
   extrapolated (their mean times the count).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"
CERT = ROOT / "gf01_formal" / "examples" / "arbiter_priority_cert.json"
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT)}
GF01 = [sys.executable, "-m", "gf01_formal"]


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``argv`` to completion (its output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def one_query(runs: int) -> None:
    query = [*GF01, "verify", str(INSTANCE), str(CERT)]
    baseline = [sys.executable, "-c", "import numpy"]
    timed(query), timed(baseline)  # warm-up: file caches, bytecode
    a, b = [], []
    for _ in range(runs):
        a.append(timed(query))
        b.append(timed(baseline))
    for what, k in (("wall", 0), ("cpu", 1)):
        ma, mb = statistics.median(x[k] for x in a), statistics.median(x[k] for x in b)
        print(f"one query, {what}: gf01 verify {ma:.3f} s, python -c 'import numpy' {mb:.3f} s, ratio {ma / mb:.2f}x "
              f"(median of {runs})")


def random_certificates(n: int, seed: int = 1) -> list[list[list[object]]]:
    """``n`` certificates of 1-4 atoms on the example instance (30 steps, inputs r0..r4), from a seeded generator."""
    rng = np.random.Generator(np.random.PCG64(seed))
    inputs = ["r0", "r1", "r2", "r3", "r4"]
    return [[[int(rng.integers(30)), inputs[int(rng.integers(5))], int(rng.integers(2))]
             for _ in range(int(rng.integers(1, 5)))] for _ in range(n)]


def many_queries(count: int, starts: int) -> None:
    certs = random_certificates(count)
    with tempfile.TemporaryDirectory() as tmp:
        lines = Path(tmp) / "certs.jsonl"
        lines.write_text("".join(json.dumps({"certificate": c}) + "\n" for c in certs))
        batch = timed([*GF01, "verify", str(INSTANCE), "--certs", str(lines), "--json"])
        singles = []
        for k, c in enumerate(certs[:starts]):
            one = Path(tmp) / f"c{k}.json"
            one.write_text(json.dumps(c))
            singles.append(timed([*GF01, "verify", str(INSTANCE), str(one), "--json"]))
    for what, k in (("wall", 0), ("cpu", 1)):
        each = statistics.mean(s[k] for s in singles)
        total = each * count
        print(f"{count} certificates, {what}: one process (--certs) {batch[k]:.2f} s; one process each "
              f"{total:.0f} s (mean {each:.3f} s of {starts} runs x {count}); ratio {total / batch[k]:.0f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="runs of each command for the one-query figure")
    ap.add_argument("--certs", type=int, default=10_000, help="certificates for the many-queries figure")
    ap.add_argument("--starts", type=int, default=50, help="single-certificate processes actually run")
    args = ap.parse_args()
    one_query(args.runs)
    many_queries(args.certs, args.starts)


if __name__ == "__main__":
    main()
