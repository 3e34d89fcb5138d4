"""What the ``>>>`` examples in the packages' docstrings run on (``--doctest-modules``, pyproject's pytest options).

Each doctest runs in a fresh working directory that holds the files its example names: ``instance.json`` (the
priority arbiter, T = 30, inputs r0..r4), ``bundle.json`` (the three instances ``gf01 agent check`` plays),
``arbiter.hoa`` and ``examples/agent_example.py``; and its namespace has ``instance`` and ``problem`` (that
instance and its checked Problem), ``bundle`` (that bundle, loaded). So an example reads as a user would type it,
and it runs. The tests of tests/ do not use any of this.

It also deals the longest test files to several pytest-xdist workers (:data:`SPLIT_FILES`), a matter of the whole run.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent
EXAMPLES = ROOT / "gf01_formal" / "examples"
PACKAGES = {ROOT / name for name in ("hoa", "encoders", "solvers", "gf01_formal", "aig")}

# This machine's environment (and so CI's) sets PYTHONDONTWRITEBYTECODE=1, and an editable install has no byte code:
# every pytest worker and every `gf01`, agent, server or pool process a test starts compiled the project's modules
# from source again (2.3 of 9.6 s of CPU in tests/test_agents_subprocess.py; docs/performance.md, "Test suite"). The
# run's processes write byte code once, beside the sources (__pycache__ is gitignored), and read it after; the
# processes a test starts inherit the setting. Not a PYTHONPYCACHEPREFIX: under one, the standard library's and the
# installed packages' byte code is not read either, and the first processes compiled all of it (about 14 s of CPU
# each for the report, LLM and web stacks; sixth pass).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# A shell starts a background job (`pytest ... &`, nohup) with SIGINT ignored, and an ignored signal is inherited
# across exec: every command a Ctrl-C test starts would then ignore the test's SIGINT and run to the end (12 tests
# failed that way). Python's own handler is reset to the default at exec, so the commands get a terminal's Ctrl-C.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A package module without a ``>>>`` example is not collected (``--doctest-modules`` would import it for nothing:
    the inspect task alone costs a second of inspect_ai per test process)."""
    if collection_path.suffix == ".py" and not PACKAGES.isdisjoint(collection_path.parents):
        return ">>>" not in collection_path.read_text(encoding="utf-8") or None
    return None


#: Test files dealt to several workers rather than one (pyproject runs ``--dist loadfile``): file -> parts. Their tests
#: must not depend on one another's order or leftovers, and each part makes the module fixtures again. A test's part is
#: a hash of its id, so a new test lands in one without being placed.
SPLIT_FILES = {"tests/test_bad_input.py": 4}


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own choice of scheduler
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with :data:`SPLIT_FILES` cut into parts, so one long file is not the run's critical path."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SplitFileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = super()._split_scope(nodeid)
            parts = SPLIT_FILES.get(file, 1)
            return file if parts == 1 else f"{file}#{zlib.crc32(nodeid.encode()) % parts}"

    return SplitFileScheduling(config, log)


@pytest.fixture(autouse=True)
def _doctest_files(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if type(request.node).__name__ != "DoctestItem":
        return
    shutil.copy(EXAMPLES / "arbiter_priority.json", tmp_path / "instance.json")
    shutil.copy(EXAMPLES / "check_bundle.json", tmp_path / "bundle.json")
    shutil.copy(EXAMPLES / "arbiter.hoa", tmp_path / "arbiter.hoa")
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "agent_example.py", tmp_path / "examples" / "agent_example.py")
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True, scope="session")
def _doctest_names(doctest_namespace: dict[str, Any]) -> None:
    from gf01_formal.instances.io import load_bundle
    from gf01_formal.instances.sources import open_instance

    instance, problem = open_instance(EXAMPLES / "arbiter_priority.json")
    doctest_namespace.update(instance=instance, problem=problem, bundle=load_bundle(EXAMPLES / "check_bundle.json"))
