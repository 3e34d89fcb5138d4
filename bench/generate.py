"""Generator benchmark: certified instances per second by size, and the largest size that certifies within 10 s.

Usage: ``python bench/generate.py [--quick]``. Prints plain lines; ratios are against the named baseline size
(random_mealy, T = 16, |AP_in| = 3, |Q| = 8, the middle of the default generator's range).

1. Throughput: for each (T, |AP_in|, |Q|), generate a few random_mealy instances with the default targets and count
   (BDD) and report certified instances per second and the ratio to the baseline.
2. Ladder: one certification per size (T, |AP_in|, |Q|), growing about 2x a step, each in a fresh process killed at
   10 s, with targets off (certify = the solvers prove M_B(I) non-empty and the base trace misses the effect), once
   with the default count guard and once counting |M_B(I)| always. The largest size that finishes is reported.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
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


def main() -> None:
    """Run both parts and print the figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer instances per size")
    args = ap.parse_args()
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
