"""Artifacts (canonical JSON, hashes, atomic writes) and the text forms of traces, effects and certificates."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gf01_formal.artifacts import canonical_json, read_json, sha256_hex, write_json_atomic
from gf01_formal.instances.traces import (
    effect_text,
    parse_effect,
    parse_trace,
    trace_to_json,
    trace_to_word,
)
from hoa.errors import Gf01Error
from hoa.label import evaluate

INPUTS = ("a", "b", "c")


def test_canonical_json_sorts_keys_and_is_compact():
    assert canonical_json({"b": [1, {"z": 0, "y": 1}], "a": "é"}) == '{"a":"é","b":[1,{"y":1,"z":0}]}'
    assert sha256_hex({"x": 1, "y": 2}) == sha256_hex({"y": 2, "x": 1})
    assert sha256_hex({"x": 1}) != sha256_hex({"x": 2})
    with pytest.raises(Gf01Error, match="canonical JSON"):
        canonical_json({"x": float("nan")})


def test_write_json_atomic_round_trips_and_leaves_no_temp(tmp_path):
    path = tmp_path / "sub" / "a.json"
    write_json_atomic(path, {"b": 1, "a": 2})
    write_json_atomic(path, {"c": 3})
    assert read_json(path) == {"c": 3}
    assert sorted(p.name for p in path.parent.iterdir()) == ["a.json"]


def test_read_json_names_file_line_and_column(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "a": ,\n}')
    with pytest.raises(Gf01Error) as ei:
        read_json(bad)
    assert str(ei.value).startswith(f"{bad}:2:")
    with pytest.raises(Gf01Error, match="cannot read"):
        read_json(tmp_path / "missing.json")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=12))
def test_trace_forms_round_trip(trace):
    trace = tuple(trace)
    assert parse_trace(trace_to_word(trace, INPUTS), INPUTS) == trace
    assert parse_trace(json.dumps(trace_to_json(trace, INPUTS)), INPUTS) == trace
    assert parse_trace(trace_to_json(trace, INPUTS), INPUTS) == trace


def test_word_letters_may_list_inputs_in_any_order():
    assert parse_trace("c & !a & b ; !c&!b&a", INPUTS) == (0b110, 0b001)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("a&b", "does not name input 'c'"),
        ("a&b&c&d", "unknown input 'd'"),
        ("a&!a&b&c", "named twice"),
        ("a&b&c;;a&b&c", "empty letter"),
        ("a&b&c;cycle{a&b&c}", "cycle"),
        ('[{"a": 1, "b": 0}]', "input 'c' has no value"),
        ('[{"a": 1, "b": 0, "c": 2}]', "must be 0 or 1"),
        ('[{"a": 1, "b": 0, "c": 0, "x": 1}]', "unknown input 'x'"),
        ("[]", "non-empty"),
        ("[1", "invalid JSON"),
    ],
)
def test_bad_traces_are_refused_with_the_field_and_step(source, message):
    with pytest.raises(Gf01Error, match=message) as ei:
        parse_trace(source, INPUTS)
    assert ei.value.field == "base_trace"


def test_effect_text_round_trips_over_output_names():
    outs = ("grant0", "grant1", "busy")
    e = parse_effect("grant0 & !(busy | grant1)", outs)
    assert evaluate(e, 0b001) and not evaluate(e, 0b101)
    assert parse_effect(effect_text(e, outs), outs) == e
    with pytest.raises(Gf01Error, match="unknown name 'req'") as ei:
        parse_effect("req", outs)
    assert ei.value.field == "effect"
    with pytest.raises(Gf01Error, match="expression over output names"):
        parse_effect("  ", outs)


def test_certificate_atoms_structural_checks():
    from gf01_formal.scoring.certificates import certificate_from_json, certificate_to_json

    assert certificate_from_json([[3, "c", 0], [1, "a", 1]], INPUTS, 5) == ((1, 0, 1), (3, 2, 0))
    assert certificate_to_json(((3, 2, 0), (1, 0, 1)), INPUTS) == [[1, "a", 1], [3, "c", 0]]
    for bad, msg in [
        ([[5, "a", 1]], "outside"),
        ([[0, "z", 1]], "is not an input"),
        ([[0, "a", 2]], "0 or 1"),
        ([[0, "a", 1], [0, "a", 0]], "second atom"),
        ([[0, "a"]], "expected"),
        ({"t": 0}, "JSON list"),
        ([[0, "a", 1], [0, "a", 1]], "second atom"),
        ([[True, "a", 1]], "not an integer"),
    ]:
        with pytest.raises(Gf01Error, match=msg):
            certificate_from_json(bad, INPUTS, 5)


def test_atomic_write_gives_a_readable_file_and_keeps_the_mode(tmp_path):
    path = tmp_path / "m.json"
    write_json_atomic(path, {"a": 1})
    assert path.stat().st_mode & 0o777 == 0o644
    path.chmod(0o600)
    write_json_atomic(path, {"a": 2})
    assert path.stat().st_mode & 0o777 == 0o600 and read_json(path) == {"a": 2}
