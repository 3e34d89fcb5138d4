"""A campaign's validation reuses the best matches its own scorers computed (gf01_formal.campaign.run.finish):
the same verdicts, no best match computed again, and a record changed on disk after play still fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gf01_formal.agents.base import AgentSpec
from gf01_formal.campaign.driver import drive
from gf01_formal.campaign.shards import Plan
from gf01_formal.instances.io import instance_problem, load_bundle
from gf01_formal.runs.store import RunsFile
from gf01_formal.runs.validate import validate
from gf01_formal.scoring import scores
from gf01_formal.scoring.scores import AnswerBook, Scorer

SPECS = [AgentSpec("random", "EVAL-CB"), AgentSpec("greedy", "EVAL-CB")]


def played(bundle: Path, runs: Path, executor: str = "inline") -> AnswerBook:
    """The runs of SPECS on the first four instances of ``bundle`` into ``runs``; the best matches computed."""
    loaded = load_bundle(bundle)
    plan = Plan(instances=loaded.instances[:4], specs=SPECS, seed=0, bundle_hash=loaded.instances_hash)
    answers: AnswerBook = {}
    store = RunsFile(runs)
    try:
        drive(plan, store, executor=executor, jobs=2, answers=answers)
    finally:
        store.close()
    return answers


def no_best_match(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a best match was computed again")

    monkeypatch.setattr(scores.GoldList, "best_match", refuse)
    monkeypatch.setattr(scores.api, "best_match", refuse)


@pytest.mark.parametrize("executor", ["inline", "local"])
def test_validation_takes_the_scorers_answers(small_bundle: Path, tmp_path: Path, executor: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs.jsonl"
    answers = played(small_bundle, runs, executor)
    loaded = load_bundle(small_bundle)
    # What the book holds is what a fresh scorer computes, for every instance played (local workers' too).
    assert {content for content, _ in answers} == {i.content_hash for i in loaded.instances[:4]}
    for inst in loaded.instances[:4]:
        fresh = Scorer(instance_problem(inst))
        for cert, bm in answers[(inst.content_hash, "M")].items():
            assert fresh.best_match(cert) == bm
    no_best_match(monkeypatch)
    assert validate([runs], bundle=str(small_bundle), answers=answers) == []


def test_a_record_changed_after_play_still_fails(small_bundle: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs.jsonl"
    answers = played(small_bundle, runs)
    rows = [json.loads(line) for line in runs.read_text().splitlines()]
    target = next(r for r in rows if r["best_match_gold"])
    target["ap_f1"] = 1.0 if target["ap_f1"] != 1.0 else 0.5
    target["best_match_gold"] = target["best_match_gold"][:-1]
    runs.write_text("".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in rows))
    no_best_match(monkeypatch)
    found = {(v.run_id, v.field) for v in validate([runs], bundle=str(small_bundle), answers=answers)}
    assert {(target["run_id"], "ap_f1"), (target["run_id"], "best_match_gold")} <= found
