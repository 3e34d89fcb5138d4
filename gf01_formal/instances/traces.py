"""Text forms of traces and effects: parse user input into index form and print it back.

A trace is a tuple of input valuations (bit ``i`` = input ``i``). It is read from JSON (a list of
``{input: 0|1}`` objects, every input named at every step) or from a Spot-style finite word: one letter per step,
letters separated by ``;``, each letter a conjunction of literals naming every input once (``a&!b;!a&b``).
Effects are :func:`hoa.label.parse_named` expressions over output names (certificates: :mod:`.certificates`).

>>> parse_trace("a&!b; !a&b", ["a", "b"])
(1, 2)
>>> trace_to_word((1, 2), ["a", "b"])
'a&!b;!a&b'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gf01_formal.artifacts import parse_json
from hoa.errors import Gf01Error, quote
from hoa.label import And, Expr, Not, Or, name_text, parse_named, to_text


def parse_trace(source: str | list[Any], inputs: Sequence[str], *, field: str = "base_trace") -> tuple[int, ...]:
    """A trace from JSON text, an already-decoded JSON list, or a Spot-style word; errors name ``field`` and step."""
    if isinstance(source, list):
        return trace_from_json(source, inputs, field=field)
    text = source.strip()
    if text.startswith("["):
        try:
            data = parse_json(text)
        except Gf01Error as ex:
            raise Gf01Error(f"{ex.message.replace('invalid JSON', 'invalid JSON trace')}"
                            + (f" at column {ex.col}" if ex.col else ""), field=field) from None
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
                f"step {t}: unknown input {quote(unknown[0])} (inputs: {', '.join(inputs) or 'none'})", field=field
            )
        x = 0
        for i, name in enumerate(inputs):
            if name not in step:
                raise Gf01Error(f"step {t}: input {name!r} has no value", field=field)
            v = step[name]
            if not isinstance(v, int) or isinstance(v, bool) or v not in (0, 1):  # 1.0 and true are not 1
                raise Gf01Error(f"step {t}: input {name!r} must be 0 or 1, got {quote(v)}", field=field)
            x |= v << i
        out.append(x)
    return tuple(out)


def trace_from_word(text: str, inputs: Sequence[str], *, field: str = "base_trace") -> tuple[int, ...]:
    """A trace from a finite Spot-style word ``l0;l1;...``; each letter a full conjunction of input literals."""
    if "cycle" in text:
        raise Gf01Error("a base trace is finite: cycle{...} words are not accepted", field=field)
    if not text.strip():
        raise Gf01Error("the trace is empty: give one letter per step, e.g. 'a&!b;!a&b'", field=field)
    letters = [p.strip() for p in text.split(";")]
    if any(not p for p in letters):
        raise Gf01Error(f"empty letter in word {quote(text)} (letters are separated by ';')", field=field)
    index = {n: i for i, n in enumerate(inputs)}
    out = []
    for t, letter in enumerate(letters):
        x = 0
        seen: set[str] = set()
        for lit in (s.strip() for s in letter.split("&")):
            neg = lit.startswith("!")
            name = lit[1:].strip() if neg else lit
            if name not in index:
                known = ", ".join(inputs) or "none"
                raise Gf01Error(f"step {t}: unknown input {quote(name)} in letter {quote(letter)} (inputs: {known})",
                                field=field)
            if name in seen:
                raise Gf01Error(f"step {t}: input {name!r} named twice in letter {quote(letter)}", field=field)
            seen.add(name)
            if not neg:
                x |= 1 << index[name]
        missing = [n for n in inputs if n not in seen]
        if missing:
            raise Gf01Error(f"step {t}: letter {quote(letter)} does not name input {missing[0]!r}", field=field)
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
    """The text of an effect over output names, a name that is not an identifier in double quotes (``parse_effect``
    reads it back)."""
    return to_text(effect, lambda i: name_text(outputs[i]))


def read_effect(text: str, outputs: Sequence[str], *, field: str = "effect") -> tuple[str, Expr]:
    """An effect given by a user, parsed once: the text an instance stores (:func:`effect_text`) and the expression
    that reading that text back with :func:`parse_effect` gives (the printed text drops the parentheses of an ``&``
    in an ``&``, an ``|`` in an ``|``, so those nest no more)."""
    effect = parse_effect(text, outputs, field=field)
    return effect_text(effect, outputs), _flattened(effect)


def _flattened(e: Expr) -> Expr:
    if isinstance(e, Not):
        return Not(_flattened(e.arg))
    if isinstance(e, And | Or):
        args: list[Expr] = []
        for a in map(_flattened, e.args):
            args.extend(a.args if type(a) is type(e) else (a,))  # type: ignore[union-attr]
        return type(e)(tuple(args))
    return e
