"""A traffic-light controller for a main road, a side road and a pedestrian crossing, written as HOA.

Inputs ``car`` (side-road sensor) and ``ped`` (crossing button). Outputs ``mg``, ``my`` (main green / yellow),
``sg``, ``sy`` (side green / yellow) and ``walk``; each step shows exactly one of them. The main road stays green
for at least ``min_green`` steps; after that a car request switches main -> yellow -> side green for
``side_green`` steps -> side yellow -> main, and a pedestrian request (when no car) switches main -> yellow ->
walk for ``side_green`` steps -> main. Requests are only read at the end of the minimum green, so an effect at t*
(say ``walk``) needs a request at the right step and, often, no competing request earlier.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gf01_formal.instances.families.base import (
    FRACTION,
    FamilySystem,
    Param,
    draw_float,
    draw_int,
    hoa_text,
    outputs_exactly,
)
from gf01_formal.instances.model import System

DEFAULTS: dict[str, Any] = {"min_green": [1, 4], "side_green": [1, 4], "trace_density": [0.05, 0.3]}
#: What a cfg may set (the controller has about min_green + 2 side_green + 4 states).
PARAMS = {"min_green": Param("int", 1, 256), "side_green": Param("int", 1, 256), "trace_density": FRACTION}
OUTPUTS = ("mg", "my", "sg", "sy", "walk")


def traffic_hoa(min_green: int, side_green: int) -> str:
    """HOA text of the controller with the given minimum main-green and side-green/walk durations."""
    names: list[str] = [f"MG{k}" for k in range(min_green + 1)]
    names += ["MYcar", "MYped", *(f"SG{k}" for k in range(side_green)), "SY", *(f"W{k}" for k in range(side_green))]
    at = {n: q for q, n in enumerate(names)}

    def show(light: str) -> str:
        return outputs_exactly(OUTPUTS, {light})

    states: list[tuple[str, list[tuple[str, int]]]] = []
    for k in range(min_green):
        states.append((f"MG{k}", [(show("mg"), at[f"MG{k + 1}"])]))
    ready = f"MG{min_green}"
    states.append(
        (
            ready,
            [
                (f"car & {show('mg')}", at["MYcar"]),
                (f"!car & ped & {show('mg')}", at["MYped"]),
                (f"!car & !ped & {show('mg')}", at[ready]),
            ],
        )
    )
    states.append(("MYcar", [(show("my"), at["SG0"])]))
    states.append(("MYped", [(show("my"), at["W0"])]))
    for k in range(side_green):
        states.append((f"SG{k}", [(show("sg"), at[f"SG{k + 1}"] if k + 1 < side_green else at["SY"])]))
    states.append(("SY", [(show("sy"), at["MG0"])]))
    for k in range(side_green):
        states.append((f"W{k}", [(show("walk"), at[f"W{k + 1}"] if k + 1 < side_green else at["MG0"])]))
    return hoa_text(f"traffic-light-g{min_green}-s{side_green}", ["car", "ped"], OUTPUTS, states)


def build(rng: np.random.Generator, params: dict[str, Any], level: float) -> FamilySystem:
    """Draw a traffic-light controller: minimum green and side-green durations."""
    p = {**DEFAULTS, **params}
    g = draw_int(rng, p, "min_green", DEFAULTS["min_green"], level)
    s = draw_int(rng, p, "side_green", DEFAULTS["side_green"], level)
    density = draw_float(rng, p, "trace_density", DEFAULTS["trace_density"])
    return FamilySystem(
        family="traffic_light",
        params={"min_green": g, "side_green": s, "trace_density": density},
        system=System(kind="hoa", inputs=["car", "ped"], outputs=list(OUTPUTS), hoa=traffic_hoa(g, s)),
        effects=("walk", "sg", "sy", "my", "mg", "sg | walk"),
        input_density=(density, density),
    )
