"""Run records: evaluate (resumable, append-only, jobs-independent), validate (each policy and re-verification),
and the import of the peer's run records."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from corpus import corpus_path, needs_corpus
from waits import CEILING

from gf01_formal.agents.base import Agent, AgentSpec
from gf01_formal.campaign.evaluate import Settings, evaluate
from gf01_formal.cli import main
from gf01_formal.runs.record import RunRecord
from gf01_formal.runs.runner import RunOutcome
from gf01_formal.runs.store import RunsFile, latest
from gf01_formal.runs.validate import validate

ROOT = Path(__file__).resolve().parent.parent
PEER = corpus_path("peer")
PANEL = [AgentSpec("random", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")]


@pytest.fixture(scope="module")
def bundle(small_bundle: Path) -> Path:
    return small_bundle


@pytest.fixture(scope="module")
def random_and_oracle(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The records of ``gf01 evaluate BUNDLE --agent random --agent oracle`` played inline, in this process, timing
    removed (:func:`without_timing`): what another executor, more jobs, or an evaluation interrupted and resumed must
    write again."""
    out = tmp_path_factory.mktemp("reference") / "inline.jsonl"
    assert main(["evaluate", str(bundle), "--agent", "random", "--agent", "oracle", "-o", str(out)]) == 0
    return without_timing(records(out))


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_timing(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k != "timing"} for r in rows), key=lambda r: r["run_id"])


