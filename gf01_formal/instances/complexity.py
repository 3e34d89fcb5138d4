"""Complexity knobs (DEC-058), their normalisation to [0, 1], z(I), and the normal-mode window w(I) (DEC-014b).

This module is the arithmetic; :mod:`gf01_formal.instances.measure` runs the solver queries that give the raw values.

The circularity "w(I) depends on z(I), z(I) on oracle Eff_t and |M_B(I)|, and those on w(I) in normal mode" is
cut by measuring every knob on the *hard-mode* problem at t* (same system, trace, effect, t* and B_T). The hard
problem does not depend on the window, so z(I) and w(I) are well defined; the instance's own (normal-mode) oracle
and count are stored separately, in its certification.

Scales (``SCALES``, documented in docs/instances.md), each clamped to [0, 1]:

====================  ==========================================  ==========================
knob                  normalised value                            0 at / 1 at
====================  ==========================================  ==========================
states                (log2(|Q|) - 1) / 3                         2 / 16 states
inputs                (|AP_in| - 1) / 4                           1 / 5 inputs
outputs               (|AP_out| - 1) / 3                          1 / 4 outputs
transitions           (log2(edges) - 2) / 7                       4 / 512 Mealy edges
horizon               (log2(T) - 2) / 3                           T = 4 / T = 32
effect_depth          (t* + 1) / T                                t* at the start / at T-1
oracle_eff_t          (Eff_t - 1) / 3                             1 / 4 timesteps
gold_count            log2(|M_B|) / 10                            exactly 1 / 1024 or more
====================  ==========================================  ==========================

Every knob grows with the size of what it measures (``gold_count`` with the number of valid certificates within
B_T); the scales map the default generator's size ranges onto [0, 1] and clamp larger systems at 1. z(I) is the
equal-weight composite of DEC-058; whether it predicts difficulty is a pilot question (HYP-007). A knob that could
not be measured (no valid certificate in hard mode; a count past its limits) is null with a note, and z(I) is the
mean of the known ones. Values are rounded to 6 decimals so that the stored floats do not depend on the platform's libm.

>>> window_of(0.0), window_of(0.25), window_of(0.5), window_of(1.0)
(1, 2, 2, 3)
"""

from __future__ import annotations

import math

from gf01_formal.instances.model import Complexity, Knob

SCALES = "gf01-formal.scales.v1"  # bump when a scale below changes
#: DEC-014b defaults: w = clamp(W_MIN, W_MAX, round(A0 + AT*T + AC*z)).
A0, AT, AC, W_MIN, W_MAX = 1.0, 0.0, 2.0, 1, 6
_DIGITS = 6


def _clamp01(x: float) -> float:
    return round(min(1.0, max(0.0, x)), _DIGITS)


def window_of(z: float, horizon: int = 0) -> int:
    """w(I) = clamp(1, 6, round(1 + 0*T + 2*z)), rounding halves up (not Python's banker's rounding)."""
    raw = A0 + AT * horizon + AC * z
    return int(min(W_MAX, max(W_MIN, math.floor(raw + 0.5))))


def knobs(
    *,
    states: int,
    inputs: int,
    outputs: int,
    transitions: int,
    horizon: int,
    t_star: int,
    oracle_eff_t: int | None,
    gold_count: int | None,
    oracle_note: str | None = None,
    count_note: str | None = None,
) -> Complexity:
    """The Complexity record of raw knob values (normalised by the documented scales), z(I) and w(I)."""
    norms = _norms(states, inputs, outputs, transitions, horizon, t_star, oracle_eff_t, gold_count)
    raws = {"states": states, "inputs": inputs, "outputs": outputs, "transitions": transitions, "horizon": horizon,
            "effect_depth": t_star, "oracle_eff_t": oracle_eff_t, "gold_count": gold_count}
    notes = {"oracle_eff_t": oracle_note or "no valid certificate in hard mode at t*",
             "gold_count": count_note or "M_B(I) is empty in hard mode at t*"}
    k = {name: Knob(raw=raws[name], norm=norm) if norm is not None else Knob(raw=raws[name], norm=None,
                                                                               note=notes[name])
         for name, norm in norms.items()}
    z = _z(norms)
    return Complexity(scales=SCALES, z=z, window=window_of(z, horizon), **k)


def window_for(
    *,
    states: int,
    inputs: int,
    outputs: int,
    transitions: int,
    horizon: int,
    t_star: int,
    oracle_eff_t: int | None,
    gold_count: int | None,
) -> int:
    """``knobs(...).window`` without the records (the generator asks it of every candidate in normal mode)."""
    norms = _norms(states, inputs, outputs, transitions, horizon, t_star, oracle_eff_t, gold_count)
    return window_of(_z(norms), horizon)


def _norms(states: int, inputs: int, outputs: int, transitions: int, horizon: int, t_star: int,
           oracle_eff_t: int | None, gold_count: int | None) -> dict[str, float | None]:
    """Each knob's normalised value (None: not measured), in the record's order."""
    return {
        "states": _clamp01((math.log2(max(1, states)) - 1) / 3),
        "inputs": _clamp01((inputs - 1) / 4),
        "outputs": _clamp01((outputs - 1) / 3),
        "transitions": _clamp01((math.log2(max(1, transitions)) - 2) / 7),
        "horizon": _clamp01((math.log2(max(1, horizon)) - 2) / 3),
        "effect_depth": _clamp01((t_star + 1) / max(1, horizon)),
        "oracle_eff_t": _clamp01((oracle_eff_t - 1) / 3) if oracle_eff_t is not None else None,
        "gold_count": _clamp01(math.log2(gold_count) / 10) if gold_count else None,
    }


def _z(norms: dict[str, float | None]) -> float:
    """z(I): the mean of the known normalised knobs, rounded."""
    known = [v for v in norms.values() if v is not None]
    return round(sum(known) / len(known), _DIGITS)
