"""Smoke tests and subsets (issue 31): ``gf01 bundle subset`` writes a bundle every command takes (its own instances
hash), ``--limit N`` plays a bundle's first N instances in evaluate and campaign, and a later run without the limit
plays only the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gf01_formal.cli import main
from gf01_formal.instances.io import load_bundle


def ids_of(path: Path) -> list[str]:
    return [i.instance_id for i in load_bundle(path).instances]


def test_a_subset_is_a_valid_bundle_of_the_instances_asked_for(small_bundle: Path, tmp_path: Path) -> None:
    every = ids_of(small_bundle)
    first = tmp_path / "first.json"
    assert main(["bundle", "subset", str(small_bundle), "--count", "3", "-o", str(first)]) == 0
    art = load_bundle(first)  # every check, the instances hash included
    assert [i.instance_id for i in art.instances] == every[:3]
    assert art.instances_hash != load_bundle(small_bundle).instances_hash and "subset of bundle" in art.provenance
    named = tmp_path / "named.json"
    assert main(["bundle", "subset", str(small_bundle), "--ids", f"{every[5]},{every[1]}", "--ids", every[5], "-o",
                 str(named)]) == 0
    assert ids_of(named) == [every[1], every[5]]  # the bundle's order, each once
    runs = tmp_path / "runs.jsonl"
    assert main(["evaluate", str(named), "--agent", "random", "-o", str(runs)]) == 0
    assert main(["validate", str(runs), "--bundle", str(named), "--official"]) == 0


@pytest.mark.parametrize(("args", "needle"), [
    (["--count", "2", "--ids", "x"], "one of them"),
    ([], "one of them"),
    (["--ids", "gf01f-nope"], "no instance 'gf01f-nope'"),
    (["--ids", " , "], "names no instance"),
    (["--count", "99"], "fewer than 99"),
])
def test_a_subset_that_cannot_be_made_is_one_line(small_bundle: Path, tmp_path: Path, capsys: Any, args: list[str],
                                                  needle: str) -> None:
    out = tmp_path / "s.json"
    assert main(["bundle", "subset", str(small_bundle), *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and needle in err and not out.exists()


def test_evaluate_limit_plays_the_first_instances_and_the_rest_later(small_bundle: Path, tmp_path: Path) -> None:
    every = ids_of(small_bundle)
    runs = tmp_path / "runs.jsonl"
    assert main(["evaluate", str(small_bundle), "--agent", "random", "--agent", "greedy", "--limit", "2", "-o",
                 str(runs)]) == 0
    first = [json.loads(x) for x in runs.read_text().splitlines()]
    assert len(first) == 4 and {r["instance_id"] for r in first} == set(every[:2])
    assert main(["evaluate", str(small_bundle), "--agent", "random", "--agent", "greedy", "-o", str(runs),
                 "--json"]) == 0
    rows = [json.loads(x) for x in runs.read_text().splitlines()]
    assert len(rows) == 2 * len(every) and len({r["run_id"] for r in rows}) == len(rows)


def test_campaign_limit_is_a_smoke_test_of_the_first_instances(small_bundle: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "c"
    assert main(["campaign", str(small_bundle), "--agents", "random", "--limit", "1", "--jobs", "1", "-o",
                 str(out)]) == 0
    said = capsys.readouterr().out
    # the ending in plain words (issue 31: it was "pilot analysis: keep_coefficients"), and where the details are
    assert "pilot analysis: the instances" in said and "_coefficients" not in said and "analysis.json" in said
    rows = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert [r["instance_id"] for r in rows] == ids_of(small_bundle)[:1]
    assert json.loads((out / "campaign.json").read_text())["limit"] == 1
