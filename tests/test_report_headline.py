"""The report's headline: per track, each agent's Score_C, goal rate, Eff_t / Eff_a, runs and (language models)
tokens and cost, counted as the stratified groups count; slices too small to say anything flagged, ties said,
pairs without discordant instances left untested."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from bundles import REPORTED

from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import sha256_hex
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.report.build import FEW_INSTANCES, HEADLINE_KEY, build_report
from gf01_formal.report.load import load_runs
from gf01_formal.report.render import headline_tables, html_page, markdown

PANEL = [AgentSpec("random", "EVAL-CB"), AgentSpec("greedy", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, generated_bundle: Callable[..., Path]) -> Path:
    d = tmp_path_factory.mktemp("headline")
    evaluate(generated_bundle(5, 12, REPORTED), PANEL, d / "runs.jsonl")
    return d / "runs.jsonl"


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def as_llm(rec: dict, usage: dict | None) -> dict:
    """The record as if a language model had played it, with ``usage`` as its endpoint reported it."""
    spec = {"name": "llm", "track": "EVAL-CB", "params": {"model": "m"}}
    return {**rec, "agent_name": "llm", "agent_spec": spec, "agent_hash": sha256_hex(spec), "usage": usage,
            "run_id": "run-" + sha256_hex([rec["run_id"], "llm"])[:24]}


def test_the_headline_counts_what_the_groups_count(runs: Path) -> None:
    report = build_report(load_runs([runs]))
    assert "difficulty_slice" not in HEADLINE_KEY
    heads = {(h["key"]["eval_track"], h["key"]["mode"], a["agent"]): a for h in report["headline"]
             for a in h["agents"]}
    assert {t for t, _, _ in heads} == {"EVAL-CB", "EVAL-OC"}  # never pooled across tracks
    for (track, mode, agent), row in heads.items():
        groups = [g for g in report["groups"] if g["agent"] == agent and g["key"]["eval_track"] == track
                  and g["key"]["mode"] == mode]
        assert row["n"] == sum(g["n"] for g in groups) and row["runs"] == sum(g["runs"]["total"] for g in groups)
        assert row["score_c"]["k"] == sum(g["score_c"]["k"] for g in groups)
        assert row["goal"]["k"] == sum(g["goal"]["k"] for g in groups)
        assert row["score_c"]["ci"] is not None and row["tokens"] is None  # not a language model
    oracle = [a for (t, _, a), _ in heads.items() if t == "EVAL-OC"]
    assert set(oracle) == {"oracle"}
    for (_, _, agent), row in heads.items():
        if agent == "oracle":  # the oracle certifies every instance: its Eff means are over all its runs
            assert row["score_c"]["rate"] == 1.0 and row["eff_t_given_certified"]["n"] == row["n"]
            assert row["eff_t_given_certified"]["mean"] >= 1 and row["eff_a_given_certified"]["mean"] >= 1


def test_tokens_are_summed_unknown_is_not_zero_and_cost_needs_a_price(runs: Path, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    base = [r for r in records(runs) if r["agent_name"] == "random"]
    llm = [as_llm(r, {"input_tokens": 1000, "output_tokens": 10, "calls": 1}) for r in base[:-1]]
    llm.append(as_llm(base[-1], {"input_tokens": None, "output_tokens": None, "calls": 1}))
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records(runs) + llm))
    report = build_report(load_runs([path]), price=(2.0, 8.0))
    toks = [a["tokens"] for h in report["headline"] for a in h["agents"] if a["agent"] == "llm:m"]
    known = sum(1 for r in llm if r["usage"]["input_tokens"] is not None and r["mode"] == "normal")
    normal = next(t for h, t in zip([h for h in report["headline"] for a in h["agents"] if a["agent"] == "llm:m"],
                                    toks, strict=True) if h["key"]["mode"] == "normal")
    assert normal["input"] == 1000 * known and normal["output"] == 10 * known
    assert sum(t["unknown_runs"] for t in toks) == 1 and sum(t["runs"] for t in toks) == len(llm)
    assert normal["cost"] == pytest.approx((1000 * 2.0 + 10 * 8.0) * known / 1e6)
    (table,) = [t for t in headline_tables(report) if t[0] == "Headline: EVAL-CB"]
    assert table[1][-2:] == ["tokens", "cost"] and "unknown" in "".join(c for row in table[2] for c in row)
    assert "per million tokens" in table[3]
    # Without a price: tokens, no cost column; through the CLI, with a bad price refused.
    assert "cost" not in headline_tables(build_report(load_runs([path])))[0][1]
    out = tmp_path / "r.md"
    assert main(["report", str(path), "--price-per-mtok", "2,8", "-o", str(out)]) == 0
    assert "| tokens | cost |" in out.read_text()
    assert main(["report", str(path), "--price-per-mtok", "2", "-o", str(out)]) == 2
    assert "--price-per-mtok" in capsys.readouterr().err


def test_small_slices_are_flagged_ties_said_and_untestable_pairs_left_out(runs: Path) -> None:
    report = build_report(load_runs([runs]))
    for g in report["groups"]:
        assert g["few_instances"] is (g["instances"] < FEW_INSTANCES)
    for s in report["strata"]:
        ranks = [r["rank"] for r in s["ranking"]]
        for r in s["ranking"]:
            assert r["tied"] is (ranks.count(r["rank"]) > 1)
        assert s["all_tied"] is (len(ranks) > 1 and len(set(ranks)) == 1)
        for p in s["paired"]:
            assert p["discordant"] == p["score_c_test"].get("a_only", 0) + p["score_c_test"].get("b_only", 0)
    text = markdown(report)
    pairs = [p for s in report["strata"] for p in s["paired"]]
    tested = [p for p in pairs if p["discordant"]]
    assert f"{len(pairs) - len(tested)} of {len(pairs)} pair(s) agree on every shared instance" in text
    section = text.split("## Paired comparisons")[1]
    assert section.count("| random - ") + section.count("| greedy - ") == len(tested)
    if any(g["few_instances"] for g in report["groups"]):
        assert "(few)" in text and f"fewer than {FEW_INSTANCES} instances" in text


def test_a_stratum_where_every_agent_ties_says_so(runs: Path, tmp_path: Path) -> None:
    rec = [r for r in records(runs) if r["agent_name"] == "random"]
    twin = [{**r, "agent_name": "random2", "agent_spec": {**r["agent_spec"], "name": "random2"},
             "agent_hash": sha256_hex({**r["agent_spec"], "name": "random2"}),
             "run_id": "run-" + sha256_hex([r["run_id"], "twin"])[:24]} for r in rec]
    path = tmp_path / "twins.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rec + twin))
    report = build_report(load_runs([path]))
    assert all(s["all_tied"] for s in report["strata"])
    text = markdown(report)
    assert "1= (all tie)" in text and "every agent ties" in text
    assert "## Paired comparisons" in text and "| random - random2 |" not in text  # identical: nothing to test


def test_the_html_report_opens_with_the_headline_and_its_figure(runs: Path) -> None:
    page = html_page(build_report(load_runs([runs])))
    assert page.index("Headline: EVAL-CB") < page.index("<h2>Methods</h2>") < page.index("<h2>Groups</h2>")
    first_figure = page.index("<figure>")
    assert first_figure < page.index("<h2>Methods</h2>")
    assert "Score_C and goal rate per agent, with 95 % Wilson intervals, per track" in page
