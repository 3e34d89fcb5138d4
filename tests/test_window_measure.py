"""Normal mode on an HOA file without --window: w(I) is measured first from the hard-mode knobs only, said on
stderr (start and result), bounded by --seconds, and the instance is the one the measured window gives explicitly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gf01_formal.cli import main
from gf01_formal.instances.families.registers import latch_bank_hoa
from gf01_formal.instances.sources import InstanceOptions, instance_from_hoa, open_instance

EXAMPLES = Path(__file__).resolve().parents[1] / "gf01_formal" / "examples"
TRACE = "r0&!r1;!r0&!r1;!r0&!r1;!r0&r1"


def test_the_window_is_measured_with_progress_and_gives_the_explicit_windows_instance(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oracle", str(EXAMPLES / "arbiter.hoa"), "--trace", TRACE, "--effect", "g0", "--mode", "normal",
                 "--json"]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("gf01: normal mode without --window: measuring w(I)")
    found = re.match(r"gf01: w\(I\) = (\d+) \(z = [0-9.]+; hard mode, \|M_B\(I\)\| = \d+\), measured in", lines[1])
    assert found, lines[1]
    window = int(found.group(1))
    assert main(["oracle", str(EXAMPLES / "arbiter.hoa"), "--trace", TRACE, "--effect", "g0", "--mode", "normal",
                 "--window", str(window), "--json"]) == 0
    explicit, quiet = capsys.readouterr()
    assert json.loads(out) == json.loads(explicit) and quiet == ""


def test_open_instance_measures_only_the_window(tmp_path: Path) -> None:
    told: list[str] = []
    opts = InstanceOptions(trace=";".join(["!s0&!s1&!s2&!rst"] * 10), effect="l0&l1", mode="normal")
    path = tmp_path / "latch3.hoa"
    text = latch_bank_hoa(3)
    path.write_text(text)
    inst, _ = open_instance(path, None, opts, progress=told.append)
    assert len(told) == 2 and inst.complexity is None and inst.certification is None  # the window only
    measured = instance_from_hoa(text, opts, source=str(path), measure=True)
    assert inst.window == measured.window  # the same w(I) as the full measurement
    explicit, _ = open_instance(path, None, InstanceOptions(trace=opts.trace, effect=opts.effect, mode="normal",
                                                            window=inst.window))
    assert explicit == inst


def test_help_says_how_the_window_is_measured(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oracle", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "for an HOA file first, from the hard-mode oracle and count only" in text
    assert "--seconds bounds the count" in text

