"""Importers: the peer's gf01.instance_bundle.v1 (same answers as its run records) and instances from Mealy HOA."""

from __future__ import annotations

import json

import pytest
from corpus import corpus_path, needs_corpus

from gf01_formal.cli import main
from gf01_formal.instances.families.arbiters import arbiter_hoa
from gf01_formal.instances.families.counters import counter_hoa
from gf01_formal.instances.io import instance_problem, load_bundle
from gf01_formal.instances.peer import import_peer_bundle
from gf01_formal.instances.sources import InstanceOptions, instance_from_hoa, open_instance
from gf01_formal.scoring.certificates import certificate_from_json
from hoa.errors import Gf01Error
from solvers import api

PEER = corpus_path("peer")
BUNDLE = PEER / "instance_bundle_v1.json"


@pytest.fixture(scope="module")
def peer_raw() -> dict:
    return json.loads(BUNDLE.read_text())


@pytest.fixture(scope="module")
def peer_ours():
    return import_peer_bundle(BUNDLE)


@needs_corpus
def test_peer_ids_fields_and_tables_are_kept(peer_raw, peer_ours):
    assert [i.instance_id for i in peer_ours.instances] == [r["instance_id"] for r in peer_raw["instances"]]
    for rec, inst in zip(peer_raw["instances"], peer_ours.instances, strict=True):
        p = instance_problem(inst)
        aut = rec["automaton"]
        assert list(p.system.inputs) == aut["input_aps"] and list(p.system.outputs) == aut["output_aps"]
        assert (inst.t_star, inst.mode, inst.window) == (rec["t_star"], rec["mode"], rec["window_size"])
        assert (inst.budget_t, inst.budget_a) == (rec["budget_timestep"], rec["budget_atoms"])
        assert inst.effect == rec["effect_ap"] and inst.meta.id_scheme == "imported"
        assert inst.meta.source_fields["complexity"] == rec["complexity"]
        # Measured and certified by our solvers: the peer's optima are single atoms that the greedy baseline finds.
        cert = inst.certification
        assert (cert.oracle_eff_t, cert.oracle_eff_a, cert.greedy_valid) == (1, 1, True)
        assert cert.gold_count == api.count(p, p.budget_t) and inst.complexity is not None
        # Every table cell steps exactly as the peer's transition record says.
        for q, s in enumerate(aut["states"]):
            for key, cell in aut["transitions"][s].items():
                x = sum(int(part.split("=")[1]) << i for i, part in enumerate(key.split("|")))
                nq, y = p.system.step(q, x)
                assert aut["states"][nq] == cell["next_state"]
                assert {o: (y >> j) & 1 for j, o in enumerate(aut["output_aps"])} == cell["output"]


@needs_corpus
def test_peer_runs_get_the_same_answers(tmp_path, peer_ours):
    path = tmp_path / "peer.json"
    assert main(["import", "peer", str(BUNDLE), "-o", str(path)]) == 0
    assert load_bundle(path) == peer_ours
    rows = [json.loads(line) for line in (PEER / "runs_v1_valid.jsonl").read_text().splitlines() if line.strip()]
    assert rows
    for row in rows:
        inst = open_instance(path, row["instance_id"])[0]
        p = instance_problem(inst)
        atoms = certificate_from_json(row["certificate"], p.system.inputs, p.horizon)
        assert api.suff(p, atoms) == row["suff"]
        assert api.min1(p, atoms) == row["min1"]
        assert api.valid(p, atoms) == row["valid"]
    inst = open_instance(path, "gf01-2306ebfa159a")[0]
    assert api.valid(instance_problem(inst), certificate_from_json([[3, "in2", 0]], inst.system.inputs, 4))


