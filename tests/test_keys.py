"""Keys that cannot be guessed (issue 29, "Keys and commitments"): ``gf01 key new`` writes a good key (0600, atomic,
never over a file); split and pilot keys are refused when weak; key files are read bounded (a FIFO or a device is
refused at once, a large file after a few KiB)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gf01_formal.cli import main
from gf01_formal.instances.keys import MAX_KEY_FILE_BYTES, check_key_strength, read_key, read_key_file
from hoa.errors import Gf01Error

EXAMPLE = Path(__file__).resolve().parent.parent / "gf01_formal" / "examples" / "arbiter_priority.json"


def test_key_new_writes_a_good_key_readable_by_its_owner_only(tmp_path: Path) -> None:
    for kind in ("split", "pilot"):
        path = tmp_path / f"{kind}.key"
        assert main(["key", "new", "--kind", kind, "-o", str(path)]) == 0
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        text = path.read_text()
        assert len(text) == 65 and text.endswith("\n") and int(text, 16) >= 0
        check_key_strength(read_key(path), what=str(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pilot.key", "split.key"]  # no temporary file left


def test_key_new_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "k"
    path.write_text("the links of 40 participants\n")
    assert main(["key", "new", "-o", str(path)]) == 2
    assert "exists already" in capsys.readouterr().err
    assert path.read_text() == "the links of 40 participants\n"
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    assert main(["key", "new", "-o", str(link)]) == 2
    assert not (tmp_path / "nowhere").exists()


def test_key_new_signing_writes_a_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gf01_formal.runs.signing import load_signer, load_verifier

    key = tmp_path / "evaluator.key"
    assert main(["key", "new", "--kind", "signing", "-o", str(key), "--json"]) == 0
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(f"{key}.pub").stat().st_mode) == 0o644
    assert load_signer(key).fingerprint == load_verifier(f"{key}.pub").fingerprint == load_verifier(key).fingerprint
    assert load_signer(key).fingerprint in capsys.readouterr().out
    # a pair whose public half's name is taken is not made at all
    other = tmp_path / "other.key"
    Path(f"{other}.pub").write_text("someone's\n")
    assert main(["key", "new", "--kind", "signing", "-o", str(other)]) == 2
    assert not other.exists() and Path(f"{other}.pub").read_text() == "someone's\n"
    # and one whose private name is taken leaves no public half behind
    assert main(["key", "new", "--kind", "signing", "-o", str(key)]) == 2


@pytest.mark.parametrize("weak", [b"a" * 16, b"ab" * 16, b"0" * 64, b"short key", b"passwordpassword"])
def test_weak_keys_are_refused(weak: bytes) -> None:
    with pytest.raises(Gf01Error, match="weak key"):
        check_key_strength(weak, what="k")


@pytest.mark.parametrize("good", [bytes(range(16)), b"a publisher's secret split key, 2026",
                                  b"0123456789abcdef" * 4])
def test_keys_of_enough_entropy_are_accepted(good: bytes) -> None:
    check_key_strength(good, what="k")


def test_a_weak_split_key_is_refused_naming_its_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    weak = tmp_path / "weak.key"
    weak.write_text("aaaaaaaaaaaaaaaa\n")
    out = ["-o", str(tmp_path / "b.json")]
    assert main(["generate", "--count", "1", "--key-file", str(weak), *out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(weak) in err and "weak key" in err
    assert not (tmp_path / "b.json").exists()
    assert main(["key", "new", "-o", str(tmp_path / "good.key")]) == 0
    assert main(["generate", "--count", "1", "--key-file", str(tmp_path / "good.key"), *out]) == 0


def test_a_weak_pilot_key_is_refused(tmp_path: Path) -> None:
    from gf01_formal.web.pilot import load_key

    (tmp_path / "pilot.json.key").write_text("0" * 64 + "\n")
    with pytest.raises(Gf01Error, match="weak key") as ex:
        load_key(tmp_path / "pilot.json")
    assert "pilot.json.key" in str(ex.value)
    (tmp_path / "p2.json.key").write_text(os.urandom(32).hex() + "\n")
    assert len(load_key(tmp_path / "p2.json")) == 32


def test_key_files_are_read_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"k" * (MAX_KEY_FILE_BYTES + 1))
    with pytest.raises(Gf01Error, match="larger than"):
        read_key_file(big)
    with pytest.raises(Gf01Error, match="device"):
        read_key_file("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_fifo_or_dev_zero_as_key_file_ends_at_once(tmp_path: Path, kind: str) -> None:
    """In a real process, with a generous ceiling: a FIFO nobody writes was read forever, /dev/zero until memory
    ran out."""
    path = tmp_path / "fifo" if kind == "fifo" else Path(kind)
    if kind == "fifo":
        os.mkfifo(path)
    proc = subprocess.run([sys.executable, "-m", "gf01_formal", "generate", "--count", "1", "--key-file",
                           str(path), "-o", str(tmp_path / "b.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and str(path) in proc.stderr, proc.stderr
    assert not (tmp_path / "b.json").exists()
