"""Inputs the player does not edit, frozen into the circuit (aig/freeze.py): the frozen circuit's runs on the edited
inputs are the original circuit's runs on the whole trace, for the project's families (random choices of inputs and
values, hypothesis) and for SYNTCOMP designs of the corpus frozen on their ``controllable_*`` inputs."""

from __future__ import annotations

import pytest
from corpus import corpus_path, needs_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from aig.build import arbiter, counter, fifo, shift_register
from aig.freeze import edited_inputs, freeze_inputs, input_names
from aig.parser import parse
from aig.view import CircuitView
from aig.writer import canonical
from hoa.errors import Gf01Error

FAMILIES = [counter(3), fifo(2), arbiter(3), shift_register(3)]


def _same_runs(aig, kept, trace) -> None:  # type: ignore[no-untyped-def]
    frozen = [k for k in range(len(aig.inputs)) if k not in kept]
    values = [sum(((x >> k) & 1) << j for j, k in enumerate(frozen)) for x in trace]
    small = CircuitView.from_aig(parse(canonical(freeze_inputs(aig, frozen, values)).encode()))
    whole = CircuitView.from_aig(aig)
    assert small.inputs == tuple(whole.inputs[k] for k in kept)
    assert small.outputs == whole.outputs
    edited = [sum(((x >> k) & 1) << i for i, k in enumerate(kept)) for x in trace]
    assert small.run(edited)[1] == whole.run(trace)[1]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_frozen_circuit_runs_as_the_original_on_the_whole_trace(data) -> None:  # type: ignore[no-untyped-def]
    aig = data.draw(st.sampled_from(FAMILIES))
    n = len(aig.inputs)
    kept = sorted(data.draw(st.sets(st.integers(0, n - 1), max_size=n)))
    trace = data.draw(st.lists(st.integers(0, (1 << n) - 1), min_size=1, max_size=20))
    _same_runs(aig, kept, trace)


def test_which_inputs_are_edited() -> None:
    names = ["req", "controllable_grant", "ack"]
    assert edited_inputs(names, "all") == (0, 1, 2)
    assert edited_inputs(names, "uncontrollable") == (0, 2)
    assert edited_inputs(names, "controllable") == (1,)
    assert edited_inputs(names, "ack, req") == (0, 2)
    for bad, says in (("nope", "no input is named 'nope'"), (",", "names no input")):
        with pytest.raises(Gf01Error, match=says):
            edited_inputs(names, bad)
    with pytest.raises(Gf01Error, match="no controllable input"):
        edited_inputs(["a"], "controllable")


@needs_corpus
@pytest.mark.parametrize("name", ["toy_examples-cnt3y.aag", "driver-driver_c4y.aag",
                                  "factory_assembly_line-factory_assembly_3x3_1_1errors.aag"])
def test_syntcomp_designs_frozen_on_the_controllers_inputs(name) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    aig = parse(corpus_path("aiger", name).read_bytes())
    names = input_names(aig)
    kept = list(edited_inputs(names, "uncontrollable"))
    assert len(kept) < len(names)
    rng = np.random.Generator(np.random.PCG64(len(name)))
    trace = [int(rng.integers(0, 1 << min(len(names), 62))) for _ in range(12)]
    _same_runs(aig, kept, trace)


def test_the_valid_certificates_of_a_frozen_instance_are_the_originals_on_the_edited_inputs(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    # fifo(2) with d0 frozen to its base values: M(I) of the frozen instance is exactly the members of the whole
    # instance's M(I) that touch only push and pop (the same runs, so the same Suff and Min1).
    import json

    from gf01_formal.cli import main

    circuit = tmp_path / "fifo.aag"
    circuit.write_text(canonical(fifo(2)))
    trace = "push&!pop&d0;!push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0"
    answers = []
    for extra in ([], ["--edit", "push,pop"]):
        assert main(["enumerate", str(circuit), "--trace", trace, "--effect", "q0 & full", "--unbounded", "--json",
                     *extra]) == 0
        answers.append({tuple(map(tuple, c)) for c in json.loads(capsys.readouterr().out)["certificates"]})
    whole, frozen = answers
    assert frozen == {c for c in whole if all(a in ("push", "pop") for _, a, _ in c)}
    assert len(frozen) == 3 and len(whole) == 6
    assert main(["enumerate", str(circuit), "--trace", trace, "--effect", "q0", "--edit", "nope"]) == 2
    assert "no input is named 'nope'" in capsys.readouterr().err
