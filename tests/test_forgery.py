"""Forged run records (issue 29, "Records can be forged"): each forgery keeps every hash consistent (run id, agent
hash, tool log hash, the side file) as a careful forger would, and must be refused by ``validate --official``.

The first group is caught by the replay (the tool calls answered again, the status and the error derived again from
the step log, no action after a fatal fault, the harness version choosing the play rule, free play never official);
the second only by the evaluator's signature (``evaluate --sign-key``, ``validate --key``): a relabelled sandbox,
agent or track, and steps swapped and rescored are possible plays of the instance, which no replay can tell from
the real ones."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gf01_formal.agents.base import ACCESS_OF_TRACK, ALLOWLIST_OF_TRACK, AgentSpec
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import load_set
from gf01_formal.play.protocol import Action
from gf01_formal.runs.record import run_id
from gf01_formal.runs.recorder import EpisodeRecorder
from gf01_formal.runs.validate import check_runs

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agent_example.py"
PANEL = [AgentSpec("random", "EVAL-CB"), AgentSpec("tool", "EVAL-TA"), AgentSpec("oracle", "EVAL-OC"),
         AgentSpec("cmd", "EVAL-CB", {"cmd": f"python3 {EXAMPLE}", "sandbox": "none"})]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, generated_bundle: Callable[..., Path]) -> tuple[Path, Path]:
    """A bundle of three instances and the panel's unsigned runs on it (the external program unsandboxed)."""
    bundle = generated_bundle(11, 3)
    runs = tmp_path_factory.mktemp("forgery") / "runs.jsonl"
    assert evaluate(bundle, PANEL, runs).statuses == {"completed": 12}
    return bundle, runs


def rows_of(runs: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in runs.read_text().splitlines()]


