"""The query front (solvers.api): default backends per query, limits passed through, dispatch errors."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from backend_common import parity_problem
from brute import brute_valid_set

from hoa.errors import Gf01Error
from hoa.label import Var
from hoa.mealy import MealyEdge, MealyView
from solvers import api
from solvers.contract import OPTIONAL_QUERIES, QUERIES
from solvers.limits import Limits, Unknown


def test_every_query_has_a_default_backend_in_the_table() -> None:
    assert set(api.DEFAULT_BACKEND) == set(QUERIES) | set(OPTIONAL_QUERIES)
    assert set(api.DEFAULT_BACKEND.values()) <= set(api.BACKENDS)


def test_default_backends_answer() -> None:
    p = parity_problem()
    gold = brute_valid_set(p, None)
    assert api.valid(p, [(0, 0, 1)]) and not api.subset_min(p, [(0, 0, 1), (0, 1, 1), (0, 2, 1)])
    assert api.count(p, None) == len(gold) and list(api.enumerate_certificates(p, None)) == gold
    assert api.witness(p, None) in gold and api.oracle(p, None).eff_a == 1
    assert api.best_match(p, [(0, 1, 1)], None).gold == ((0, 1, 1),)


def test_limits_reach_the_backend() -> None:
    with pytest.raises(Unknown):
        api.oracle(parity_problem(), None, "sat", limits=Limits(seconds=0.0))


def test_unknown_backend_and_too_wide_systems() -> None:
    p = parity_problem()
    with pytest.raises(Gf01Error, match="unknown backend 'nope'"):
        api.suff(p, [], "nope")
    wide = MealyView(tuple(f"i{k}" for k in range(21)), ("o",), ((MealyEdge(Var(21), 0),),))
    with pytest.raises(Gf01Error, match="oracle needs the dense Mealy tables"):
        api.oracle(dataclasses.replace(p, system=wide, trace=(0,)), None, "explicit")


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_guarded_query_dies_with_its_caller() -> None:
    """kill -9 of the caller takes the child that runs a time-capped query along (it is not left to its own clock)."""
    import os
    import signal
    import subprocess
    import time

    script = ("import time\nfrom solvers.limits import Limits, guarded\n"
              "@guarded('sleep')\ndef slow(*, limits): time.sleep(120)\n"
              "print('ready', flush=True)\nslow(limits=Limits(seconds=100))\n")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while not (children := _children(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert children
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while any(map(_running, children)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_running, children))
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kills by signal, reads the exit code")
@pytest.mark.parametrize("signame", ["SIGKILL", "SIGXCPU"])
def test_a_guarded_query_killed_from_outside_is_unknown_not_an_internal_error(signame: str) -> None:
    """A guarded query's child killed by a resource limit from outside (``ulimit -t``: SIGXCPU, then SIGKILL; the
    out-of-memory killer: SIGKILL) answers Unknown naming the signal, as a cap of its own would (it was an exit 70,
    issue 28); a child that ends otherwise without an answer (here SIGTERM) stays an internal error."""
    import os
    import signal

    from solvers.limits import Limits, Unknown, guarded

    @guarded("count")
    def killed(*, limits: Limits) -> int:
        os.kill(os.getpid(), getattr(signal, signame))
        return 0

    with pytest.raises(Unknown) as got:
        killed(limits=Limits(seconds=60))
    assert got.value.query == "count" and signame in got.value.reason

    @guarded("count")
    def crashed(*, limits: Limits) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        return 0

    with pytest.raises(RuntimeError, match="exit code -15"):
        crashed(limits=Limits(seconds=60))
