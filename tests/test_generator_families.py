"""System families: every drawn member is a well-formed, input-complete Mealy system at every size level."""

from __future__ import annotations

import numpy as np
import pytest

from gf01_formal.instances.families import FAMILIES
from gf01_formal.instances.problem import system_view
from gf01_formal.instances.traces import parse_effect
from hoa.parser import parse

REAL = ["arbiter", "register", "counter", "traffic_light"]


@pytest.mark.parametrize("kind", [*REAL, "random_mealy"])
@pytest.mark.parametrize("level", [0.0, 0.5, 1.0])
def test_members_are_input_complete_and_effects_parse(kind, level):
    for seed in range(3):
        fs = FAMILIES[kind](np.random.Generator(np.random.PCG64(seed)), {}, level)
        view = system_view(fs.system.spec())  # raises unless input-complete
        assert view.first_missing() is None
        assert list(view.inputs) == fs.system.inputs and list(view.outputs) == fs.system.outputs
        assert len(fs.input_density) == view.num_inputs and all(0 <= d <= 1 for d in fs.input_density)
        for e in fs.effects:
            parse_effect(e, view.outputs)
        if kind in REAL:
            (aut,) = parse(fs.system.hoa)
            assert aut.controllable_ap == tuple(range(view.num_inputs, view.num_inputs + view.num_outputs))


def test_sizes_follow_the_level():
    def states(level: float) -> int:
        fs = FAMILIES["random_mealy"](np.random.Generator(np.random.PCG64(1)), {}, level)
        return system_view(fs.system.spec()).num_states

    assert states(0.0) <= 5 and states(1.0) >= 13
    fixed = FAMILIES["counter"](np.random.Generator(np.random.PCG64(1)), {"modulus": 9}, 0.0)
    assert system_view(fixed.system.spec()).num_states == 9


def test_counter_and_shift_register_semantics():
    ctr = FAMILIES["counter"](np.random.Generator(np.random.PCG64(0)), {"modulus": 5}, 0.0)
    v = system_view(ctr.system.spec())
    inc, rst = 0b01, 0b10
    _, outs = v.run([inc, inc, inc, inc, inc, rst | inc, inc])
    values = [y & 0b111 for y in outs]
    wraps = [(y >> 3) & 1 for y in outs]
    assert values == [1, 2, 3, 4, 0, 0, 1] and wraps == [0, 0, 0, 0, 1, 0, 0]
    reg = FAMILIES["register"](np.random.Generator(np.random.PCG64(0)), {"bits": 3, "variant": "shift_register"}, 0.0)
    v = system_view(reg.system.spec())
    d, en = 0b01, 0b10
    _, outs = v.run([d | en, en, 0, d | en])
    assert outs == [0b001, 0b010, 0b010, 0b101]


def test_random_mealy_idles_on_zero_and_moves_locally():
    fs = FAMILIES["random_mealy"](np.random.Generator(np.random.PCG64(5)), {"states": 9, "locality": 1}, 0.5)
    v = system_view(fs.system.spec())
    for q in range(v.num_states):
        assert v.step(q, 0)[0] == q
        for x in range(1 << v.num_inputs):
            assert (v.step(q, x)[0] - q) % 9 in (0, 1, 8)


@pytest.mark.parametrize("params", [{}, {"outputs": 1, "inputs": [1, 2]}, {"inputs": [5, 7], "states": [2, 40]},
                                    {"locality": 0, "mealy": 1.0, "guard_density": 1.0},
                                    {"guard_density": 0.0, "outputs": [3, 6], "mealy": 0.5}])
def test_random_mealy_view_is_the_one_its_text_parses_to(params):
    # The generator takes the family's own view instead of parsing the text back (issue 33): it must be that view,
    # edge for edge (guards, destinations, priority), with the same names and the same compiled tables.
    from hoa.mealy import mealy_from_text

    for seed in range(6):
        for level in (0.0, 0.4, 1.0):
            fs = FAMILIES["random_mealy"](np.random.Generator(np.random.PCG64(seed)), params, level)
            parsed = mealy_from_text(fs.system.hoa, fs.system.outputs)
            built = fs.view
            assert built is not None
            assert (built.inputs, built.outputs, built.initial, built.state_names) == (
                parsed.inputs, parsed.outputs, parsed.initial, parsed.state_names)
            assert built.edges == parsed.edges
            fresh = type(built)(built.inputs, built.outputs, built.edges, built.initial, built.state_names)
            for given, compiled, from_text in zip(built.tables, fresh.tables, parsed.tables, strict=True):
                assert given.dtype == from_text.dtype and given.shape == from_text.shape
                assert (given == compiled).all() and (given == from_text).all()
