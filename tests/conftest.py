"""Shared fixtures: small generated bundles, made once per test session and shared by the modules that ask for the
same one.

A bundle is named by (seed, count, generator config): :func:`generated_bundle` returns the path of its file, generating
it on the first request only. Tests read these files and never write beside them (their outputs go to their own
``tmp_path``), so one file serves every module. The configs (tests/bundles.py) are the small families the suites
play:

- :data:`SMALL`: random Mealy tables of 4-6 states and 2-3 inputs, T of 6-10 (runs, validation, interrupts);
- :data:`CHAT`: the same with T of 6-9 (the LLM and inspect paths, whose scripted servers answer per step);
- :data:`TINY`: 3-4 states, 2 inputs, T of 5-6 (the runs store, the browser);
- :data:`REPORTED`: 3-6 states, 2-3 inputs, 1-2 outputs, T of 6-10 (reports and releases, split by a key);
- :data:`CAMPAIGN`: 3-6 states, 3 inputs, 2 outputs, T of 6-12 (campaigns and diagnostic caps).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bundles import CHAT, SMALL, TINY
from hypothesis import settings

# Property tests draw the same examples on every run (a fixed seed per test), so the suite cannot pass on one run and
# fail on the next; `HYPOTHESIS_PROFILE=explore python -m pytest` draws fresh ones for a wider search.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

BundleMaker = Callable[..., Path]


@pytest.fixture(scope="session")
def generated_bundle(tmp_path_factory: pytest.TempPathFactory) -> BundleMaker:
    """``generated_bundle(seed, count, cfg=SMALL)``: the path of that generated bundle's file (made once a session)."""
    from gf01_formal.instances.generator import GenConfig, generate
    from gf01_formal.instances.io import save_artifact

    made: dict[str, Path] = {}

    def make(seed: int, count: int, cfg: dict[str, Any] | None = None) -> Path:
        key = json.dumps([seed, count, SMALL if cfg is None else cfg], sort_keys=True)
        if key not in made:
            path = tmp_path_factory.mktemp(f"bundle-{seed}-{count}") / "bundle.json"
            save_artifact(path, generate(seed, count, GenConfig.model_validate(SMALL if cfg is None else cfg)))
            made[key] = path
        return made[key]

    return make


@pytest.fixture(scope="session")
def small_bundle(generated_bundle: BundleMaker) -> Path:
    """Eight instances of :data:`SMALL` (seed 3)."""
    return generated_bundle(3, 8)


@pytest.fixture(scope="session")
def chat_bundle(generated_bundle: BundleMaker) -> Path:
    """Four instances of :data:`CHAT` (seed 5), for the paths that talk to a scripted model server."""
    return generated_bundle(5, 4, CHAT)


@pytest.fixture(scope="session")
def tiny_bundle(generated_bundle: BundleMaker) -> Path:
    """Two instances of :data:`TINY` (seed 2): one normal, one hard."""
    return generated_bundle(2, 2, TINY)
