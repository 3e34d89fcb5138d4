"""Diagnostic caps (DEC-019..023): the dual-threshold rule read exactly (p = 9/10 as a fraction, censored runs as
+inf, floors), diagnostics metered in the records, capped diagnostics marked infeasible with the cap they hit, and
normative scores never touched by a cap."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from bundles import CAMPAIGN

from gf01_formal.agents.base import AgentSpec
from gf01_formal.campaign.shards import Plan, play_batch, tasks
from gf01_formal.cli import main
from gf01_formal.instances.io import instance_problem, load_bundle
from gf01_formal.report.caps import derive, load_caps
from gf01_formal.report.load import load_runs
from gf01_formal.runs.store import RunsFile
from gf01_formal.scoring.caps import CapSet, run_diagnostic
from hoa.errors import Gf01Error

SMALL = {**CAMPAIGN, "horizon": [8, 14]}
PANEL = [AgentSpec("random", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")]
DIAGNOSTIC = ("subset_min", "diagnostic_status", "diagnostic_note", "timing")


@pytest.fixture(scope="module")
def bundle(generated_bundle: Callable[..., Path]) -> Path:
    return generated_bundle(41, 8, SMALL)


def play(bundle: Path, out: Path, caps: CapSet) -> list[dict]:
    """Every run of the panel, played as a campaign's workers play them, into the runs file ``out``."""
    b = load_bundle(bundle)
    plan = Plan(instances=b.instances, specs=PANEL, seed=0, bundle_hash=b.instances_hash, caps=caps.to_json())
    store = RunsFile(out)
    for task in tasks(plan, set(), batch=4):
        for outcome in play_batch(task).runs:
            store.append(outcome)
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture(scope="module")
def pilot(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pilot") / "runs.jsonl"
    play(bundle, out, CapSet())  # uncapped, metered
    return out


def test_pilot_diagnostics_are_metered(pilot: Path) -> None:
    rows = [json.loads(line) for line in pilot.read_text().splitlines()]
    assert rows and all(r["diagnostic_status"] == "exact" and isinstance(r["subset_min"], bool) for r in rows)
    for r in rows:
        t = r["timing"]
        assert t["diagnostic_ms"] >= 0 and t["diagnostic_spent"]["backend"] == "sat"
        assert t["diagnostic_spent"]["conflicts"] >= 0 and t["diagnostic_spent"]["sat_calls"] >= 0
        assert t["diagnostic_peak_kib"] is not None and t["diagnostic_peak_kib"] >= 0  # Linux: VmHWM
    assert any(r["timing"]["diagnostic_spent"]["sat_calls"] for r in rows)


def with_spent(rows: list[dict], conflicts: list[int], infeasible: int = 0) -> list[dict]:
    """Copies of pilot records with the given conflict counts, the last ``infeasible`` ones capped."""
    out = []
    for k, c in enumerate(conflicts):
        r = json.loads(json.dumps(rows[k % len(rows)]))
        r["run_id"] = f"run-{k:024d}"
        r["timing"] = {"diagnostic_ms": 10.0 * (k + 1), "diagnostic_peak_kib": 0,
                       "diagnostic_spent": {"backend": "sat", "conflicts": c, "sat_calls": 1}}
        if k >= len(conflicts) - infeasible:
            r.update(diagnostic_status="infeasible", subset_min=None, diagnostic_note="conflict limit 5")
        out.append(r)
    return out


def derive_from(tmp_path: Path, rows: list[dict]) -> dict:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return derive(load_runs([path]))


def test_the_dual_threshold_rule(pilot: Path, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in pilot.read_text().splitlines()]
    # n = 30: m = ceil(9/10 * 30) = 27 exactly (in floats 0.9 * 30 = 27.000000000000004 would give 28).
    caps = derive_from(tmp_path, with_spent(rows, list(range(1, 31))))
    conflicts = caps["algorithmic"]["conflicts"]
    assert conflicts["order_statistic"] == 27 and conflicts["quantile"] == 27 and conflicts["cap"] == 81
    seconds = caps["platform"]["seconds"]
    assert seconds["quantile"] == 0.27 and seconds["cap"] == 0.81
    memory = caps["platform"]["memory_kib"]  # nothing grew: the 8 MiB floor
    assert memory["quantile"] == 0 and memory["cap"] == 3 * 8192
    assert caps["algorithmic"]["nodes"]["cap"] is None and "sat backend" in caps["algorithmic"]["nodes"]["note"]
    assert caps["rule"]["p"] == 0.9 and caps["rule"]["k"] == 3
    assert caps["sample"]["checkpoint"] == {"target": 240, "reached": False}
    # Two infeasible runs of 30: counted as +inf, x_27 is still observed (the 27th smallest of the 28 exact ones).
    censored = derive_from(tmp_path, with_spent(rows, list(range(1, 31)), infeasible=2))["algorithmic"]["conflicts"]
    assert censored["censored"] == 2 and censored["quantile"] == 27 and censored["cap"] == 81
    # Four of 30 infeasible: x_27 is one of them; no cap can be derived, and it says why.
    lost = derive_from(tmp_path, with_spent(rows, list(range(1, 31)), infeasible=4))["algorithmic"]["conflicts"]
    assert lost["cap"] is None and "infeasible" in lost["note"]
    # All zero conflicts: the one-conflict floor, so a cap is never 0.
    assert derive_from(tmp_path, with_spent(rows, [0] * 10))["algorithmic"]["conflicts"]["cap"] == 3
    # A pilot on the BDD backend gives a node cap by the same rule, and no conflict cap.
    bdd = with_spent(rows, list(range(1, 11)))
    for r in bdd:
        nodes = 100 * r["timing"]["diagnostic_spent"]["conflicts"]
        r["timing"]["diagnostic_spent"] = {"backend": "bdd", "nodes": nodes}
    caps = derive_from(tmp_path, bdd)
    assert caps["backend"] == "bdd" and caps["algorithmic"]["nodes"]["cap"] == 3 * 900
    assert caps["algorithmic"]["conflicts"]["cap"] is None
    mixed = with_spent(rows, list(range(1, 13)))[10:] + bdd  # two SAT runs with ids of their own
    with pytest.raises(Gf01Error, match="derive caps from runs of one backend"):
        derive_from(tmp_path, mixed)


@pytest.mark.parametrize("seconds", [None, 60.0])  # with a time cap the query runs in a guarded child process
def test_capped_diagnostics_are_infeasible_and_scores_untouched(bundle: Path, pilot: Path, tmp_path: Path,
                                                                 seconds: float | None) -> None:
    uncapped = {r["run_id"]: r for r in (json.loads(line) for line in pilot.read_text().splitlines())}
    most = max(r["timing"]["diagnostic_spent"]["conflicts"] for r in uncapped.values())
    assert most >= 2  # some diagnostic needs more than the cap below
    capped = play(bundle, tmp_path / "capped.jsonl", CapSet(conflicts=1, seconds=seconds))
    for r in capped:  # what the diagnostic spent is metered wherever it ran
        if r["diagnostic_status"] == "exact":
            assert r["timing"]["diagnostic_spent"] == uncapped[r["run_id"]]["timing"]["diagnostic_spent"]
            assert (r["timing"]["diagnostic_peak_kib"] is None) == \
                (uncapped[r["run_id"]]["timing"]["diagnostic_peak_kib"] is None)
    hit = [r for r in capped if r["diagnostic_status"] == "infeasible"]
    assert hit and all(r["diagnostic_note"].startswith("conflict limit 1") and r["subset_min"] is None for r in hit)
    assert {r["run_id"] for r in hit} == {rid for rid, r in uncapped.items()
                                          if r["timing"]["diagnostic_spent"]["conflicts"] > 1}
    for r in capped:  # DEC-019: the normative checks are never capped
        assert {k: v for k, v in r.items() if k not in DIAGNOSTIC} == \
            {k: v for k, v in uncapped[r["run_id"]].items() if k not in DIAGNOSTIC}
        if r["diagnostic_status"] == "exact":
            assert r["subset_min"] == uncapped[r["run_id"]]["subset_min"]


def test_platform_caps_are_enforced(bundle: Path) -> None:
    inst = load_bundle(bundle).instances[0]
    problem = instance_problem(inst)
    atoms = [(int(t), list(problem.system.inputs).index(a), int(v))
             for t, a, v in inst.certification.oracle_certificate]
    diag, timing = run_diagnostic(problem, atoms, CapSet(seconds=1e-9))
    assert diag.diagnostic_status == "infeasible" and diag.subset_min is None
    assert diag.diagnostic_note.startswith("time limit 1e-09 s") and timing["diagnostic_ms"] > 0
    diag, _ = run_diagnostic(problem, atoms, CapSet())
    assert diag.to_json() == {"subset_min": True, "diagnostic_status": "exact", "diagnostic_note": None}
    # On the BDD backend the algorithmic resource is nodes.
    diag, timing = run_diagnostic(problem, atoms, CapSet(backend="bdd"))
    assert diag.diagnostic_status == "exact" and timing["diagnostic_spent"]["nodes"] > 1
    diag, _ = run_diagnostic(problem, atoms, CapSet(backend="bdd", nodes=1))
    assert diag.diagnostic_status == "infeasible" and diag.diagnostic_note.startswith("node limit 1")


def test_caps_derive_then_campaign_under_the_caps(bundle: Path, pilot: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    caps_path = tmp_path / "caps.json"
    assert main(["caps", "derive", str(pilot), "-o", str(caps_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    caps = load_caps(caps_path)
    assert summary["conflicts"] == caps.conflicts and caps.backend == "sat" and caps.nodes is None
    assert caps.seconds is not None and caps.memory_kib is not None
    out = tmp_path / "camp"
    # A pilot of 8 instances is short of the DEC-021 checkpoint: its caps are provisional and refused by default.
    assert summary["sample"]["checkpoint"]["reached"] is False and caps.provisional and caps.sample_instances == 8
    capsys.readouterr()
    argv = ["campaign", str(bundle), "--panel", "core", "--agents", "random,oracle", "--jobs", "1", "--caps",
            str(caps_path), "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "provisional caps: derived from 8 pilot instance(s)" in err
    assert not out.exists()
    assert main([*argv, "--allow-provisional-caps"]) == 0
    assert json.loads((out / "campaign.json").read_text())["diagnostic"] == caps.to_json()
    assert "PROVISIONAL: derived from 8 pilot instances" in (out / "report.md").read_text()
    rep = json.loads((out / "report.json").read_text())["caps"]
    assert rep["provisional"] and rep["conflicts"] == caps.conflicts
    # report --official refuses them too (before anything else), and names them when allowed.
    capsys.readouterr()
    official = ["report", str(out / "runs.jsonl"), "--official", "--caps", str(caps_path), "-o",
                str(tmp_path / "r.json")]
    assert main(official) == 2
    assert "report --official refuses them" in capsys.readouterr().err and not (tmp_path / "r.json").exists()
    assert main(["report", str(out / "runs.jsonl"), "--caps", str(out / "campaign.json"), "-o",
                 str(tmp_path / "r.md")]) == 0
    assert (tmp_path / "r.md").read_text() == (out / "report.md").read_text()
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert {r["diagnostic_status"] for r in rows} <= {"exact", "infeasible"}
    assert all(r["timing"]["diagnostic_spent"]["conflicts"] <= caps.conflicts for r in rows
               if r["diagnostic_status"] == "exact")
    report = json.loads((out / "report.json").read_text())
    assert sum(sum(g["diagnostic"].values()) for g in report["groups"]) == len(rows)


def test_bad_caps_inputs(pilot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [json.loads(line) for line in pilot.read_text().splitlines()]
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps({**r, "timing": {}}) + "\n" for r in rows))
    with pytest.raises(Gf01Error, match="no run records a metered diagnostic"):
        derive(load_runs([plain]))
    bad = tmp_path / "caps.json"
    for text in ('{"schema_version": "x"}', '{"schema_version": "gf01-formal.caps.v1", "backend": "sat"}',
                 "[]", "{bad"):
        bad.write_text(text)
        assert main(["campaign", str(pilot), "--agents", "random", "--caps", str(bad), "-o",
                     str(tmp_path / "c")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("gf01: error: ") and err.count("\n") == 1 and "caps.json" in err


@pytest.mark.parametrize("field, value", [
    ("diagnostic_ms", "10"), ("diagnostic_ms", [1]), ("diagnostic_ms", -1.0), ("diagnostic_peak_kib", "big"),
    ("diagnostic_peak_kib", True), ("diagnostic_spent", "sat"), ("backend", ["sat"]), ("backend", None),
    ("conflicts", "many"), ("conflicts", {"n": 1}), ("nodes", 1e400),
])
def test_caps_derive_on_wrong_typed_timing_is_a_user_error(pilot: Path, tmp_path: Path, field: str, value: object,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A hand-edited or foreign record with a wrong-typed timing field: one line naming the run and field (exit 2),
    not an internal error (exit 70)."""
    rows = with_spent([json.loads(line) for line in pilot.read_text().splitlines()], [1, 2, 3])
    target = rows[1]["timing"] if field.startswith("diagnostic_") else rows[1]["timing"]["diagnostic_spent"]
    target[field] = value
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    status = main(["caps", "derive", str(path), "-o", str(tmp_path / "caps.json")])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("gf01: error: ") and err.count("\n") == 1 and field in err and rows[1]["run_id"] in err
    assert not (tmp_path / "caps.json").exists()
