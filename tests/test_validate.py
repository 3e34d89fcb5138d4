"""``gf01 validate`` against forged records: each forgery is made on real records of the whole panel (played on a
small generated bundle) and must be reported on its own line, naming the record and the field; the honest records
must still validate.

A forgery that changes one field is easy to catch; these keep every hash consistent (run id, agent hash) so that
only the check under test can see them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from gf01_formal.agents.base import ACCESS_OF_TRACK, ALLOWLIST_OF_TRACK, AgentSpec
from gf01_formal.campaign.evaluate import Settings, evaluate
from gf01_formal.cli import main
from gf01_formal.runs.record import run_id
from gf01_formal.runs.validate import RESCORED, Violation, check_runs, validate
from solvers.limits import Limits

PANEL = [AgentSpec("random", "EVAL-CB"), AgentSpec("greedy", "EVAL-CB"), AgentSpec("search", "EVAL-CB"),
         AgentSpec("tool", "EVAL-TA"), AgentSpec("oracle", "EVAL-OC")]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, generated_bundle: Callable[..., Path]) -> tuple[Path, Path]:
    """A bundle of three instances (test_forgery's, made once a session) and the whole panel's runs on it, each with
    its exact SubsetMin diagnostic. Each test validates all of them once or twice, replaying every run: three
    instances, not five, is 15 replays a validation, not 25."""
    where = tmp_path_factory.mktemp("validate")
    bundle = generated_bundle(11, 3)
    runs = where / "runs.jsonl"
    summary = evaluate(bundle, PANEL, runs, settings=Settings(subset_min=True))
    assert summary.statuses == {"completed": 15}
    return bundle, runs


def rows_of(runs: Path) -> list[dict]:
    return [json.loads(line) for line in runs.read_text().splitlines()]


def write(rows: list[dict], path: Path, side_from: Path | None = None) -> Path:
    """The rows as a runs file; with ``side_from``, a copy of that runs file's side directory beside it."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if side_from is not None:
        shutil.copytree(f"{side_from}.d", f"{path}.d")
    return path


def on(rows: list[dict], k: int, got: list[Violation]) -> set[str]:
    """The fields reported, after checking that every line names record ``k`` (its line and run id)."""
    assert got, "no violation reported"
    assert all(v.line == k + 1 and v.run_id == rows[k]["run_id"] for v in got), [str(v) for v in got]
    return {v.field for v in got}


def rekey(row: dict, track: str) -> None:
    """Move a record to ``track`` as a careful forger would: the spec, its hash, the run id and the track's fields."""
    spec = AgentSpec(row["agent_spec"]["name"], track, row["agent_spec"]["params"])  # type: ignore[arg-type]
    row.update(eval_track=track, agent_spec=spec.to_json(), agent_hash=spec.digest, agent_access=ACCESS_OF_TRACK[track],
               tool_allowlist_id=ALLOWLIST_OF_TRACK[track], tool_log_hash="" if track == "EVAL-CB" else "cd" * 32,
               run_id=run_id(row["instance_id"], row["instance_hash"], spec.digest, row["seed"]))


def test_the_honest_panel_validates(played: tuple[Path, Path]) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    assert {r["diagnostic_status"] for r in rows} == {"exact"} and {r["agent_name"] for r in rows} == {
        "random", "greedy", "search", "tool", "oracle"}
    found = check_runs([runs], bundle=str(bundle), official=True)
    assert found.violations == [] and found.notes == []


def test_another_runs_certificate_and_scores_under_its_own_step_log(played: tuple[Path, Path],
                                                                    tmp_path: Path) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    # The random run of an instance where the oracle certified something random did not commit.
    k, oracle = next((i, o) for i, r in enumerate(rows) if r["agent_name"] == "random"
                     for o in rows if o["agent_name"] == "oracle" and o["instance_id"] == r["instance_id"]
                     and o["certificate"] != r["certificate"])
    forged = [dict(r) for r in rows]
    forged[k].update({f: oracle[f] for f in ("certificate", *RESCORED, "subset_min", "diagnostic_status")})
    got = validate([write(forged, tmp_path / "swap.jsonl")], bundle=str(bundle))
    # The scores re-verify (they are the oracle's, of the oracle's certificate): only the step log can tell.
    assert on(forged, k, got) == {"certificate"}
    assert "is not the atoms its step log committed" in str(got[0])
    # Nor can the step log be thrown away: only an imported peer row has none.
    forged[k]["steps"] = []
    assert on(forged, k, validate([write(forged, tmp_path / "nolog.jsonl")], bundle=str(bundle))) == {"steps"}


def test_refusal_and_agent_error_counts_are_the_step_logs(played: tuple[Path, Path], tmp_path: Path) -> None:
    _, runs = played
    rows = rows_of(runs)
    k = 0
    for change, fld in (({"refusals": rows[k]["refusals"] + 1}, "refusals"),
                        ({"agent_errors": rows[k]["agent_errors"] + 2}, "agent_errors")):
        forged = [dict(r) for r in rows]
        forged[k].update(change)
        assert on(forged, k, validate([write(forged, tmp_path / f"{fld}.jsonl")])) == {fld}
    # A step log whose committed atoms are not at their step is malformed (named by its path).
    forged = [dict(r) for r in rows]
    j = next(i for i, r in enumerate(rows) if r["certificate"])
    steps = [dict(s) for s in forged[j]["steps"]]
    t = forged[j]["certificate"][0][0]
    steps[t]["committed"] = [[t + 1, a, v] for _, a, v in steps[t]["committed"]]
    forged[j]["steps"] = steps
    assert on(forged, j, validate([write(forged, tmp_path / "moved.jsonl")])) == {f"steps.{t}.committed"}


def test_subset_min_needs_a_diagnostic_that_ran_and_is_re_decided(played: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    k = next(i for i, r in enumerate(rows) if r["certificate"] and r["subset_min"] is True)
    forged = [dict(r) for r in rows]
    forged[k].update(diagnostic_status="not-run")
    assert on(forged, k, validate([write(forged, tmp_path / "notrun.jsonl")])) == {"subset_min"}
    forged[k].update(diagnostic_status="infeasible", diagnostic_note="time limit 1 s")
    assert on(forged, k, validate([write(forged, tmp_path / "infeasible.jsonl")])) == {"subset_min"}
    # An exact diagnostic whose answer was flipped: the re-decision disagrees.
    forged[k].update(diagnostic_status="exact", diagnostic_note=None, subset_min=False)
    path = write(forged, tmp_path / "flipped.jsonl")
    assert validate([path]) == []  # without the bundle nothing can be re-decided
    got = validate([path], bundle=str(bundle))
    assert on(forged, k, got) == {"subset_min"} and "recorded False, re-checked True" in str(got[0])
    # Past the re-check's limits it is a note, not a violation.
    found = check_runs([path], bundle=str(bundle), recheck_limits=Limits(seconds=0.0))
    assert found.violations == []
    assert {(n.line, n.field) for n in found.notes} >= {(k + 1, "subset_min")}
    assert all("could not re-check within limits" in n.message for n in found.notes)


def test_official_needs_the_tool_agents_planner_log(played: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    path = write(rows, tmp_path / "runs.jsonl", side_from=runs)
    k = next(i for i, r in enumerate(rows) if r["agent_name"] == "tool")
    (Path(f"{path}.d") / "tool-logs" / f"{rows[k]['tool_log_hash']}.jsonl").unlink()
    assert validate([path], bundle=str(bundle)) == []  # outside publication a missing log is not checked
    got = validate([path], bundle=str(bundle), official=True)
    assert on(rows, k, got) == {"tool_log_hash"} and "the tool log tool-logs/" in str(got[0])


@pytest.mark.parametrize(("agent", "track"), [("random", "EVAL-TA"), ("oracle", "EVAL-CB"), ("tool", "EVAL-OC")])
def test_a_baseline_on_another_track(played: tuple[Path, Path], tmp_path: Path, agent: str, track: str) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    k = next(i for i, r in enumerate(rows) if r["agent_name"] == agent)
    forged = [dict(r) for r in rows]
    rekey(forged[k], track)
    got = validate([write(forged, tmp_path / "track.jsonl")], bundle=str(bundle))
    assert on(forged, k, got) == {"eval_track"}
    assert f"the built-in agent {agent} plays on" in str(got[0])
    # A spec of another track than the record's is reported too (whoever the agent): the spec and its hashes moved,
    # the record's own track fields left as they were.
    forged = [dict(r) for r in rows]
    rekey(forged[k], track)
    forged[k].update({f: rows[k][f] for f in ("eval_track", "agent_access", "tool_allowlist_id", "tool_log_hash")})
    got = validate([write(forged, tmp_path / "spec.jsonl")])
    assert on(forged, k, got) == {"eval_track"} and "but the agent spec says" in str(got[0])


def test_the_cli_names_each_forged_record_and_prints_notes(played: tuple[Path, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    forged = [dict(r) for r in rows]
    forged[1]["subset_min"] = None  # exact, but no answer
    forged[3]["refusals"] += 1
    path = write(forged, tmp_path / "runs.jsonl")
    assert main(["validate", str(path), "--bundle", str(bundle)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{path}:2: {rows[1]['run_id']}: subset_min: null but diagnostic_status is 'exact'",
                     f"{path}:4: {rows[3]['run_id']}: refusals: recorded {rows[3]['refusals'] + 1}, the step log "
                     f"refuses {rows[3]['refusals']}"]
    k = next(i for i, r in enumerate(rows) if r["certificate"])
    assert main(["validate", str(runs), "--bundle", str(bundle), "--diagnostic-seconds", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is True and out["violations"] == []
    head = f"{runs}:{k + 1}: {rows[k]['run_id']}: subset_min: could not re-check"
    assert any(n.startswith(head) for n in out["notes"])


def test_a_record_checked_against_another_bundle_holding_its_instance(tmp_path: Path,
                                                                     generated_bundle: Callable[..., Path]) -> None:
    """Red-team round 9: a campaign's records validated as another campaign's (a second bundle that holds the same
    instance) passed ``--official``: the instance replays the same, and the record's ``bundle_hash`` was checked by
    the signature only. ``--official`` now requires the bundle the record names."""
    from gf01_formal.instances.io import load_set, save_artifact
    from gf01_formal.instances.model import make_bundle

    source = load_set(generated_bundle(3, 8))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_artifact(a, make_bundle(list(source.instances[:2]), generator_version="test", provenance="campaign a"))
    save_artifact(b, make_bundle([source.instances[0], source.instances[2]], generator_version="test",
                                 provenance="campaign b"))
    runs = tmp_path / "runs.jsonl"
    assert evaluate(a, [AgentSpec("random", "EVAL-CB")], runs).statuses == {"completed": 2}
    assert check_runs([runs], bundle=str(a), official=True).violations == []
    first = runs.read_text().splitlines()[0]
    one = tmp_path / "one.jsonl"
    one.write_text(first + "\n")  # the run of the instance both bundles hold
    found = check_runs([one], bundle=str(b), official=True).violations
    assert [v.field for v in found] == ["bundle_hash"], found
    assert check_runs([one], bundle=str(b)).violations == []  # not official: a replay of the instance, as before
