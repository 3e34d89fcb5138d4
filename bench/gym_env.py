"""Gymnasium environment throughput: steps per second of random actions, with exact scoring at episode end (the
default: Suff, Min1, Valid and the best match against M_B(I)) and with the training mode (``scoring="valid"``:
Suff, Min1, Valid and Score_C only, no best match), on one T = 32 instance and over a 16-instance bundle
(an instance drawn at each reset).

One command: ``python bench/gym_env.py`` (``--episodes N``). The bundle is generated from a fixed seed (not timed).
Each row is the best of three rounds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402

from gf01_formal.instances.generator import GenConfig, generate  # noqa: E402
from gf01_formal.instances.io import save_artifact  # noqa: E402
from gf01_formal.play import gym_env  # noqa: E402

T32 = {"families": [{"kind": "random_mealy", "states": [4, 8], "inputs": [3, 3], "outputs": [2, 2]}],
       "horizon": [32, 32]}


def rate(env: gymnasium.Env, episodes: int) -> float:
    """Steps per second of ``episodes`` episodes of uniform random actions (seeded)."""
    rng = np.random.Generator(np.random.PCG64(0))
    steps = 0
    start = time.perf_counter()
    for e in range(episodes):
        env.reset(seed=e)
        done = False
        while not done:
            _, _, done, _, _ = env.step(rng.integers(0, 3, size=env.action_space.shape))
            steps += 1
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    args = parser.parse_args()
    params = gym_env.GF01Env.__init__.__code__.co_varnames
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bundle.json"
        bundle = generate(3, 16, GenConfig.model_validate(T32))
        save_artifact(path, bundle)
        by_gold = sorted(bundle.instances, key=lambda i: (i.certification.gold_count, i.instance_id))
        picks = {"median": by_gold[len(by_gold) // 2], "largest": by_gold[-1]}
        rows = []
        for scoring in ("exact", "valid"):
            kwargs = {"scoring": scoring} if "scoring" in params else {}
            if scoring != "exact" and not kwargs:
                continue  # an environment without the training mode
            for name, inst in picks.items():
                env = gymnasium.make(gym_env.ENV_ID, instance=path, instance_id=inst.instance_id, **kwargs)
                rows.append((f"T = 32, {name} |M_B(I)| = {inst.certification.gold_count}, scoring {scoring}",
                             max(rate(env, args.episodes) for _ in range(3))))
            if "bundle" in params:
                env = gymnasium.make(gym_env.ENV_ID, bundle=path, **kwargs)
                rows.append((f"16-instance bundle (T = 32), scoring {scoring}",
                             max(rate(env, args.episodes) for _ in range(3))))
    for name, value in rows:
        print(f"{name:55s} {value:10.0f} steps/s")


if __name__ == "__main__":
    main()
