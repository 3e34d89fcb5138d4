"""``-`` is standard input wherever a command reads a file (``ltlsynt ... | gf01 oracle - ...``): the same answer as
from the file, bounded as a file is, and a terminal refused rather than waited on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aig.build import fifo
from aig.writer import binary

ROOT = Path(__file__).resolve().parent.parent
HOA = ROOT / "gf01_formal" / "examples" / "arbiter.hoa"
ARBITER = ["--trace", "r0&!r1;!r0&!r1;!r0&!r1;!r0&r1", "--effect", "g0"]
FIFO = ["--trace", "push&!pop&d0;push&!pop&!d0;push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0",
        "--effect", "overflow"]


def gf01(*args: str, stdin: bytes | int | None = None) -> subprocess.CompletedProcess[bytes]:
    feed = {"input": stdin} if isinstance(stdin, bytes) else {"stdin": stdin}
    return subprocess.run([sys.executable, "-m", "gf01_formal", *args], capture_output=True, timeout=120,
                          check=False, **feed)  # type: ignore[arg-type]


def from_file(capsys, *args: str) -> bytes:
    """What the command prints reading a file (in this process: the file's path is not what is tested here)."""
    from gf01_formal.cli import main

    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out.encode()


def test_an_hoa_controller_and_a_binary_circuit_read_from_stdin_answer_as_their_files(tmp_path, capsys) -> None:
    piped = gf01("oracle", "-", *ARBITER, "--json", stdin=HOA.read_bytes())
    assert piped.returncode == 0 and piped.stdout == from_file(capsys, "oracle", str(HOA), *ARBITER, "--json")
    circuit = tmp_path / "fifo.aig"
    circuit.write_bytes(binary(fifo(3)))
    piped = gf01("oracle", "-", *FIFO, "--json", stdin=circuit.read_bytes())
    assert piped.returncode == 0 and piped.stdout == from_file(capsys, "oracle", str(circuit), *FIFO, "--json")
    out = tmp_path / "i.json"
    made = gf01("import", "aiger", "-", *FIFO, "-o", str(out), stdin=circuit.read_bytes())
    assert made.returncode == 0 and out.exists()
    assert gf01("hoa", "mealy", "-", stdin=HOA.read_bytes()).stdout.decode().splitlines()[-1] == "output-deterministic"


def test_empty_stdin_and_a_terminal_are_one_line_errors() -> None:
    empty = gf01("oracle", "-", *ARBITER, stdin=b"")
    assert empty.returncode == 2 and len(empty.stderr.decode().splitlines()) == 1
    leader, follower = os.openpty()
    try:
        tty = gf01("oracle", "-", *ARBITER, stdin=follower)
    finally:
        os.close(leader)
        os.close(follower)
    assert tty.returncode == 2
    assert tty.stderr.decode().strip() == ("gf01: error: <stdin>: standard input is a terminal: pipe the file in "
                                           "(e.g. ltlsynt ... | gf01 ... -)")
