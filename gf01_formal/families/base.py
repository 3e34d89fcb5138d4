"""What a system family hands the generator (:class:`FamilySystem`), and HOA text for families written as HOA.

A family is a function ``build(rng, params) -> FamilySystem``: it draws its size parameters from the ranges in
``params`` with the seeded ``rng`` and returns the system (HOA text with ``controllable-AP``, or an explicit
table), the candidate effects over its output names, and per-input densities for drawing base traces.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gf01_formal.instances import System
from hoa.errors import Gf01Error


@dataclass(frozen=True)
class FamilySystem:
    """A drawn family member: its system, the effects worth asking about, and base-trace input densities."""

    family: str
    params: dict[str, Any]
    system: System
    effects: tuple[str, ...]
    input_density: tuple[float, ...]


#: How far a drawn size may stray from the slot's size level (as a fraction of the range).
JITTER = 0.2


def at_level(rng: np.random.Generator, level: float) -> float:
    """A position in [0, 1] near ``level``: level plus uniform jitter of +-JITTER, clipped."""
    return min(1.0, max(0.0, level + JITTER * (2.0 * rng.random() - 1.0)))


def draw_int(
    rng: np.random.Generator, params: Mapping[str, Any], key: str, default: Sequence[int], level: float
) -> int:
    """An integer from the inclusive range ``params[key]`` (``[lo, hi]`` or one int), placed near ``level``.

    Every size parameter of a draw follows the same slot level, so sizes grow together and the complexity
    composite z(I) spreads over [0, 1] instead of concentrating in the middle.
    """
    lo, hi = _range(params.get(key, default), key)
    return int(lo + math.floor((int(hi) - int(lo) + 1) * at_level(rng, level) * 0.999999))


def draw_float(rng: np.random.Generator, params: Mapping[str, Any], key: str, default: Sequence[float]) -> float:
    """A float drawn uniformly from ``params[key]`` (``[lo, hi]`` or a single number), rounded to 4 decimals."""
    lo, hi = _range(params.get(key, default), key)
    return round(float(lo + (hi - lo) * rng.random()), 4)


def draw_choice(rng: np.random.Generator, params: Mapping[str, Any], key: str, default: Sequence[str]) -> str:
    """One of the strings ``params[key]`` (a list or a single string), uniformly."""
    opts = params.get(key, default)
    opts = [opts] if isinstance(opts, str) else list(opts)
    if not opts:
        raise Gf01Error("needs at least one choice", field=f"families.{key}")
    return str(opts[int(rng.integers(len(opts)))])


def _range(value: Any, key: str) -> tuple[float, float]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value, value
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        lo, hi = value
        if lo > hi:
            raise Gf01Error(f"range [{lo}, {hi}] is empty", field=f"families.{key}")
        return lo, hi
    raise Gf01Error(f"expected a number or a [lo, hi] range, got {value!r}", field=f"families.{key}")


def hoa_text(
    name: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    states: Sequence[tuple[str, Sequence[tuple[str, int]]]],
    initial: int = 0,
) -> str:
    """HOA v1 text of a Mealy controller: APs are inputs then outputs, outputs ``controllable-AP``.

    ``states`` lists ``(state name, [(guard over AP names, destination), ...])`` in priority order; guards use
    ``!``, ``&``, ``|``, ``t``, ``f`` and AP names, and become HOA labels over AP indices.
    """
    aps = [*inputs, *outputs]
    n = len(inputs)
    index = {a: str(k) for k, a in enumerate(aps)}

    def name_to_index(m: re.Match[str]) -> str:
        name = m.group(0)
        if name in index:
            return index[name]
        if name in ("t", "f"):
            return name
        raise Gf01Error(f"unknown AP {name!r} in guard", field="guard")

    def label(guard: str) -> str:
        # Guards are written over AP names; the HOA parser checks the syntax when the text is read back.
        return _IDENT.sub(name_to_index, guard)

    lines = [
        "HOA: v1",
        f'name: "{name}"',
        f"States: {len(states)}",
        f"Start: {initial}",
        f"AP: {len(aps)} " + " ".join(f'"{a}"' for a in aps),
        "controllable-AP: " + " ".join(str(n + j) for j in range(len(outputs))),
        "acc-name: all",
        "Acceptance: 0 t",
        "properties: trans-labels explicit-labels",
        "--BODY--",
    ]
    for q, (sname, edges) in enumerate(states):
        lines.append(f'State: {q} "{sname}"')
        for guard, dest in edges:
            lines.append(f"[{label(guard)}] {dest}")
    lines.append("--END--")
    return "\n".join(lines) + "\n"


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def conj(*lits: str) -> str:
    """The conjunction of literal texts (``t`` when empty)."""
    kept = [x for x in lits if x]
    return " & ".join(kept) if kept else "t"


def lit(name: str, value: int | bool) -> str:
    """``name`` or ``!name``."""
    return name if value else f"!{name}"


def outputs_exactly(outputs: Sequence[str], on: Sequence[str] | set[str]) -> str:
    """The conjunction fixing every output: those in ``on`` true, the others false."""
    return conj(*(lit(o, o in on) for o in outputs))
