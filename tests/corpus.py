"""The external GF-01 corpus as an optional conformance suite.

The corpus (HOA files from the HOA specification, its test suite and Spot's; the peer implementation's sample
bundle, manifest and run records) is kept outside the repository. The environment variable ``GF01_CORPUS`` names its
folder; ``.ci/run`` sets it to ``../shared/corpus``. Without it the tests that read the corpus are skipped with one
line naming the variable, so a fresh clone with nothing beside it passes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "GF01_CORPUS"


def _corpus() -> Path | None:
    value = os.environ.get(ENV, "")
    if not value:
        return None
    path = Path(value).resolve()
    if not path.is_dir():
        # A variable that points nowhere is a mistake, not an absent corpus: fail loudly rather than skip quietly.
        raise RuntimeError(f"{ENV}={value}: not a folder")
    return path


CORPUS: Path | None = _corpus()
REASON = f"the GF-01 corpus is absent: set {ENV} to its folder (e.g. {ENV}=../shared/corpus) to run this test"

#: Marks a test that reads the corpus.
needs_corpus = pytest.mark.skipif(CORPUS is None, reason=REASON)


def corpus_path(*parts: str) -> Path:
    """A path inside the corpus (a placeholder under the current folder when it is absent, for collection only:
    every test reading it carries :data:`needs_corpus`)."""
    return (CORPUS or Path(f"<{ENV} unset>")).joinpath(*parts)

