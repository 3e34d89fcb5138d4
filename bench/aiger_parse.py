"""AIGER parsing: our reader (ASCII and binary) against py-aiger on a large generated circuit.

Run: ``python bench/aiger_parse.py [--ands N] [--repeat R]`` (default 200,000 AND gates, 200 inputs, 2,000 latches,
best of 3). py-aiger is timed when it imports (``pip install py-aiger``; it is not a dependency); it reads ASCII only
and no ``B C J F`` header fields, so its file has no bad-state property. This is the measurement behind the choice of
our own reader (docs/aiger.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aig import binary, canonical, parse_file


def generated(n_i: int, n_l: int, n_a: int, seed: int = 1) -> str:
    """A random circuit in ASCII AIGER (AND inputs drawn from earlier signals), the same text for the same seed."""
    rng = np.random.Generator(np.random.PCG64(seed))
    first = n_i + n_l
    k = np.arange(n_a)
    lhs = 2 * (first + 1 + k)
    a = 2 * (1 + (rng.random(n_a) * (first + k)).astype(np.int64)) + rng.integers(0, 2, n_a)
    b = 2 * (1 + (rng.random(n_a) * (first + k)).astype(np.int64)) + rng.integers(0, 2, n_a)
    top = 2 * (first + n_a)
    lines = [f"aag {first + n_a} {n_i} {n_l} 10 {n_a}"]
    lines += [str(2 * (j + 1)) for j in range(n_i)]
    lines += [f"{2 * (n_i + j + 1)} {int(x)} 0" for j, x in enumerate(rng.integers(2, top, n_l))]
    lines += [str(int(x)) for x in rng.integers(2, top, 10)]
    lines += [f"{x} {y} {z}" for x, y, z in zip(lhs.tolist(), a.tolist(), b.tolist(), strict=True)]
    lines += [f"i{j} in{j}" for j in range(n_i)]
    return "\n".join(lines) + "\n"


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ands", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        aag = Path(tmp) / "big.aag"
        aag.write_text(generated(200, 2000, args.ands))
        aig = Path(tmp) / "big.aig"
        aig.write_bytes(binary(parse_file(aag)))
        circuit = parse_file(aag)
        rows = [
            ("ours, ASCII", best(lambda: parse_file(aag), args.repeat)),
            ("ours, binary", best(lambda: parse_file(aig), args.repeat)),
            ("ours, canonical text", best(lambda: canonical(circuit), args.repeat)),
        ]
        try:
            import aiger as pyaiger  # py-aiger's module (ours is called aig, so the two do not collide)

            rows.append(("py-aiger, ASCII", best(lambda: pyaiger.load(str(aag)), 1)))
        except ImportError as ex:
            rows.append((f"py-aiger: {ex}", float("nan")))
    print(f"{args.ands} AND gates, 200 inputs, 2000 latches ({aag.stat().st_size if aag.exists() else 0} bytes)")
    for name, sec in rows:
        print(f"{name:28s} {sec:8.3f} s")


if __name__ == "__main__":
    main()
