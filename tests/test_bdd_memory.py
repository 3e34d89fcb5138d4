"""CUDD within memory (issue 28, item 3): a BDD that outgrows the memory left to the process is refused by CUDD
(bounded by :func:`encoders.bdd.cudd_memory_bound`) and answered as ``unknown``; before the bound, CUDD allocated
until malloc failed, printed ``CUDD: unable to allocate ...`` on stderr and ended the process with exit 1."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from aig.build import Builder
from aig.view import CircuitView
from encoders.problem import Problem
from hoa.label import Var
from solvers import api
from solvers.limits import Limits, Unknown

#: OR_i (x_i AND y_{7i mod n}) with every x above every y: 2^n nodes in that order (reordering is off).
EXPLODE = """
import resource
from encoders.bdd import manager
with open("/proc/self/status") as fh:
    data = next(int(line.split()[1]) for line in fh if line.startswith("VmData:")) * 1024
resource.setrlimit(resource.RLIMIT_DATA, (data + 64 * 2**20, resource.RLIM_INFINITY))
b, lib = manager("cudd")
n = 40
xs, ys = [f"x{i}" for i in range(n)], [f"y{i}" for i in range(n)]
b.declare(*xs, *ys)
u = b.false
try:
    for i in range(n):
        u = u | (b.var(xs[i]) & b.var(ys[(i * 7) % n]))
    print("built")
except ValueError as ex:
    print("refused:", ex)
"""


def test_a_cudd_manager_past_its_memory_refuses_quietly() -> None:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(EXPLODE)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused: `DdNode *node` is `NULL` pointer")
    assert proc.stderr == ""


def _pairing_problem(n: int) -> Problem:
    """One step; output o = OR_i (x_i AND y_{7i mod n}); every input 0 in tau: Suff's BDD over the flips, x's above
    y's, has about 2^n nodes."""
    b = Builder()
    xs = [b.input(f"x{i:02d}") for i in range(n)]
    ys = [b.input(f"y{i:02d}") for i in range(n)]
    o = 0  # the constant false literal
    for i in range(n):
        o = b.or_(o, b.and_(xs[i], ys[(i * 7) % n]))
    b.output("o", o)
    return Problem(CircuitView.from_aig(b.aig()), (0,), Var(0), t_star=0)


def test_a_bdd_count_past_the_memory_limit_is_unknown_and_stderr_stays_clean(
        capfd: pytest.CaptureFixture[str]) -> None:
    p = _pairing_problem(40)
    with pytest.raises(Unknown, match="memory limit"):
        api.count(p, None, "bdd", limits=Limits(seconds=120, memory=200))
    assert "CUDD" not in capfd.readouterr().err
