"""Outputs that never destroy and reads a real machine allows (issue 19, items 3-4): devices and FIFOs are written
through, symlinks followed, an output that is an input refused, one writer per runs file; inputs that are not
regular files refused; runs files read in bounded memory.

The matrix of output = input for every command that writes is in tests/test_bad_input.py (rows "-o is an input").
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gf01_formal.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "gf01_formal" / "examples"
INSTANCE = str(EXAMPLES / "arbiter_priority.json")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good runs file (the random agent on the example instance)."""
    from gf01_formal.agents.base import AgentSpec
    from gf01_formal.campaign.evaluate import evaluate

    path = tmp_path_factory.mktemp("runs") / "runs.jsonl"
    evaluate(INSTANCE, [AgentSpec("random", "EVAL-CB")], path)
    return path


def _one_error_line(err: str, *words: str) -> None:
    assert err.count("\n") == 1 and err.startswith("gf01: error: ") and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


def _char_device(tmp_path: Path) -> Path:
    """A private copy of /dev/null (a character device, 1:3) that the test may write, or skip (not root, nodev)."""
    dev = tmp_path / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        with open(dev, "w") as fh:
            fh.write("x")
    except OSError:
        pytest.skip("cannot make a usable character device here (not root, or a nodev mount)")
    return dev


