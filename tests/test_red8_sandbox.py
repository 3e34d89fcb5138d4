"""Red-team round 8: what a sandboxed program can reach through the files its command names.

A participant's package holding a symbolic link (``weights.bin -> ../bundle.json``) named on the agent's command
line used to be bound by its target: the program read the bundle the evaluator keeps beside it and played the
oracle certificate stored there (a real ``gf01 evaluate`` scored it Score_C 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gf01_formal.agents.sandbox import bwrap_problem, environment, wrap

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"
needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")

#: Reads the file its first argument names (the bundle, through the link) and plays its oracle certificate.
CHEAT = '''
import json, sys
try:
    cert = json.load(open(sys.argv[1]))["certification"]["oracle_certificate"]
except Exception:
    cert = []
plan = {}
for t, n, v in cert:
    plan.setdefault(t, {})[n] = v
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "start":
        t = 0
    elif m["type"] == "observation":
        if m["done"]:
            continue
        t = m["t"] + 1
    else:
        break
    last = t == max(plan, default=-1)
    print(json.dumps({"set": plan.get(t, {}), "t": t, **({"commit": True} if last else {})}), flush=True)
'''


def _package(tmp_path: Path) -> tuple[Path, Path]:
    """The evaluator's bundle in ``tmp_path``, and beside it a participant's package whose ``weights.bin`` is a
    relative link to it."""
    tmp_path.chmod(0o755)
    bundle = tmp_path / "bundle.json"
    bundle.write_bytes(INSTANCE.read_bytes())
    pkg = tmp_path / "pkg"
    pkg.mkdir(mode=0o755)
    (pkg / "agent.py").write_text(CHEAT)
    (pkg / "weights.bin").symlink_to("../bundle.json")
    return bundle, pkg


@needs_bwrap
def test_a_named_symbolic_link_to_the_bundle_is_refused(tmp_path: Path) -> None:
    bundle, pkg = _package(tmp_path)
    out = tmp_path / "runs.jsonl"
    proc = subprocess.run([sys.executable, "-m", "gf01_formal", "evaluate", str(bundle), "-o", str(out),
                           "--agent-cmd", f"{sys.executable} agent.py weights.bin"], cwd=pkg, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "weights.bin" in proc.stderr and "symbolic link" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not out.exists() or not out.read_text().strip()


@needs_bwrap
def test_the_sandbox_never_binds_a_named_links_target(tmp_path: Path) -> None:
    """Below the checks (the Python API): the sandbox does not show a file reached through a named link."""
    _, pkg = _package(tmp_path)
    probe = pkg / "probe.py"
    probe.write_text("import os, sys\n"
                     "print(os.path.exists(sys.argv[1]), os.path.exists(os.path.realpath(sys.argv[1])))\n")
    proc = subprocess.run(wrap([sys.executable, str(probe), str(pkg / "weights.bin")]), env=environment(False),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"], proc.stdout


def test_a_named_file_by_its_real_path_is_fine(tmp_path: Path) -> None:
    from gf01_formal.agents.sandbox import check_named_files

    _, pkg = _package(tmp_path)
    check_named_files([sys.executable, str(pkg / "agent.py"), str(pkg / "agent.py"), "--flag", "word"])
    with pytest.raises(Exception, match="symbolic link"):
        check_named_files([sys.executable, str(pkg / "agent.py"), str(pkg / "weights.bin")])
    os.symlink(pkg, tmp_path / "linked")  # a link on the way to the file counts too
    with pytest.raises(Exception, match="symbolic link"):
        check_named_files([sys.executable, str(tmp_path / "linked" / "agent.py")])
