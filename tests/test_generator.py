"""The certified generator: determinism across processes, certified facts re-checked by the solvers, targets, skips."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gf01_formal.instances.complexity import window_of
from gf01_formal.instances.families.arbiters import arbiter_hoa
from gf01_formal.instances.families.traffic import traffic_hoa
from gf01_formal.instances.generator import (
    GenConfig,
    generate,
    greedy_result,
    load_config,
    slot_allowance,
    summary,
)
from gf01_formal.instances.io import instance_problem, load_bundle
from gf01_formal.instances.measure import hard_problem
from gf01_formal.scoring.certificates import certificate_from_json
from hoa.errors import Gf01Error
from solvers import api
from solvers.canonical import timesteps

ROOT = Path(__file__).resolve().parent.parent
KNOBS = ("states", "inputs", "outputs", "transitions", "horizon", "effect_depth", "oracle_eff_t", "gold_count")


@pytest.fixture(scope="module")
def bundle():
    return generate(5, 30, GenConfig(), jobs=1)


def _gen(tmp_path: Path, name: str, *args: str) -> bytes:
    out = tmp_path / name
    subprocess.run([sys.executable, "-m", "gf01_formal", "generate", "-o", str(out), *args], check=True, cwd=ROOT,
                   capture_output=True)
    return out.read_bytes()


def test_two_processes_same_seed_give_identical_bytes(tmp_path):
    a = _gen(tmp_path, "a.json", "--seed", "11", "--count", "5", "--jobs", "1")
    b = _gen(tmp_path, "b.json", "--seed", "11", "--count", "5", "--jobs", "2")
    c = _gen(tmp_path, "c.json", "--seed", "12", "--count", "5", "--jobs", "1")
    assert a == b
    assert a != c
    assert len(load_bundle(tmp_path / "a.json").instances) == 5


def test_every_stored_fact_is_what_the_solvers_say(bundle):
    assert len(bundle.instances) == 30 and not bundle.skipped
    for inst in bundle.instances:
        p = instance_problem(inst)
        cert = inst.certification
        assert cert is not None and not cert.base_achieves_effect
        assert not api.suff(p, ())
        oracle_atoms = certificate_from_json(cert.oracle_certificate, p.system.inputs, p.horizon)
        assert api.valid(p, oracle_atoms) and len(timesteps(oracle_atoms)) <= p.budget_t
        best = api.oracle(p, p.budget_t)
        assert (best.eff_t, best.eff_a) == (cert.oracle_eff_t, cert.oracle_eff_a)
        assert cert.gold_count == api.count(p, p.budget_t)  # default sizes are all under count_max_positions
        assert cert.greedy_valid == greedy_result(p)[1]
        cx = inst.complexity
        norms = [getattr(cx, k).norm for k in KNOBS if getattr(cx, k).norm is not None]
        assert cx.z == round(sum(norms) / len(norms), 6)
        assert inst.window == cx.window == window_of(cx.z)
        hard = hard_problem(p)
        assert cx.oracle_eff_t.raw == api.oracle(hard, None).eff_t
        assert cx.gold_count.raw == api.count(hard, p.budget_t)
        assert (cx.states.raw, cx.inputs.raw, cx.transitions.raw) == (
            p.system.num_states, p.system.num_inputs, p.system.num_edges)
        assert inst.meta.cfg_hash == bundle.cfg_hash and inst.meta.seed == 5


def test_difficulty_targets_hold_and_knobs_vary(bundle):
    t = GenConfig().targets
    for inst in bundle.instances:
        c = inst.certification
        slot = inst.meta.slot
        if not slot_allowance(t.max_single_timestep_fraction, slot):
            assert c.oracle_eff_t >= 2
        if not slot_allowance(t.max_single_atom_fraction, slot):
            assert c.oracle_eff_a >= 2
        if not slot_allowance(t.max_greedy_fraction, slot):
            assert not c.greedy_valid
    info = summary(bundle)
    assert info["single_timestep_fraction"] <= t.max_single_timestep_fraction
    assert info["single_atom_fraction"] <= t.max_single_atom_fraction
    assert info["greedy_fraction"] <= t.max_greedy_fraction
    assert len(info["windows"]) >= 2 and len(info["modes"]) == 2 and len(info["families"]) >= 4
    for name, k in info["knobs"].items():
        assert k["distinct"] >= 2, f"knob {name} is constant"


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([0.0, 0.05, 0.25, 0.4, 0.5, 1 / 3, 0.6, 1.0]), st.integers(1, 300))
def test_slot_allowances_cap_every_prefix(frac, n):
    allowed = sum(slot_allowance(frac, k) for k in range(n))
    assert allowed <= math.floor(n * frac + 1e-9)
    assert allowed >= math.floor(n * frac + 1e-9) - 1


def test_impossible_targets_skip_and_report():
    cfg = load_config({"targets": {"min_oracle_eff_t": 40}, "max_attempts": 2, "horizon": [5, 6]})
    b = generate(3, 2, cfg)
    assert b.instances == [] and [s.slot for s in b.skipped] == [0, 1]
    assert all(s.attempts == 2 and sum(s.reasons.values()) == 2 for s in b.skipped)


@pytest.mark.parametrize("kind", ["arbiter", "register", "counter", "traffic_light", "random_mealy"])
def test_each_family_gives_multi_step_instances(kind):
    cfg = load_config({"families": [{"kind": kind}], "targets": {"max_single_timestep_fraction": 0.0}})
    b = generate(1, 2, cfg)
    assert b.instances, f"family {kind}: {[s.reasons for s in b.skipped]}"
    for inst in b.instances:
        assert inst.certification.oracle_eff_t >= 2
        assert inst.meta.family.startswith(kind.split("_")[0]) or kind == "register"


def test_hoa_dir_family(tmp_path):
    (tmp_path / "b_arbiter.hoa").write_text(arbiter_hoa(3, "round_robin"))
    (tmp_path / "a_traffic.hoa").write_text(traffic_hoa(2, 2))
    (tmp_path / "notes.txt").write_text("ignored")
    cfg = load_config({"families": [{"kind": "hoa_dir", "path": str(tmp_path)}]})
    b = generate(2, 4, cfg)
    assert b.instances
    files = {i.meta.family_params["file"] for i in b.instances}
    assert files <= {"a_traffic.hoa", "b_arbiter.hoa"}
    assert all(i.meta.family == "hoa_dir" and len(i.meta.family_params["sha256"]) == 64 for i in b.instances)
    (tmp_path / "c_bad.hoa").write_text("HOA: v1\nStates: 1\nStart: 0\nAP: 1 \"a\"\n--BODY--\nState: 0\n--END--\n")
    with pytest.raises(Gf01Error) as ei:
        generate(2, 12, load_config({"families": [{"kind": "hoa_dir", "path": str(tmp_path)}]}))
    assert ei.value.file is not None and ei.value.file.endswith("c_bad.hoa")


def test_config_errors_name_the_field():
    with pytest.raises(Gf01Error, match="unknown family kind 'nope'") as ei:
        load_config({"families": [{"kind": "nope"}]})
    assert ei.value.field == "families[0].kind"
    with pytest.raises(Gf01Error) as ei:
        load_config({"horizon": [9, 3]})
    assert ei.value.field == "horizon"
    with pytest.raises(Gf01Error) as ei:
        load_config({"colour": 1})
    assert ei.value.field == "colour"


def test_generate_cli_with_cfg_and_split(tmp_path, capsys):
    from gf01_formal.cli import main

    cfg = tmp_path / "cfg.json"
    cfg.write_text('{"families": [{"kind": "counter", "modulus": [3, 5]}], "horizon": [6, 10]}')
    out = tmp_path / "b.json"
    assert main(["generate", "--seed", "4", "--count", "3", "--cfg", str(cfg), "--split", "public_dev",
                 "--jobs", "1", "-o", str(out)]) == 0
    b = load_bundle(out)
    assert {i.split_id for i in b.instances} == {"public_dev"} and b.cfg["horizon"] == [6, 10]
    assert all(i.meta.family == "counter" and 6 <= len(i.base_trace) <= 10 for i in b.instances)
    assert "wrote 3 instances" in capsys.readouterr().out
    assert main(["generate", "--count", "1", "--split", "holdout", "-o", str(out)]) == 2
    assert "'holdout' is not one of 'public_dev', 'public_val', 'private_eval'" in capsys.readouterr().err
    cfg.write_text('{"families": [{"kind": "counter"}], "horizon": [0, 3]}')
    assert main(["generate", "--count", "1", "--cfg", str(cfg), "-o", str(out)]) == 2
    assert "horizon [0, 3] must satisfy 1 <= min" in capsys.readouterr().err


def test_a_one_step_bundle_generates_plays_validates_and_reports(tmp_path, capsys):
    """Section 8.1: generation for every T >= 1. At T = 1 every certificate touches step 0 only, so the
    single-timestep cap cannot apply; the window w(I) may exceed the trace."""
    from gf01_formal.cli import main

    cfg = tmp_path / "cfg.json"
    cfg.write_text('{"horizon": [1, 1]}')
    bundle, runs = tmp_path / "b.json", tmp_path / "runs.jsonl"
    assert main(["generate", "--seed", "3", "--count", "4", "--cfg", str(cfg), "--jobs", "1", "-o", str(bundle)]) == 0
    b = load_bundle(bundle)
    assert len(b.instances) == 4 and all(len(i.base_trace) == 1 and i.t_star == 0 for i in b.instances)
    panel = [a for name in ("random", "greedy", "search", "tool", "oracle") for a in ("--agent", name)]
    assert main(["evaluate", str(bundle), *panel, "-o", str(runs)]) == 0
    recs = [json.loads(line) for line in runs.read_text().splitlines()]
    assert len(recs) == 20 and all(r["status"] == "completed" for r in recs)
    assert all(r["valid"] for r in recs if r["agent_name"] == "oracle")
    capsys.readouterr()
    assert main(["validate", str(runs), "--bundle", str(bundle)]) == 0
    assert main(["report", str(runs), "--format", "md", "-o", str(tmp_path / "report.md")]) == 0
    assert main(["pilot-analyze", str(runs), "--bundle", str(bundle), "-o", str(tmp_path / "a.json")]) == 0


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 50))
def test_any_seed_gives_an_instance_or_a_reported_skip(seed, slot):
    from gf01_formal.instances.generator import generate_slot
    from gf01_formal.instances.model import Instance, Skip

    cfg = load_config({"horizon": [5, 9], "max_attempts": 4})
    res = generate_slot(seed, slot, cfg)
    assert isinstance(res, Instance | Skip)
    if isinstance(res, Instance):
        instance_problem(res)
    else:
        assert sum(res.reasons.values()) == 4


def test_the_default_cfg_in_the_docs_is_the_real_one() -> None:
    """docs/instances.md prints GenConfig() in full; a changed default must change the docs too."""
    import json

    text = (ROOT / "docs" / "instances.md").read_text()
    start = text.index('```json\n{"schema_version": "gf01-formal.gen_cfg.v1"') + len("```json\n")
    documented = json.loads(text[start:text.index("```", start)])
    assert documented == json.loads(json.dumps(GenConfig().model_dump(mode="json")))


def test_a_slot_past_its_memory_or_time_is_unknown_and_nothing_is_written(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """generate --memory / --slot-seconds bound each slot; past them the command answers unknown (exit 3) and writes
    no bundle: a slot skipped for want of resources would make the bundle depend on the machine (DEC-024)."""
    from gf01_formal.cli import main

    out = tmp_path / "b.json"
    assert main(["generate", "-o", str(out), "--count", "2", "--jobs", "1", "--memory", "1"]) == 3
    assert "unknown (memory limit 1 MiB" in capsys.readouterr().out and not out.exists()
    assert main(["generate", "-o", str(out), "--count", "2", "--jobs", "2", "--slot-seconds", "0"]) == 3
    assert "unknown (time limit 0 s" in capsys.readouterr().out and not out.exists()
    assert main(["generate", "-o", str(out), "--count", "2", "--jobs", "1", "--memory", "2048"]) == 0
    assert out.exists()


@pytest.mark.parametrize("seed", range(30))
def test_the_tiny_reach_is_the_numpy_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """On tiny tables the one-step sweep is plain Python (issue 33 item 4): the same arrays as the numpy one."""
    import numpy as np

    from gf01_formal.instances import generator
    from hoa.mealy import MealyView

    rng = np.random.Generator(np.random.PCG64(seed))
    n_states, n_in = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    T = int(rng.integers(1, 13))
    nxt = rng.integers(0, n_states, size=(n_states, 1 << n_in))
    out = rng.integers(0, 4, size=(n_states, 1 << n_in))
    view = MealyView.from_table(tuple(f"i{j}" for j in range(n_in)), ("a", "b"), nxt, out)
    trace = tuple(int(x) for x in rng.integers(0, 1 << n_in, size=T))
    t_star = int(rng.integers(0, T))
    tiny = generator._reach(view, trace, t_star)
    monkeypatch.setattr(generator, "TINY_CELLS", 0)
    big = generator._reach(view, trace, t_star)
    assert tiny is not None and big is not None
    for a, b in ((tiny.shown, big.shown), (tiny.at_t_star, big.at_t_star), (tiny.flips, big.flips)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert (tiny.before_t_star is None) == (big.before_t_star is None) == (t_star == 0)
    assert tiny.before_t_star is None or np.array_equal(tiny.before_t_star, big.before_t_star)


@settings(max_examples=300, deadline=None)
@given(states=st.integers(1, 5000), inputs=st.integers(1, 12), outputs=st.integers(1, 16),
       transitions=st.integers(1, 1 << 18), horizon=st.integers(1, 10_000), data=st.data(),
       eff_t=st.one_of(st.none(), st.integers(1, 50)), gold=st.one_of(st.none(), st.integers(0, 1 << 70)))
def test_window_for_is_the_window_of_the_knobs(states: int, inputs: int, outputs: int, transitions: int,
                                               horizon: int, data: st.DataObject, eff_t: int | None,
                                               gold: int | None) -> None:
    """possible_windows asks window_for (no records) what knobs(...).window says (issue 33 item 4)."""
    from gf01_formal.instances.complexity import knobs, window_for

    args = dict(states=states, inputs=inputs, outputs=outputs, transitions=transitions, horizon=horizon,
                t_star=data.draw(st.integers(0, horizon - 1)), oracle_eff_t=eff_t, gold_count=gold)
    assert window_for(**args) == knobs(**args).window
