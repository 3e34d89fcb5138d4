"""Gold sets in run records: evaluate ranks the best match in M(I) by default and in M_B(I) with --gold-set MB, a
runs file holds one gold set, validate re-scores each record against its own and can require one, and v1 records
(ranked in M_B(I)) are still read as such but never appended to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gf01_formal.agents.base import AgentSpec
from gf01_formal.campaign.evaluate import Settings, evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import instance_problem, load_set
from gf01_formal.report.load import load_runs
from gf01_formal.runs.record import RUN_SCHEMA_V1
from gf01_formal.runs.validate import validate
from gf01_formal.scoring.certificates import certificate_from_json
from hoa.errors import Gf01Error
from solvers import api

EXAMPLES = Path(__file__).resolve().parent.parent / "gf01_formal" / "examples"
INSTANCE = EXAMPLES / "arbiter_priority.json"  # |M(I)| = 48, |M_B(I)| = 6 (B_T = 2)
PANEL = [AgentSpec("random", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("gold")
    for name in ("M", "MB"):
        evaluate(INSTANCE, PANEL, d / f"{name}.jsonl", settings=Settings(gold_set=name))
    return {"M": d / "M.jsonl", "MB": d / "MB.jsonl", "dir": d}


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_record_names_its_gold_set_and_is_ranked_there(runs: dict[str, Path]) -> None:
    problem = instance_problem(load_set(INSTANCE).instances[0])
    assert api.count(problem, None) > api.count(problem, problem.budget_t)
    for name, budget in (("M", None), ("MB", problem.budget_t)):
        for r in records(runs[name]):
            assert r["gold_set"] == name and r["within_budget"] is True
            atoms = certificate_from_json(r["certificate"], problem.system.inputs, problem.horizon)
            # Another backend than the scorer's forward search: the BDD one (SAT's encodes the instance anew per call,
            # a second each here).
            want = api.best_match(problem, atoms, budget, "bdd")
            assert r["ap_f1"] == want.ap_f1 and r["ts_f1"] == want.ts_f1
    assert validate([runs["M"]], bundle=str(INSTANCE)) == []
    assert validate([runs["MB"]], bundle=str(INSTANCE)) == []  # re-scored against its own gold set


def test_validate_can_require_a_gold_set(runs: dict[str, Path]) -> None:
    assert validate([runs["MB"]], gold_set="MB") == []
    found = validate([runs["MB"]], gold_set="M")
    assert found and {v.field for v in found} == {"gold_set"}
    with pytest.raises(Gf01Error, match="not official"):
        validate([runs["MB"]], bundle=str(INSTANCE), official=True, gold_set="MB")


def test_a_runs_file_holds_one_gold_set(runs: dict[str, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "runs.jsonl"
    copy.write_bytes(runs["MB"].read_bytes())
    before = copy.read_bytes()
    assert main(["evaluate", str(INSTANCE), "--agent", "greedy", "-o", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gf01: error: ") and "--gold-set MB" in err and copy.read_bytes() == before
    assert main(["evaluate", str(INSTANCE), "--agent", "greedy", "--gold-set", "MB", "-o", str(copy)]) == 0


def test_v1_records_are_read_as_ranked_in_mb_and_not_appended_to(runs: dict[str, Path], tmp_path: Path) -> None:
    old = []
    for r in records(runs["MB"]):
        r = {k: v for k, v in r.items() if k not in ("gold_set", "within_budget")}
        old.append({**r, "schema_version": RUN_SCHEMA_V1, "checker_version": "gf01-formal.checker.1"})
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    loaded = load_runs([path]).records
    assert [(r.gold_set, r.within_budget) for r in loaded] == [("MB", True)] * len(old)
    assert validate([path], bundle=str(INSTANCE)) == []
    with pytest.raises(Gf01Error, match=r"gf01-formal\.run_record\.v1 records"):
        evaluate(INSTANCE, PANEL, path)