@pytest.mark.parametrize("argv", [
    lambda d, r: ["report", str(r), "-o", str(d)],
    lambda d, r: ["cnf", INSTANCE, str(d)],
    lambda d, r: ["generate", "--count", "1", "-o", str(d)],
    lambda d, r: ["evaluate", INSTANCE, "--agent", "random", "-o", str(d)],
], ids=["report", "cnf", "generate", "evaluate"])
def test_a_device_output_stays_a_device(argv, runs: Path, tmp_path: Path, capsys) -> None:
    dev = _char_device(tmp_path)
    status = main(argv(dev, runs))
    capsys.readouterr()
    assert status == 0
    assert stat.S_ISCHR(os.lstat(dev).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temporary file, no side file left


@pytest.mark.skipif(os.geteuid() != 0, reason="replacing /dev/null needs root (CI runs as root)")
def test_dev_null_stays_a_device(runs: Path, capsys) -> None:
    assert main(["report", str(runs), "-o", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_a_fifo_output_is_written_through(runs: Path, tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    # the reader opens the FIFO in its own time: the writer must find it there (poll, generous ceiling)
    for _ in range(500):
        if main(["report", str(runs), "-o", str(fifo)]) == 0:
            break
        capsys.readouterr()
        threading.Event().wait(0.01)
    reader.join(30)
    assert got and got[0].startswith(b"{") and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_without_reader_is_refused(runs: Path, tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["report", str(runs), "-o", str(fifo)]) == 2
    _one_error_line(capsys.readouterr().err, str(fifo), "nobody reads")
    # a runs file is read back and locked: a FIFO is refused before anything runs
    assert main(["evaluate", INSTANCE, "--agent", "random", "-o", str(fifo)]) == 2
    _one_error_line(capsys.readouterr().err, str(fifo), "FIFO")


def test_a_symlink_is_followed_not_replaced(runs: Path, tmp_path: Path, capsys) -> None:
    target = tmp_path / "target.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert main(["report", str(runs), "-o", str(link)]) == 0
    assert link.is_symlink() and target.read_text().startswith("{")
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "made.json")
    assert main(["cnf", INSTANCE, str(dangling)]) == 0
    assert dangling.is_symlink() and (tmp_path / "made.json").is_file()


def test_campaign_into_a_dangling_symlink(tmp_path: Path, capsys) -> None:
    bundle = tmp_path / "b.json"
    assert main(["generate", "--count", "1", "--seed", "3", "-o", str(bundle)]) == 0
    link = tmp_path / "c"
    link.symlink_to(tmp_path / "real-c")
    status = main(["campaign", str(bundle), "--agents", "random", "--jobs", "1", "-o", str(link)])
    assert status == 0, capsys.readouterr().err
    assert link.is_symlink() and (tmp_path / "real-c" / "runs.jsonl").is_file()


def test_release_package_into_a_dangling_symlink(tmp_path: Path, capsys) -> None:
    link = tmp_path / "pkg"
    link.symlink_to(tmp_path / "nowhere" / "pkg")
    status = main(["release", "package", str(tmp_path / "missing-release"), "-o", str(link)])
    assert status == 2  # the release is missing: a user error, not exit 70, and the link is kept
    _one_error_line(capsys.readouterr().err, "missing-release")
    assert link.is_symlink()


def test_two_writers_on_one_runs_file(tmp_path: Path, capsys) -> None:
    from gf01_formal.runs.store import RunsFile

    path = tmp_path / "runs.jsonl"
    with RunsFile(path):
        status = main(["evaluate", INSTANCE, "--agent", "random", "-o", str(path)])
        _one_error_line(capsys.readouterr().err, str(path), f"process {os.getpid()}", "lock")
        assert status == 2
    assert path.read_text() == ""  # the refused writer wrote nothing
    assert main(["evaluate", INSTANCE, "--agent", "random", "-o", str(path)]) == 0  # released: the next one may


def test_two_writer_processes(tmp_path: Path) -> None:
    """A second process on a runs file a first one is writing: refused, naming the first one's pid."""
    path = tmp_path / "runs.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from gf01_formal.runs.store import RunsFile; "
                               f"s = RunsFile({str(path)!r}); print('held', flush=True); sys.stdin.read()"],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        proc = subprocess.run([sys.executable, "-m", "gf01_formal", "evaluate", INSTANCE, "--agent", "random", "-o",
                               str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 2
        _one_error_line(proc.stderr, f"process {holder.pid}")
    finally:
        holder.communicate("", timeout=30)


def test_serve_refuses_a_runs_file_held_by_another(tmp_path: Path) -> None:
    from gf01_formal.runs.store import RunsFile
    from gf01_formal.web.games import Games
    from hoa.errors import Gf01Error

    path = tmp_path / "runs.jsonl"
    with RunsFile(path), pytest.raises(Gf01Error, match=f"process {os.getpid()}"):
        Games.open(INSTANCE, runs_out=path)


# -- reads ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    lambda f: ["validate", f],
    lambda f: ["verify", INSTANCE, f],
    lambda f: ["hoa", "check", f],
    lambda f: ["report", f],
], ids=["validate", "verify", "hoa check", "report"])
def test_a_fifo_input_is_refused_not_waited_on(argv, tmp_path: Path) -> None:
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    # a real process with a ceiling: a regression would block forever on the FIFO
    proc = subprocess.run([sys.executable, "-m", "gf01_formal", *argv(str(fifo))], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2
    _one_error_line(proc.stderr, str(fifo), "FIFO")


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) is not installed")
def test_validate_under_a_1_gib_address_space(runs: Path) -> None:
    """Reading a runs file reserves no fixed 16 GiB (a container or cluster job's memory limit)."""
    proc = subprocess.run(["prlimit", f"--as={1 << 30}", sys.executable, "-m", "gf01_formal", "validate", str(runs),
                           "--bundle", INSTANCE], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok: no violation")


def test_runs_lines_split_on_newline_only(tmp_path: Path, runs: Path) -> None:
    """A record may hold U+2028 in a string; a reader splitting on it would call the record torn."""
    from gf01_formal.runs.store import check_runs_file, read_lines

    text = runs.read_text().replace('"random"', '"ran\u2028dom"', 1)
    path = tmp_path / "r.jsonl"
    path.write_text(text, encoding="utf-8")
    assert len(check_runs_file(path)) == len(list(read_lines(path))) == text.count("\n")


def test_import_inspect_refuses_a_zip_that_inflates_past_the_limit(tmp_path: Path, capsys) -> None:
    """A small .eval (a zip) whose member inflates to more than 64 MiB: refused by its declared size, at once."""
    import resource
    import zipfile

    from gf01_formal.integrations.inspect_import import MAX_LOG_MEMBER

    bomb = tmp_path / "bomb.eval"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf, \
            zf.open("samples/1.json", "w", force_zip64=True) as member:
        chunk = b"\0" * (1 << 20)
        for _ in range((MAX_LOG_MEMBER >> 20) + 1):
            member.write(chunk)
    assert bomb.stat().st_size < 1 << 20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main(["import", "inspect", str(bomb), "-o", str(tmp_path / "r.jsonl")]) == 2
    _one_error_line(capsys.readouterr().err, str(bomb), "samples/1.json", "MiB")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 32 << 10  # KiB: nothing was inflated
    assert not (tmp_path / "r.jsonl").exists()


def _lying_zip(path: Path, real: int, declared: int) -> None:
    """A zip whose one member inflates to ``real`` bytes while its headers declare ``declared``."""
    import struct
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf, \
            zf.open("samples/1.json", "w", force_zip64=False) as member:
        for _ in range(real >> 20):
            member.write(b"\0" * (1 << 20))
    data = bytearray(path.read_bytes())
    local = data.find(b"PK\x03\x04")
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, local + 22, declared)
    struct.pack_into("<I", data, central + 24, declared)
    path.write_bytes(bytes(data))


def test_import_inspect_refuses_a_zip_whose_directory_lies_about_a_size(tmp_path: Path, capsys) -> None:
    """Issue 29: a member declared at 1,000 bytes that inflates to 256 MiB: refused in one line, with the member
    inflated once in bounded memory (inspect would have inflated it whole)."""
    import resource

    bomb = tmp_path / "liar.eval"
    _lying_zip(bomb, 256 << 20, 1000)
    assert bomb.stat().st_size < 1 << 20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main(["import", "inspect", str(bomb), "-o", str(tmp_path / "r.jsonl")]) == 2
    _one_error_line(capsys.readouterr().err, str(bomb), "samples/1.json", "declares")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 32 << 10  # KiB
    assert not (tmp_path / "r.jsonl").exists()


def test_import_inspect_refuses_a_json_log_far_larger_than_one_member(tmp_path: Path, capsys) -> None:
    """Issue 29: a JSON log is parsed whole at about 28 times its size: one past 64 MiB is refused unread."""
    import resource

    from gf01_formal.integrations.inspect_import import MAX_JSON_LOG

    log = tmp_path / "big.json"
    with log.open("w") as fh:
        fh.write('{"version": 2, "status": "success", "padding": "')
        fh.write("x" * (MAX_JSON_LOG + 1))
        fh.write('"}')
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main(["import", "inspect", str(log), "-o", str(tmp_path / "r.jsonl")]) == 2
    _one_error_line(capsys.readouterr().err, str(log), "MiB")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 32 << 10  # KiB: nothing was parsed


def test_evaluate_checks_every_instance_before_the_first_run(tmp_path: Path, capsys) -> None:
    """A bundle whose second instance is bad (its effect names no output; hashes consistent): refused before any
    run is played, so no runs file is left that a fixed bundle could not resume."""
    import json

    from gf01_formal.artifacts import sha256_hex
    from gf01_formal.instances.io import save_artifact
    from gf01_formal.instances.model import Instance, content_id, content_of, make_bundle

    good = json.loads(Path(INSTANCE).read_text())
    bad = {**good, "effect": "no_such_output"}
    digest = sha256_hex(content_of(bad))
    bad.update(content_hash=digest, instance_id=content_id(digest))
    bundle = tmp_path / "bundle.json"
    save_artifact(bundle, make_bundle([Instance.model_validate(good), Instance.model_validate(bad)],
                                      generator_version="test", provenance="test"))
    out = tmp_path / "runs.jsonl"
    assert main(["evaluate", str(bundle), "--agent", "random", "-o", str(out)]) == 2
    _one_error_line(capsys.readouterr().err, bad["instance_id"])
    assert not out.exists()


def test_a_runs_line_longer_than_the_input_limit_is_refused_unread(tmp_path: Path, capsys) -> None:
    """Issue 29: a JSON Lines file whose one line is 65 MiB (a list of 33 million numbers): the readers stop at the
    limit and name the line, instead of holding the whole line and then its decoded objects (several hundred MB)."""
    import resource

    from hoa.files import MAX_INPUT_BYTES

    big = tmp_path / "runs.jsonl"
    with big.open("w") as fh:
        fh.write("[" + "1," * ((MAX_INPUT_BYTES >> 1) + (1 << 19)) + "1]\n")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main(["validate", str(big)]) == 2
    _one_error_line(capsys.readouterr().err, str(big), ":1:", "a line longer than the 64 MiB")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 150 << 10  # KiB


def test_a_path_longer_than_path_max_is_refused_unresolved(tmp_path: Path, monkeypatch, capsys) -> None:
    """A path the kernel refuses (ENAMETOOLONG: PATH_MAX bytes or more) is refused as such before it is resolved:
    os.path.realpath of a 10 MB argument took 0.1-0.2 s before the first system call failed anyway. As an output, as
    an input the output is compared with, and as the directory of an output."""
    from gf01_formal.artifacts import PATH_MAX, check_output, check_output_dir, write_text_atomic
    from hoa.errors import Gf01Error

    realpath = os.path.realpath

    def short_only(path, **kw):
        assert len(os.fspath(path)) < PATH_MAX, "a path the kernel refuses was resolved"
        return realpath(path, **kw)

    long = "x" * PATH_MAX
    monkeypatch.setattr(os.path, "realpath", short_only)
    for write in (lambda: check_output(long), lambda: check_output_dir(long),
                  lambda: write_text_atomic(long, "text")):
        with pytest.raises(Gf01Error, match="cannot write: File name too long"):
            write()
    assert check_output(tmp_path / "out.json", inputs=[long]) == tmp_path / "out.json"
    monkeypatch.undo()
    # Just under the limit the kernel itself answers (a component is longer than NAME_MAX): the same line.
    with pytest.raises(Gf01Error, match="cannot write: File name too long"):
        check_output("x" * (PATH_MAX - 1))
    assert main(["cnf", INSTANCE, "y" * (10 << 20)]) == 2
    _one_error_line(capsys.readouterr().err, "(10485760 characters): cannot write: File name too long")
