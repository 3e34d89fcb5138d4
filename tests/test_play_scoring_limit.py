"""`gf01 play` on an instance whose exact scoring outlasts its limit (found by bench/corpus_sweep.py, seed 1: a
SYNTCOMP factory_assembly circuit with its 40 environment inputs edited; the greedy agent's run is scored by the best
match over M(I), which ran for 300 s and then ended in exit 70, an internal error). Past its `--scoring-seconds` the
answer is `unknown (...)`, exit 3, in one line, as every query past its limit answers (docs/cli.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import corpus_path, needs_corpus

from gf01_formal.cli import main
from solvers.limits import Unknown

# A one-state controller: output o follows input a; the effect o at t* = 2 needs a = 1 there.
HOA = """HOA: v1
States: 1
Start: 0
AP: 2 "a" "o"
controllable-AP: 1
Acceptance: 0 t
--BODY--
State: 0
[0&1] 0
[!0&!1] 0
--END--
"""


def _instance(tmp_path: Path) -> Path:
    system = tmp_path / "s.hoa"
    system.write_text(HOA)
    out = tmp_path / "i.json"
    assert main(["import", "hoa", str(system), "-o", str(out), "--trace", "!a;!a;!a", "--effect", "o",
                 "--no-measure"]) == 0
    return out


def test_play_whose_scoring_passes_its_limit_answers_unknown_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    inst = _instance(tmp_path)
    capsys.readouterr()
    from gf01_formal.runs import runner

    def slow(*args: object, **kwargs: object) -> object:
        raise Unknown("best_match", "time limit 300 s", {"seconds": 300.5})

    # The scoring's own limit, reached at once: the path a 300 s best match takes on a large circuit.
    monkeypatch.setattr(runner, "score_within", slow)
    assert main(["play", str(inst), "--agent", "greedy", "--json"]) == 3
    captured = capsys.readouterr()
    answer = json.loads(captured.out.splitlines()[-1])
    assert answer["unknown"]["query"] == "score"
    assert "scoring passed its limits (--scoring-seconds 300)" in answer["unknown"]["reason"]
    assert "internal error" not in captured.err
    assert main(["play", str(inst), "--agent", "greedy"]) == 3
    assert capsys.readouterr().out.splitlines()[-1].startswith("unknown (scoring passed its limits")


def test_play_scoring_seconds_is_an_option_with_a_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inst = _instance(tmp_path)
    capsys.readouterr()
    assert main(["play", str(inst), "--agent", "greedy", "--scoring-seconds", "30", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == "completed"
    for bad in ("0", "-1", "1e9", "x"):
        assert main(["play", str(inst), "--agent", "greedy", "--scoring-seconds", bad]) == 2
        err = capsys.readouterr().err
        assert "--scoring-seconds" in err and len(err.strip().splitlines()) == 1


@needs_corpus
def test_play_on_the_sweeps_syntcomp_instance_ends_unknown_within_its_scoring_seconds(tmp_path: Path) -> None:
    design = corpus_path("aiger", "factory_assembly_line-factory_assembly_7x5_2_10errors.aag")
    lines = design.read_text().splitlines()
    inputs = [line.split(" ", 1)[1] for line in lines if line[:1] == "i" and line[1:2].isdigit()]
    # The sweep's task (seed 1): every input 1 but the controller's, six steps, the error output at t* = 5.
    trace = json.dumps([{name: int(not name.startswith("controllable")) for name in inputs} for _ in range(6)])
    inst = tmp_path / "i.json"
    assert main(["import", "aiger", str(design), "-o", str(inst), "--trace", trace, "--effect", "err",
                 "--edit", "uncontrollable", "--no-measure"]) == 0
    proc = subprocess.run([sys.executable, "-m", "gf01_formal", "play", str(inst), "--agent", "greedy",
                           "--scoring-seconds", "2", "--json"], capture_output=True, text=True, timeout=120)
    # Scored within 2 s (the greedy run's certificate: 3), or unknown in one line; never 70.
    assert proc.returncode in (0, 3), proc.stderr
    if proc.returncode == 3:
        assert json.loads(proc.stdout.splitlines()[-1])["unknown"]["query"] == "score"
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