@needs_corpus
def test_bad_peer_bundle_names_the_field(tmp_path, peer_raw):
    bad = json.loads(json.dumps(peer_raw))
    del bad["instances"][1]["automaton"]["transitions"]["s0"]["in0=0|in1=1|in2=0"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(Gf01Error, match="missing field") as ei:
        import_peer_bundle(path)
    assert ei.value.field == "instances[1].automaton.transitions.s0.in0=0|in1=1|in2=0"
    bad = json.loads(json.dumps(peer_raw))
    bad["instances"][0]["effect_ap"] = "out7"
    path.write_text(json.dumps(bad))
    with pytest.raises(Gf01Error, match="unknown name 'out7'") as ei:
        import_peer_bundle(path)
    assert ei.value.field == "instances[0].effect_ap"
    path.write_text(json.dumps({"schema_version": "other"}))
    with pytest.raises(Gf01Error, match=r"expected gf01\.instance_bundle\.v1"):
        import_peer_bundle(path)


def test_import_hoa_with_a_word_measures_and_certifies():
    text = counter_hoa(4)
    inst = instance_from_hoa(text, InstanceOptions(trace="!inc&!rst;" * 5 + "!inc&!rst", effect="c0 & c1", t_star=4))
    p = instance_problem(inst)
    assert p.trace == (0,) * 6 and inst.budget_t == 6 and inst.budget_a == 12
    cert = inst.certification
    assert cert is not None and not cert.base_achieves_effect
    assert cert.oracle_eff_t == 3  # three increments before t*
    assert api.valid(p, certificate_from_json(cert.oracle_certificate, p.system.inputs, p.horizon))
    assert cert.gold_count == api.count(p, p.budget_t)
    assert inst.complexity is not None and inst.window == inst.complexity.window


def test_an_atom_budget_the_oracle_certificate_does_not_fit_is_refused():
    """The oracle is the ceiling of the panel: B_A below its certificate's Eff_a would make Score_C = 1 unreachable."""
    text = counter_hoa(4)
    options = {"trace": "!inc&!rst;" * 5 + "!inc&!rst", "effect": "c0 & c1", "t_star": 4}  # oracle: 3 atoms
    assert instance_from_hoa(text, InstanceOptions(**options, budget_a=3)).certification.oracle_eff_a == 3
    with pytest.raises(Gf01Error, match="B_A = 2 is below Eff_a = 3") as info:
        instance_from_hoa(text, InstanceOptions(**options, budget_a=2))
    assert info.value.field == "budget_a"
    # Unmeasured (no certification), the budget stands: nothing proves it too small.
    assert instance_from_hoa(text, InstanceOptions(**options, budget_a=2), measure=False).budget_a == 2


def test_import_hoa_cli_with_json_trace_and_errors(tmp_path, capsys):
    hoa = tmp_path / "arb.hoa"
    hoa.write_text(arbiter_hoa(2, "round_robin"))
    trace = json.dumps([{"r0": 1, "r1": 0}, {"r0": 1, "r1": 0}, {"r0": 1, "r1": 1}])
    out = tmp_path / "i.json"
    args = ["import", "hoa", str(hoa), "--trace", trace, "--effect", "g1", "--t-star", "2", "--mode", "normal",
            "--window", "1", "--budget-t", "2", "-o", str(out)]
    assert main(args) == 0
    inst = open_instance(out)[0]
    assert inst.mode == "normal" and inst.window == 1 and inst.system.kind == "hoa"
    assert inst.certification is not None and inst.certification.oracle_eff_t is not None
    assert "wrote instance" in capsys.readouterr().out
    bad = [*args[:4], '[{"r0": 1, "rX": 0}]', *args[5:]]
    assert main(bad) == 2
    assert "unknown input 'rX'" in capsys.readouterr().err
    late = [*args[:8], "5", *args[9:]]
    assert main(late) == 2
    assert "t* = 5 is outside [0, 2]" in capsys.readouterr().err


# An output that copies the input: with the input up at t* the base run already shows the effect.
_COPY_AAG = "aag 1 1 0 1 0\n2\n2\ni0 a\no0 y\n"
_WARNING = "gf01: warning: "


@pytest.mark.parametrize("kind", ["hoa", "aiger"])
def test_an_import_whose_base_run_shows_the_effect_warns_and_is_written(tmp_path, capsys, kind):
    system = tmp_path / ("arb.hoa" if kind == "hoa" else "copy.aag")
    system.write_text(arbiter_hoa(2, "round_robin") if kind == "hoa" else _COPY_AAG)
    trivial = ["--trace", "r0&!r1", "--effect", "g0"] if kind == "hoa" else ["--trace", "a;a", "--effect", "y"]
    out = tmp_path / "i.json"
    assert main(["import", kind, str(system), *trivial, "-o", str(out)]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line.startswith(_WARNING)]
    assert len(warnings) == 1 and "Eff_t is 0" in warnings[0] and str(system) in warnings[0]
    inst = open_instance(out)[0]
    assert inst.certification is not None and inst.certification.oracle_eff_t == 0
    # An instance that needs an edit does not warn; nor does an unmeasured import (nothing was measured).
    needs = ["--trace", "r0&!r1;!r0&r1", "--effect", "g0"] if kind == "hoa" else ["--trace", "!a;!a", "--effect", "y"]
    assert main(["import", kind, str(system), *needs, "-o", str(out)]) == 0
    assert _WARNING not in capsys.readouterr().err
    assert main(["import", kind, str(system), *trivial, "--no-measure", "-o", str(out)]) == 0
    assert _WARNING not in capsys.readouterr().err
