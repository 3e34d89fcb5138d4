"""A sealed private split (DEC-054, docs/release.md): the README's kind of workflow (generate and split with a key,
campaign, release package) makes a public package that passes `release check`; an attacker holding only that
package regenerates no private_eval instance from any seed and cfg in it and finds no private certificate, gold or
key; the key holder regenerates everything bit for bit; a package with any of those planted fails, naming it."""

from __future__ import annotations

import base64
import gzip
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from pages import drawn_once

from gf01_formal.artifacts import read_json, write_json_atomic
from gf01_formal.cli import main
from gf01_formal.instances.generator import GenConfig, generate, generate_slot
from gf01_formal.instances.io import load_bundle
from gf01_formal.instances.keys import key_commitment, read_key, sealed_id
from gf01_formal.instances.splits import split_bundle
from gf01_formal.report.release import check, failed_names
from hoa.errors import Gf01Error

SMALL = {"families": [{"kind": "random_mealy", "states": [3, 6], "inputs": [2, 3], "outputs": [1, 2]}],
         "horizon": [6, 10]}
SEED, COUNT = 11, 12


@pytest.fixture(scope="module", autouse=True)
def pages() -> Iterator[dict[str, int]]:
    """Each report's HTML page drawn once in this module (tests/pages.py): the campaign's page of the holder's
    report is asked again by the package's holder check, which compares it with the release's report.html."""
    with drawn_once() as counts:
        yield counts


@pytest.fixture(scope="module")
def workflow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """generate --key-file, split --key-file --release, campaign (full panel, with the manifest), release package."""
    d = tmp_path_factory.mktemp("sealed")
    (d / "key").write_text("a publisher's secret split key, 2026\n")
    (d / "cfg.json").write_text(json.dumps(SMALL))
    assert main(["generate", "--seed", str(SEED), "--count", str(COUNT), "--cfg", str(d / "cfg.json"), "--key-file",
                 str(d / "key"), "--jobs", "1", "-o", str(d / "bundle.json")]) == 0
    assert main(["split", str(d / "bundle.json"), "-o", str(d / "split.json"), "--manifest", str(d / "m.json"),
                 "--key-file", str(d / "key"), "--release", str(d / "rel")]) == 0
    assert main(["campaign", str(d / "split.json"), "-o", str(d / "rel"), "--manifest",
                 str(d / "rel" / "split_manifest.json"), "--jobs", "1"]) == 0
    assert main(["release", "package", str(d / "rel"), "-o", str(d / "pkg")]) == 0
    return d


def private_hashes(d: Path) -> set[str]:
    man = read_json(d / "split.json")
    return {i["content_hash"] for i in man["instances"] if i["split_id"] == "private_eval"}


