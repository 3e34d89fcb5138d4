"""Shift registers and latch banks with n bits, written as HOA.

- shift_register(n): inputs ``d`` (data) and ``en`` (shift enable); outputs ``q1..qn``, the register contents after
  the step (``q1`` newest). With ``en`` the contents shift and ``d`` enters; without it they hold. States are the
  2^n contents. An effect such as ``q1 & q2 & q3`` at t* needs ``d`` and ``en`` right at three different steps.
- latch_bank(n): inputs ``s0..s{n-1}`` (set) and ``rst`` (reset all, wins over set); outputs ``l0..l{n-1}``, the
  latch values after the step. States are the 2^n latch values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gf01_formal.instances.families.base import (
    FamilySystem,
    Param,
    conj,
    draw_choice,
    draw_float,
    draw_int,
    hoa_text,
    lit,
)
from gf01_formal.instances.model import System

DEFAULTS: dict[str, Any] = {"bits": [2, 5], "variant": ["shift_register", "latch_bank"], "trace_density": [0.2, 0.5]}
#: What a cfg may set: n bits are 2^n states; a latch bank has n + 1 inputs and 2^n + 1 edges a state (at n = 7
#: its tables take 10 s to build).
PARAMS = {"bits": Param("int", 1, 6), "variant": Param("choice", choices=("shift_register", "latch_bank")),
          "trace_density": Param("float", 0.0, 1.0)}


def _outs(names: list[str], value: int) -> str:
    return conj(*(lit(o, (value >> j) & 1) for j, o in enumerate(names)))


def shift_register_hoa(n: int) -> str:
    """HOA text of an ``n``-bit shift register with data ``d`` and enable ``en``."""
    outs = [f"q{j + 1}" for j in range(n)]
    mask = (1 << n) - 1
    states = []
    for s in range(1 << n):
        one, zero = ((s << 1) | 1) & mask, (s << 1) & mask
        states.append(
            (
                "q=" + format(s, f"0{n}b")[::-1],
                [
                    (conj("en", "d", _outs(outs, one)), one),
                    (conj("en", "!d", _outs(outs, zero)), zero),
                    (conj("!en", _outs(outs, s)), s),
                ],
            )
        )
    return hoa_text(f"shift-register-{n}", ["d", "en"], outs, states)


def latch_bank_hoa(n: int) -> str:
    """HOA text of ``n`` set/reset latches with set inputs ``s_i`` and a shared reset ``rst``."""
    sets = [f"s{j}" for j in range(n)]
    outs = [f"l{j}" for j in range(n)]
    states = []
    for s in range(1 << n):
        edges = [(conj("rst", _outs(outs, 0)), 0)]
        for m in range(1 << n):  # m = the set inputs that are on
            nxt = s | m
            edges.append((conj("!rst", *(lit(sets[j], (m >> j) & 1) for j in range(n)), _outs(outs, nxt)), nxt))
        states.append(("l=" + format(s, f"0{n}b")[::-1], edges))
    return hoa_text(f"latch-bank-{n}", [*sets, "rst"], outs, states)


def build(rng: np.random.Generator, params: dict[str, Any], level: float) -> FamilySystem:
    """Draw a shift register or a latch bank (``variant``) with ``bits`` bits."""
    p = {**DEFAULTS, **params}
    variant = draw_choice(rng, p, "variant", DEFAULTS["variant"])
    n = draw_int(rng, p, "bits", DEFAULTS["bits"], level)
    density = draw_float(rng, p, "trace_density", DEFAULTS["trace_density"])
    if variant == "shift_register":
        outs = [f"q{j + 1}" for j in range(n)]
        inputs = ["d", "en"]
        text = shift_register_hoa(n)
        effects = [conj(*outs), outs[-1], conj(outs[0], f"!{outs[-1]}"), conj(f"!{outs[0]}", outs[-1])]
        effects += [conj(*(lit(o, j % 2 == 0) for j, o in enumerate(outs)))]
        dens = (density, min(0.9, density + 0.3))
    else:
        outs = [f"l{j}" for j in range(n)]
        inputs = [*(f"s{j}" for j in range(n)), "rst"]
        text = latch_bank_hoa(n)
        effects = [conj(*outs), *outs, conj(*(lit(o, 0) for o in outs))]
        dens = (*([density / 2] * n), density)
    return FamilySystem(
        family=variant,
        params={"bits": n, "variant": variant, "trace_density": density},
        system=System(kind="hoa", inputs=inputs, outputs=outs, hoa=text),
        effects=tuple(dict.fromkeys(effects)),
        input_density=tuple(dens),
    )
