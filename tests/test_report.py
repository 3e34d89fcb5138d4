"""gf01 report: stratification that never pools tracks or agents, intervals with their methods (Wilson coverage
simulated), statuses counted but not scored, paired comparisons and rankings, manifest coverage and --official,
byte-identical output for the same runs."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from bundles import REPORTED
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from gf01_formal import agents  # where the panel is defined: coverage reads it when a panel is asked for
from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import sha256_hex, write_json_atomic
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import load_bundle, save_artifact
from gf01_formal.instances.splits import PUBLIC_KEY, split_bundle
from gf01_formal.report import stats
from gf01_formal.report.build import KEY_FIELDS, build_report
from gf01_formal.report.coverage import load_manifest
from gf01_formal.report.load import load_runs
from gf01_formal.report.render import markdown
from hoa.errors import Gf01Error

PANEL = [AgentSpec("random", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, generated_bundle: Callable[..., Path]) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("report")
    bundle, manifest = split_bundle(load_bundle(generated_bundle(11, 12, REPORTED)), PUBLIC_KEY)
    save_artifact(d / "bundle.json", bundle)
    write_json_atomic(d / "manifest.json", manifest.model_dump(mode="json"))
    evaluate(d / "bundle.json", PANEL, d / "runs.jsonl")
    return {"bundle": d / "bundle.json", "manifest": d / "manifest.json", "runs": d / "runs.jsonl"}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def variant(rec: dict, name: str = "random", **changes: object) -> dict:
    """The record as played by another spec of the agent (its own hash), with ``changes``."""
    spec = {**rec["agent_spec"], "params": {"variant": 1}}
    return {**rec, "agent_name": name, "agent_spec": {**spec, "name": name}, "agent_hash": sha256_hex({**spec,
            "name": name}), "run_id": "run-" + sha256_hex([rec["run_id"], name])[:24], **changes}


def test_groups_fix_every_dimension_mode_and_agent(played: dict[str, Path]) -> None:
    recs = rows(played["runs"])
    report = build_report(load_runs([played["runs"]]))
    assert report["dimensions"][-2:] == ["difficulty_slice", "split_id"] and report["grouped_on"][-2:] == ["mode",
                                                                                                           "agent"]
    seen = 0
    for g in report["groups"]:
        members = [r for r in recs if all(r[f] == g["key"][f] for f in KEY_FIELDS) and r["agent_name"] == g["agent"]]
        assert len(members) == g["runs"]["total"] == g["n"] and members
        assert {r["eval_track"] for r in members} == {g["key"]["eval_track"]}
        assert g["instances"] == len({r["instance_id"] for r in members})
        seen += len(members)
    assert seen == len(recs)
    for s in report["strata"]:  # agents meet only inside one stratum, so only on one track
        assert len({g["key"]["eval_track"] for g in report["groups"] if g["agent"] in s["agents"]
                    and g["key"] == s["key"]}) == 1


def test_every_number_has_its_interval_and_method(played: dict[str, Path]) -> None:
    report = build_report(load_runs([played["runs"]]))
    recs = rows(played["runs"])
    for g in report["groups"]:
        sc = g["score_c"]
        lo, hi = proportion_confint(sc["k"], sc["n"], alpha=0.05, method="wilson")
        assert sc["method"] == "wilson" and sc["ci"] == [round(max(0, lo), 6), round(min(1, hi), 6)]
        members = [r for r in recs if all(r[f] == g["key"][f] for f in KEY_FIELDS) and r["agent_name"] == g["agent"]]
        assert sc["k"] == sum(r["score_c"] for r in members)
        f1 = g["ap_f1"]
        assert f1["method"] == "bootstrap-instances" and f1["mean"] == round(np.mean([r["ap_f1"] for r in members]), 6)
        if f1["instances"] >= 2:
            assert f1["ci"][0] <= f1["mean"] <= f1["ci"][1]
        else:
            assert f1["ci"] is None and "fewer than 2" in f1["note"]
    assert set(report["methods"]["ids"]) == {"wilson", "bootstrap-instances", "mcnemar-exact", "spearman"}


def test_runs_that_did_not_complete_are_counted_but_never_scored(played: dict[str, Path], tmp_path: Path) -> None:
    recs = rows(played["runs"])
    cb = [k for k, r in enumerate(recs) if r["agent_name"] == "random"]
    empty = dict.fromkeys(("certificate", "suff", "min1", "valid", "goal", "eff_t", "eff_a", "score_c", "kappa",
                           "ap_precision", "ap_recall", "ap_f1", "ts_precision", "ts_recall", "ts_f1",
                           "best_match_gold", "subset_min"))
    recs[cb[0]] = {**recs[cb[0]], **empty, "status": "harness_error", "error": "boom"}
    recs[cb[1]] = {**recs[cb[1]], **empty, "status": "provider_error", "error": "503"}
    recs[cb[2]] = {**recs[cb[2]], "status": "agent_error", "error": "crash: gone"}
    report = build_report(load_runs([write(tmp_path / "runs.jsonl", recs)]))
    assert report["inputs"]["statuses"] == {"completed": len(recs) - 3, "agent_error": 1, "harness_error": 1,
                                            "provider_error": 1}
    random_groups = [g for g in report["groups"] if g["agent"] == "random"]
    assert sum(g["runs"]["total"] for g in random_groups) == len(cb)
    assert sum(g["n"] for g in random_groups) == len(cb) - 2  # agent_error is the agent's own play, scored as played
    assert sum(g["runs"]["harness_error"] + g["runs"]["provider_error"] for g in random_groups) == 2
    assert all(g["score_c"]["n"] == g["n"] for g in random_groups)
    text = markdown(report)
    assert "harness_error 1, provider_error 1" in text


def test_same_runs_give_the_same_bytes(played: dict[str, Path], tmp_path: Path) -> None:
    recs = rows(played["runs"])
    shuffled = recs[:]
    random.Random(5).shuffle(shuffled)
    for r in shuffled:  # timing measures the machine: it must not reach the report
        r["timing"] = {"total_ms": random.Random(r["run_id"]).random()}
    a = build_report(load_runs([played["runs"]]))
    half = len(shuffled) // 2
    b = build_report(load_runs([write(tmp_path / "one.jsonl", shuffled[:half + 3]),
                                write(tmp_path / "two.jsonl", shuffled[half:])]))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    # The HTML page of equal reports: the same bytes when drawn again in another process (the figures' SVG ids
    # seeded), which test_release's package rerun and test_campaign's artifacts compare byte for byte.
    assert markdown(a) == markdown(b)
    assert "timing" not in json.dumps(a) and str(tmp_path) not in json.dumps(b)


def test_files_that_disagree_on_a_run_are_refused(played: dict[str, Path], tmp_path: Path) -> None:
    recs = rows(played["runs"])
    other = [dict(r) for r in recs]
    other[0]["ap_f1"] = 0.123
    with pytest.raises(Gf01Error, match=f"run {recs[0]['run_id']} has different results"):
        load_runs([played["runs"], write(tmp_path / "other.jsonl", other)])


def test_paired_comparison_and_kappa_ranking_inside_a_stratum(played: dict[str, Path], tmp_path: Path) -> None:
    recs = [r for r in rows(played["runs"]) if r["agent_name"] == "random"]
    for r in recs:  # one stratum, so that the expected numbers are plain counts
        r.update(difficulty_slice="z1", split_id="public_dev", mode="hard")
    wins = {r["instance_id"] for r in recs[: len(recs) // 2]}
    better = [variant(r, **({"score_c": 1, "valid": True, "goal": True, "kappa": [1, 1, -1, -1]}
                            if r["instance_id"] in wins else {})) for r in recs]
    report = build_report(load_runs([write(tmp_path / "runs.jsonl", recs + better)]))
    (stratum,) = report["strata"]
    assert len(stratum["agents"]) == 2 and all(a.startswith("random#") for a in stratum["agents"])
    top = next(a for a in stratum["agents"] if a.endswith(better[0]["agent_hash"][:8]))
    assert stratum["ranking"][0]["agent"] == top and [r["rank"] for r in stratum["ranking"]] == [1, 2]
    (pair,) = stratum["paired"]
    sign = 1 if pair["a"] == top else -1
    base_wins = sum(r["score_c"] for r in recs if r["instance_id"] in wins)
    assert pair["score_c"]["instances"] == len(recs)
    assert pair["score_c"]["difference"] == round(sign * (len(wins) - base_wins) / len(recs), 6)
    lo, hi = pair["score_c"]["ci"]
    assert lo <= pair["score_c"]["difference"] <= hi
    test = pair["score_c_test"]
    discordant = len(wins) - base_wins
    assert test["p_value"] == round(binomtest(0, discordant, 0.5).pvalue, 6)


def test_bootstrap_resamples_instances_not_runs() -> None:
    values = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    ids = [f"i{k}" for k in range(len(values))]
    once = stats.clustered_mean(values, ids)
    thrice = stats.clustered_mean(values * 3, ids * 3)  # three runs per instance, identical: no new evidence
    assert once["ci"] == thrice["ci"] and once["mean"] == thrice["mean"]
    naive = stats.clustered_mean(values * 3, [f"r{k}" for k in range(3 * len(values))])
    assert naive["ci"][1] - naive["ci"][0] < once["ci"][1] - once["ci"][0]


def test_wilson_intervals_cover_a_known_rate_at_about_the_nominal_level() -> None:
    rng = np.random.Generator(np.random.PCG64(20260112))
    reps = 4000
    covers = []
    for p in (0.05, 0.2, 0.5, 0.8):
        for n in (30, 100, 240):
            k = rng.binomial(n, p, size=reps)  # runs of an agent that certifies with probability p
            lo, hi = stats.wilson_bounds(k, np.full(reps, n))
            covers.append(float(np.mean((lo <= p) & (p <= hi))))
    assert 0.94 <= float(np.mean(covers)) <= 0.96, covers
    assert min(covers) >= 0.92, covers
    k = int(rng.binomial(50, 0.3))  # the report's own function is the same call
    lo, hi = stats.wilson_bounds(np.array([k]), np.array([50]))
    assert stats.wilson(k, 50)["ci"] == [round(float(lo[0]), 6), round(float(hi[0]), 6)]


def test_wilson_is_statsmodels_interval_to_the_bit() -> None:
    """The report computes the Wilson interval itself (no statsmodels import, no per-call argument checks): the
    same float64 bounds as statsmodels' proportion_confint on every k <= n < 300, its critical value scipy's."""
    from scipy.stats import norm

    assert float(norm.isf((1 - stats.CONFIDENCE) / 2.0)) == stats.WILSON_Z
    n = np.repeat(np.arange(1, 300), np.arange(2, 301))
    k = np.concatenate([np.arange(m + 1) for m in range(1, 300)])
    want = proportion_confint(k, n, alpha=1 - stats.CONFIDENCE, method="wilson")
    got = stats.wilson_bounds(k, n)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    for kk, nn in ((0, 1), (3, 10), (7, 7), (123, 299)):
        lo, hi = proportion_confint(kk, nn, alpha=1 - stats.CONFIDENCE, method="wilson")
        assert stats.wilson(kk, nn)["ci"] == [round(max(0.0, lo), 6), round(min(1.0, hi), 6)]


def test_mcnemar_is_statsmodels_p_value_to_the_bit() -> None:
    """McNemar's exact p-value computed by the report itself: statsmodels' on every table of up to 60 discordant
    instances (and some concordant ones, which do not enter)."""
    from statsmodels.stats.contingency_tables import mcnemar

    for only_a in range(61):
        for only_b in range(61 - only_a):
            if only_a + only_b == 0:
                continue
            a = {f"i{j}": [1.0] for j in range(only_a)} | {f"j{j}": [0.0] for j in range(only_b)} | {"k": [1.0]}
            b = {f"i{j}": [0.0] for j in range(only_a)} | {f"j{j}": [1.0] for j in range(only_b)} | {"k": [1.0]}
            want = mcnemar([[1, only_a], [only_b, 0]], exact=True).pvalue
            assert stats._mcnemar_exact_p(only_a, only_b) == want, (only_a, only_b)
            assert stats.mcnemar_exact(a, b)["p_value"] == round(float(want), 6)


def test_coverage_names_what_is_missing_and_official_refuses(played: dict[str, Path], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    recs = rows(played["runs"])
    dropped = next(r for r in recs if r["agent_name"] == "oracle")
    partial = write(tmp_path / "partial.jsonl", [r for r in recs if r is not dropped])
    man = load_manifest(played["manifest"])
    report = build_report(load_runs([partial]), manifest=man, panel="core")
    cov = report["coverage"]
    missing = [s for s in cov["slices"] if s["missing"]]
    assert any(s["agent"] == "oracle" and s["missing_ids"] == [dropped["instance_id"]] for s in missing)
    assert {s["agent"] for s in missing} == {"oracle", "greedy"}  # greedy: required by core, not played
    assert sum(s["expected"] for s in cov["slices"] if s["agent"] == "random") == len(man.entries)
    assert main(["report", str(partial), "--manifest", str(played["manifest"]), "--bundle", str(played["bundle"]),
                 "--official", "--panel", "full", "-o", str(tmp_path / "r.json")]) == 2
    assert not (tmp_path / "r.json").exists()
    # Official means the full panel: the core panel is refused before anything else (DEC-056).
    assert main(["report", str(played["runs"]), "--manifest", str(played["manifest"]), "--bundle",
                 str(played["bundle"]), "--official", "--panel", "core", "-o", str(tmp_path / "r.json")]) == 2
    assert not (tmp_path / "r.json").exists()
    # With the full panel narrowed to the agents these runs played, the gate passes the complete runs.
    monkeypatch.setitem(agents.PANELS, "full", ("random", "oracle"))
    args = ["report", "--manifest", str(played["manifest"]), "--bundle", str(played["bundle"]), "--official",
            "--panel", "full"]
    assert main([*args, str(partial), "-o", str(tmp_path / "r.json")]) == 2
    assert main([*args, str(played["runs"]), "-o", str(tmp_path / "r.json")]) == 0
    plain = tmp_path / "plain.json"
    assert main(["report", str(played["runs"]), "--manifest", str(played["manifest"]), "--panel", "full", "-o",
                 str(plain)]) == 0
    assert plain.read_bytes() == (tmp_path / "r.json").read_bytes()  # --official is a gate, not content
    tampered = [dict(r) for r in recs]
    tampered[0]["score_c"] = 1 - tampered[0]["score_c"]
    assert main([*args, str(write(tmp_path / "t.jsonl", tampered)), "-o", str(tmp_path / "r2.json")]) == 2


def test_official_errors_name_the_missing_agent(played: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["report", str(played["runs"]), "--manifest", str(played["manifest"]), "--bundle",
                 str(played["bundle"]), "--official", "--panel", "full"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "greedy (EVAL-CB) misses" in err and "full panel" in err


@pytest.mark.parametrize("content", [b"", b"\x00\x01binary", b"\xff\xfe not utf-8\n", b"{not json\n",
                                     b'{"run_id": "x"}\n', b"[1, 2]\n"])
def test_bad_runs_files_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch, content: bytes) -> None:
    # A short path, as typed: an error shortens a long one (to 80 characters), which may cut its file name.
    monkeypatch.chdir(tmp_path)
    bad = Path("bad.jsonl")
    bad.write_bytes(content)
    for args in (["report", str(bad)], ["report", str(bad), "-o", str(tmp_path / "r.json")],
                 ["caps", "derive", str(bad), "-o", str(tmp_path / "c.json")]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("gf01: error: ") and err.count("\n") == 1 and "bad.jsonl" in err, err
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "r.json").exists()


def test_bad_paths_and_manifests_are_one_line_errors(played: dict[str, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    runs = str(played["runs"])
    cases = [
        ["report", str(tmp_path / "missing.jsonl")],
        ["report", str(tmp_path)],
        ["report", runs, "-o", str(tmp_path)],
        ["report", runs, "-o", "/proc/version/x.json"],
        ["report", runs, "--manifest", runs],
        ["report", runs, "--manifest", str(played["bundle"])],
        ["report", runs, "--official"],
    ]
    for args in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("gf01: error: ") and err.count("\n") == 1, (args, err)


def test_runs_without_z_draw_their_figures_without_a_warning(played: dict[str, Path], tmp_path: Path) -> None:
    import base64
    import re
    import warnings

    from gf01_formal.report.render import html_page

    recs = [{**r, "complexity_z": None} for r in rows(played["runs"])]  # e.g. a bundle made before DEC-058
    report = build_report(load_runs([write(tmp_path / "runs.jsonl", recs)]))
    assert all(not a["quartiles"] and a["no_z"] for f in report["figures"] for p in f["panels"] for a in p["agents"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "No artists with labels found to put in legend" would raise
        page = html_page(report)  # every figure (render.figures' and the headline's), drawn once
    embedded = re.findall(r'<img alt="([^"]*)" src="data:image/svg\+xml;base64,([^"]+)">', page)
    quartile_svgs = [base64.b64decode(data).decode() for caption, data in embedded
                     if caption.startswith("Score_C by complexity quartile")]
    assert quartile_svgs and all("no scored run with z(I)" in svg for svg in quartile_svgs)


def as_agent(rec: dict, spec: dict, meta: dict) -> dict:
    """The record as played by the agent of ``spec`` (its hash, its run id), which reported ``meta``."""
    h = sha256_hex(spec)
    return {**rec, "agent_name": spec["name"], "agent_spec": spec, "agent_hash": h, "agent_meta": meta,
            "eval_track": spec["track"], "agent_access": "observations",
            "run_id": "run-" + sha256_hex([rec["run_id"], h])[:24]}


def test_the_agents_legend_names_models_and_parameters_but_no_secret(played: dict[str, Path], tmp_path: Path) -> None:
    from gf01_formal.agents.llm import LLMConfig
    from gf01_formal.agents.llm_prompt import TEMPLATE_ID, load_template
    from gf01_formal.report.render import html_page

    sha = load_template(TEMPLATE_ID).sha256
    base = [r for r in rows(played["runs"]) if r["agent_name"] == "random"]
    url = "https://10.0.0.7:8443/v1"
    specs = {model: {"name": "llm", "track": "EVAL-CB", "params": LLMConfig.from_params(
        {"model": model, "base_url": url, "temperature": temp}).params()}
        for model, temp in (("model-alpha-7b", 0.0), ("model-beta-70b", 0.7))}
    secret, password = "sk-legend-0123456789abcdef", "hunter2pass"
    cmd = {"name": "cmd", "track": "EVAL-CB",
           "params": {"cmd": f"python3 agent.py --endpoint https://bob:{password}@api.example.org:9000/v1?x=1",
                      "api_key": secret, "token": secret, "max_tokens": 64}}
    recs = []
    for k, r in enumerate(base):
        for model, spec in specs.items():
            recs.append(as_agent(r, spec, {"model": model, "model_reported": f"{model}-{'ab'[k % 2]}",
                                           "base_url_host": "10.0.0.7:8443", "prompt_template": TEMPLATE_ID,
                                           "prompt_sha256": sha, "model_seed": k, "transcript_sha256": f"t{k}"}))
        recs.append(as_agent(r, cmd, {"cmd": cmd["params"]["cmd"]}))
    random.Random(3).shuffle(recs)
    report = build_report(load_runs([write(tmp_path / "runs.jsonl", recs)]))
    legend = {a["agent"]: a for a in report["agents"]}
    assert [a["agent"] for a in report["agents"]] == sorted(legend)
    labels = {model: f"llm:{model}" for model in specs}  # a model's row is named by its model (issue 31)
    assert set(legend) == {"cmd:agent.py", *labels.values()}
    for (model, spec), temp in zip(specs.items(), (0.0, 0.7), strict=True):
        entry = legend[labels[model]]
        assert entry["agent_name"] == "llm" and entry["agent_hash"] == sha256_hex(spec)
        assert entry["eval_tracks"] == ["EVAL-CB"] and entry["runs"] == len(base)
        assert entry["params"]["model"] == model and entry["params"]["temperature"] == temp
        assert entry["params"]["base_url_host"] == "10.0.0.7:8443" and "base_url" not in entry["params"]
        assert entry["params"]["prompt"] == TEMPLATE_ID and entry["params"]["api_key_env"] == "OPENAI_API_KEY"
        # What the runs reported, each distinct value once, sorted; per-run fields (seed, transcript) are not shown.
        assert entry["reported"] == {"model_reported": [f"{model}-a", f"{model}-b"], "prompt_template": [TEMPLATE_ID],
                                     "prompt_sha256": [sha]}
    assert legend["cmd:agent.py"]["params"] == {"api_key": "<withheld>", "cmd": "python3 agent.py --endpoint "
                                       "api.example.org:9000", "max_tokens": 64, "token": "<withheld>"}
    md, page, data = markdown(report), html_page(report), json.dumps(report)
    for text in (md, page, data):
        assert "model-alpha-7b" in text and "model-beta-70b" in text and "10.0.0.7:8443" in text and sha in text
        assert labels["model-alpha-7b"] in text
        assert secret not in text and password not in text and "bob" not in text and url not in text
        assert "https://" not in text
    legend = md.split("## Agents")[1]  # the headline, above it, names the agents too
    row = next(line for line in legend.splitlines() if line.startswith(f"| {labels['model-beta-70b']} |"))
    assert "model=model-beta-70b" in row and "temperature=0.7" in row and f"prompt={TEMPLATE_ID}" in row
    assert f"prompt_sha256={sha}" in row and "| EVAL-CB |" in row
    assert ">Agents</h2>" in page and f"<td>{labels['model-alpha-7b']}</td>" in page