def write(rows: list[dict[str, Any]], path: Path, side_from: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.copytree(f"{side_from}.d", f"{path}.d")
    return path


def official_faults(rows: list[dict[str, Any]], k: int, bundle: Path, runs: Path, tmp_path: Path,
                    key: Path | None = None) -> set[str]:
    """The fields ``validate --official`` reports on record ``k`` of ``rows`` (written beside a copy of the side
    directory of ``runs``); every violation must be on that record or on an unsandboxed program's ``sandbox``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = write(rows, tmp_path / "forged.jsonl", runs)
    found = check_runs([path], bundle=str(bundle), official=True, **({} if key is None else {"key": key})).violations
    mine = {v.field for v in found if v.line == k + 1}
    others = [str(v) for v in found if v.line != k + 1 and v.field != "sandbox"]
    assert not others, others
    return mine


def first(rows: list[dict[str, Any]], name: str, pick: Callable[[dict[str, Any]], Any] = lambda r: 0) -> int:
    """The index of the record of agent ``name`` that ``pick`` rates highest."""
    return max((i for i, r in enumerate(rows) if r["agent_name"] == name), key=lambda i: pick(rows[i]))


def rekey(row: dict[str, Any], spec: AgentSpec) -> None:
    """The record relabelled as played by ``spec``: the spec, its hash, the run id and the track's fields."""
    track = spec.track
    row.update(agent_name=spec.name, eval_track=track, agent_spec=spec.to_json(), agent_hash=spec.digest,
               agent_access=ACCESS_OF_TRACK[track], tool_allowlist_id=ALLOWLIST_OF_TRACK[track],
               run_id=run_id(row["instance_id"], row["instance_hash"], spec.digest, row["seed"]))
    if track == "EVAL-CB":
        row["tool_log_hash"] = ""


# -- the tool log: every call answered again ------------------------------------------------------------------------

def tool_log(runs: Path, row: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (Path(f"{runs}.d") / "tool-logs" / f"{row['tool_log_hash']}.jsonl")
            .read_text().splitlines()]


def with_log(row: dict[str, Any], text: str, runs: Path, tmp_path: Path) -> None:
    """``row`` pointing to the tool log ``text``, stored where validation will look (a copy of the side dir)."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    row["tool_log_hash"] = digest
    side = tmp_path / "forged.jsonl.d" / "tool-logs"
    shutil.copytree(f"{runs}.d", tmp_path / "forged.jsonl.d")
    (side / f"{digest}.jsonl").write_text(text)


def lines(entries: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(e, sort_keys=True, separators=(",", ":")) + "\n" for e in entries)


def forge_log(played: tuple[Path, Path], tmp_path: Path, edit: Callable[[list[dict[str, Any]]], str]) -> set[str]:
    bundle, runs = played
    rows = rows_of(runs)
    k = first(rows, "tool", lambda r: len(tool_log(runs, r)))
    entries = tool_log(runs, rows[k])
    assert len(entries) >= 4, "the tool agent's log should hold a header and at least three calls"
    text = edit(entries)
    with_log(rows[k], text, runs, tmp_path)
    path = tmp_path / "forged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = check_runs([path], bundle=str(bundle), official=True).violations
    assert all(v.line == k + 1 or v.field == "sandbox" for v in found), [str(v) for v in found]
    return {v.field for v in found if v.line == k + 1}


def test_the_honest_records_pass_but_for_the_unsandboxed_program(played: tuple[Path, Path]) -> None:
    bundle, runs = played
    found = check_runs([runs], bundle=str(bundle), official=True).violations
    rows = rows_of(runs)
    assert {(rows[v.line - 1]["agent_name"], v.field) for v in found} == {("cmd", "sandbox")}


def test_a_tool_call_removed(played: tuple[Path, Path], tmp_path: Path) -> None:
    def edit(entries: list[dict[str, Any]]) -> str:
        kept = entries[:2] + entries[3:]
        for n, e in enumerate(kept[1:]):  # renumbered, as a careful forger would
            e["call"] = n
        return lines(kept)

    assert "tool_log_hash" in forge_log(played, tmp_path, edit)


def test_a_tool_answer_falsified(played: tuple[Path, Path], tmp_path: Path) -> None:
    def edit(entries: list[dict[str, Any]]) -> str:
        entries[1]["answer"]["effect"] = not entries[1]["answer"]["effect"]
        return lines(entries)

    assert "tool_log_hash" in forge_log(played, tmp_path, edit)


def test_a_tool_answer_emptied(played: tuple[Path, Path], tmp_path: Path) -> None:
    def edit(entries: list[dict[str, Any]]) -> str:
        entries[2]["answer"] = {}
        return lines(entries)

    assert "tool_log_hash" in forge_log(played, tmp_path, edit)


def test_a_budget_header_of_a_million(played: tuple[Path, Path], tmp_path: Path) -> None:
    def edit(entries: list[dict[str, Any]]) -> str:
        entries[0]["max_queries"] = 10**6
        return lines(entries)

    assert "tool_log_hash" in forge_log(played, tmp_path, edit)


def test_an_oracle_call_inside_a_planner_log(played: tuple[Path, Path], tmp_path: Path) -> None:
    def edit(entries: list[dict[str, Any]]) -> str:
        n = len(entries) - 1
        entries.append({"call": n, "tool": "oracle-exact-search-v1", "query": None,
                        "answer": {"certificate": None, "eff_a": None, "eff_t": None, "queries_left": 63}})
        return lines(entries)

    assert "tool_log_hash" in forge_log(played, tmp_path, edit)


def test_a_garbage_tool_log(played: tuple[Path, Path], tmp_path: Path) -> None:
    assert "tool_log_hash" in forge_log(played, tmp_path, lambda entries: "the planner said yes, trust me\n")


# -- the policy around the actions: status, fatal faults, the play rule, free play ------------------------------------

def empty_steps(row: dict[str, Any]) -> list[int]:
    return [s["t"] for s in row["steps"] if not s["submitted"] and not s["commit"] and s["agent_error"] is None]


def test_five_not_json_faults_in_a_completed_record(played: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    k = first(rows, "oracle", lambda r: len(empty_steps(r)))
    row = rows[k]
    assert len(empty_steps(row)) >= 5
    for t in empty_steps(row)[:5]:
        row["steps"][t]["agent_error"] = {"kind": "not_json", "message": "Expecting value"}
    row["agent_errors"] = 5
    assert row["status"] == "completed"
    assert "status" in official_faults(rows, k, bundle, runs, tmp_path)


def test_a_fatal_crash_at_step_0_then_committed_edits(played: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    k = first(rows, "oracle", lambda r: 0 in empty_steps(r) and any(s["committed"] for s in r["steps"]))
    row = rows[k]
    assert 0 in empty_steps(row) and any(s["committed"] for s in row["steps"][1:])
    row["steps"][0]["agent_error"] = {"kind": "crash", "message": "the program exited with status 1"}
    row["agent_errors"] += 1
    found = official_faults(rows, k, bundle, runs, tmp_path)
    assert any(f.endswith(".submitted") for f in found), found


def test_a_denied_tool_is_fatal_too(played: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    k = first(rows, "oracle", lambda r: 0 in empty_steps(r) and any(s["committed"] for s in r["steps"]))
    row = rows[k]
    row["steps"][0]["agent_error"] = {"kind": "tool_denied", "message": "asked for tool 'x': its tool is y"}
    row["agent_errors"] += 1
    found = official_faults(rows, k, bundle, runs, tmp_path)
    assert any(f.endswith(".submitted") for f in found) or "status" in found, found


def test_a_record_of_this_harness_under_the_old_per_atom_rule(played: tuple[Path, Path], tmp_path: Path) -> None:
    """An action with an unknown input, which this harness voids (a bad_action violation), logged as the per-atom
    rule refused it (no violation): the harness version chooses the rule, not the steps."""
    bundle, runs = played
    rows = rows_of(runs)
    k = first(rows, "oracle", lambda r: len(empty_steps(r)))
    row = rows[k]
    t_odd = empty_steps(row)[0]
    problem = load_set(bundle).problem(load_set(bundle).by_id[row["instance_id"]])
    recorder = EpisodeRecorder(problem, row["instance_id"])
    recorder.start()
    for step in row["steps"]:
        odd = step["t"] == t_odd
        recorder.step(Action(set={"no_such_input": 1} if odd else step["submitted"], commit=step["commit"]),
                      per_atom=odd)
    row["steps"] = [s.model_dump(mode="json") for s in recorder.steps]
    assert [r["reason"] for r in row["steps"][t_odd]["refused"]] == ["unknown_input"]
    row["refusals"] += 1
    assert official_faults(rows, k, bundle, runs, tmp_path) & {f"steps.{t_odd}.refused",
                                                                 f"steps.{t_odd}.agent_error"}


def test_a_browser_free_play_run_is_never_official(played: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, runs = played
    rows = rows_of(runs)
    k = first(rows, "random")
    rekey(rows[k], AgentSpec("human", "EVAL-CB", {"participant_id": "anon-1f2e3d4c"}))
    rows[k]["agent_meta"] = {"participant_id": "anon-1f2e3d4c", "pilot_id": None, "consent_sha256": None,
                             "session": "free"}
    assert "agent_meta" in official_faults(rows, k, bundle, runs, tmp_path)


# -- what only a signature shows --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, generated_bundle: Callable[..., Path]
           ) -> tuple[Path, Path, Path]:
    """The panel's runs signed by the evaluator's key: (bundle, runs, the public key file)."""
    where = tmp_path_factory.mktemp("signed")
    assert main(["key", "new", "--kind", "signing", "-o", str(where / "evaluator.key")]) == 0
    bundle = generated_bundle(11, 3)
    runs = where / "runs.jsonl"
    assert evaluate(bundle, PANEL, runs, sign_key=where / "evaluator.key").statuses == {"completed": 12}
    return bundle, runs, where / "evaluator.key.pub"


def test_signed_records_validate_against_the_public_key(signed: tuple[Path, Path, Path]) -> None:
    bundle, runs, pub = signed
    assert all(r["signature"]["alg"] == "ed25519" for r in rows_of(runs))
    assert check_runs([runs], bundle=str(bundle), key=pub).violations == []
    assert main(["validate", str(runs), "--bundle", str(bundle), "--key", str(pub)]) == 0


def test_an_unsigned_record_is_refused(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, runs, pub = signed
    rows = rows_of(runs)
    k = first(rows, "random")
    del rows[k]["signature"]
    assert "signature" in official_faults(rows, k, bundle, runs, tmp_path, key=pub)


def test_a_sandbox_none_run_relabelled_bwrap(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, runs, pub = signed
    rows = rows_of(runs)
    k = first(rows, "cmd")
    params = {p: v for p, v in rows[k]["agent_spec"]["params"].items() if p != "sandbox"}
    rekey(rows[k], AgentSpec("cmd", "EVAL-CB", params))
    rows[k]["sandbox"] = "bwrap"
    # Without the key the forgery passes: the replay sees a possible play of the instance.
    assert official_faults(rows, k, bundle, runs, tmp_path / "a") == set()
    assert official_faults(rows, k, bundle, runs, tmp_path / "b", key=pub) == {"signature"}


def test_the_oracle_run_relabelled_as_a_closed_book_program(signed: tuple[Path, Path, Path],
                                                           tmp_path: Path) -> None:
    bundle, runs, pub = signed
    rows = rows_of(runs)
    k = first(rows, "oracle")
    rekey(rows[k], AgentSpec("cmd", "EVAL-CB", {"cmd": "python3 my_agent.py"}))
    rows[k]["sandbox"] = "bwrap"
    assert official_faults(rows, k, bundle, runs, tmp_path / "a") == set()
    assert official_faults(rows, k, bundle, runs, tmp_path / "b", key=pub) == {"signature"}


def test_random_steps_replaced_by_the_oracles_and_rescored(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, runs, pub = signed
    rows = rows_of(runs)
    k = first(rows, "random")
    oracle = next(r for r in rows if r["agent_name"] == "oracle" and r["instance_id"] == rows[k]["instance_id"])
    keep = {"run_id", "agent_name", "agent_spec", "agent_hash", "agent_access", "eval_track", "tool_allowlist_id",
            "tool_log_hash", "seed", "timing", "signature", "previous_signature", "sandbox", "agent_meta", "usage"}
    rows[k].update({f: v for f, v in oracle.items() if f not in keep})
    assert rows[k]["score_c"] == 1
    assert official_faults(rows, k, bundle, runs, tmp_path / "a") == set()
    assert official_faults(rows, k, bundle, runs, tmp_path / "b", key=pub) == {"signature"}


def test_a_record_re_signed_by_the_forgers_own_key(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    from gf01_formal.runs.record import RunRecord
    from gf01_formal.runs.signing import load_signer, sign

    bundle, runs, pub = signed
    assert main(["key", "new", "--kind", "signing", "-o", str(tmp_path / "forger.key")]) == 0
    rows = rows_of(runs)
    k = first(rows, "random")
    rows[k]["agent_meta"] = {"note": "relabelled"}
    rows[k] = sign(RunRecord.model_validate(rows[k]), load_signer(tmp_path / "forger.key")).to_json()
    assert official_faults(rows, k, bundle, runs, tmp_path / "a", key=pub) == {"signature"}
    # checked against the forger's own public key, the record verifies: the key given is what counts
    assert official_faults([rows[k]], 0, bundle, runs, tmp_path / "b", key=tmp_path / "forger.key.pub") == set()


def test_a_campaign_signs_its_records(tmp_path: Path, generated_bundle: Callable[..., Path]) -> None:
    """``gf01 campaign --sign-key`` signs every record it appends, as evaluate does."""
    bundle = generated_bundle(11, 3)
    assert main(["key", "new", "--kind", "signing", "-o", str(tmp_path / "evaluator.key")]) == 0
    assert main(["campaign", str(bundle), "--panel", "core", "--agents", "random,greedy", "--jobs", "1", "-o",
                 str(tmp_path / "c"), "--sign-key", str(tmp_path / "evaluator.key")]) == 0
    runs = tmp_path / "c" / "runs.jsonl"
    assert len(rows_of(runs)) == 6 and all("signature" in r for r in rows_of(runs))
    assert main(["validate", str(runs), "--bundle", str(bundle), "--official", "--key",
                 str(tmp_path / "evaluator.key.pub")]) == 0


# -- gf01 report --official --key: the same validation, so the same refusals ------------------------------------------

@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory, generated_bundle: Callable[..., Path]) -> dict[str, Path]:
    """The full panel's runs on a split bundle, signed by the evaluator's key, with the split manifest."""
    from gf01_formal.artifacts import write_json_atomic
    from gf01_formal.instances.io import load_bundle, save_artifact
    from gf01_formal.instances.splits import PUBLIC_KEY, split_bundle

    where = tmp_path_factory.mktemp("reported")
    assert main(["key", "new", "--kind", "signing", "-o", str(where / "evaluator.key")]) == 0
    bundle, manifest = split_bundle(load_bundle(generated_bundle(11, 5)), PUBLIC_KEY)  # 5: the least the policy splits
    save_artifact(where / "bundle.json", bundle)
    write_json_atomic(where / "manifest.json", manifest.model_dump(mode="json"))
    panel = [AgentSpec("random", "EVAL-CB"), AgentSpec("greedy", "EVAL-CB"), AgentSpec("search", "EVAL-CB"),
             AgentSpec("tool", "EVAL-TA"), AgentSpec("oracle", "EVAL-OC")]
    runs = where / "runs.jsonl"
    assert evaluate(where / "bundle.json", panel, runs, sign_key=where / "evaluator.key").statuses == \
        {"completed": 25}
    return {"bundle": where / "bundle.json", "manifest": where / "manifest.json", "runs": runs,
            "pub": where / "evaluator.key.pub", "key": where / "evaluator.key"}


def official_report(p: dict[str, Path], runs: Path, out: Path, *key: str) -> int:
    return main(["report", str(runs), "--official", "--manifest", str(p["manifest"]), "--bundle", str(p["bundle"]),
                 "-o", str(out), *key])


def forged_copy(p: dict[str, Path], tmp_path: Path, change: Callable[[list[dict[str, Any]]], None]) -> Path:
    rows = rows_of(p["runs"])
    change(rows)
    tmp_path.mkdir(parents=True, exist_ok=True)
    return write(rows, tmp_path / "forged.jsonl", p["runs"])


def test_report_official_key_passes_the_evaluators_signed_runs(reported: dict[str, Path], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert official_report(reported, reported["runs"], tmp_path / "r.json", "--key", str(reported["pub"])) == 0
    assert (tmp_path / "r.json").exists()
    # --key is part of the official gate: alone it is refused, in one line
    assert main(["report", str(reported["runs"]), "--key", str(reported["pub"]), "-o", str(tmp_path / "x.json")]) == 2
    assert "--key" in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def _unsigned(rows: list[dict[str, Any]]) -> None:
    del rows[first(rows, "random")]["signature"]


def _altered(rows: list[dict[str, Any]]) -> None:
    rows[first(rows, "random")]["agent_meta"] = {"note": "relabelled"}


def _oracle_as_program(rows: list[dict[str, Any]]) -> None:
    k = first(rows, "oracle")
    rekey(rows[k], AgentSpec("cmd", "EVAL-CB", {"cmd": "python3 my_agent.py"}))
    rows[k]["sandbox"] = "bwrap"


@pytest.mark.parametrize("change", [_unsigned, _altered, _oracle_as_program],
                         ids=["unsigned", "altered", "oracle relabelled a closed-book program"])
def test_report_official_key_refuses_what_validate_key_refuses(change: Callable[[list[dict[str, Any]]], None],
                                                               reported: dict[str, Path], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    forged = forged_copy(reported, tmp_path, change)
    capsys.readouterr()
    assert official_report(reported, forged, tmp_path / "r.json", "--key", str(reported["pub"])) == 2
    err = capsys.readouterr().err
    assert "fail validation" in err and ": signature: " in err, err
    assert not (tmp_path / "r.json").exists()
    # one definition: validate --key refuses the same record for the same reason
    assert main(["validate", str(forged), "--bundle", str(reported["bundle"]), "--official", "--key",
                 str(reported["pub"])]) == 2
    assert ": signature: " in capsys.readouterr().out


def test_report_official_key_refuses_records_re_signed_by_a_forger(reported: dict[str, Path], tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from gf01_formal.runs.record import RunRecord
    from gf01_formal.runs.signing import load_signer, sign

    assert main(["key", "new", "--kind", "signing", "-o", str(tmp_path / "forger.key")]) == 0

    def resign(rows: list[dict[str, Any]]) -> None:
        k = first(rows, "random")
        rows[k]["agent_meta"] = {"note": "relabelled"}
        rows[k] = sign(RunRecord.model_validate(rows[k]), load_signer(tmp_path / "forger.key")).to_json()

    forged = forged_copy(reported, tmp_path / "f", resign)
    capsys.readouterr()
    assert official_report(reported, forged, tmp_path / "r.json", "--key", str(reported["pub"])) == 2
    assert ": signature: " in capsys.readouterr().err


def test_report_official_refuses_a_free_play_run_as_validate_does(reported: dict[str, Path], tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A browser free-play run (an anonymous id, made after seeing golds) is never an official result: the report's
    gate refuses it as validation does, key or no key."""
    def free_play(rows: list[dict[str, Any]]) -> None:
        k = first(rows, "random")
        rekey(rows[k], AgentSpec("human", "EVAL-CB", {"participant_id": "anon-1f2e3d4c"}))
        rows[k]["agent_meta"] = {"participant_id": "anon-1f2e3d4c", "pilot_id": None, "consent_sha256": None,
                                 "session": "free"}
        rows[k]["renderer_track"], rows[k]["renderer_profile_id"] = "visual", "GF-01-R1"

    forged = forged_copy(reported, tmp_path, free_play)
    capsys.readouterr()
    assert official_report(reported, forged, tmp_path / "r.json") == 2
    assert "free play is never official" in capsys.readouterr().err


#: A program whose every play is its own (os.urandom): two evaluations of it give two signed records per run id.
COIN = '''
import json, os, sys
inputs = []
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "start":
        inputs, t = m["goal"]["inputs"], 0
    elif m["type"] == "observation":
        if m["done"]:
            continue
        t = m["t"] + 1
    else:
        break
    b = os.urandom(1)[0]
    print(json.dumps({"t": t, "set": {inputs[b % len(inputs)]: (b >> 4) & 1} if b & 8 else {}}), flush=True)
'''


def test_the_best_of_two_signed_evaluations_spliced_into_one_runs_file(tmp_path: Path,
                                                                       generated_bundle: Callable[..., Path]) -> None:
    """Red-team round 9: the same program evaluated twice, signed, in two runs files (the same run ids, each
    record signed); keeping each run's better record in one file passed ``validate --official --key``, every
    signature intact. Each signed record now names the signature of the record before it in its file
    (``previous_signature``)."""
    from gf01_formal.agents.sandbox import bwrap_problem

    if bwrap_problem() is not None:
        pytest.skip(f"no bubblewrap sandbox: {bwrap_problem()}")
    tmp_path.chmod(0o755)
    agent = tmp_path / "coin.py"
    agent.write_text(COIN)
    agent.chmod(0o644)
    bundle = generated_bundle(11, 3)
    assert main(["key", "new", "--kind", "signing", "-o", str(tmp_path / "evaluator.key")]) == 0
    files = []
    for name in ("a", "b"):
        runs = tmp_path / name / "runs.jsonl"
        runs.parent.mkdir(mode=0o755)
        assert main(["evaluate", str(bundle), "--agent-cmd", f"python3 {agent}", "-o", str(runs), "--sign-key",
                     str(tmp_path / "evaluator.key"), "--jobs", "1"]) == 0
        assert check_runs([runs], bundle=str(bundle), official=True, key=tmp_path / "evaluator.key.pub"
                          ).violations == []
        files.append(rows_of(runs))
    a, b = files
    assert [r["run_id"] for r in a] == [r["run_id"] for r in b] and a != b
    assert a[0]["previous_signature"] == "" and all(r["previous_signature"] == p["signature"]["sig"]
                                                    for p, r in itertools.pairwise(a))
    # best of two, by the report's key: the first record from one file, the rest from the other
    spliced = [a[0], *b[1:]]
    best, again = tmp_path / "best.jsonl", tmp_path / "again.jsonl"
    best.write_text("".join(json.dumps(r) + "\n" for r in spliced))
    found = check_runs([best], bundle=str(bundle), official=True, key=tmp_path / "evaluator.key.pub").violations
    assert {(v.line, v.field) for v in found} == {(2, "previous_signature")}, found
    # the chain is over the signatures, not the lines' bytes: the same records written again as plain JSON pass
    again.write_text("".join(json.dumps(r, indent=1).replace("\n", "") + "\n" for r in a))
    assert check_runs([again], bundle=str(bundle), official=True, key=tmp_path / "evaluator.key.pub"
                      ).violations == []
