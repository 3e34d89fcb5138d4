"""``gf01 sim``: the base and edited runs step by step, as text, JSON, a VCD waveform and an AIGER witness; each
output read back and checked against an independent simulation (the circuit's own step function, the scorer's
Suff)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from corpus import corpus_path, needs_corpus

from aig.build import fifo
from aig.parser import parse
from aig.view import CircuitView
from aig.writer import canonical
from gf01_formal.cli import main
from gf01_formal.instances.sources import open_instance
from gf01_formal.scoring.simulation import simulate
from solvers import api

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"
CERT = ROOT / "gf01_formal" / "examples" / "arbiter_priority_cert.json"
FIFO_TRACE = "push&!pop&d0;push&!pop&!d0;push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0"


def run(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_edited_run_shows_the_effect_exactly_when_the_scorer_says_sufficient() -> None:
    _, problem = open_instance(INSTANCE)
    # Every certificate of one or two atoms over the last steps before t* (both values): simulation against Suff.
    cells = [(t, i, v) for t in range(problem.t_star - 2, problem.t_star + 1)
             for i in range(problem.system.num_inputs) for v in (0, 1)]
    checked = 0
    for k in (0, 1, 2):
        for atoms in itertools.combinations(cells, k):
            if len({(t, i) for t, i, _ in atoms}) < len(atoms):
                continue
            sim = simulate(problem, atoms)
            assert sim.suff == api.suff(problem, atoms), atoms
            assert [s.edited_inputs for s in sim.steps] == problem.apply(atoms)
            checked += 1
    assert checked > 400


def test_sim_prints_both_runs_and_marks_where_they_differ(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run(capsys, "sim", str(INSTANCE), str(CERT))
    lines = out.splitlines()
    assert code == 0 and lines[-1] == "edited run shows the effect: sufficient"
    rows = {int(line.split()[0]): line for line in lines[4:-1]}
    assert len(rows) == 30
    marked = sorted(t for t, line in rows.items() if "*" in line)
    assert marked == sorted({t for t, _, _ in json.loads(CERT.read_text())}) == [20, 21]
    assert "[-/E]" in rows[21]  # t* = 21: the base run misses the effect, the edited run shows it
    code, out, _ = run(capsys, "sim", str(INSTANCE), str(CERT), "--json")
    record = json.loads(out)
    assert record["suff"] is True and record["base_effect"] is False
    assert record["steps"][21]["inputs_differ"] == ["r2", "r3"] and record["steps"][21]["effect_step"] is True
    code, out, _ = run(capsys, "sim", str(INSTANCE), "--states")
    assert code == 0 and "state(base)" in out.splitlines()[3] and "not sufficient" in out.splitlines()[-1]


def _read_vcd(text: str) -> tuple[dict[str, str], list[dict[str, int]]]:
    """A minimal VCD reader: (code -> scope.name, values at each time 0..)."""
    names: dict[str, str] = {}
    scope: list[str] = []
    frames: list[dict[str, int]] = []
    current: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["$scope"]:
            scope.append(parts[2])
        elif parts[:1] == ["$upscope"]:
            scope.pop()
        elif parts[:1] == ["$var"]:
            names[parts[3]] = ".".join([*scope, parts[4]])
        elif line.startswith("#"):
            if int(line[1:]) > 0:
                frames.append(dict(current))
        elif line[:1] in "01" and line[1:] in names:
            current[line[1:]] = int(line[0])
    return names, frames


def test_the_vcd_holds_both_runs_step_by_step(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    wave = tmp_path / "run.vcd"
    code, _, _ = run(capsys, "sim", str(INSTANCE), str(CERT), "--vcd", str(wave))
    assert code == 0
    names, frames = _read_vcd(wave.read_text())
    _, problem = open_instance(INSTANCE)
    sim = simulate(problem, tuple((t, problem.system.inputs.index(a), v) for t, a, v in json.loads(CERT.read_text())))
    assert len(frames) == problem.horizon
    by_name = {v: k for k, v in names.items()}
    for s, frame in zip(sim.steps, frames, strict=True):
        for j, o in enumerate(problem.system.outputs):
            assert frame[by_name[f"gf01.edited.{o}"]] == (s.edited_outputs >> j) & 1
            assert frame[by_name[f"gf01.base.{o}"]] == (s.base_outputs >> j) & 1
        assert frame[by_name["gf01.edited.effect"]] == s.edited_effect
        assert frame[by_name["gf01.effect_step"]] == s.effect_step
    assert wave.read_text() == (tmp_path / "run.vcd").read_text()  # nothing of the clock: the same every time


def _replay_witness(circuit_text: str, witness: str) -> tuple[str, list[int]]:
    """The property a witness names and, replayed on the circuit's own step function, the values of that property's
    signal at each step (the check a model checker's witness checker makes)."""
    lines = witness.splitlines()
    assert lines[0] == "1" and lines[-1] == "."
    aig = parse(circuit_text.encode())
    view = CircuitView.from_aig(aig)
    assert lines[2] == "".join(str(latch.reset) for latch in view.aig.latches)
    prop = lines[1]
    index = int(prop[1:]) + (len(aig.outputs) if aig.bad else 0)
    q, seen = view.initial, []
    for step in lines[3:-1]:
        q, y = view.step(q, sum(int(b) << i for i, b in enumerate(step)))
        seen.append((y >> index) & 1)
    return prop, seen


def test_a_circuits_edited_run_as_an_aiger_witness(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    circuit = tmp_path / "fifo.aag"
    circuit.write_text(canonical(fifo(3)))
    (tmp_path / "c.json").write_text('[[5, "push", 1]]')
    out = tmp_path / "w.aag"
    code, _, err = run(capsys, "sim", str(circuit), str(tmp_path / "c.json"), "--trace", FIFO_TRACE, "--effect",
                       "overflow", "--witness", str(out))
    assert code == 0, err
    prop, seen = _replay_witness(circuit.read_text(), out.read_text())
    assert prop == "b0" and seen[-1] == 1 and len(seen) == 6  # overflow is the circuit's bad-state property
    # The base run alone never overflows: no witness, one line.
    code, _, err = run(capsys, "sim", str(circuit), "--trace", FIFO_TRACE, "--effect", "overflow", "--witness",
                       str(tmp_path / "none.aag"))
    assert code == 2 and "nothing to witness" in err and not (tmp_path / "none.aag").exists()


@needs_corpus
@pytest.mark.parametrize("name", ["toy_examples-cnt3y.aag", "driver-driver_c4y.aag"])
def test_the_witness_of_a_syntcomp_design_replays_to_its_error(tmp_path, capsys, name) -> None:  # type: ignore[no-untyped-def]
    # Designs nobody here wrote: the oracle's certificate for the error output, written as a witness and replayed.
    path = corpus_path("aiger", name)
    view = CircuitView.from_aig(parse(path.read_bytes()))
    effect = view.outputs[len(view.aig.outputs)] if view.aig.bad else view.outputs[0]
    trace = ";".join(["&".join(f"!{a}" for a in view.inputs)] * 8)
    code, out, err = run(capsys, "oracle", str(path), "--trace", trace, "--effect", effect, "--json")
    assert code == 0, err
    cert = json.loads(out)["certificate"]
    if cert is None:
        pytest.skip(f"{name}: no valid certificate within 8 steps")
    (tmp_path / "c.json").write_text(json.dumps(cert))
    code, _, err = run(capsys, "sim", str(path), str(tmp_path / "c.json"), "--trace", trace, "--effect", effect,
                       "--witness", str(tmp_path / "w"))
    assert code == 0, err
    _, seen = _replay_witness(path.read_text(), (tmp_path / "w").read_text())
    assert seen[-1] == 1
