"""gf01 pilot-analyze: z(I) quartiles, the DEC-014d triggers read exactly at their thresholds, the sample target,
the recommendation with its reason, and the DEC-058 per-knob audit (constant knobs, rank correlation, slices)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from scipy.stats import spearmanr

from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import sha256_hex
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import load_bundle
from gf01_formal.report import pilot as pilot_mod
from gf01_formal.report.load import load_runs
from gf01_formal.report.pilot import analyze

# Three inputs and two outputs in every system: those two knobs are constant, the others vary.
CFG = {"families": [{"kind": "random_mealy", "states": [3, 8], "inputs": [3, 3], "outputs": [2, 2]}],
       "horizon": [6, 12], "normal_fraction": 1.0}


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory, generated_bundle: Callable[..., Path]) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pilot")
    bundle = generated_bundle(21, 12, CFG)
    evaluate(bundle, [AgentSpec("random", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")], d / "runs.jsonl")
    return {"bundle": bundle, "runs": d / "runs.jsonl"}


def as_greedy(rec: dict, valid: bool, goal: bool) -> dict:
    """A greedy run on the record's instance with the given outcome (the analysis reads outcomes, not play)."""
    spec = {"name": "greedy", "params": {}, "track": "EVAL-CB"}
    return {**rec, "agent_name": "greedy", "agent_spec": spec, "agent_hash": sha256_hex(spec),
            "run_id": "run-" + sha256_hex([rec["run_id"], "greedy"])[:24], "valid": valid, "goal": goal,
            "score_c": int(valid), "suff": goal, "kappa": [int(valid), int(goal), -1, -1]}


def with_greedy(pilot: dict[str, Path], tmp_path: Path, outcome) -> Path:
    """The pilot's runs plus greedy runs whose outcome on the instance of z-rank r (of n) is ``outcome(r, n)``."""
    recs = [json.loads(line) for line in pilot["runs"].read_text().splitlines()]
    base = sorted((r for r in recs if r["agent_name"] == "random"), key=lambda r: (r["complexity_z"],
                                                                                     r["instance_id"]))
    extra = [as_greedy(r, *outcome(k, len(base))) for k, r in enumerate(base)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs + extra))
    return path


