"""solvers.limits.resident_mib: this process's resident memory from an open /proc file, a forked child's its own."""

from __future__ import annotations

import os

import numpy as np

from solvers.limits import resident_mib


def test_resident_memory_follows_this_process() -> None:
    before = resident_mib()
    assert before is not None
    block = np.ones(64 << 20, dtype=np.uint8)  # 64 MiB, written: resident
    after = resident_mib()
    assert after is not None and after - before > 48
    del block
    own, by_pid = resident_mib(), resident_mib(os.getpid())  # the open file and a fresh read agree
    assert own is not None and by_pid is not None and abs(own - by_pid) < 4


def test_a_forked_child_reads_its_own_memory_not_its_parents() -> None:
    # The parent's statm file is open (read once above or here); a child that kept reading it would see the parent's
    # resident set, which does not grow with the child's allocation.
    assert resident_mib() is not None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: exit at once whatever happens, never back into pytest
        code = 1
        try:
            before = resident_mib()
            block = np.ones(96 << 20, dtype=np.uint8)
            after = resident_mib()
            own = resident_mib(os.getpid())
            code = 0 if (before is not None and after is not None and own is not None
                         and after - before > 64 and abs(after - own) < 8) else 1
            del block
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    try:
        got = os.read(read, 1)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert got == b"\x00"
