"""`gf01 sim --vcd` gives each signal its own wire name (found by the corpus sweep's by-hand pass over quoted AP names
such as Spot's "F\\G"): names are cleaned to VCD's identifier characters, and two signals that read the same once
cleaned (`x y` and `x_y`), or an output called `effect` beside the effect wire, were written under one name, which a
waveform viewer cannot tell apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gf01_formal.cli import main

HOA = """HOA: v1
States: 1
Start: 0
AP: 4 "x y" "x_y" "effect" "F\\\\G"
controllable-AP: 2 3
Acceptance: 0 t
--BODY--
State: 0
[0&2&3] 0
[!0&!2&!3] 0
--END--
"""


def test_vcd_wire_names_are_distinct_in_each_scope(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    system = tmp_path / "s.hoa"
    system.write_text(HOA)
    inst = tmp_path / "i.json"
    trace = '[{"x y": 0, "x_y": 1}, {"x y": 1, "x_y": 0}]'
    assert main(["import", "hoa", str(system), "-o", str(inst), "--trace", trace, "--effect", "effect",
                 "--no-measure"]) == 0
    wave = tmp_path / "w.vcd"
    assert main(["sim", str(inst), "--vcd", str(wave)]) == 0
    capsys.readouterr()
    scopes: dict[str, list[str]] = {}
    scope = "top"
    for line in wave.read_text().splitlines():
        if m := re.match(r"\$scope module (\S+) \$end", line):
            scope = m.group(1)
        elif m := re.match(r"\$var wire 1 \S+ (\S+) \$end", line):
            scopes.setdefault(scope, []).append(m.group(1))
    for scope in ("base", "edited"):
        names = scopes[scope]
        assert len(names) == len(set(names)) == 5, names
        # The effect wire keeps its documented name; the output called effect gets another.
        assert names[-1] == "effect" and "effect_2" in names
        assert names[:2] == ["x_y", "x_y_2"]
