"""Modulo-M counters with increment and synchronous reset, written as HOA.

Inputs ``inc`` and ``rst`` (reset wins); outputs ``c0..c{b-1}`` (binary value after the step, ``c0`` least
significant) and ``wrap`` (the increment wrapped M-1 -> 0 at this step). States are the M values. An effect
"the counter shows k at t*" needs k increments after the last reset: several timesteps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gf01_formal.instances.families.base import FRACTION, FamilySystem, Param, conj, draw_float, draw_int, hoa_text, lit
from gf01_formal.instances.model import System

DEFAULTS: dict[str, Any] = {"modulus": [2, 12], "trace_density": [0.15, 0.45], "reset_density": [0.05, 0.2]}
#: What a cfg may set (a modulus-m counter has m states and m - 1 candidate effects).
PARAMS = {"modulus": Param("int", 2, 1024), "trace_density": FRACTION, "reset_density": FRACTION}


def counter_bits(modulus: int) -> int:
    """Output bits needed to show values 0..modulus-1."""
    return max(1, (modulus - 1).bit_length())


def value_text(k: int, bits: int) -> str:
    """The conjunction over c0..c{bits-1} that reads value ``k``."""
    return conj(*(lit(f"c{j}", (k >> j) & 1) for j in range(bits)))


def counter_hoa(modulus: int) -> str:
    """HOA text of a modulo-``modulus`` counter with ``inc``, ``rst`` and outputs c0.., wrap."""
    b = counter_bits(modulus)
    outs = [*(f"c{j}" for j in range(b)), "wrap"]
    states = []
    for v in range(modulus):
        up = (v + 1) % modulus
        wrapped = int(up == 0)
        states.append(
            (
                f"n{v}",
                [
                    (conj("rst", value_text(0, b), "!wrap"), 0),
                    (conj("!rst", "inc", value_text(up, b), lit("wrap", wrapped)), up),
                    (conj("!rst", "!inc", value_text(v, b), "!wrap"), v),
                ],
            )
        )
    return hoa_text(f"counter-mod-{modulus}", ["inc", "rst"], outs, states)


def build(rng: np.random.Generator, params: dict[str, Any], level: float) -> FamilySystem:
    """Draw a counter: its modulus and the base-trace densities of ``inc`` and ``rst``."""
    p = {**DEFAULTS, **params}
    m = draw_int(rng, p, "modulus", DEFAULTS["modulus"], level)
    inc = draw_float(rng, p, "trace_density", DEFAULTS["trace_density"])
    rst = draw_float(rng, p, "reset_density", DEFAULTS["reset_density"])
    b = counter_bits(m)
    effects = [value_text(k, b) for k in range(1, m)] + ["wrap"]
    return FamilySystem(
        family="counter",
        params={"modulus": m, "trace_density": inc, "reset_density": rst},
        system=System(kind="hoa", inputs=["inc", "rst"], outputs=[*(f"c{j}" for j in range(b)), "wrap"],
                      hoa=counter_hoa(m)),
        effects=tuple(effects),
        input_density=(inc, rst),
    )