def test_discrimination_holds_and_the_coefficients_stay(pilot: dict[str, Path], tmp_path: Path) -> None:
    # Every Q1 instance certified, then one in three: M_Q4 = 1/3 (above the floor), M_Q1 - M_Q4 = 2/3.
    runs = with_greedy(pilot, tmp_path, lambda k, n: ((4 * k) // n == 0 or k % 3 == 0, True))
    a = analyze(load_runs([runs]), load_bundle(pilot["bundle"]))
    n = a["scope"]["instances"]
    assert a["scope"]["held_out_fallback"] and n == len(load_bundle(pilot["bundle"]).instances)
    assert [q["instances"] for q in a["quartiles"]] == [sum(1 for k in range(n) if (4 * k) // n == q)
                                                        for q in range(4)]
    q1, q4 = a["quartiles"][0]["score_c"], a["quartiles"][3]["score_c"]
    assert q1["k"] == q1["n"] and a["discrimination"]["m_q1"] == 1.0
    assert a["discrimination"]["delta"] == round(1.0 - q4["k"] / q4["n"], 6) and not a["discrimination"]["fired"]
    assert not a["shortcut"]["fired"]
    rec = a["recommendation"]
    assert rec["decision"] == "keep_coefficients" and rec["provisional"]  # the sample is far from N = 240
    assert a["sample"] == {"target": 240, "instances": n, "reached": False, "remaining": 240 - n}
    assert "no trigger fired" in rec["reason"] and f"sample {n} of 240" in rec["reason"]


def test_flat_quartiles_fire_the_discrimination_trigger(pilot: dict[str, Path], tmp_path: Path) -> None:
    runs = with_greedy(pilot, tmp_path, lambda k, n: (True, True))
    a = analyze(load_runs([runs]), load_bundle(pilot["bundle"]))
    assert a["discrimination"]["fired"] and a["discrimination"]["delta"] == 0.0
    assert a["discrimination"]["delta_below_threshold"] and not a["discrimination"]["q4_below_floor"]
    rec = a["recommendation"]
    assert rec["decision"] == "recalibrate_normal_window" and "M_Q1 - M_Q4 = 0.000 < 0.12" in rec["reason"]
    # The trigger fires on 12 instances, far below N = 240: recalibrate, but provisionally (docs/reports.md).
    assert rec["provisional"] and "provisional until the sample reaches N = 240" in rec["reason"]


def test_a_fired_trigger_is_provisional_only_below_the_sample_target(pilot: dict[str, Path], tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    runs = with_greedy(pilot, tmp_path, lambda k, n: (True, True))  # flat quartiles: the discrimination trigger
    n = len(load_bundle(pilot["bundle"]).instances)
    monkeypatch.setattr(pilot_mod, "SAMPLE_TARGET", n + 1)  # one instance short of N
    rec = analyze(load_runs([runs]), load_bundle(pilot["bundle"]))["recommendation"]
    assert rec["decision"] == "recalibrate_normal_window" and rec["provisional"]
    monkeypatch.setattr(pilot_mod, "SAMPLE_TARGET", n)  # N reached: the checkpoint's recommendation
    a = analyze(load_runs([runs]), load_bundle(pilot["bundle"]))
    assert a["sample"]["reached"] and a["recommendation"]["decision"] == "recalibrate_normal_window"
    assert not a["recommendation"]["provisional"] and "provisional" not in a["recommendation"]["reason"]
    # With N reached and no trigger fired, keep is final as well.
    keep = with_greedy(pilot, tmp_path, lambda k, n: ((4 * k) // n == 0 or k % 3 == 0, True))
    rec = analyze(load_runs([keep]), load_bundle(pilot["bundle"]))["recommendation"]
    assert rec["decision"] == "keep_coefficients" and not rec["provisional"]


def test_goal_without_certification_fires_the_shortcut_trigger(pilot: dict[str, Path], tmp_path: Path) -> None:
    runs = with_greedy(pilot, tmp_path, lambda k, n: (False, True))
    a = analyze(load_runs([runs]), load_bundle(pilot["bundle"]))
    assert a["shortcut"]["fired"] and a["shortcut"]["goal_rate"]["rate"] == 1.0
    assert a["discrimination"]["fired"] and a["discrimination"]["q4_below_floor"]  # M_Q4 = 0 < 0.10 as well
    assert "shortcut trigger: goal rate 1.000 > 0.4 with certified rate 0.000 < 0.05" in a["recommendation"]["reason"]


def test_without_the_reference_agent_nothing_is_evaluable(pilot: dict[str, Path]) -> None:
    a = analyze(load_runs([pilot["runs"]]), load_bundle(pilot["bundle"]))
    assert not a["discrimination"]["evaluable"] and not a["shortcut"]["evaluable"]
    assert a["recommendation"]["decision"] == "keep_coefficients" and a["recommendation"]["provisional"]
    assert "not evaluable: discrimination, shortcut" in a["recommendation"]["reason"]


def test_knob_audit_detects_constant_knobs_and_correlates_the_others(pilot: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    runs = with_greedy(pilot, tmp_path, lambda k, n: (k % 2 == 0, True))
    a = analyze(load_runs([runs]), load_bundle(pilot["bundle"]))
    assert a["audit"]["normative"] is False
    slices = {(s["agent"], s["mode"]): s for s in a["audit"]["slices"]}
    assert set(slices) == {("random", "normal"), ("oracle", "normal"), ("greedy", "normal")}
    knobs = {k["knob"]: k for k in slices[("greedy", "normal")]["knobs"]}
    assert knobs["inputs"]["constant"] and knobs["outputs"]["constant"]
    assert knobs["inputs"]["spearman_score_c"]["rho"] is None and knobs["inputs"]["quartiles"] == []
    bundle = {i.instance_id: i for i in load_bundle(pilot["bundle"]).instances}
    recs = [json.loads(line) for line in runs.read_text().splitlines()]
    oracle = [r for r in recs if r["agent_name"] == "oracle"]
    horizon = {k["knob"]: k for k in slices[("oracle", "normal")]["knobs"]}["horizon"]
    assert not horizon["constant"] and horizon["distinct_values"] > 1
    # The oracle certifies everything: its outcome is constant, so no correlation, said so.
    assert horizon["spearman_score_c"]["rho"] is None and "constant outcome" in horizon["spearman_score_c"]["note"]
    assert sum(q["runs"] for q in horizon["quartiles"]) == len(oracle)
    greedy = [r for r in recs if r["agent_name"] == "greedy"]
    for name in ("states", "horizon", "z"):
        xs = [getattr(bundle[r["instance_id"]].complexity, name).norm if name != "z"
              else bundle[r["instance_id"]].complexity.z for r in greedy]
        res = spearmanr(xs, [r["score_c"] for r in greedy])
        assert knobs[name]["spearman_score_c"]["rho"] == round(float(res.statistic), 6)
        assert knobs[name]["spearman_score_c"]["p_value"] == round(float(res.pvalue), 6)


def test_cli_writes_the_analysis_and_one_plot_per_knob(pilot: dict[str, Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out, plots = tmp_path / "analysis.json", tmp_path / "plots"
    args = ["pilot-analyze", str(pilot["runs"]), "--bundle", str(pilot["bundle"]), "-o", str(out), "--plots",
            str(plots), "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["recommendation"] == "keep_coefficients" and summary["provisional"]
    first = out.read_bytes()
    assert sorted(p.name for p in plots.iterdir()) == sorted(
        f"score_c-by-{k}.svg" for k in ("states", "inputs", "outputs", "transitions", "horizon", "effect_depth",
                                        "oracle_eff_t", "gold_count", "z"))
    svg = (plots / "score_c-by-states.svg").read_text()
    assert svg.startswith("<?xml") and "<svg" in svg and "Date" not in svg
    assert main(args) == 0 and out.read_bytes() == first
    assert (plots / "score_c-by-states.svg").read_text() == svg
    assert main(["pilot-analyze", str(pilot["runs"]), "--bundle", str(pilot["runs"])]) == 2
    assert capsys.readouterr().err.startswith("gf01: error: ")


def test_cli_prints_a_short_summary_unless_json_or_output(pilot: dict[str, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    args = ["pilot-analyze", str(pilot["runs"]), "--bundle", str(pilot["bundle"])]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert 4 <= len(lines) <= 8 and lines[0].startswith("keep_coefficients")
    assert any(line.startswith("discrimination trigger: ") for line in lines) and "--json" in lines[-1]
    assert main([*args, "--json"]) == 0
    analysis = json.loads(capsys.readouterr().out)  # the whole analysis
    assert analysis["recommendation"]["decision"] == "keep_coefficients" and "quartiles" in analysis
