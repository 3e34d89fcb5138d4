"""The CLI shell: usage errors and user errors are one message and a non-zero exit, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gf01_formal.cli import main


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["verify"], "Missing argument"),
        (["import", "hoa"], "Missing argument"),
        (["generate", "--count", "x"], "Invalid value"),
        (["no-such-command"], "No such command"),
    ],
)
def test_usage_errors_exit_2_with_a_message(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_user_error_is_one_line(tmp_path):
    missing = tmp_path / "nope.json"
    proc = subprocess.run(
        [sys.executable, "-m", "gf01_formal", "oracle", str(missing)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gf01: error: ") and "nope.json" in lines[0]


def test_help_lists_every_command_group(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for cmd in ("verify", "enumerate", "oracle", "generate", "split", "split-policy-check", "hoa", "import"):
        assert cmd in out
