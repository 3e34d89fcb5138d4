"""The whole play layer from the command line, as a user runs it: generate a small bundle, evaluate the five
baselines of the DEC-056 full panel and the example external agent, validate the records under the publication
rules, and re-verify every certificate from the records alone (the bundle and the recorded certificate, through
`gf01 verify --certs`, never the runs' own scores)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gf01_formal.agents import PANELS
from gf01_formal.cli import main

ROOT = Path(__file__).resolve().parent.parent
PANEL = list(PANELS["full"])
SCORES = ("suff", "min1", "valid", "goal", "eff_t", "eff_a", "score_c", "kappa")
SCORE_FIELDS = (*SCORES, "within_budget", "ap_precision", "ap_recall", "ap_f1", "ts_precision", "ts_recall", "ts_f1",
                "best_match_gold", "gold_set")


def test_generate_evaluate_validate_and_reverify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle, runs = tmp_path / "bundle.json", tmp_path / "runs.jsonl"
    # Seed 12: instances whose best matches over M(I) take milliseconds. Seed 11's bundle holds one whose best match
    # of a random 4-atom certificate takes ~16 s (listing a huge DEC-025 tie class; docs/performance.md), paid three
    # times here (evaluate, validate, verify): a cost issue 23 tracks, not what this test checks. Two instances (was
    # four, the first two the same): a normal-mode traffic light and a hard-mode random table, both modes and both
    # kinds of system as before; every step of the chain runs on each of the six agents' runs alike.
    # --jobs 1: the default pool of 2 spawns two interpreters and a resource tracker for two slots (about 1.5 s of
    # CPU); the bundle's bytes do not depend on it (tests/test_generator.py), nor does anything checked below.
    assert main(["generate", "--seed", "12", "--count", "2", "--jobs", "1", "-o", str(bundle)]) == 0
    ids = [i["instance_id"] for i in json.loads(bundle.read_text())["instances"]]
    agents = [arg for name in PANEL for arg in ("--agent", name)]
    example = f"{sys.executable} {ROOT / 'examples' / 'agent_example.py'}"
    assert main(["evaluate", str(bundle), *agents, "--agent-cmd", example, "-o", str(runs)]) == 0
    capsys.readouterr()

    records = [json.loads(line) for line in runs.read_text().splitlines()]
    assert len(records) == len(ids) * (len(PANEL) + 1) and len({r["run_id"] for r in records}) == len(records)
    assert {r["status"] for r in records} == {"completed"}
    played = {(r["agent_name"], r["instance_id"]) for r in records}
    assert played == {(a, i) for a in [*PANEL, "cmd"] for i in ids}
    assert all(r["score_c"] == 1 for r in records if r["agent_name"] == "oracle")  # the ceiling

    assert main(["validate", str(runs), "--bundle", str(bundle), "--official", "--json"]) == 0
    capsys.readouterr()

    certs = tmp_path / "certs.jsonl"
    certs.write_text("".join(json.dumps({"instance_id": r["instance_id"], "certificate": r["certificate"]}) + "\n"
                             for r in records))
    assert main(["verify", str(bundle), "--certs", str(certs), "--best-match", "--json"]) == 0
    checked = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(checked) == len(records)
    for record, again in zip(records, checked, strict=True):
        assert again["instance_id"] == record["instance_id"]
        # One score type: verify --certs --best-match gives every score column of the record, by the record's name.
        assert {k: again[k] for k in SCORE_FIELDS} == {k: record[k] for k in SCORE_FIELDS}, record["run_id"]
        assert again["certificate_errors"] == record["certificate_errors"]
