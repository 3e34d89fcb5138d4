"""Scoring has a time limit (issue 29, "Bounds that do not bound"; item 5): ``evaluate``, ``serve`` and ``validate``
score a run under ``--scoring-seconds``. The instance here is real and slow to score: the priority arbiter over 40
steps, whose M(I) has 1,923,517,682 members (about a CPU second to count, then a symbolic best match per run). Under a
limit of 0.05 s its runs are ``harness_error`` with a one-line reason naming the limit (never the agent's fault), the
evaluation goes on to the next run, and the same command run again with the default limit plays them again."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gf01_formal.runs.scoring_limit import SCORING_SECONDS, SERVE_SCORING_SECONDS

ROOT = Path(__file__).resolve().parent.parent
ARBITER = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"
TINY = "0.05"


def gf01(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gf01_formal", *args], capture_output=True, text=True, timeout=600,
                          check=False)


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 40-step priority arbiter (effect g2 & !g3 at t* = 39, a seeded trace): scoring it counts M(I)."""
    where = tmp_path_factory.mktemp("slow")
    (where / "arbiter.hoa").write_text(json.loads(ARBITER.read_text())["system"]["hoa"])
    bits = np.random.Generator(np.random.PCG64(1)).integers(0, 2, (40, 5))
    (where / "trace.json").write_text(json.dumps([{f"r{i}": int(b[i]) for i in range(5)} for b in bits]))
    out = where / "slow.json"
    # Made and counted in this process (the tests' own commands are real processes): two interpreters' start-up less.
    from gf01_formal.cli import main

    assert main(["import", "hoa", str(where / "arbiter.hoa"), "--trace-file", str(where / "trace.json"), "--effect",
                 "g2 & !g3", "--t-star", "39", "--no-measure", "-o", str(out)]) == 0
    with contextlib.redirect_stdout(io.StringIO()) as counted:
        assert main(["enumerate", str(out), "--unbounded", "--count", "--json"]) == 0
    assert json.loads(counted.getvalue())["count"] == 1_923_517_682, counted.getvalue()
    return out


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_defaults_are_stated() -> None:
    assert (SCORING_SECONDS, SERVE_SCORING_SECONDS) == (300.0, 60.0)
    for command in ("evaluate", "validate", "serve"):
        assert "--scoring-seconds" in gf01(command, "--help").stdout


def test_evaluate_past_the_limit_is_a_harness_error_and_a_rerun_plays_it(slow: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    first = gf01("evaluate", str(slow), "--agent", "random", "--agent", "greedy", "--scoring-seconds", TINY,
                 "-o", str(runs))
    assert first.returncode == 1, first.stderr  # not scored: `evaluate && report` must not go on
    assert "2 runs ended harness_error" in first.stderr and "run again plays them again" in first.stderr
    failed = records(runs)
    assert [r["agent_name"] for r in failed] == ["random", "greedy"]  # the evaluation went on past the first
    for rec in failed:
        assert rec["status"] == "harness_error" and rec["score_c"] is None
        assert rec["error"].startswith(f"scoring passed its limits (--scoring-seconds {TINY}")
        assert f"time limit {TINY} s" in rec["error"] and "not the agent's fault" in rec["error"]
        assert "\n" not in rec["error"]
    again = gf01("evaluate", str(slow), "--agent", "random", "--agent", "greedy", "-o", str(runs))
    assert again.returncode == 0, again.stderr
    assert "2 runs played, 0 already done" in again.stdout
    final = records(runs)[2:]
    assert [r["run_id"] for r in final] == [r["run_id"] for r in failed]  # the limit is not in the run id
    assert all(r["status"] == "completed" and r["score_c"] is not None for r in final)
    ok = gf01("validate", str(runs), "--bundle", str(slow), "--official")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_validate_past_the_limit_proves_nothing(slow: Path, tmp_path: Path) -> None:
    """A record not re-scored within the limit is a note; official validation refuses it (its scores are unproven).
    The other records of that instance are not tried again (one note each, no second wait)."""
    runs = tmp_path / "runs.jsonl"
    assert gf01("evaluate", str(slow), "--agent", "random", "--agent", "greedy", "-o", str(runs)).returncode == 0
    plain = gf01("validate", str(runs), "--bundle", str(slow), "--scoring-seconds", TINY, "--json")
    assert plain.returncode == 0, plain.stderr
    notes = json.loads(plain.stdout)["notes"]
    assert len(notes) == 2 and all("score_c: not re-scored: scoring passed its limits (--scoring-seconds 0.05"
                                   in n for n in notes), notes
    official = gf01("validate", str(runs), "--bundle", str(slow), "--official", "--scoring-seconds", TINY)
    assert official.returncode == 2
    assert official.stdout.count("score_c: not re-scored") == 2, official.stdout


def test_serve_past_the_limit_records_a_harness_error_and_scores_it_on_the_next_load(slow: Path,
                                                                                      tmp_path: Path) -> None:
    from gf01_formal.web.games import Games

    runs = tmp_path / "runs.jsonl"
    games = Games.open(slow, runs_out=runs, scoring_seconds=float(TINY))
    game = games.start_free(next(iter(games.served)))
    games.step(game.token, {"action": {"t": 0, "set": {"r0": 1}, "commit": True}, "response_ms": 100.0})
    assert game.record is not None and game.record.status == "harness_error"
    assert "--scoring-seconds 0.05" in (game.record.error or "")
    shown = games.state(game.token)  # still past the limit: tried again, harness_error again
    assert shown["result"]["status"] == "harness_error"
    games.scoring_seconds = SCORING_SECONDS
    shown = games.state(game.token)
    assert shown["result"]["status"] == "completed" and shown["result"]["score_c"] is not None
    statuses = [r["status"] for r in records(runs)]
    assert statuses == ["harness_error", "harness_error", "completed"]
    games.runs.close()
