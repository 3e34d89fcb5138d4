"""Operators' accidents (issue 29, item 4): a second command onto a runs file another ``gf01`` holds locked, block
and system character devices as outputs, the pilot's key as the links' output, one output named twice, and AIGER
files the reader used to crash on (exit 70).
"""

from __future__ import annotations

import json
import os
import random
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import corpus_path, needs_corpus

from gf01_formal.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "gf01_formal" / "examples"
INSTANCE = str(EXAMPLES / "arbiter_priority.json")
HOA = str(EXAMPLES / "arbiter.hoa")
TRACE = "r0&!r1;!r0&!r1;!r0&!r1;!r0&r1"


def _one_error_line(err: str, *words: str) -> None:
    assert err.count("\n") == 1 and err.startswith("gf01: error: ") and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good runs file (the random agent on the example instance)."""
    from gf01_formal.agents.base import AgentSpec
    from gf01_formal.campaign.evaluate import evaluate

    path = tmp_path_factory.mktemp("runs") / "runs.jsonl"
    evaluate(INSTANCE, [AgentSpec("random", "EVAL-CB")], path)
    return path


# -- a runs file that evaluate holds ------------------------------------------------------------------------------

_ONTO_HELD = {
    "report": lambda held, runs: ["report", str(runs), "-o", str(held)],
    "import hoa": lambda held, runs: ["import", "hoa", HOA, "--trace", TRACE, "--effect", "g0", "-o", str(held)],
    "split": lambda held, runs: ["split", INSTANCE, "-o", str(held), "--manifest", str(held.parent / "m.json")],
    "split --manifest": lambda held, runs: ["split", INSTANCE, "-o", str(held.parent / "s.json"), "--manifest",
                                            str(held)],
    "generate": lambda held, runs: ["generate", "--count", "1", "-o", str(held)],
    "cnf": lambda held, runs: ["cnf", INSTANCE, str(held)],
}


@pytest.mark.parametrize("argv", list(_ONTO_HELD.values()), ids=list(_ONTO_HELD))
def test_no_command_replaces_a_runs_file_that_evaluate_holds(argv, runs: Path, tmp_path: Path) -> None:
    """Another process holds the runs file's lock (as evaluate does while it plays): every other writer is refused
    in one line naming that process, and the records stay."""
    held = tmp_path / "runs.jsonl"
    held.write_bytes(runs.read_bytes())
    before = held.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from gf01_formal.runs.store import RunsFile; "
                               f"s = RunsFile({str(held)!r}); print('held', flush=True); sys.stdin.read()"],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        proc = subprocess.run([sys.executable, "-m", "gf01_formal", *argv(held, runs)], cwd=ROOT,
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 2, proc.stderr
        _one_error_line(proc.stderr, str(held), f"process {holder.pid}", "lock")
        assert held.read_bytes() == before
    finally:
        holder.communicate("", timeout=30)


def test_a_write_that_finds_the_file_locked_is_refused(runs: Path, tmp_path: Path) -> None:
    """The check before the work can pass and the lock be taken while the command works: the write itself looks
    again, and leaves the locked file as it was."""
    from gf01_formal.artifacts import write_text_atomic
    from gf01_formal.runs.store import RunsFile
    from hoa.errors import Gf01Error

    held = tmp_path / "runs.jsonl"
    held.write_bytes(runs.read_bytes())
    with RunsFile(held), pytest.raises(Gf01Error, match=f"process {os.getpid()}"):
        write_text_atomic(held, "{}\n")
    assert held.read_bytes() == runs.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.jsonl"]  # no temporary file left


# -- devices ------------------------------------------------------------------------------------------------------


def _device(tmp_path: Path, kind: int, major: int, minor: int) -> Path:
    dev = tmp_path / f"dev-{major}-{minor}"
    try:
        os.mknod(dev, kind | 0o666, os.makedev(major, minor))
    except OSError:
        pytest.skip("cannot make a device node here (not root)")
    return dev


@pytest.mark.parametrize("argv", [
    lambda d, r: ["report", str(r), "-o", str(d)],
    lambda d, r: ["generate", "--count", "1", "-o", str(d)],
    lambda d, r: ["evaluate", INSTANCE, "--agent", "random", "-o", str(d)],
], ids=["report", "generate", "evaluate"])
@pytest.mark.parametrize("node", [(stat.S_IFBLK, 7, 231), (stat.S_IFCHR, 1, 8), (stat.S_IFCHR, 1, 1)],
                         ids=["block device", "/dev/random", "/dev/mem"])
def test_block_and_system_devices_are_refused(argv, node, runs: Path, tmp_path: Path, capsys) -> None:
    """A block device (a disk), /dev/random or /dev/mem as an output: refused before anything is written."""
    dev = _device(tmp_path, *node)
    assert main(argv(dev, runs)) == 2
    _one_error_line(capsys.readouterr().err, str(dev), "device")
    assert sorted(p.name for p in tmp_path.iterdir()) == [dev.name]


def test_the_refusal_names_the_kind_of_device(runs: Path, tmp_path: Path, capsys) -> None:
    block = _device(tmp_path, stat.S_IFBLK, 7, 231)
    assert main(["report", str(runs), "-o", str(block)]) == 2
    _one_error_line(capsys.readouterr().err, "is a block device")
    system = _device(tmp_path, stat.S_IFCHR, 1, 8)
    assert main(["report", str(runs), "-o", str(system)]) == 2
    _one_error_line(capsys.readouterr().err, "is a system device (1:8)")


@pytest.mark.parametrize("minor", [3, 5], ids=["null", "zero"])
def test_null_like_sinks_are_written_through(minor: int, runs: Path, tmp_path: Path, capsys) -> None:
    sink = _device(tmp_path, stat.S_IFCHR, 1, minor)
    assert main(["report", str(runs), "-o", str(sink)]) == 0
    assert stat.S_ISCHR(os.lstat(sink).st_mode)


def test_a_terminal_is_written_through(runs: Path, tmp_path: Path, capsys) -> None:
    """A pseudo-terminal (what a user's ``-o /dev/tty`` reaches): the report appears on it."""
    leader, follower = os.openpty()
    try:
        name = os.ttyname(follower)
        assert main(["report", str(runs), "-o", name]) == 0
        got = b""
        while b"}" not in got:
            got += os.read(leader, 65536)
        assert got.startswith(b"{")
    finally:
        os.close(leader)
        os.close(follower)


# -- the pilot's links, one output named twice ---------------------------------------------------------------------


def _pilot(tmp_path: Path) -> Path:
    path = tmp_path / "pilot.json"
    path.write_text(json.dumps({"schema_version": "gf01-formal.pilot.v1", "pilot_id": "pilot-o", "title": "t",
                                "consent": "You are invited.", "instances": ["x"], "completion_code": "DONE-1"}))
    return path


def test_pilot_issue_refuses_the_key_as_its_output(tmp_path: Path, capsys) -> None:
    """``-o`` naming the key the command is about to make: refused, and no key is made (a later issue makes it)."""
    pilot = _pilot(tmp_path)
    key = Path(f"{pilot}.key")
    assert main(["pilot", "issue", "--pilot", str(pilot), "--count", "2", "-o", str(key)]) == 2
    _one_error_line(capsys.readouterr().err, str(key), "is also an input")
    assert not key.exists()
    # The key existing already: refused the same way, and kept.
    assert main(["pilot", "issue", "--pilot", str(pilot), "--count", "2", "-o", str(tmp_path / "links.txt")]) == 0
    kept = key.read_bytes()
    assert main(["pilot", "issue", "--pilot", str(pilot), "--count", "2", "-o", str(key)]) == 2
    assert key.read_bytes() == kept


def test_pilot_links_are_written_for_their_owner_only(tmp_path: Path, capsys) -> None:
    pilot = _pilot(tmp_path)
    links = tmp_path / "links.txt"
    assert main(["pilot", "issue", "--pilot", str(pilot), "--count", "2", "-o", str(links)]) == 0
    assert stat.S_IMODE(links.stat().st_mode) == 0o600
    # Issued again over a file that was world-readable: the links are still the owner's alone.
    links.chmod(0o644)
    assert main(["pilot", "issue", "--pilot", str(pilot), "--count", "3", "-o", str(links)]) == 0
    assert stat.S_IMODE(links.stat().st_mode) == 0o600 and len(links.read_text().splitlines()) == 3


def test_split_refuses_one_file_as_both_outputs(tmp_path: Path, capsys) -> None:
    both = tmp_path / "x.json"
    assert main(["split", INSTANCE, "-o", str(both), "--manifest", str(both)]) == 2
    _one_error_line(capsys.readouterr().err, str(both))
    assert not both.exists()
    # Through a symlink to the same (missing) file: the same refusal.
    link = tmp_path / "link.json"
    link.symlink_to(both)
    assert main(["split", INSTANCE, "-o", str(both), "--manifest", str(link)]) == 2
    _one_error_line(capsys.readouterr().err, str(link))


# -- the AIGER reader ---------------------------------------------------------------------------------------------


def test_aiger_last_line_without_newline_is_accepted() -> None:
    from aig import parse

    full = b"aag 3 2 0 1 1\n2\n4\n6\n6 2 4\n"
    assert parse(full[:-1]) == parse(full)
    with_symbols = full + b"i0 a\no0 y"
    assert parse(with_symbols).symbols == parse(with_symbols + b"\n").symbols
    latch = b"aag 1 0 1 1 0\n2 3\n2"
    assert parse(latch).outputs == (2,)


@pytest.mark.parametrize("data, line", [
    (b"aag 3 2 0 1 1\n2\n4\n6\n6 2 1234567890123456789012\n", 5),
    (b"aag 3 2 0 1 1\n2\n12345678901234567890\n6\n6 2 4\n", 3),
    (b"aag 1 0 1 0 0\n2 99999999999999999999999\n", 2),
])
def test_aiger_numbers_past_18_digits_are_one_error(data: bytes, line: int) -> None:
    from aig import parse
    from hoa.errors import Gf01Error

    with pytest.raises(Gf01Error, match="digits") as ex:
        parse(data, file="big.aag")
    assert f"big.aag:{line}:" in str(ex.value)


def _mutations(data: bytes, rng: random.Random) -> list[bytes]:
    """Mutants of one file: the cuts, byte edits and number edits that reach the reader's corners."""
    out = [data.rstrip(b"\n"), data + b"\n", data[: len(data) // 2], data.replace(b"\n", b"\r\n", 3)]
    numbers = [k for k, b in enumerate(data) if 48 <= b <= 57]
    for _ in range(15):
        k = rng.randrange(len(data))
        choice = rng.randrange(6)
        if choice == 0:
            out.append(data[:k] + data[k + 1 :])
        elif choice == 1:
            out.append(data[:k] + bytes([rng.randrange(256)]) + data[k + 1 :])
        elif choice == 2:
            out.append(data[:k] + rng.choice([b" ", b"\n", b"-", b"0", b"9" * 25]) + data[k:])
        elif choice == 3 and numbers:
            at = rng.choice(numbers)
            out.append(data[:at] + str(rng.choice([10**19, 2**63, 2**64 + 1, 10**40])).encode() + data[at:])
        elif choice == 4:
            out.append(data[:k])
        else:
            out.append(data[:k] + data[k:].rstrip(b"\n"))
    return out


@needs_corpus
def test_aiger_fuzz_over_the_corpus_never_crashes() -> None:
    """Mutated corpus circuits (ASCII and binary): each is a circuit or one Gf01Error, never another exception."""
    from aig import binary, parse
    from hoa.errors import Gf01Error

    files = sorted(corpus_path("aiger").glob("*.aag"))
    assert files
    rng = random.Random(29)
    tried = 0
    for path in files:
        data = path.read_bytes()
        for variant in (data, binary(parse(data, file=path.name))):
            for mutant in _mutations(variant, rng):
                tried += 1
                try:
                    parse(mutant, file=path.name)
                except Gf01Error as ex:
                    assert "\n" not in str(ex), str(ex)
    assert tried > 1000


# -- bounds: loading under --seconds and --memory -----------------------------------------------------------------


def _ring_hoa(path: Path, states: int) -> None:
    """A Mealy controller of ``states`` states in a ring (input r moves on and raises g), about 37 bytes a state."""
    with path.open("w") as fh:
        fh.write(f'HOA: v1\nStates: {states}\nStart: 0\nAP: 2 "r" "g"\ncontrollable-AP: 1\nAcceptance: 0 t\n'
                 "--BODY--\n")
        for k in range(states):
            fh.write(f"State: {k}\n[0&1] {(k + 1) % states}\n[!0&!1] 0\n")
        fh.write("--END--\n")


def test_loading_a_huge_hoa_is_held_to_seconds_and_memory(tmp_path: Path) -> None:
    """Issue 29: a 53 MB HOA of 1,500,000 states under ``verify --seconds 5 --memory 500``: loading it took minutes
    and gigabytes outside the limits; now, under ``--seconds 2``, the command answers unknown (exit 3) in one line,
    well inside a 120 s ceiling, its resident memory under the limit's order."""
    import resource

    hoa = tmp_path / "ring.hoa"
    _ring_hoa(hoa, 1_500_000)
    assert hoa.stat().st_size > 50 << 20
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    cert = tmp_path / "cert.json"
    cert.write_text("[]")
    proc = subprocess.run([sys.executable, "-m", "gf01_formal", "verify", str(hoa), str(cert), "--trace", "r;r;r",
                           "--effect", "g", "--seconds", "2", "--memory", "500"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert proc.stdout.startswith("unknown (") and proc.stdout.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "while loading and measuring the instance" in proc.stdout
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # The guard polls every 20 ms, so a fast allocation overshoots --memory by a step; unguarded it was 894 MB.
    assert peak <= max(before, 720 << 10), peak  # KiB


def test_loading_a_million_gate_aiger_is_held_to_seconds_and_memory(tmp_path: Path) -> None:
    """Issue 29: a 1,000,000-gate AIGER circuit took 84 s and 1.5 GiB to load outside ``--seconds``/``--memory``;
    under ``verify --seconds 2 --memory 500`` (5 in the issue) it answers unknown (exit 3) in one line, its memory
    held."""
    import resource

    n = 1_000_000
    aag = tmp_path / "chain.aag"
    with aag.open("w") as fh:  # a chain of AND gates over one input: gate k is gate k-1 AND a
        fh.write(f"aag {n + 1} 1 0 1 {n}\n2\n{2 * (n + 1)}\n")
        fh.writelines(f"{2 * (k + 2)} {2 * (k + 1)} 2\n" for k in range(n))
        fh.write("i0 a\no0 out\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    cert = tmp_path / "cert.json"
    cert.write_text("[]")
    proc = subprocess.run([sys.executable, "-m", "gf01_formal", "verify", str(aag), str(cert), "--trace", "a;a;a",
                           "--effect", "out", "--seconds", "2", "--memory", "500"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert proc.stdout.startswith("unknown (") and proc.stdout.count("\n") == 1 and "Traceback" not in proc.stderr
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert peak <= max(before, 720 << 10), peak  # KiB; unguarded it was 1.5 GiB


def test_the_guard_leaves_a_command_within_its_limits_alone(tmp_path: Path, capsys) -> None:
    """A small instance under the same limits: answered as before (the guard neither fires nor lingers)."""
    import signal

    cert = tmp_path / "cert.json"
    cert.write_text("[]")
    assert main(["verify", HOA, str(cert), "--trace", TRACE, "--effect", "g0", "--seconds", "60", "--memory",
                 "2000"]) == 0
    assert "suff" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.default_int_handler, None)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
