"""The run spine: reading runs loads no agent, engine or solver; one replay, so ``gf01 validate``, the browser's replay
and the inspect importer give the same verdict on the same tampered step logs; records of the older per-atom rule
still replay."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from gf01_formal.instances.generator import GenConfig, generate
from gf01_formal.instances.io import save_artifact
from gf01_formal.runs.record import RunRecord
from gf01_formal.runs.validate import validate
from gf01_formal.web.games import Games, RequestError
from hoa.errors import Gf01Error

SMALL = {"families": [{"kind": "random_mealy", "states": [4, 6], "inputs": [2, 3]}], "horizon": [6, 8]}


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One instance played through the inspect task against the scripted local model (an edit at step 0, an action
    with an unknown input at step 1, no edit after), its log, and the record imported from it."""
    pytest.importorskip("inspect_ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model
    from llm_server import Reply, ScriptedServer, step_of

    from gf01_formal.instances.io import instance_problem, load_set
    from gf01_formal.integrations.inspect_import import import_inspect_log
    from gf01_formal.integrations.inspect_task import gf01

    tmp = tmp_path_factory.mktemp("spine")
    bundle = tmp / "bundle.json"
    save_artifact(bundle, generate(11, 1, GenConfig.model_validate(SMALL)))
    problem = instance_problem(load_set(bundle).instances[0])
    first = problem.system.inputs[0]
    plan = {0: {"set": {first: 1}}, 1: {"set": {first: 0, "zz": 1}}}
    with ScriptedServer(lambda call: Reply(json.dumps(plan.get(step_of(call), {"set": {}})))) as server:
        model = get_model("openai-api/local/m", base_url=server.url, api_key="k-spine")
        (log,) = inspect_eval(gf01(bundle=str(bundle)), model=model, log_dir=str(tmp / "logs"), display="none")
    assert log.status == "success", log.error
    (path,) = sorted((tmp / "logs").glob("*.eval"))
    (outcome,) = import_inspect_log(path).outcomes
    record = outcome.record.to_json()
    assert record["status"] == "completed" and record["certificate"] == [[0, first, 1]]
    assert record["steps"][1]["agent_error"]["kind"] == "bad_action" and record["steps"][1]["committed"] == []
    return {"tmp": tmp, "bundle": bundle, "log": path, "record": record, "inputs": list(problem.system.inputs)}


def _consistent(record: dict[str, Any]) -> dict[str, Any]:
    """A forger's record: the totals recomputed from the (tampered) steps, so only a replay can tell."""
    steps = record["steps"]
    if isinstance(steps, list) and all(isinstance(s, dict) for s in steps):
        atoms = sorted((a[0], a[1], a[2]) for s in steps if isinstance(s.get("committed"), list)
                       for a in s["committed"])
        record["certificate"] = [list(a) for a in atoms]
        record["refusals"] = sum(len(s.get("refused", [])) for s in steps)
        record["agent_errors"] = sum(1 for s in steps if s.get("agent_error") is not None)
    return record


def _tampered(record: dict[str, Any], inputs: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Step logs, each changed in one way (the name says how); ``honest`` is the log as played."""
    steps = record["steps"]
    t0_atom = steps[0]["committed"][0]
    cases: dict[str, list[dict[str, Any]]] = {"honest": copy.deepcopy(steps)}

    def case(name: str, i: int, **change: Any) -> None:
        log = copy.deepcopy(steps)
        log[i].update(change)
        cases[name] = log

    case("submitted_no_longer_matches_committed", 0, submitted={})
    case("an_edit_submitted_but_not_committed", 2, submitted={t0_atom[1]: 1})
    case("a_list_as_submitted", 0, submitted=[t0_atom[1], 1])
    case("minus_zero_as_commit", 0, commit=-0.0)
    case("a_commit_that_did_not_end_the_episode", 2, commit=True)
    case("a_void_action_without_its_fault", 1, agent_error=None)
    case("a_void_action_committed_in_part", 1, committed=[[1, t0_atom[1], 0]], agent_error=None)
    case("an_invented_refusal", 2, refused=[{"input": t0_atom[1], "value": 1, "reason": "budget_a",
                                             "message": f"{t0_atom[1]}: no atom left (B_A = 1)"}])
    cases["a_step_dropped"] = copy.deepcopy(steps[:-1])
    # The per-atom rule of harness.1 records (the unknown input refused alone) in a record of this harness, which
    # voids such an action: the harness version chooses the rule, so all three refuse it (an older record is
    # test_an_older_harness_record_replays_under_its_own_rule).
    legacy = copy.deepcopy(steps)
    legacy[1].update(submitted={"zz": 1}, agent_error=None,
                     refused=[{"input": "zz", "value": 1, "reason": "unknown_input",
                               "message": f"'zz' is not an input ({', '.join(inputs)})"}])
    cases["this_harness_under_the_older_per_atom_rule"] = legacy
    return cases


def _validate(played: dict[str, Any], record: dict[str, Any], name: str) -> bool:
    path = played["tmp"] / f"{name}.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return validate([path], bundle=str(played["bundle"]), official=True) == []


def _browser(games: Games, record: dict[str, Any]) -> bool:
    try:
        games.replay({"record": record})
    except RequestError as ex:
        assert ex.status == 422, ex.message
        return False
    return True


def _importer(played: dict[str, Any], steps: list[dict[str, Any]], name: str) -> bool:
    from inspect_ai.log import read_eval_log, write_eval_log

    from gf01_formal.integrations.inspect_import import import_inspect_log

    log = read_eval_log(str(played["log"]))
    assert log.samples is not None
    log.samples[0].store["gf01"]["steps"] = steps
    path = played["tmp"] / f"{name}.eval"
    write_eval_log(log, str(path))
    try:
        import_inspect_log(path)
    except Gf01Error:
        return False
    return True


def test_validate_the_browser_and_the_inspect_importer_give_the_same_verdicts(played: dict[str, Any]) -> None:
    record = played["record"]
    games = Games.open(played["bundle"])
    verdicts = {}
    for name, steps in _tampered(record, played["inputs"]).items():
        forged = _consistent({**copy.deepcopy(record), "steps": steps})
        verdicts[name] = (_validate(played, forged, name), _browser(games, forged), _importer(played, steps, name))
    assert verdicts == {name: (name.startswith("honest"),) * 3 for name in verdicts}, verdicts


def test_an_older_harness_record_replays_under_its_own_rule(played: dict[str, Any]) -> None:
    """A harness.1 record whose step shows the per-atom refusal replays under that rule (validate and the browser
    accept it), but is not official: this harness's rule differs."""
    record = played["record"]
    steps = _tampered(record, played["inputs"])["this_harness_under_the_older_per_atom_rule"]
    older = _consistent({**copy.deepcopy(record), "steps": steps, "harness_version": "gf01-formal.harness.1"})
    path = played["tmp"] / "older.jsonl"
    path.write_text(json.dumps(older) + "\n")
    assert validate([path], bundle=str(played["bundle"])) == []
    assert _browser(Games.open(played["bundle"]), older)
    assert [v.field for v in validate([path], bundle=str(played["bundle"]), official=True)] == ["harness_version"]


def test_a_record_has_typed_parts(played: dict[str, Any]) -> None:
    rec = RunRecord.model_validate(played["record"])
    assert rec.steps[1].agent_error is not None and rec.steps[1].agent_error.kind == "bad_action"
    assert rec.scores is not None and rec.scores.score_c == rec.score_c
    assert rec.diagnostic.diagnostic_status == "not-run" and rec.to_json() == played["record"]


def test_the_score_columns_of_the_record_are_the_scores_fields_nullable() -> None:
    """A new score is one line in Scores: the record's columns, validation's re-scored fields, a failed run's null
    fields and the browser's shown fields all follow it."""
    from gf01_formal.runs.validate import RESCORED
    from gf01_formal.scoring.values import PRF_FIELDS, SCORE_FIELDS, Scores
    from gf01_formal.web.games import RECORD_FIELDS

    for name, f in Scores.model_fields.items():
        column = RunRecord.model_fields[name]
        assert column.is_required() and column.annotation == (f.annotation | None)
    assert RESCORED == SCORE_FIELDS and set(SCORE_FIELDS) <= set(RECORD_FIELDS)
    assert set(PRF_FIELDS) == {f"{level}_{m}" for level in ("ap", "ts") for m in ("precision", "recall", "f1")}
