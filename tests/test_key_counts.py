"""The forward count's key counts in a helper process (solvers.key_counts): the same integers as in the calling
process, on every path of the pass; the helper's memory counts in the query's limit; no helper outlives its count
(an answer, an Unknown, an error, Ctrl-C, kill -9 of the caller)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from brute import brute_count
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.random import PCG64, Generator
from strategies import problems
from test_solvers_forward import parity_machine, random_table
from waits import CEILING

from gf01_formal.instances.families.base import hoa_text
from gf01_formal.instances.io import save_artifact
from gf01_formal.instances.sources import InstanceOptions, instance_from_hoa
from solvers import forward, forward_pass, key_counts
from solvers.key_counts import Counts, HelperCounts, HelperEnded
from solvers.limits import Limits, Unknown, resident_mib

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads processes from /proc (Linux)")

ROOT = Path(__file__).resolve().parent.parent


def helpers() -> list[int]:
    """This process's live helper processes (zombies have exited: only reaping is left)."""
    found = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as fh:
            for pid in fh.read().split():
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                if b"key_counts.py" in cmd and state != "Z":
                    found.append(int(pid))
    return found


def random_steps(seed: int, steps: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Random groupings of a pass: per step, accepting groups (outcome ids, sources, starts) and the next layer's
    (sources, starts); layers of 1-300 keys, each next key summing 1-40 pairs (the counts grow past the limbs)."""
    rng = Generator(PCG64(seed))
    size, out = 1, []
    for _ in range(steps):
        nxt = int(rng.integers(1, 300))
        sizes = rng.integers(1, 40, size=nxt)
        src = rng.integers(0, size, size=int(sizes.sum()))
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        acc_groups = int(rng.integers(0, 4))
        acc_sizes = rng.integers(1, 5, size=acc_groups)
        acc_src = rng.integers(0, size, size=int(acc_sizes.sum()))
        acc_starts = np.concatenate(([0], np.cumsum(acc_sizes)[:-1])) if acc_groups else np.zeros(0, dtype=np.int64)
        ids = rng.integers(0, 6, size=acc_groups)
        out.append((ids, acc_src, acc_starts.astype(np.int64), src, starts.astype(np.int64)))
        size = nxt
    return out


def play(counts: Counts | HelperCounts, steps: list) -> dict[int, int]:
    try:
        for ids, acc_src, acc_starts, src, starts in steps:
            if ids.size:
                counts.accept(ids, acc_src, acc_starts)
            counts.advance(src, starts)
        return counts.result()
    finally:
        counts.close()


@pytest.mark.parametrize("seed", range(4))
def test_the_helper_adds_what_this_process_adds(seed: int) -> None:
    steps = random_steps(seed, 80)
    # A start a few limbs short of OBJECT_LIMBS (seeds 2, 3) or 1 (seeds 0, 1): 80 steps of sums take the wide start
    # past the limbs, into Python ints, on either side of the pipe.
    width = key_counts.OBJECT_LIMBS - 4 if seed >= 2 else 1
    start = np.zeros((1, width), dtype=np.uint64)
    start[0, -1] = 1
    here = play(Counts(start.copy()), steps)
    if seed >= 2:
        assert max(here.values()).bit_length() > key_counts.LIMB * key_counts.OBJECT_LIMBS  # past the limbs
    # Handed over at every step of the pass, as the pass does from its first large step on.
    for k in (0, 1, 40, 79):
        counts = Counts(start.copy())
        for step in steps[:k]:
            play_one(counts, step)
        assert play(HelperCounts(counts), steps[k:]) == here
    assert helpers() == []


def play_one(counts: Counts, step: tuple) -> None:
    ids, acc_src, acc_starts, src, starts = step
    if ids.size:
        counts.accept(ids, acc_src, acc_starts)
    counts.advance(src, starts)


# 15 examples, each a helper interpreter (numpy's import: about 0.3 s of CPU). A mutation study (docs/performance.md,
# seventh pass) found it catching a helper that drops the accepted groups at 10, 15, 20 and 40 examples, and missing
# at 40 as at 10 the subtler ones (outcomes lost at the hand-over, outcome ids permuted, sources reversed, one-key
# layers skipped), which the tests on random groupings above and below catch: 40 examples bought nothing more.
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems(max_flips=11, max_states=5), data=st.data())
def test_a_count_with_a_helper_matches_brute(problem, data: st.DataObject) -> None:
    budget = data.draw(st.one_of(st.none(), st.integers(0, problem.horizon)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(key_counts, "HELPER_MIN", 0)
        mp.setattr(forward_pass, "BLOCK_MIN", data.draw(st.sampled_from((0, forward_pass.BLOCK_MIN))))
        assert forward.count(problem, budget) == brute_count(problem, budget)


def test_wide_counts_with_a_helper_match_the_pass_without(monkeypatch: pytest.MonkeyPatch) -> None:
    for seed, inputs, steps, budget in ((1, 4, 60, None), (2, 5, 30, 4), (4, 5, 120, None)):
        problem = random_table(6, inputs, steps, seed)
        monkeypatch.setattr(key_counts, "HELPER_MIN", None)
        alone = forward.count(problem, budget)
        monkeypatch.setattr(key_counts, "HELPER_MIN", 0)
        assert forward.count(problem, budget) == alone
        assert forward.count(problem, budget, limits=Limits(seconds=120, memory=4096)) == alone  # in a guarded child
    assert forward.count(parity_machine(3, 120), None) == 2**359
    assert helpers() == []


def test_no_helper_outlives_an_unknown_or_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_counts, "HELPER_MIN", 0)
    big = random_table(16, 8, 40, seed=3)
    with pytest.raises(Unknown):
        forward.count(big, None, limits=Limits(nodes=50))
    assert helpers() == []
    started: list[HelperCounts] = []
    real = HelperCounts.__init__

    def spy(self: HelperCounts, start: Counts) -> None:
        real(self, start)
        started.append(self)

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("a bug in the pass")

    monkeypatch.setattr(HelperCounts, "__init__", spy)
    monkeypatch.setattr(forward_pass, "factorize", broken)  # after the first step's hand-over
    with pytest.raises(ValueError, match="a bug in the pass"):
        forward.count(parity_machine(2, 30), None)
    assert started and helpers() == []


def test_a_helper_that_died_is_an_error_not_a_wrong_count() -> None:
    counts = HelperCounts(Counts(np.ones((1, 1), dtype=np.uint64)))
    os.kill(counts.pid, signal.SIGKILL)
    with pytest.raises(HelperEnded, match="helper process ended: signal 9"):
        for _ in range(100):  # the first messages may still fit in the pipe
            counts.advance(np.zeros(1 << 16, dtype=np.int64), np.arange(1 << 16))
        counts.result()
    counts.close()
    assert helpers() == []


def test_the_helpers_memory_is_the_querys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a memory limit checked in this process, the helper's resident set counts: a cap this process alone
    stays under (by less than an interpreter with numpy takes) is passed once the count has a helper."""
    problem = random_table(6, 4, 60, seed=1)
    monkeypatch.setattr(key_counts, "HELPER_MIN", None)
    alone = forward.count(problem, None)
    cap = (resident_mib() or 0.0) + 12
    assert forward.count(problem, None, limits=Limits(memory=cap, isolate=False)) == alone
    monkeypatch.setattr(key_counts, "HELPER_MIN", 0)
    with pytest.raises(Unknown) as got:
        forward.count(problem, None, limits=Limits(memory=cap, isolate=False))
    assert "memory limit" in got.value.reason
    assert helpers() == []


SLOW_COUNT = """
import sys
from solvers import key_counts
key_counts.HELPER_MIN = 0
from gf01_formal.cli import main
sys.exit(main(["enumerate", sys.argv[1], "--count", "--unbounded"]))
"""


def cube_machine(seed: int, inputs: int = 8, states: int = 16) -> str:
    """HOA text of a random machine like bench/solvers.py's cube family: each state reads a random subset of the
    inputs and has one edge per cube over it, with random output literals and a random destination."""
    rng = Generator(PCG64(seed))
    names = [f"i{k}" for k in range(inputs)]
    table = []
    for q in range(states):
        read = [k for k in range(inputs) if rng.integers(2)] or [0]
        edges = []
        for cube in range(1 << len(read)):
            lits = [names[k] if (cube >> j) & 1 else f"!{names[k]}" for j, k in enumerate(read)]
            lits += [f"o{j}" if rng.integers(2) else f"!o{j}" for j in range(2)]
            edges.append((" & ".join(lits), int(rng.integers(states))))
        table.append((f"q{q}", edges))
    return hoa_text(f"cube-{seed}", names, ["o0", "o1"], table)


@pytest.fixture(scope="module")
def slow_instance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An instance whose count takes far longer than the tests wait (8 inputs, T = 256, a helper from step 0)."""
    rng = Generator(PCG64(7))
    trace = [{f"i{k}": int(rng.integers(2)) for k in range(8)} for _ in range(256)]
    inst = instance_from_hoa(cube_machine(1), InstanceOptions(trace=trace, effect="!o0", t_star=254), measure=False)
    path = tmp_path_factory.mktemp("slow") / "slow.json"
    save_artifact(path, inst)
    return path


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_count(instance: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """The CLI counting ``instance`` with a helper from its first step, in a session of its own; and the processes
    below it (the guarded query's fork, and under it the key-counts helper), once the helper has added counts for a
    while (the count is under way: the command's imports are over)."""
    # With Ctrl-C's default action, as a terminal's foreground job has it: a test run started in the background of a
    # non-interactive shell ignores SIGINT, and the command would inherit that and count on to the end (exit 0).
    p = subprocess.Popen([sys.executable, "-c", SLOW_COUNT, str(instance)], env={**os.environ, "PYTHONPATH": str(ROOT)},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + CEILING
    while time.monotonic() < deadline:
        # The helper is the query's child, not the command's: the command's own child is the query's fork.
        tree = descendants(p.pid)
        with contextlib.suppress(OSError):
            if any(b"key_counts.py" in Path(f"/proc/{pid}/cmdline").read_bytes() and cpu_seconds(pid) >= 0.5
                   for pid in tree):
                return p, tree
        assert p.poll() is None, p.communicate()
        time.sleep(0.02)
    pytest.fail("no helper at work")


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_ctrl_c_of_a_count_ends_its_helper(slow_instance: Path) -> None:
    p, tree = start_count(slow_instance)
    os.killpg(p.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group, the helper included
    _, err = p.communicate(timeout=CEILING)
    assert p.returncode in (130, -signal.SIGINT) and err == "gf01: interrupted\n"
    assert [pid for pid in tree if not gone(pid)] == []


def test_kill_9_of_a_count_takes_its_helper_along(slow_instance: Path) -> None:
    p, tree = start_count(slow_instance)
    os.kill(p.pid, signal.SIGKILL)
    p.communicate(timeout=CEILING)
    deadline = time.monotonic() + CEILING
    while [pid for pid in tree if not gone(pid)]:
        assert time.monotonic() < deadline, f"{[pid for pid in tree if not gone(pid)]} outlived the count"
        time.sleep(0.02)


@pytest.mark.parametrize("interpreter", ["/nonexistent/python", "/bin/false"])
def test_a_helper_that_cannot_start_leaves_the_sums_here(monkeypatch: pytest.MonkeyPatch, interpreter: str) -> None:
    # No interpreter at all (an embedded Python), or one that exits at once: the same count, added in this process.
    problem = random_table(6, 4, 60, seed=1)
    expected = forward.count(problem, None)
    monkeypatch.setattr(key_counts, "HELPER_MIN", 0)
    monkeypatch.setattr(key_counts.sys, "executable", interpreter)
    with pytest.raises(OSError):
        HelperCounts(Counts(np.ones((1, 1), dtype=np.uint64)))
    assert forward.count(problem, None) == expected
    assert helpers() == []


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [int(k) for k in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            continue
        out += kids
        todo += kids
    return out


def test_a_helper_killed_from_outside_is_unknown(slow_instance: Path) -> None:
    # Issue 29 item 4: kill -9 of the helper alone (not of the command) was exit 70, "a bug in gf01".
    p = subprocess.Popen([sys.executable, "-c", SLOW_COUNT, str(slow_instance)], env={**os.environ,
                         "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    deadline = time.monotonic() + CEILING
    helper = None
    while helper is None:
        assert time.monotonic() < deadline, "no helper at work"
        assert p.poll() is None, p.communicate()
        for pid in descendants(p.pid):
            with contextlib.suppress(OSError):
                if b"key_counts.py" in Path(f"/proc/{pid}/cmdline").read_bytes() and cpu_seconds(pid) >= 0.5:
                    helper = pid
        time.sleep(0.02)
    os.kill(helper, signal.SIGKILL)
    out, err = p.communicate(timeout=CEILING)
    assert p.returncode == 3, (out, err)
    assert "unknown (helper process ended: signal 9" in out + err
    assert "Traceback" not in err and "internal error" not in err


def test_dot_and_carries_are_the_integers() -> None:
    # The backward half's product of forward counts and completions (key_counts.dot), limb columns or Python ints,
    # and carry_columns (limbs past LIMB bits carried up, the top limb taking them): the Python ints' sums.
    rng = Generator(PCG64(33))
    for keys, la, lb in ((0, 1, 1), (1, 1, 3), (17, 4, 2), (300, 19, 9)):
        a = rng.integers(0, 1 << 63, size=(la, keys), dtype=np.uint64) & key_counts.LIMB_MASK
        b = rng.integers(0, 1 << 63, size=(lb, keys), dtype=np.uint64) & key_counts.LIMB_MASK
        ints_a = [key_counts.column_int(a, k) for k in range(keys)]
        ints_b = [key_counts.column_int(b, k) for k in range(keys)]
        expected = sum(x * y for x, y in zip(ints_a, ints_b, strict=True))
        assert key_counts.dot(a, b) == expected
        assert key_counts.dot(np.array(ints_a, dtype=object), b) == expected
        wide = rng.integers(0, 1 << 63, size=(la + 1, keys), dtype=np.uint64)
        wide[-1] >>= np.uint64(8)  # room for the carries
        before = [key_counts.column_int(wide, k) for k in range(keys)]
        key_counts.carry_columns(wide)
        assert not (wide[:-1] >> np.uint64(key_counts.LIMB)).any()
        assert [key_counts.column_int(wide, k) for k in range(keys)] == before
