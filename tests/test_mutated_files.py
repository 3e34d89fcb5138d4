"""Real files with one small mutation (bench/corpus_mutate.py found these): each is refused in one line naming the
file and the field, exit 2, where it ended in an internal error (exit 70).

- the peer's bundle with a state or AP name that is not a string (`"states": [..., {"x": 1}]`): `import peer`
  keyed a dict by it (TypeError: unhashable type);
- a runs file whose `score_c` is not 0 or 1 (`4294967296`, or null in a completed run): `report` computed a rate
  above 1, a NaN Wilson interval, and failed writing it (ValueError: out of range float values are not JSON
  compliant), after a RuntimeWarning on stderr;
- a runs file whose `kappa` lost an item: `report` indexed past it (IndexError);
- a runs file whose `ap_f1` is 1e308: its mean overflowed to infinity, which JSON cannot hold (ValueError).

Each class runs on a small synthetic file, and on the corpus's own file when GF01_CORPUS is set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bundles import TINY
from corpus import corpus_path, needs_corpus

from gf01_formal.agents.base import AgentSpec
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main


def _one_error(capsys: pytest.CaptureFixture[str], *parts: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("gf01: error: ") and "internal error" not in lines[0]
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


def _peer_bundle() -> dict[str, Any]:
    """A peer bundle (gf01.instance_bundle.v1) of one instance: two states, one input, one output."""
    cell = {"in0=0": {"next_state": "s0", "output": {"out0": 0}}, "in0=1": {"next_state": "s1", "output": {"out0": 1}}}
    automaton = {"initial_state": "s0", "input_aps": ["in0"], "output_aps": ["out0"], "states": ["s0", "s1"],
                 "transitions": {"s0": cell, "s1": cell}}
    return {"schema_version": "gf01.instance_bundle.v1", "instances": [{
        "instance_id": "peer-0", "automaton": automaton, "base_trace": [{"in0": 0}, {"in0": 0}], "effect_ap": "out0",
        "mode": "hard", "t_star": 1, "window_size": 1, "budget_timestep": 2, "budget_atoms": 2}]}


def _names_that_are_not_strings(bundle: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for key, value in [("states", {"x": 1}), ("states", None), ("input_aps", ["in0"]), ("output_aps", 3)]:
        mutant = json.loads(json.dumps(bundle))
        names = mutant["instances"][-1]["automaton"][key]
        names[len(names) - 1] = value
        cases.append((f"{key}[{len(names) - 1}]", mutant))
    return cases


def _check_peer_names(bundle: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(bundle))
    assert main(["import", "peer", str(plain), "-o", str(tmp_path / "ours.json"), "--no-measure"]) == 0
    capsys.readouterr()
    for field, mutant in _names_that_are_not_strings(bundle):
        path = tmp_path / "mutant.json"
        path.write_text(json.dumps(mutant))
        assert main(["import", "peer", str(path), "-o", str(tmp_path / "out.json"), "--no-measure"]) == 2
        _one_error(capsys, "mutant.json", f"automaton.{field}", "expected str")


def test_peer_names_that_are_not_strings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _check_peer_names(_peer_bundle(), tmp_path, capsys)


@needs_corpus
def test_peer_names_that_are_not_strings_in_the_corpus_bundle(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _check_peer_names(json.loads(corpus_path("peer", "instance_bundle_v1.json").read_text()), tmp_path, capsys)


#: Values of score_c that are not a run's Score_C (``true`` and ``1.0`` are not 1: the record is strictly typed).
NOT_A_BIT: list[Any] = [4294967296, 2, -1, True, 1.0, "1", None]


#: Values of a precision, recall or F1 that are not in [0, 1] (or not numbers).
NOT_A_UNIT: list[Any] = [1e308, -5.0, 1.5, True, "0.5"]


def _not_kappa(kappa: list[int]) -> list[Any]:
    """A kappa with an item removed, one added, an item of another type, or none."""
    return [kappa[:3], [*kappa, 0], [kappa[0], True, *kappa[2:]], [*kappa[:2], float(kappa[2]), kappa[3]], None]


def _check_score_c(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(runs), "-o", str(tmp_path / "plain.json")]) == 0
    capsys.readouterr()
    lines = runs.read_text().splitlines()
    kappa = json.loads(lines[1])["kappa"]
    for key, value in [*(("score_c", v) for v in NOT_A_BIT), *(("kappa", v) for v in _not_kappa(kappa)),
                       *(("ap_f1", v) for v in NOT_A_UNIT), ("ts_recall", 1.7e308)]:
        record = json.loads(lines[1])
        record[key] = value
        mutant = tmp_path / "mutant.jsonl"
        mutant.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
        assert main(["report", str(mutant), "-o", str(tmp_path / "report.json")]) == 2, (key, value)
        _one_error(capsys, "mutant.jsonl:2", key)
        assert not (tmp_path / "report.json").exists()


def test_a_score_c_that_is_not_0_or_1(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      generated_bundle: Callable[..., Path]) -> None:
    runs = tmp_path / "runs.jsonl"
    evaluate(generated_bundle(5, 2, TINY), [AgentSpec("greedy", "EVAL-CB")], runs)
    _check_score_c(runs, tmp_path, capsys)


@pytest.fixture
def imported_peer_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """The corpus's peer bundle and runs, through `import peer` and `import runs`: our bundle and records."""
    bundle, runs = tmp_path / "bundle.json", tmp_path / "runs.jsonl"
    assert main(["import", "peer", str(corpus_path("peer", "instance_bundle_v1.json")), "-o", str(bundle),
                 "--no-measure"]) == 0
    assert main(["import", "runs", str(corpus_path("peer", "runs_v1_valid.jsonl")), "-o", str(runs), "--bundle",
                 str(bundle)]) == 0
    capsys.readouterr()
    return bundle, runs


@needs_corpus
def test_a_score_c_that_is_not_0_or_1_in_imported_peer_runs(imported_peer_runs: tuple[Path, Path], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    _check_score_c(imported_peer_runs[1], tmp_path, capsys)


@needs_corpus
def test_imported_peer_rows_validate_without_their_bundle(imported_peer_runs: tuple[Path, Path],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    bundle, runs = imported_peer_runs
    assert main(["validate", str(runs), "--bundle", str(bundle)]) == 0
    capsys.readouterr()
    # docs/runs.md: "Only an imported peer row (protocol peer) may have no step log": such a row is no violation.
    assert main(["validate", str(runs)]) == 0, capsys.readouterr().err
