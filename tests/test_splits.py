"""Split governance: keyed, stratified assignment at 0.20/0.20/0.60, manifest, policy check, release layout."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from corpus import corpus_path, needs_corpus

from gf01_formal.cli import main
from gf01_formal.instances.io import load_bundle, save_artifact
from gf01_formal.instances.model import (
    Complexity,
    Instance,
    Knob,
    Meta,
    System,
    TableSystem,
    make_bundle,
    make_instance,
)
from gf01_formal.instances.splits import (
    PUBLIC_KEY,
    TARGETS,
    assign,
    policy_check,
    read_key,
    split_bundle,
    stratum,
)
from hoa.errors import Gf01Error

PEER_MANIFEST = corpus_path("peer", "split_manifest_v1.json")


def synthetic(n: int) -> list[Instance]:
    """n distinct small instances spread over modes and z bands (the split rule reads only ids, modes and z)."""
    system = System(kind="table", inputs=["a"], outputs=["o"],
                    table=TableSystem(states=["s"], initial=0, next=[[0, 0]], out=[[0, 1]]))
    out = []
    for k in range(n):
        z = (k % 7) / 7
        knob = Knob(raw=1, norm=z)
        cx = Complexity(scales="test", states=knob, inputs=knob, outputs=knob, transitions=knob, horizon=knob,
                        effect_depth=knob, oracle_eff_t=knob, gold_count=knob, z=z, window=1)
        out.append(make_instance(
            system=system, base_trace=[{"a": (k >> b) & 1} for b in range(10)], effect="o", t_star=9,
            mode="normal" if k % 3 == 0 else "hard", window=1, budget_t=1, budget_a=1,
            complexity=cx, meta=Meta(generator_version="test", provenance="generated", id_scheme="content"),
        ))
    return out


def test_assignment_hits_the_targets_per_stratum_and_overall():
    insts = synthetic(300)
    labels = assign(insts, PUBLIC_KEY)
    counts = Counter(labels.values())
    for split, target in TARGETS.items():
        assert abs(counts[split] / 300 - target) <= 1 / 300 + 1e-9
    by_stratum: dict[str, Counter] = {}
    for inst in insts:
        by_stratum.setdefault(stratum(inst), Counter())[labels[inst.instance_id]] += 1
    assert len(by_stratum) >= 6
    for c in by_stratum.values():
        n = sum(c.values())
        for split, target in TARGETS.items():
            assert abs(c[split] - target * n) < 2  # a window of the period-5 pattern


def test_assignment_is_keyed_and_order_independent(tmp_path):
    insts = synthetic(100)
    a = assign(insts, PUBLIC_KEY)
    assert assign(list(reversed(insts)), PUBLIC_KEY) == a
    key = tmp_path / "k"
    key.write_bytes(b"a private key of enough bytes\n")
    b = assign(insts, read_key(key))
    assert b != a and Counter(b.values()) == Counter(a.values())
    key.write_bytes(b"short")
    with pytest.raises(Gf01Error, match="at least 16 bytes"):
        read_key(key)


def test_policy_check_names_the_offending_split():
    bundle = make_bundle(synthetic(50), generator_version="test", provenance="test")
    _, man = split_bundle(bundle, PUBLIC_KEY)
    data = man.model_dump(mode="json")
    report = policy_check(data)
    assert set(report["splits"]) == set(TARGETS)
    for entry in [e for e in data["instances"] if e["split_id"] == "private_eval"][:8]:
        entry["split_id"] = "public_val"
    with pytest.raises(Gf01Error, match="split public_val: fraction") as ei:
        policy_check(data)
    assert ei.value.field == "public_val"
    data["instances"][0]["split_id"] = "holdout"
    with pytest.raises(Gf01Error, match="Input should be 'public_dev'") as ei:
        policy_check(data)
    assert ei.value.field == "instances.0.split_id"


@needs_corpus
def test_peer_manifest_is_checked_too(capsys):
    assert main(["split-policy-check", str(PEER_MANIFEST)]) == 2
    err = capsys.readouterr().err
    assert "split public_dev: fraction 1.000 (4/4)" in err


def test_split_cli_manifest_and_release(tmp_path, capsys):
    src = tmp_path / "b.json"
    save_artifact(src, make_bundle(synthetic(40), generator_version="test", provenance="test"))
    out, man, rel = tmp_path / "s.json", tmp_path / "m.json", tmp_path / "rel"
    assert main(["split", str(src), "-o", str(out), "--manifest", str(man), "--release", str(rel)]) == 0
    assert "public default split key" in capsys.readouterr().err
    split = load_bundle(out)
    labels = {i.instance_id: i.split_id for i in split.instances}
    assert main(["split-policy-check", str(man)]) == 0
    manifest = json.loads(man.read_text())
    assert manifest["public_key"] is True and manifest["source_bundle_hash"] == split.instances_hash
    assert {e["instance_id"]: e["split_id"] for e in manifest["instances"]} == labels
    # The release: public splits as bundles, private_eval as hashes only (no system, no trace).
    dev = load_bundle(rel / "public_dev.bundle.json")
    val = load_bundle(rel / "public_val.bundle.json")
    assert {i.split_id for i in dev.instances} == {"public_dev"} and {i.split_id for i in val.instances} == {
        "public_val"}
    private = json.loads((rel / "private_eval.hashes.json").read_text())
    ids = [e["instance_id"] for e in private["instances"]]
    assert sorted(ids) == sorted(k for k, v in labels.items() if v == "private_eval")
    assert all(set(e) == {"instance_id", "commitment"} for e in private["instances"])  # keyed, never the hash
    texts = "".join(p.read_text() for p in rel.iterdir())
    by_id = {i.instance_id: i for i in split.instances}
    for pid in ids:
        assert json.dumps(by_id[pid].base_trace) not in texts or all(
            by_id[pid].base_trace != i.base_trace for i in [*dev.instances, *val.instances])
    assert sorted(p.name for p in rel.iterdir()) == ["private_eval.hashes.json", "public_dev.bundle.json",
                                                     "public_val.bundle.json", "split_manifest.json"]
