"""gf01 pilot-analyze: the shortcut check on greedy, the discrimination check (z(I) quartiles, DEC-014d thresholds
read exactly) on the population calibrated for (non-baseline agent specs and people, or --reference), the checkpoint
at N = 240, one sentence per fired trigger, and the DEC-058 per-knob audit (constant knobs, rank correlation)."""

from __future__ import annotations

import json
import re
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
from hoa.errors import Gf01Error

# Three inputs and two outputs in every system: those two knobs are constant, the others vary.
CFG = {"families": [{"kind": "random_mealy", "states": [3, 8], "inputs": [3, 3], "outputs": [2, 2]}],
       "horizon": [6, 12], "normal_fraction": 1.0}


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory, generated_bundle: Callable[..., Path]) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pilot")
    bundle = generated_bundle(21, 12, CFG)
    evaluate(bundle, [AgentSpec("random", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")], d / "runs.jsonl")
    return {"bundle": bundle, "runs": d / "runs.jsonl"}


def as_agent(rec: dict, valid: bool, goal: bool, name: str, params: dict) -> dict:
    """A run of agent ``name`` (spec params ``params``) on the record's instance with the given outcome (the
    analysis reads outcomes, not play)."""
    spec = {"name": name, "params": params, "track": "EVAL-CB"}
    return {**rec, "agent_name": name, "agent_spec": spec, "agent_hash": sha256_hex(spec),
            "run_id": "run-" + sha256_hex([rec["run_id"], name, params])[:24], "valid": valid, "goal": goal,
            "score_c": int(valid), "suff": goal, "kappa": [int(valid), int(goal), -1, -1]}


def with_agents(pilot: dict[str, Path], tmp_path: Path, *agents: tuple[str, dict, object]) -> Path:
    """The pilot's runs plus, per (name, params, outcome), runs whose outcome on the instance of z-rank r (of n) is
    ``outcome(r, n)``."""
    recs = [json.loads(line) for line in pilot["runs"].read_text().splitlines()]
    base = sorted((r for r in recs if r["agent_name"] == "random"), key=lambda r: (r["complexity_z"],
                                                                                     r["instance_id"]))
    extra = [as_agent(r, *outcome(k, len(base)), name, params) for name, params, outcome in agents
             for k, r in enumerate(base)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs + extra))
    return path


def scripted(outcome) -> tuple[str, dict, object]:
    """A non-baseline agent (an external command) with the given outcomes."""
    return ("cmd", {"cmd": "scripted-agent"}, outcome)


def greedy(outcome) -> tuple[str, dict, object]:
    return ("greedy", {}, outcome)


def discriminates(k: int, n: int) -> tuple[bool, bool]:
    """Certifies every easy (Q1) instance, then one in three: M_Q4 = 1/3, M_Q1 - M_Q4 = 2/3."""
    return ((4 * k) // n == 0 or k % 3 == 0, True)


def flat(k: int, n: int) -> tuple[bool, bool]:
    return (True, True)


def never_certifies(k: int, n: int) -> tuple[bool, bool]:
    return (False, False)


def analysis(pilot: dict[str, Path], runs: Path, **kw) -> dict:
    return analyze(load_runs([runs]), load_bundle(pilot["bundle"]), **kw)


def test_the_baseline_panel_alone_assesses_no_discrimination(pilot: dict[str, Path], tmp_path: Path) -> None:
    # The README main job's panel: baselines only. Greedy neither reaches the goal nor certifies (as the generator's
    # anti-shortcut targets intend): nothing fires, and discrimination is said not assessed, not failed.
    runs = with_agents(pilot, tmp_path, greedy(never_certifies))
    a = analysis(pilot, runs)
    assert a["discrimination"]["groups"] == [] and not a["discrimination"]["assessed"]
    assert "not assessed" in a["discrimination"]["note"] and a["triggers"] == []
    assert a["shortcut"]["evaluable"] and not a["shortcut"]["fired"]
    rec = a["recommendation"]
    assert rec["decision"] == "keep_coefficients" and rec["provisional"]
    assert "not assessed: discrimination" in rec["reason"]


def test_a_reference_agent_that_discriminates_keeps_the_coefficients(pilot: dict[str, Path], tmp_path: Path) -> None:
    runs = with_agents(pilot, tmp_path, scripted(discriminates), greedy(never_certifies))
    a = analysis(pilot, runs)
    n = a["scope"]["instances"]
    assert a["scope"]["held_out_fallback"] and n == len(load_bundle(pilot["bundle"]).instances)
    (g,) = a["discrimination"]["groups"]
    assert g["agent"] == "cmd:scripted-agent" and g["evaluable"] and not g["fired"]
    assert [q["instances"] for q in g["quartiles"]] == [sum(1 for k in range(n) if (4 * k) // n == q)
                                                        for q in range(4)]
    q4 = g["quartiles"][3]["score_c"]
    assert g["m_q1"] == 1.0 and g["delta"] == round(1.0 - q4["k"] / q4["n"], 6)
    rec = a["recommendation"]
    assert rec["decision"] == "keep_coefficients" and rec["provisional"]  # the sample is far from N = 240
    assert a["sample"] == {"target": 240, "instances": n, "reached": False, "remaining": 240 - n}
    assert "discrimination holds for cmd" in rec["reason"] and f"sample {n} of 240" in rec["reason"]


def test_a_reference_agent_that_does_not_discriminate_recalibrates(pilot: dict[str, Path], tmp_path: Path) -> None:
    runs = with_agents(pilot, tmp_path, scripted(flat))
    a = analysis(pilot, runs)
    (g,) = a["discrimination"]["groups"]
    assert g["fired"] and g["delta"] == 0.0 and g["delta_below_threshold"] and not g["q4_below_floor"]
    (t,) = a["triggers"]
    assert t["trigger"] == "discrimination"
    assert t["sentence"].startswith("Discrimination (cmd:scripted-agent on EVAL-CB): ")
    assert re.sub(r"\d\.\d+", "", t["sentence"]).count(".") == 1 and t["sentence"].endswith(".")  # one sentence
    rec = a["recommendation"]
    assert rec["decision"] == "recalibrate_normal_window" and t["sentence"] in rec["reason"]
    # The trigger fires on 12 instances, far below N = 240: recalibrate, but provisionally (docs/reports.md).
    assert rec["provisional"] and "provisional until the sample reaches N = 240" in rec["reason"]


def test_each_agent_spec_is_its_own_group_and_reference_picks_one(pilot: dict[str, Path], tmp_path: Path) -> None:
    runs = with_agents(pilot, tmp_path, ("llm", {"model": "a"}, discriminates), ("llm", {"model": "b"}, flat))
    a = analysis(pilot, runs)
    groups = {g["agent"]: g for g in a["discrimination"]["groups"]}
    assert set(groups) == {"llm:a", "llm:b"}  # named by their models (issue 31)
    assert sorted(g["fired"] for g in groups.values()) == [False, True]
    fired = next(label for label, g in groups.items() if g["fired"])
    assert [t["agent"] for t in a["triggers"]] == [fired]
    with pytest.raises(Gf01Error, match="names 2 agent specs"):
        analysis(pilot, runs, reference="llm")
    kept = next(label for label, g in groups.items() if not g["fired"])
    one = analysis(pilot, runs, reference=kept)
    assert [g["agent"] for g in one["discrimination"]["groups"]] == [kept]
    assert one["recommendation"]["decision"] == "keep_coefficients"
    # An explicit reference may be a baseline: the oracle certifies every quartile, so Q1 - Q4 = 0 fires.
    oracle = analysis(pilot, runs, reference="oracle")
    assert oracle["recommendation"]["decision"] == "recalibrate_normal_window"
    with pytest.raises(Gf01Error, match="no scored"):
        analysis(pilot, runs, reference="nobody")


def test_the_checkpoint_arm_fires_at_the_sample_target(pilot: dict[str, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    runs = with_agents(pilot, tmp_path, scripted(discriminates))
    n = len(load_bundle(pilot["bundle"]).instances)
    monkeypatch.setattr(pilot_mod, "SAMPLE_TARGET", n + 1)  # one instance short of N: keep, provisionally
    rec = analysis(pilot, runs)["recommendation"]
    assert rec["decision"] == "keep_coefficients" and rec["provisional"]
    monkeypatch.setattr(pilot_mod, "SAMPLE_TARGET", n)  # N reached: DEC-014c's fixed-sample checkpoint
    a = analysis(pilot, runs)
    assert a["sample"]["reached"] and [t["trigger"] for t in a["triggers"]] == ["checkpoint"]
    assert a["recommendation"]["decision"] == "recalibrate_normal_window"
    assert not a["recommendation"]["provisional"] and "Checkpoint: the sample has reached" in a["recommendation"][
        "reason"]
    # Also with no population to read discrimination on: the checkpoint is a rule of the sample, not of the rates.
    alone = analysis(pilot, pilot["runs"])
    assert [t["trigger"] for t in alone["triggers"]] == ["checkpoint"]


def test_goal_without_certification_fires_the_shortcut_trigger(pilot: dict[str, Path], tmp_path: Path) -> None:
    runs = with_agents(pilot, tmp_path, greedy(lambda k, n: (False, True)), scripted(discriminates))
    a = analysis(pilot, runs)
    assert a["shortcut"]["fired"] and a["shortcut"]["goal_rate"]["rate"] == 1.0
    assert not a["discrimination"]["fired"]  # greedy is the shortcut's reference, not the discrimination's
    (t,) = a["triggers"]
    assert t["trigger"] == "shortcut" and "reaches the goal in 1.000 of its runs (above 0.4)" in t["sentence"]
    assert a["recommendation"]["decision"] == "recalibrate_normal_window"


def test_without_greedy_the_shortcut_is_not_assessed(pilot: dict[str, Path]) -> None:
    a = analysis(pilot, pilot["runs"])
    assert not a["discrimination"]["assessed"] and not a["shortcut"]["evaluable"]
    assert a["recommendation"]["decision"] == "keep_coefficients" and a["recommendation"]["provisional"]
    assert "not assessed: discrimination, shortcut" in a["recommendation"]["reason"]


def test_knob_audit_detects_constant_knobs_and_correlates_the_others(pilot: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    runs = with_agents(pilot, tmp_path, greedy(lambda k, n: (k % 2 == 0, True)))
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
    greedy_runs = [r for r in recs if r["agent_name"] == "greedy"]
    for name in ("states", "horizon", "z"):
        xs = [getattr(bundle[r["instance_id"]].complexity, name).norm if name != "z"
              else bundle[r["instance_id"]].complexity.z for r in greedy_runs]
        res = spearmanr(xs, [r["score_c"] for r in greedy_runs])
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


def test_cli_text_explains_each_fired_trigger(pilot: dict[str, Path], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    runs = with_agents(pilot, tmp_path, scripted(flat), greedy(lambda k, n: (False, True)))
    assert main(["pilot-analyze", str(runs), "--bundle", str(pilot["bundle"]), "-o", str(tmp_path / "a.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "recalibrate_normal_window (provisional)"
    triggers = [line for line in lines if line.startswith("trigger: ")]
    assert [t.split(" (")[0] for t in triggers] == ["trigger: Discrimination", "trigger: Shortcut"]
    saved = json.loads((tmp_path / "a.json").read_text())
    assert [f"trigger: {t['sentence']}" for t in saved["triggers"]] == triggers
    assert main(["pilot-analyze", str(runs), "--bundle", str(pilot["bundle"]), "--reference", "llm"]) == 2
    assert capsys.readouterr().err.startswith("gf01: error: ")


def test_cli_prints_a_short_summary_unless_json_or_output(pilot: dict[str, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    args = ["pilot-analyze", str(pilot["runs"]), "--bundle", str(pilot["bundle"])]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert 4 <= len(lines) <= 8 and lines[0] == "keep_coefficients (provisional)"
    assert any(line.startswith("note: discrimination: not assessed") for line in lines) and "--json" in lines[-1]
    assert main([*args, "--json"]) == 0
    analysis = json.loads(capsys.readouterr().out)  # the whole analysis
    assert analysis["recommendation"]["decision"] == "keep_coefficients" and "groups" in analysis["discrimination"]