def test_evaluate_records_every_run_once_and_resumes(bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    first = evaluate(bundle, PANEL, out)
    assert first.played == 16 and first.skipped == 0 and first.statuses == {"completed": 16}
    assert first.score_c["oracle"] == 8  # the ceiling certifies every certified instance
    rows = records(out)
    assert len({r["run_id"] for r in rows}) == 16
    again = evaluate(bundle, PANEL, out)
    assert (again.played, again.skipped) == (0, 16) and records(out) == rows
    # Lose the last five records and tear the one before: the rerun cuts the torn line and plays the six runs.
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:10]) + lines[10][: len(lines[10]) // 2])
    resumed = evaluate(bundle, PANEL, out)
    assert resumed.played == 6 and resumed.repaired_bytes == len(lines[10]) // 2
    assert without_timing(records(out)) == without_timing(rows)


def test_jobs_do_not_change_the_records(bundle: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    evaluate(bundle, PANEL, one, settings=Settings(seed=5))
    evaluate(bundle, PANEL, two, settings=Settings(seed=5), jobs=2)
    assert without_timing(records(one)) == without_timing(records(two))
    assert sorted(os.listdir(f"{one}.d/tool-logs")) == sorted(os.listdir(f"{two}.d/tool-logs"))


def test_a_failed_run_is_superseded_by_its_replay(bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    evaluate(bundle, PANEL[:1], out)
    good = RunRecord.model_validate(records(out)[0])
    failed = good.model_copy(update={"status": "harness_error", "error": "boom"})
    out.write_text("")
    RunsFile(out).append(RunOutcome(failed))
    assert not RunsFile(out).done(good.run_id)
    summary = evaluate(bundle, PANEL[:1], out)
    assert summary.played == 8 and latest(out)[good.run_id]["status"] == "completed"
    assert validate([out], bundle=str(bundle), official=True) == []


def test_validate_names_each_violated_policy(generated_bundle: Callable[..., Path], tmp_path: Path) -> None:
    # Three instances (not the module's eight): each of the 15 tampered copies below is validated whole, every run
    # replayed; one EVAL-CB and one EVAL-OC run are what the tampering needs.
    bundle = generated_bundle(11, 3)
    out = tmp_path / "runs.jsonl"
    evaluate(bundle, PANEL, out)
    assert validate([out], bundle=str(bundle), official=True) == []
    rows = records(out)
    cb = next(i for i, r in enumerate(rows) if r["eval_track"] == "EVAL-CB")
    oc = next(i for i, r in enumerate(rows) if r["eval_track"] == "EVAL-OC")
    tampers = [
        (cb, {"score_c": 1 - rows[cb]["score_c"]}, "score_c"),
        (cb, {"certificate": [[0, rows[cb]["certificate"][0][1] if rows[cb]["certificate"] else "x", 1]]}, None),
        (cb, {"tool_allowlist_id": "local-planner-v1"}, "tool_allowlist_id"),
        (cb, {"tool_log_hash": "ab" * 32}, "tool_log_hash"),
        (oc, {"tool_log_hash": ""}, "tool_log_hash"),
        (cb, {"agent_access": "full"}, "agent_access"),
        (cb, {"adaptation_condition": "prompt_adaptation"}, "adaptation_budget_tokens"),
        (cb, {"adaptation_budget_tokens": 5}, "adaptation_condition"),
        (cb, {"renderer_profile_id": "GF-01-R1"}, "renderer_profile_id"),
        (cb, {"scored_commit_episode": False}, "play_protocol"),
        (cb, {"seed": 99}, "run_id"),
        (cb, {"t_star": 0}, "t_star"),
        (cb, {"status": "harness_error"}, "status"),
        (cb, {"kappa": "high"}, "kappa"),
    ]
    for k, change, field in tampers:
        bad = tmp_path / "bad.jsonl"
        rows2 = [dict(r) for r in rows]
        rows2[k].update(change)
        bad.write_text("".join(json.dumps(r) + "\n" for r in rows2))
        # The tool logs beside it: --official needs every EVAL-TA and EVAL-OC run's log.
        shutil.copytree(f"{out}.d", f"{bad}.d", dirs_exist_ok=True)
        got = validate([bad], bundle=str(bundle), official=True)
        assert got, change
        if field is not None:
            assert field in {v.field for v in got}, (change, [str(v) for v in got])
        assert all(v.line == k + 1 and v.run_id == rows[k]["run_id"] for v in got), [str(v) for v in got]
    # A tool log whose content does not hash to the record's hash.
    log = Path(f"{out}.d") / "tool-logs" / f"{rows[oc]['tool_log_hash']}.jsonl"
    log.write_text(log.read_text() + "{}\n")
    assert [v.field for v in validate([out])] == ["tool_log_hash"]


def test_validate_cli_prints_one_line_per_violation(bundle: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "runs.jsonl"
    evaluate(bundle, PANEL[:1], out)
    rows = records(out)
    rows[2]["suff"] = not rows[2]["suff"]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["validate", str(out), "--bundle", str(bundle)]) == 2
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [line for line in captured.out.splitlines() if line.startswith(f"{out}:3: ")]
    assert "suff: recorded" in captured.out
    assert captured.err == f"gf01: error: 1 violation in {out} (against {bundle})\n"
    assert main(["validate", str(out), "--official"]) == 2
    assert "--bundle" in capsys.readouterr().err


@needs_corpus
def test_peer_runs_are_imported_and_rescored(tmp_path: Path, capsys) -> None:
    ours = tmp_path / "peer_bundle.json"
    assert main(["import", "peer", str(PEER / "instance_bundle_v1.json"), "-o", str(ours), "--no-measure"]) == 0
    out = tmp_path / "runs.jsonl"
    assert main(["import", "runs", str(PEER / "runs_v1_valid.jsonl"), "--bundle", str(ours), "-o", str(out)]) == 0
    rows = records(out)
    peer = [json.loads(line) for line in (PEER / "runs_v1_valid.jsonl").read_text().splitlines()]
    assert [r["instance_id"] for r in rows] == [p["instance_id"] for p in peer]
    for r, p in zip(rows, peer, strict=True):
        assert (r["valid"], r["goal"], r["ap_f1"], r["ts_f1"]) == (p["valid"], p["goal"], p["ap_f1"], p["ts_f1"])
        assert r["agent_name"] == p["agent_name"] and r["agent_meta"]["disagreements"] == []
    assert validate([out], bundle=str(ours), official=True) == []
    capsys.readouterr()
    # Legacy rows: string-typed fields are read as what they stand for; without a certificate a row is reported.
    legacy = tmp_path / "legacy.jsonl"
    row = {k: json.dumps(v) if not isinstance(v, str) else v for k, v in peer[0].items()}
    row["valid"] = "false"  # a wrong claim: the exact checks say true
    legacy.write_text(json.dumps(row) + "\n" + (PEER / "runs_pre_v1_legacy.jsonl").read_text())
    assert main(["import", "runs", str(legacy), "--bundle", str(ours), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["imported"] == 1 and report["disagreements"] == 1 and len(report["skipped"]) == 4
    assert records(out)[0]["valid"] is True and records(out)[0]["agent_meta"]["disagreements"] == ["valid"]


def test_evaluate_stops_on_ctrl_c_and_resumes_to_the_same_records(bundle: Path, tmp_path: Path,
                                                                  random_and_oracle: list[dict]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "gf01_formal", "evaluate", str(bundle), "--agent", "random", "--agent", "oracle",
            "--jobs", "2"]
    out = tmp_path / "runs.jsonl"
    proc = subprocess.Popen([*args, "-o", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while (not out.exists() or out.stat().st_size == 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=CEILING)
    assert proc.returncode == 130
    assert b"interrupted" in proc.stderr.read()
    # The same evaluation again, in this process and one job (jobs change no record: test_jobs_do_not_change_the_
    # records; a driver resumed as a process with its pool: test_campaign's): it resumes what the stopped process
    # left, torn line included, to the records the uninterrupted evaluation writes.
    assert main(["evaluate", str(bundle), "--agent", "random", "--agent", "oracle", "-o", str(out)]) == 0
    assert without_timing(records(out)) == random_and_oracle


class _FailsAtStart(Agent):
    """An agent whose start fails the way an external agent that cannot be reached does."""

    def start(self, message) -> None:
        from gf01_formal.agents.base import AgentFault

        raise AgentFault("crash", "the agent exited before its first action", fatal=True)

    def act(self, observation):
        raise AssertionError("a dead agent is never asked")

    def end(self, message) -> None:
        pass

    def close(self) -> None:
        pass


def test_an_agent_that_fails_at_start_is_an_agent_error_not_ours(bundle: Path) -> None:
    from gf01_formal.instances.sources import open_instance
    from gf01_formal.runs.runner import play_run
    from gf01_formal.scoring.scores import Scorer

    inst, problem = open_instance(bundle, json.loads(bundle.read_text())["instances"][0]["instance_id"])
    out = play_run(inst, problem, AgentSpec("random", "EVAL-CB"), seed=0, scorer=Scorer(problem),
                   build=lambda spec, access: _FailsAtStart())
    rec = out.record
    assert rec.status == "agent_error" and rec.error.startswith("crash:") and rec.certificate == []
    assert rec.steps[0].agent_error.kind == "crash" and rec.agent_errors == 1 and rec.score_c is not None


class _BugAtStep2(Agent):
    """A built-in agent with a bug: its third action raises an exception that is not an AgentFault."""

    def start(self, message) -> None:
        pass

    def act(self, observation):
        from gf01_formal.play.protocol import Action

        if observation is not None and observation.t == 1:
            raise KeyError("a bug of ours")
        return Action()

    def end(self, message) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_harness_error_keeps_its_latencies_and_evaluate_exits_1_until_a_rerun_scores_it(
        bundle: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    import gf01_formal.agents as agents

    out = tmp_path / "runs.jsonl"
    with monkeypatch.context() as patch:
        patch.setattr(agents, "build", lambda spec, access: _BugAtStep2())
        assert main(["evaluate", str(bundle), "--agent", "random", "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == ("gf01: 8 runs ended harness_error, not scored: the same command run again plays "
                                    "them again (finished runs are skipped)")
    for rec in records(out):
        assert rec["status"] == "harness_error" and "KeyError" in rec["error"] and rec["score_c"] is None
        # Steps 0 and 1 were played and logged; step 2 failed after its latency was measured.
        assert len(rec["steps"]) == 2 and len(rec["timing"]["step_ms"]) == 3
        assert rec["timing"]["total_ms"] == round(sum(rec["timing"]["step_ms"]), 3)
    assert main(["evaluate", str(bundle), "--agent", "random", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "8 runs played, 0 already done" in captured.out and captured.err == ""


@pytest.mark.parametrize("executor", ["threads", "local"])
def test_evaluate_on_another_executor_writes_the_same_records(bundle: Path, tmp_path: Path, executor: str,
                                                               random_and_oracle: list[dict], capsys) -> None:
    out = tmp_path / f"{executor}.jsonl"
    assert main(["evaluate", str(bundle), "--agent", "random", "--agent", "oracle", "-o", str(out), "--executor",
                 executor, "--jobs", "2"]) == 0
    assert without_timing(records(out)) == random_and_oracle


def test_scoring_past_its_memory_limit_is_a_harness_error_a_rerun_plays_again(bundle: Path, tmp_path: Path,
                                                                              capsys) -> None:
    # 1 MiB: the process is past it at the first check of every scoring query.
    out = tmp_path / "runs.jsonl"
    assert main(["evaluate", str(bundle), "--agent", "random", "--memory", "1", "-o", str(out)]) == 1
    assert "8 runs ended harness_error" in capsys.readouterr().err
    for rec in records(out):
        assert rec["status"] == "harness_error" and rec["score_c"] is None
        assert rec["error"].startswith("scoring passed its limits (--scoring-seconds 300, --memory 1): ")
        assert "memory limit 1 MiB" in rec["error"]
    assert main(["evaluate", str(bundle), "--agent", "random", "-o", str(out)]) == 0
    assert "8 runs played, 0 already done" in capsys.readouterr().out
    assert [r["status"] for r in records(out)][8:] == ["completed"] * 8
