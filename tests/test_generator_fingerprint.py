"""The generator's output is pinned: the bundles of several (cfg, seed) pairs hash to the values below.

The generator's speed-ups (issue 33 item 4: cheap exact rejections, queries shared across one candidate, the
random_mealy view built from the drawn tables) must not change a single byte of any bundle: which candidates are
accepted, their certification, and the rejection reasons counted in ``skipped``. The cases cover the default mix,
the peer's sizes with the default targets (with skipped slots) and without targets, and every family with the
count always on. A change that alters a bundle on purpose is a new generator version and a documented decision.
"""

from __future__ import annotations

from typing import Any

import pytest

from gf01_formal.artifacts import sha256_hex
from gf01_formal.instances.generator import generate, load_config

PEER: dict[str, Any] = {"families": [{"kind": "random_mealy", "states": [3, 6], "inputs": [3, 3], "outputs": [2, 2]}],
                        "horizon": [6, 12]}
NO_TARGETS: dict[str, Any] = {**PEER, "targets": {"max_single_timestep_fraction": None,
                                                   "max_single_atom_fraction": None, "max_greedy_fraction": None}}
MIX: dict[str, Any] = {"horizon": [5, 40], "count_max_positions": None,
                       "families": [{"kind": k} for k in ("random_mealy", "counter", "register", "arbiter",
                                                          "traffic_light")]}

CASES = [
    # (cfg, seed, count, instances, skipped, sha256 of the bundle's canonical JSON)
    (None, 5, 12, 12, 0, "8bf143912675b219b817469814209f32e8b9bf8a6e7e7a853ef6ae81fce8440b"),
    (None, 6, 12, 12, 0, "37e76f5a630a40c277484e35d3088cfda2326fce99a4b25e4bb64ad996eb00bd"),
    (PEER, 0, 40, 38, 2, "384193965a135b60552e5d1dddea2b9ee9efb4500fd6f0e11dfed798574376c2"),
    (PEER, 7100, 20, 19, 1, "afd9f983bdb335604e48264b2b8129f6382c07562943d846d882c3b630e94662"),
    (NO_TARGETS, 3, 20, 20, 0, "c2821e177211bb5c75b51dea18175bd78412f83430dbff8786458a8acc8130b2"),
    (MIX, 9, 12, 12, 0, "bf86328a3cf8bbd6840d0d2848a7508acdd6647bacb01171fdb49344eb7c0b2b"),
]


@pytest.mark.parametrize(("cfg", "seed", "count", "n_inst", "n_skip", "digest"), CASES)
def test_bundles_are_byte_identical_to_the_pinned_ones(cfg: dict[str, Any] | None, seed: int, count: int,
                                                       n_inst: int, n_skip: int, digest: str) -> None:
    bundle = generate(seed, count, load_config(cfg))
    assert (len(bundle.instances), len(bundle.skipped)) == (n_inst, n_skip)
    assert sha256_hex(bundle.model_dump(mode="json")) == digest
