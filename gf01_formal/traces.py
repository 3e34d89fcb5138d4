"""Text forms of traces, effects and certificates: parse user input into index form and print it back.

A trace is a tuple of input valuations (bit ``i`` = input ``i``). It is read from JSON (a list of
``{input: 0|1}`` objects, every input named at every step) or from a Spot-style finite word: one letter per step,
letters separated by ``;``, each letter a conjunction of literals naming every input once (``a&!b;!a&b``).
Effects are :func:`hoa.label.parse_named` expressions over output names. Certificates are JSON lists of
``[t, "input", v]``.

>>> parse_trace("a&!b; !a&b", ["a", "b"])
(1, 2)
>>> trace_to_word((1, 2), ["a", "b"])
'a&!b;!a&b'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hoa.errors import Gf01Error
from hoa.label import Expr, parse_named, to_text

Atom = tuple[int, int, int]


def parse_trace(source: str | list[Any], inputs: Sequence[str], *, field: str = "base_trace") -> tuple[int, ...]:
    """A trace from JSON text, an already-decoded JSON list, or a Spot-style word; errors name ``field`` and step."""
    if isinstance(source, list):
        return trace_from_json(source, inputs, field=field)
    text = source.strip()
    if text.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as ex:
            raise Gf01Error(f"invalid JSON trace: {ex.msg} at column {ex.colno}", field=field) from ex
        return trace_from_json(data, inputs, field=field)
    return trace_from_word(text, inputs, field=field)


def trace_from_json(data: Any, inputs: Sequence[str], *, field: str = "base_trace") -> tuple[int, ...]:
    """A trace from a decoded JSON list of ``{input: 0|1}`` objects naming every input exactly."""
    if not isinstance(data, list) or not data:
        raise Gf01Error("a trace is a non-empty JSON list of {input: 0|1} objects", field=field)
    known = set(inputs)
    out = []
    for t, step in enumerate(data):
        if not isinstance(step, dict):
            raise Gf01Error(f"step {t}: expected an object {{input: 0|1}}, got {type(step).__name__}", field=field)
        unknown = sorted(set(step) - known)
        if unknown:
            raise Gf01Error(
                f"step {t}: unknown input {unknown[0]!r} (inputs: {', '.join(inputs) or 'none'})", field=field
            )
        x = 0
        for i, name in enumerate(inputs):
            if name not in step:
                raise Gf01Error(f"step {t}: input {name!r} has no value", field=field)
            v = step[name]
            if isinstance(v, bool) or v not in (0, 1):
                raise Gf01Error(f"step {t}: input {name!r} must be 0 or 1, got {v!r}", field=field)
            x |= v << i
        out.append(x)
    return tuple(out)


def trace_from_word(text: str, inputs: Sequence[str], *, field: str = "base_trace") -> tuple[int, ...]:
    """A trace from a finite Spot-style word ``l0;l1;...``; each letter a full conjunction of input literals."""
    if "cycle" in text:
        raise Gf01Error("a base trace is finite: cycle{...} words are not accepted", field=field)
    letters = [p.strip() for p in text.split(";")]
    if not text.strip() or any(not p for p in letters):
        raise Gf01Error(f"empty letter in word {text!r} (letters are separated by ';')", field=field)
    index = {n: i for i, n in enumerate(inputs)}
    out = []
    for t, letter in enumerate(letters):
        x = 0
        seen: set[str] = set()
        for lit in (s.strip() for s in letter.split("&")):
            neg = lit.startswith("!")
            name = lit[1:].strip() if neg else lit
            if name not in index:
                raise Gf01Error(
                    f"step {t}: unknown input {name!r} in letter {letter!r} (inputs: {', '.join(inputs) or 'none'})",
                    field=field,
                )
            if name in seen:
                raise Gf01Error(f"step {t}: input {name!r} named twice in letter {letter!r}", field=field)
            seen.add(name)
            if not neg:
                x |= 1 << index[name]
        missing = [n for n in inputs if n not in seen]
        if missing:
            raise Gf01Error(f"step {t}: letter {letter!r} does not name input {missing[0]!r}", field=field)
        out.append(x)
    return tuple(out)


def trace_to_json(trace: Sequence[int], inputs: Sequence[str]) -> list[dict[str, int]]:
    """The JSON form of a trace: one ``{input: 0|1}`` object per step."""
    return [{name: (x >> i) & 1 for i, name in enumerate(inputs)} for x in trace]


def trace_to_word(trace: Sequence[int], inputs: Sequence[str]) -> str:
    """The Spot-style word of a trace (inputs in order, ``!`` for 0)."""
    return ";".join("&".join(("" if (x >> i) & 1 else "!") + n for i, n in enumerate(inputs)) for x in trace)


def parse_effect(text: str, outputs: Sequence[str], *, field: str = "effect") -> Expr:
    """The effect expression over output indices, from text over output names."""
    if not isinstance(text, str) or not text.strip():
        raise Gf01Error("the effect is an expression over output names, e.g. 'grant0 & !busy'", field=field)
    return parse_named(text, outputs, field=field)


def effect_text(effect: Expr, outputs: Sequence[str]) -> str:
    """The text of an effect over output names (``parse_effect`` reads it back)."""
    return to_text(effect, outputs.__getitem__)


def atoms_from_json(
    data: Any, inputs: Sequence[str], horizon: int | None = None, *, field: str = "certificate"
) -> tuple[Atom, ...]:
    """Atoms ``(t, input index, v)`` from a JSON list of ``[t, "input", v]``; structural errors name the atom.

    Checks the shape, t in [0, horizon-1] (when ``horizon`` is given), a known input, v in {0, 1}, and no two atoms
    on the same (t, input). Budgets are the caller's concern.
    """
    if not isinstance(data, list):
        raise Gf01Error('a certificate is a JSON list of [t, "input", v] atoms', field=field)
    index = {n: i for i, n in enumerate(inputs)}
    seen: set[tuple[int, int]] = set()
    out = []
    for k, atom in enumerate(data):
        if not (isinstance(atom, list | tuple) and len(atom) == 3):
            raise Gf01Error(f'atom {k}: expected [t, "input", v], got {atom!r}', field=field)
        t, name, v = atom
        if isinstance(t, bool) or not isinstance(t, int) or t < 0 or (horizon is not None and t >= horizon):
            span = f"[0, {horizon - 1}]" if horizon is not None else "t >= 0"
            raise Gf01Error(f"atom {k}: time {t!r} is outside {span}", field=field)
        if name not in index:
            raise Gf01Error(f"atom {k}: unknown input {name!r} (inputs: {', '.join(inputs)})", field=field)
        if isinstance(v, bool) or v not in (0, 1):
            raise Gf01Error(f"atom {k}: value {v!r} must be 0 or 1", field=field)
        key = (t, index[name])
        if key in seen:
            raise Gf01Error(f"atom {k}: a second atom on (t={t}, {name})", field=field)
        seen.add(key)
        out.append((t, index[name], v))
    return tuple(out)


def atoms_to_json(atoms: Sequence[Atom], inputs: Sequence[str]) -> list[list[Any]]:
    """The JSON form of atoms, sorted by (t, input name, v)."""
    return sorted(([t, inputs[i], v] for t, i, v in atoms), key=lambda a: (a[0], a[1], a[2]))
