"""What a system family hands the generator (:class:`FamilySystem`), and HOA text for families written as HOA.

A family is a function ``build(rng, params) -> FamilySystem``: it draws its size parameters from the ranges in
``params`` with the seeded ``rng`` and returns the system (HOA text with ``controllable-AP``, or an explicit
table), the candidate effects over its output names, and per-input densities for drawing base traces. Each family
also declares the parameters a cfg may give it (:class:`Param`), so that :func:`check_params` refuses a bad cfg
before any work, with the parameter named, instead of a crash or an endless build in a worker.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from gf01_formal.instances.model import System
from hoa.errors import Gf01Error, quote
from hoa.mealy import MealyView


@dataclass(frozen=True)
class FamilySystem:
    """A drawn family member: its system, the effects worth asking about, and base-trace input densities.

    ``view``: the Mealy view of ``system``, when the family built it along with the text (the one parsing the text
    gives); None: the generator parses the text."""

    family: str
    params: dict[str, Any]
    system: System
    effects: tuple[str, ...]
    input_density: tuple[float, ...]
    view: MealyView | None = None


@dataclass(frozen=True)
class Param:
    """A family parameter a cfg may set: an ``int`` or ``float`` (one value or a ``[lo, hi]`` range, within
    ``[low, high]``), a ``choice`` (one of ``choices``, or a non-empty list of them), or a ``path`` (a string)."""

    kind: Literal["int", "float", "choice", "path"]
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()


#: Every family's trace density (and other fractions) lie in [0, 1].
FRACTION = Param("float", 0.0, 1.0)


def check_params(params: Mapping[str, Any], specs: Mapping[str, Param], *, field: str) -> None:
    """Raise Gf01Error (``field`` + the parameter's name) unless every key of ``params`` is one of ``specs`` with a
    value it allows."""
    for key, value in params.items():
        where = f"{field}.{key}"
        spec = specs.get(key)
        if spec is None:
            known = ", ".join(sorted(specs)) or "none"
            raise Gf01Error(f"unknown parameter (this family takes: {known})", field=where)
        if spec.kind == "path":
            if not isinstance(value, str) or not value:
                raise Gf01Error(f"expected a directory name, got {quote(value, 60)}", field=where)
        elif spec.kind == "choice":
            opts = [value] if isinstance(value, str) else value
            if not isinstance(opts, list) or not opts or any(o not in spec.choices for o in opts):
                raise Gf01Error(f"expected one of {', '.join(spec.choices)} or a list of them, got "
                                f"{quote(value, 60)}", field=where)
        else:
            lo, hi = _range(value, where, integer=spec.kind == "int")
            if not spec.low <= lo <= hi <= spec.high:
                shown = f"[{quote(lo, 30)}, {quote(hi, 30)}]" if lo != hi else quote(lo, 30)
                raise Gf01Error(f"{shown} is outside [{spec.low:g}, {spec.high:g}]", field=where)


#: How far a drawn size may stray from the slot's size level (as a fraction of the range).
JITTER = 0.2


def directory_files(params: Mapping[str, Any], family: str, suffixes: Sequence[str], *,
                    field: str = "families") -> list[Path]:
    """The files of the directory ``params["path"]`` with one of ``suffixes``, sorted by name: the systems a
    directory family (``hoa_dir``, ``aiger_dir``) draws from; an error naming the field when there is none."""
    if "path" not in params:
        raise Gf01Error(f"a {family} family needs a 'path'", field=f"{field}.path")
    d = Path(params["path"])
    shown = quote(str(d), 200, bare=True)
    try:
        if not d.is_dir():
            raise Gf01Error(f"not a directory: {shown}", field=f"{field}.path")
        files = sorted((p for p in d.iterdir() if p.suffix in suffixes and p.is_file()), key=lambda p: p.name)
    except OSError as ex:
        raise Gf01Error(f"cannot read the directory {shown}: {ex.strerror or ex}", field=f"{field}.path") from None
    if not files:
        raise Gf01Error(f"no {' or '.join(suffixes)} files in {shown}", field=f"{field}.path")
    return files


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
    lo, hi = _range(params.get(key, default), f"families.{key}", integer=True)
    return int(lo + math.floor((int(hi) - int(lo) + 1) * at_level(rng, level) * 0.999999))


def draw_float(rng: np.random.Generator, params: Mapping[str, Any], key: str, default: Sequence[float]) -> float:
    """A float drawn uniformly from ``params[key]`` (``[lo, hi]`` or a single number), rounded to 4 decimals."""
    lo, hi = _range(params.get(key, default), f"families.{key}")
    return round(float(lo + (hi - lo) * rng.random()), 4)


def draw_choice(rng: np.random.Generator, params: Mapping[str, Any], key: str, default: Sequence[str]) -> str:
    """One of the strings ``params[key]`` (a list or a single string), uniformly."""
    opts = params.get(key, default)
    opts = [opts] if isinstance(opts, str) else list(opts)
    if not opts:
        raise Gf01Error("needs at least one choice", field=f"families.{key}")
    return str(opts[int(rng.integers(len(opts)))])


def _range(value: Any, field: str, *, integer: bool = False) -> tuple[float, float]:
    """``(lo, hi)`` of a number or a ``[lo, hi]`` range of (``integer``: whole) finite numbers."""
    kinds = (int,) if integer else (int, float)
    pair = value if isinstance(value, list | tuple) and len(value) == 2 else None
    items = [value] if pair is None else list(pair)
    if not all(isinstance(v, kinds) and not isinstance(v, bool) and (isinstance(v, int) or math.isfinite(v))
               for v in items):
        what = "an integer or an [lo, hi] range of integers" if integer else "a number or a [lo, hi] range"
        raise Gf01Error(f"expected {what}, got {quote(value, 60)}", field=field)
    lo, hi = items[0], items[-1]
    if lo > hi:
        raise Gf01Error(f"range [{quote(lo, 30)}, {quote(hi, 30)}] is empty", field=field)
    return lo, hi


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
    index = {a: str(k) for k, a in enumerate(aps)}

    def name_to_index(m: re.Match[str]) -> str:
        name = m.group(0)
        if name in index:
            return index[name]
        if name in ("t", "f"):
            return name
        raise Gf01Error(f"unknown AP {name!r} in guard", field="guard")

    # Guards are written over AP names; the HOA parser checks the syntax when the text is read back.
    labelled = [(sname, [(_IDENT.sub(name_to_index, guard), dest) for guard, dest in edges])
                for sname, edges in states]
    return hoa_text_of_labels(name, inputs, outputs, labelled, initial)


def hoa_text_of_labels(
    name: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    states: Sequence[tuple[str, Sequence[tuple[str, int]]]],
    initial: int = 0,
) -> str:
    """:func:`hoa_text` of guards already written as HOA labels over AP indices (inputs, then outputs)."""
    aps = [*inputs, *outputs]
    n = len(inputs)
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
        for label, dest in edges:
            lines.append(f"[{label}] {dest}")
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
