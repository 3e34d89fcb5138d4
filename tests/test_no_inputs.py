"""A controller without inputs (found by the corpus sweep: Spot's ltlsynt output valid/spot-ltlsynt-L377.hoa, whose
one AP is controllable). No instance can be made of it (a certificate edits inputs), and the refusal said
`B_A = 3 is outside [1, 0] (T x |AP_in|)`: a budget the user never gave, in an empty range. It now says why, in one
line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus import corpus_path, needs_corpus

from gf01_formal.cli import main

HOA = """HOA: v1
States: 1
Start: 0
AP: 1 "p0"
controllable-AP: 0
Acceptance: 0 t
--BODY--
State: 0
[0] 0
--END--
"""


def _refused(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "i.json"
    assert main(["import", "hoa", str(path), "-o", str(out), "--trace", "[{}, {}, {}]", "--effect", "p0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "system: " in err and "no inputs" in err
    assert "B_A" not in err and "[1, 0]" not in err
    assert not out.exists()


def test_a_controller_without_inputs_is_refused_saying_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    system = tmp_path / "s.hoa"
    system.write_text(HOA)
    _refused(system, tmp_path, capsys)
    # The query commands read the same system through the same check.
    assert main(["oracle", str(system), "--trace", "[{}, {}]", "--effect", "p0"]) == 2
    assert "no inputs" in capsys.readouterr().err


@needs_corpus
def test_spots_ltlsynt_controller_without_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(corpus_path("hoa", "valid", "spot-ltlsynt-L377.hoa"), tmp_path, capsys)