def test_the_public_package_passes_and_holds_no_private_run(workflow: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    pkg = workflow / "pkg"
    made = json.loads((pkg / "package.json").read_text())
    assert made["kind"] == "public"
    # The package's HTML page reproduced when it was made (package() checks the public artifacts before writing
    # them); the command line's check runs on a copy without it, whose figures it would draw again.
    reproduced = next(c for c in made["checks"]["checks"] if c["name"] == "reproduction")
    assert made["checks"]["ok"] and reproduced["files"]["report.html"] == "identical"
    tables = tmp_path / "pkg"
    shutil.copytree(pkg, tables)
    (tables / "artifacts" / "report.html").unlink()
    assert main(["release", "check", str(tables)]) == 0
    split = load_bundle(workflow / "split.json")
    private_ids = {i.instance_id for i in split.instances if i.split_id == "private_eval"}
    assert private_ids and all(i.startswith("gf01p-") for i in private_ids)  # opaque ids, as agents see them
    runs = [json.loads(line) for line in (pkg / "artifacts" / "runs.jsonl").read_text().splitlines()]
    assert runs and not {r["instance_id"] for r in runs} & private_ids
    assert {r["split_id"] for r in runs} == {"public_dev", "public_val"}
    results = read_json(pkg / "artifacts" / "private_eval.results.json")
    key = read_key(workflow / "key")
    assert results["commitments"]["key_commitment"] == key_commitment(key)
    assert results["groups"] and all(g["key"]["split_id"] == "private_eval" for g in results["groups"])
    # The holder's release directory itself is not publishable: its private runs are named. (Checked without its
    # HTML page, whose figures a check would draw again: the package's check above compared it.)
    rel = tmp_path / "rel"
    shutil.copytree(workflow / "rel", rel)
    (rel / "report.html").unlink()
    assert main(["release", "check", str(rel)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "private run record" in err and "private side file" in err
    assert main(["release", "check", str(rel), "--holder"]) == 0


def test_an_attacker_with_the_package_regenerates_no_private_instance(workflow: Path) -> None:
    pkg = workflow / "pkg"
    private = private_hashes(workflow)
    texts = {p: p.read_bytes() for p in pkg.rglob("*") if p.is_file()}
    bundles = [read_json(p) for p in texts if p.name.endswith("bundle.json")]
    assert bundles
    cfgs = {json.dumps(b["cfg"], sort_keys=True) for b in bundles if b.get("cfg")}
    seeds = {b["seed"] for b in bundles if b.get("seed") is not None}
    slots = {(i["meta"]["seed"], i["meta"]["slot"]) for b in bundles for i in b["instances"]}
    assert seeds == {SEED} and len(cfgs) == 1 and slots
    cfg = GenConfig.model_validate(json.loads(cfgs.pop()))
    regenerated: set[str] = set()
    for s in seeds | {seed for seed, _ in slots}:  # every seed found, over every slot of the bundle size
        regenerated |= {i.content_hash for i in generate(s, COUNT, cfg).instances}
    public = {i["content_hash"] for b in bundles for i in b["instances"]}
    for seed, slot in slots:  # an instance's own seed regenerates that instance, and only it
        inst = generate_slot(seed, slot, cfg)
        assert inst.content_hash in public
        regenerated.add(inst.content_hash)
    assert private and not regenerated & private
    # No private certificate or gold: every record with one is on a public instance; and no key anywhere.
    key = read_key(workflow / "key")
    for p, data in texts.items():
        assert key not in data, p
    split = load_bundle(workflow / "split.json")
    private_bases = [json.dumps(i.base_trace, separators=(",", ":")) for i in split.instances
                     if i.split_id == "private_eval"]
    for p, data in texts.items():
        assert not any(b.encode() in data for b in private_bases if len(b) > 40), p


def test_a_guessed_private_instance_cannot_be_confirmed(workflow: Path) -> None:
    """The manifest and private_eval.hashes.json commit to the private instances under the key: a guess (the
    instance itself, from the public cfg say) gives a content hash that appears nowhere in the package, and its
    commitment cannot be computed without the key; the holder's key computes every one."""
    from gf01_formal.instances.splits import instance_commitment

    pkg = workflow / "pkg"
    split = load_bundle(workflow / "split.json")
    private = [i for i in split.instances if i.split_id == "private_eval"]
    texts = {p: p.read_bytes() for p in pkg.rglob("*") if p.is_file()}
    for inst in private:  # the guess right, character for character
        for p, data in texts.items():
            assert inst.content_hash.encode() not in data, p
    arts = pkg / "artifacts"
    key = read_key(workflow / "key")
    for name in ("split_manifest.json", "private_eval.hashes.json"):
        rows = [r for r in read_json(arts / name)["instances"] if r.get("split_id", "private_eval") == "private_eval"]
        assert rows and all("content_hash" not in r for r in rows)
        assert {r["commitment"] for r in rows} == {instance_commitment(key, i.content_hash) for i in private}
    other = b"a guessing attacker's key, 2026"
    assert not {instance_commitment(other, i.content_hash) for i in private} & {
        r["commitment"] for r in read_json(arts / "split_manifest.json")["instances"] if "commitment" in r}


def test_the_key_holder_regenerates_everything_bit_for_bit(workflow: Path) -> None:
    key = read_key(workflow / "key")
    again = generate(SEED, COUNT, GenConfig.model_validate(SMALL), key=key)
    assert again == load_bundle(workflow / "bundle.json")
    split, manifest = split_bundle(again, key)
    assert split == load_bundle(workflow / "split.json")
    assert manifest.model_dump(mode="json") == read_json(workflow / "m.json")
    private = [i for i in split.instances if i.split_id == "private_eval"]
    assert all(i.instance_id == sealed_id(key, i.content_hash) for i in private)


def plant(pkg: Path, tmp: Path, what: str, workflow: Path) -> Path:
    bad = tmp / what
    shutil.copytree(pkg, bad)
    arts = bad / "artifacts"
    # Without the HTML page, whose figures a check would draw again (nearly all of its time); the sealing scan reads
    # every other file as before, and the whole package passes (test_the_public_package_passes_...).
    (arts / "report.html").unlink()
    if what == "private instance content":
        shutil.copyfile(workflow / "split.json", arts / "bundle.json")
    elif what == "private run record":
        line = next(x for x in (workflow / "rel" / "runs.jsonl").read_text().splitlines()
                    if json.loads(x)["split_id"] == "private_eval")
        with (arts / "runs.jsonl").open("a") as fh:
            fh.write(line + "\n")
    elif what == "private certificate or gold":
        split = read_json(workflow / "split.json")
        inst = next(i for i in split["instances"] if i["split_id"] == "private_eval")
        write_json_atomic(arts / "notes.json", {"instance_id": inst["instance_id"],
                                                "certificate": inst["certification"]["oracle_certificate"]})
    elif what == "private side file":
        rec = next(json.loads(x) for x in (workflow / "rel" / "runs.jsonl").read_text().splitlines()
                   if json.loads(x)["split_id"] == "private_eval" and json.loads(x)["tool_log_hash"])
        src = next((workflow / "rel" / "runs.jsonl.d").rglob(f"{rec['tool_log_hash']}.jsonl"))
        shutil.copyfile(src, arts / "runs.jsonl.d" / "tool-logs" / src.name)
    elif what == "split key":
        shutil.copyfile(workflow / "key", arts / "split.key")
    elif what == "split key in JSON":
        write_json_atomic(arts / "notes.json", {"reminder": (workflow / "key").read_text().strip()})
    elif what == "private instance content in a text line":
        inst = next(i for i in read_json(workflow / "split.json")["instances"] if i["split_id"] == "private_eval")
        (arts / "NOTES.md").write_text(f"# Notes\n\nthe hard one: {json.dumps(inst)} (keep)\n")
    elif what == "private instance content gzipped":
        (arts / "extra.dat").write_bytes(gzip.compress((workflow / "split.json").read_bytes(), mtime=0))
    elif what == "private instance content base64'd in JSON":
        inst = next(i for i in read_json(workflow / "split.json")["instances"] if i["split_id"] == "private_eval")
        write_json_atomic(arts / "notes.json", {"attachment": base64.b64encode(json.dumps(inst).encode()).decode()})
    elif what == "split key in hex":
        (arts / "notes.txt").write_text(f"checksum {(workflow / 'key').read_bytes().strip().hex()}\n")
    elif what == "unlisted file":
        (bad / "extra.txt").write_text("nothing secret, but nothing vouches for it either\n")
    elif what == "generator inputs":
        unkeyed = generate(SEED, 3, GenConfig.model_validate(SMALL))
        write_json_atomic(arts / "extra.bundle.json", unkeyed.model_dump(mode="json"))
    return bad


@pytest.mark.parametrize("what", ["private instance content", "private run record", "private certificate or gold",
                                  "private side file", "split key", "split key in JSON", "generator inputs",
                                  "private instance content in a text line", "private instance content gzipped",
                                  "private instance content base64'd in JSON", "split key in hex", "unlisted file"])
def test_a_planted_leak_fails_the_check_naming_it(workflow: Path, tmp_path: Path, what: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = plant(workflow / "pkg", tmp_path, what, workflow)
    result = check(bad)
    sealing = next(c for c in result["checks"] if c["name"] == "sealing")
    assert not result["ok"] and not sealing["ok"]
    kind = what if what == "unlisted file" else " ".join(what.split()[:3 if what.startswith("private") else 2])
    assert any(leak.startswith(kind) for leak in sealing["leaks"]), sealing["leaks"]
    # What `gf01 release check` prints of this result; the command line itself in one case (a second whole check
    # per case otherwise; test_the_public_package_passes_and_holds_no_private_run runs it on the holder's release).
    assert f"sealing (the release leaks the private split: {kind}" in failed_names(result)
    if what == "private run record":
        capsys.readouterr()
        assert main(["release", "check", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"sealing (the release leaks the private split: {kind}" in err


def test_split_refuses_an_unkeyed_bundle_and_an_impossible_size(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "key").write_text("a publisher's secret split key, 2026\n")
    (tmp_path / "cfg.json").write_text(json.dumps(SMALL))
    assert main(["generate", "--seed", "3", "--count", "7", "--cfg", str(tmp_path / "cfg.json"), "--jobs", "1",
                 "-o", str(tmp_path / "b.json")]) == 0
    capsys.readouterr()
    out = ["-o", str(tmp_path / "s.json"), "--manifest", str(tmp_path / "m.json"), "--release", str(tmp_path / "r")]
    assert main(["split", str(tmp_path / "b.json"), *out, "--key-file", str(tmp_path / "key")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "generated without a key: its public seed 3" in err
    n = len(load_bundle(tmp_path / "b.json").instances)
    assert n in (6, 7)  # SMALL fills every slot; either way no split of n meets the policy
    assert main(["split", str(tmp_path / "b.json"), *out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"a split of {n} instance(s) cannot meet gf01.split_policy.v1" in err
    assert "the smallest sizes that can are 5 and any n >= 9" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "cfg.json", "key"]  # nothing written


@pytest.mark.parametrize("n", [11, 12, 13, 17, 22])
def test_sizes_the_pattern_missed_now_meet_the_policy(n: int) -> None:
    from gf01_formal.instances.splits import TARGETS, TOLERANCE, split_counts

    counts = split_counts(n)
    assert counts is not None and sum(counts) == n
    assert all(abs(c / n - t) <= TOLERANCE for c, t in zip(counts, TARGETS.values(), strict=True))


def test_release_check_refuses_the_core_panel(workflow: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["release", "check", str(workflow / "pkg"), "--panel", "core"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "DEC-056 requires the full panel" in err
    with pytest.raises(Gf01Error, match="smoke checks"):
        check(workflow / "pkg", panel="core")


def test_a_reveal_is_checked_against_the_commitments(workflow: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    args = ["release", "reveal", str(workflow / "pkg"), "--bundle", str(workflow / "split.json")]
    capsys.readouterr()
    assert main([*args, "--key-file", str(workflow / "key"), "--runs", str(workflow / "rel" / "runs.jsonl")]) == 0
    (tmp_path / "other").write_text("not the key that sealed this release\n")
    assert main([*args, "--key-file", str(tmp_path / "other")]) == 2
    assert "commitments: key, private_bundle, sealed_ids" in capsys.readouterr().err
    runs = (workflow / "rel" / "runs.jsonl").read_text().splitlines()
    drop = next(k for k, line in enumerate(runs) if json.loads(line)["split_id"] == "private_eval")
    (tmp_path / "runs.jsonl").write_text("\n".join(runs[:drop] + runs[drop + 1:]) + "\n")  # one withheld
    assert main([*args, "--key-file", str(workflow / "key"), "--runs", str(tmp_path / "runs.jsonl")]) == 2
    assert "commitments: private_runs" in capsys.readouterr().err


def test_the_public_report_is_against_the_public_rows(workflow: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    arts = workflow / "pkg" / "artifacts"
    assert "Required full panel (random, greedy, search, tool, oracle): complete." in (arts / "report.md").read_text()
    bad = tmp_path / "pkg"
    shutil.copytree(workflow / "pkg", bad)
    pub = read_json(bad / "artifacts" / "public_split_manifest.json")
    write_json_atomic(bad / "artifacts" / "public_split_manifest.json", {**pub, "instances": pub["instances"][1:]})
    capsys.readouterr()
    assert main(["release", "check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not hold exactly the public rows of split_manifest.json" in err
