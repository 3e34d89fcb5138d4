"""Declared adaptation (DEC-055): the four options on evaluate, campaign, serve and the inspect task, checked when
given (one line, exit 2, nothing written), recorded in every run, checked again by validate, stratified by reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gf01_formal.agents.adaptation import Adaptation, declare
from gf01_formal.agents.base import AgentSpec
from gf01_formal.cli import main
from hoa.errors import Gf01Error

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = str(ROOT / "gf01_formal" / "examples" / "arbiter_priority.json")
PROMPT = ["--adaptation-condition", "prompt_adaptation", "--adaptation-budget-tokens", "5000",
          "--adaptation-data-scope", "public_dev", "--adaptation-protocol-id", "fewshot-v1"]


@pytest.mark.parametrize(("args", "option", "says"), [
    (["--adaptation-condition", "prompt_adaptation"], "--adaptation-budget-tokens", "positive token budget"),
    (["--adaptation-condition", "weight_finetune", "--adaptation-budget-tokens", "9"], "--adaptation-data-scope",
     "other than none"),
    (["--adaptation-condition", "weight_finetune", "--adaptation-budget-tokens", "9", "--adaptation-data-scope",
      "public_dev"], "--adaptation-protocol-id", "other than none"),
    (["--adaptation-budget-tokens", "10"], "--adaptation-budget-tokens", "no_adaptation requires a token budget of 0"),
    (["--adaptation-data-scope", "public_dev"], "--adaptation-data-scope", "no_adaptation requires"),
    (["--adaptation-protocol-id", "x"], "--adaptation-protocol-id", "no_adaptation requires"),
    (["--adaptation-condition", "lora"], "--adaptation-condition", "lora"),
])
@pytest.mark.parametrize("command", ["evaluate", "campaign"])
def test_a_bad_combination_is_one_line_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          command: str, args: list[str], option: str,
                                                          says: str) -> None:
    out = tmp_path / "out"
    argv = ([command, INSTANCE, "--agent", "random", "-o", str(out / "r.jsonl")] if command == "evaluate" else
            [command, INSTANCE, "--agents", "random", "--panel", "core", "-o", str(out)])
    assert main([*argv, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gf01: error: ") and err.count("\n") == 1 and option in err and says in err
    assert not out.exists()


def test_serve_refuses_a_bad_combination_before_serving(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--bundle", INSTANCE, "--port", "0", "--adaptation-condition", "weight_finetune"]) == 2
    assert "--adaptation-budget-tokens" in capsys.readouterr().err


def test_evaluate_records_the_declaration_and_validate_checks_it(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "r.jsonl"
    assert main(["evaluate", INSTANCE, "--agent", "random", "--agent", "greedy", "-o", str(runs), *PROMPT]) == 0
    rows = [json.loads(x) for x in runs.read_text().splitlines()]
    assert {(r["adaptation_condition"], r["adaptation_budget_tokens"], r["adaptation_data_scope"],
             r["adaptation_protocol_id"]) for r in rows} == {("prompt_adaptation", 5000, "public_dev", "fewshot-v1")}
    assert all(r["agent_spec"]["adaptation"]["condition"] == "prompt_adaptation" for r in rows)
    # A declared adaptation makes another agent: another hash, other run ids than the unadapted agent's.
    plain = tmp_path / "plain.jsonl"
    assert main(["evaluate", INSTANCE, "--agent", "random", "-o", str(plain)]) == 0
    unadapted = json.loads(plain.read_text().splitlines()[0])
    assert "adaptation" not in unadapted["agent_spec"] and unadapted["adaptation_condition"] == "no_adaptation"
    assert unadapted["run_id"] not in {r["run_id"] for r in rows}
    assert main(["validate", str(runs)]) == 0
    # validate checks again: a record whose fields break DEC-055, or differ from its spec's declaration.
    capsys.readouterr()
    bad = tmp_path / "bad.jsonl"
    broken = {**rows[0], "adaptation_budget_tokens": 0}
    bad.write_text(json.dumps(broken) + "\n")
    assert main(["validate", str(bad)]) == 2
    out = capsys.readouterr().out
    assert "requires a positive token budget" in out and "differ from the agent spec's declaration" in out
    # Reports stratify by the declaration: the two runs files give two strata per agent.
    assert main(["report", str(runs), str(plain), "-o", str(tmp_path / "rep.json")]) == 0
    groups = json.loads((tmp_path / "rep.json").read_text())["groups"]
    assert {(g["agent_name"], g["key"]["adaptation_condition"]) for g in groups} >= {
        ("random", "prompt_adaptation"), ("random", "no_adaptation")}


def test_campaign_records_the_declaration(tmp_path: Path) -> None:
    from gf01_formal.instances.generator import GenConfig, generate
    from gf01_formal.instances.io import save_artifact

    small = {"families": [{"kind": "random_mealy", "states": [3, 4], "inputs": [2, 2], "outputs": [1, 1]}],
             "horizon": [6, 8]}
    save_artifact(tmp_path / "b.json", generate(2, 2, GenConfig.model_validate(small)))
    out = tmp_path / "c"
    assert main(["campaign", str(tmp_path / "b.json"), "--panel", "core", "--agents", "random", "--jobs", "1", "-o",
                 str(out), "--adaptation-condition", "weight_finetune", "--adaptation-budget-tokens", "1000000",
                 "--adaptation-data-scope", "public_dev+public_val", "--adaptation-protocol-id", "sft-v2"]) == 0
    rows = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert rows and {r["adaptation_condition"] for r in rows} == {"weight_finetune"}
    assert json.loads((out / "validation.json").read_text())["ok"]
    assert json.loads((out / "campaign.json").read_text())["agents"][0]["adaptation"]["protocol_id"] == "sft-v2"


def test_the_spec_round_trips_and_the_default_is_invisible() -> None:
    spec = AgentSpec("random", "EVAL-CB").adapted(declare("prompt_adaptation", 3, "public_dev", "p"))
    assert AgentSpec.from_json(spec.to_json()) == spec
    assert AgentSpec("random", "EVAL-CB").adapted(Adaptation()).to_json() == AgentSpec("random", "EVAL-CB").to_json()
    with pytest.raises(Gf01Error, match="positive token budget"):
        AgentSpec.from_json({**spec.to_json(), "adaptation": {"condition": "prompt_adaptation"}})


def test_the_inspect_task_checks_its_adaptation_arguments() -> None:
    pytest.importorskip("inspect_ai")
    from gf01_formal.integrations.inspect_task import gf01

    with pytest.raises(Gf01Error, match="adaptation-data-scope"):
        gf01(bundle=INSTANCE, adaptation_condition="weight_finetune", adaptation_budget_tokens=5)
    task = gf01(bundle=INSTANCE, adaptation_condition="prompt_adaptation", adaptation_budget_tokens=5,
                adaptation_data_scope="public_dev", adaptation_protocol_id="p1")
    assert task.metadata["adaptation"]["protocol_id"] == "p1"


def test_serve_records_the_declaration(tmp_path: Path) -> None:
    from gf01_formal.web.games import Games

    adaptation = declare("prompt_adaptation", 1200, "public_dev", "practice-v1")
    games = Games.open(INSTANCE, runs_out=tmp_path / "human.jsonl", adaptation=adaptation)
    game = games.start_free(next(iter(games.served)))
    while not game.engine.done:
        games.step(game.token, {"action": {"t": game.engine.t, "set": {}, "commit": True}, "response_ms": 5})
    (line,) = (tmp_path / "human.jsonl").read_text().splitlines()
    rec = json.loads(line)
    assert (rec["adaptation_condition"], rec["adaptation_protocol_id"]) == ("prompt_adaptation", "practice-v1")
    assert rec["agent_spec"]["adaptation"] == adaptation.to_json()
    assert main(["validate", str(tmp_path / "human.jsonl")]) == 0
