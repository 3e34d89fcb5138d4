"""The instance and bundle artifacts: content hash, loading checks that name the field, bundles with --id, schemas."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gf01_formal.artifacts import read_json, sha256_hex
from gf01_formal.instances.families.arbiters import arbiter_hoa
from gf01_formal.instances.io import instance_problem, load_bundle, load_set, save_artifact
from gf01_formal.instances.model import (
    CONTENT_FIELDS,
    Instance,
    Meta,
    System,
    TableSystem,
    content_of,
    make_bundle,
    make_instance,
)
from gf01_formal.instances.sources import open_instance
from hoa.errors import Gf01Error
from hoa.label import evaluate

ROOT = Path(__file__).resolve().parent.parent
META = Meta(generator_version="test", provenance="generated", id_scheme="content")


def table_system() -> System:
    # Two states; input a moves 0 -> 1, output o is 1 exactly on the transition taken in state 1.
    return System(kind="table", inputs=["a"], outputs=["o"],
                  table=TableSystem(states=["s0", "s1"], initial=0, next=[[0, 1], [0, 1]], out=[[0, 0], [1, 1]]))


def task(**over) -> dict:
    base = dict(
        system=table_system(),
        base_trace=[{"a": 0}, {"a": 0}, {"a": 0}],
        effect="o",
        t_star=2,
        mode="hard",
        window=1,
        budget_t=2,
        budget_a=2,
        meta=META,
    )
    base.update(over)
    return base


def test_content_hash_covers_the_task_fields_only():
    a = make_instance(**task())
    assert a.content_hash == sha256_hex(content_of(a.model_dump(mode="json")))
    assert a.instance_id == "gf01f-" + a.content_hash[:16]
    assert set(CONTENT_FIELDS) == {"system", "base_trace", "effect", "t_star", "mode", "window", "budget_t",
                                   "budget_a"}
    # Split and meta do not change the identity; a task field does.
    b = make_instance(**task(split_id="public_val", meta=META.model_copy(update={"seed": 9})))
    assert b.instance_id == a.instance_id
    assert make_instance(**task(t_star=1)).instance_id != a.instance_id


def test_round_trip_and_problem(tmp_path):
    inst = make_instance(**task())
    path = tmp_path / "i.json"
    save_artifact(path, inst)
    assert json.loads(path.read_text()) == inst.model_dump(mode="json")
    again = open_instance(path)[0]
    assert again == inst
    p = instance_problem(again)
    assert p.trace == (0, 0, 0) and p.t_star == 2 and p.budget_t == 2
    assert inst.system.inputs == ["a"] and inst.system.outputs == ["o"]
    _, outs = p.system.run(p.apply([(1, 0, 1)]))
    assert evaluate(p.effect, outs[2])


def write_raw(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    return path


def rehashed(data: dict) -> dict:
    """The instance dict with its hash and id recomputed (so that the semantic checks are reached)."""
    digest = sha256_hex(content_of(data))
    return {**data, "content_hash": digest, "instance_id": "gf01f-" + digest[:16]}


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda d: d["base_trace"][1].update({"zz": 1}), "base_trace", "unknown input 'zz'"),
        (lambda d: d.update(effect="o & nope"), "effect", "unknown name 'nope'"),
        (lambda d: d.update(t_star=3), "t_star", "outside [0, 2]"),
        (lambda d: d.update(window=9), "window", "outside [0, 6]"),  # w(I) <= w_max = 6 even when T < 6
        (lambda d: d.update(budget_t=0), "budget_t", "outside [1, 3]"),
        (lambda d: d.update(budget_a=4), "budget_a", "outside [1, 3]"),
        (lambda d: d["system"]["table"].update(next=[[0, 5], [0, 1]]), "system.table.next", "out of range"),
        (lambda d: d["system"]["table"].update(next=[[0, 10**30], [0, 1]]), "system.table.next", "out of range"),
        (lambda d: d["system"]["table"].update(next=[[0], [0, 1]]), "system.table.next", "1 entries, one per input"),
        (lambda d: d["system"].update(outputs=["a"]), "system", "'a' is named twice"),
    ],
)
def test_bad_fields_are_refused_naming_the_field(tmp_path, edit, field, message):
    data = make_instance(**task()).model_dump(mode="json")
    edit(data)
    path = write_raw(tmp_path, rehashed(data))
    with pytest.raises(Gf01Error, match=re.escape(message)) as ei:
        open_instance(path)[0]
    assert ei.value.field == field
    assert ei.value.file == str(path)


def test_input_incomplete_hoa_system_is_refused(tmp_path):
    text = arbiter_hoa(2, "priority").replace("[!0 & !1 & !2 & !3] 0\n", "")
    system = System(kind="hoa", inputs=["r0", "r1"], outputs=["g0", "g1"], hoa=text)
    inst = make_instance(**task(system=system, base_trace=[{"r0": 0, "r1": 0}] * 3, effect="g0"))
    path = tmp_path / "inc.json"
    save_artifact(path, inst)
    with pytest.raises(Gf01Error, match="not input-complete: state idle has no edge for input r0=0 r1=0") as ei:
        open_instance(path)[0]
    assert ei.value.field == "system"


def test_hash_and_id_mismatch_are_refused(tmp_path):
    data = make_instance(**task()).model_dump(mode="json")
    data["t_star"] = 1  # edited after hashing
    with pytest.raises(Gf01Error, match="hash mismatch") as ei:
        open_instance(write_raw(tmp_path, data))[0]
    assert ei.value.field == "content_hash"
    data = rehashed(data)
    data["instance_id"] = "gf01f-0000000000000000"
    with pytest.raises(Gf01Error, match="does not match its content") as ei:
        open_instance(write_raw(tmp_path, data))[0]
    assert ei.value.field == "instance_id"


def test_pydantic_errors_name_the_field(tmp_path):
    data = make_instance(**task()).model_dump(mode="json")
    data["mode"] = "easy"
    with pytest.raises(Gf01Error) as ei:
        open_instance(write_raw(tmp_path, data))[0]
    assert ei.value.field == "mode"
    with pytest.raises(Gf01Error, match="unknown schema_version"):
        open_instance(write_raw(tmp_path, {"schema_version": "nope"}))[0]


def test_bundle_pick_by_id(tmp_path):
    a, b = make_instance(**task()), make_instance(**task(t_star=1))
    path = tmp_path / "b.json"
    save_artifact(path, make_bundle([a, b], generator_version="test", provenance="test"))
    assert open_instance(path, b.instance_id)[0] == b
    assert [i.instance_id for i in list(load_set(path, check_all=True).instances)] == [a.instance_id, b.instance_id]
    with pytest.raises(Gf01Error, match="holds 2 instances: pick one with --id ID") as ei:
        open_instance(path)[0]
    assert a.instance_id in str(ei.value)
    with pytest.raises(Gf01Error, match="no instance 'x'"):
        open_instance(path, "x")[0]
    single = tmp_path / "one.json"
    save_artifact(single, make_bundle([a], generator_version="test", provenance="test"))
    assert open_instance(single)[0] == a


def test_bundle_hash_over_instances_is_checked(tmp_path):
    a = make_instance(**task())
    data = make_bundle([a], generator_version="test", provenance="test").model_dump(mode="json")
    data["instances"][0]["split_id"] = "public_dev"  # not a content field, but covered by the bundle hash
    with pytest.raises(Gf01Error, match="hash over the instances") as ei:
        load_set(write_raw(tmp_path, data)).instances[0]
    assert ei.value.field == "instances_hash"
    dup = make_bundle([a, a], generator_version="test", provenance="test").model_dump(mode="json")
    with pytest.raises(Gf01Error, match="occurs more than once"):
        load_set(write_raw(tmp_path, dup)).instances[0]


def test_committed_json_schemas_match_the_code():
    from gf01_formal import schemas

    docs = schemas.documents()
    assert sorted(p.name for p in (ROOT / "docs" / "schemas").glob("*.json")) == sorted(docs)
    for name, doc in docs.items():
        assert read_json(ROOT / "docs" / "schemas" / name) == doc, f"docs/schemas/{name} is stale: gf01 export-schemas"
    Instance.model_json_schema()  # exported from the same models the loader validates with


def test_picking_from_a_bundle_checks_the_picked_instance(tmp_path):
    good = make_instance(**task())
    bad = make_instance(**task(t_star=1)).model_dump(mode="json")
    bad["effect"] = "nope"
    bad = Instance.model_validate(rehashed(bad))
    path = tmp_path / "b.json"
    save_artifact(path, make_bundle([good, bad], generator_version="test", provenance="test"))
    assert open_instance(path, good.instance_id)[0] == good
    with pytest.raises(Gf01Error, match="unknown name 'nope'"):
        open_instance(path, bad.instance_id)[0]
    with pytest.raises(Gf01Error, match="unknown name 'nope'"):
        load_bundle(path)
