"""A simulation as a VCD waveform (IEEE 1364 value change dump), for GTKWave and every other waveform viewer.

Two scopes, ``base`` and ``edited``, each with one 1-bit wire per input and output and an ``effect`` wire (the
effect's value at that step), plus a top-level ``effect_step`` wire (1 where the effect counts); step ``t`` is time
``t`` in a 1 ns timescale. Nothing of the wall clock is written (no ``$date``), so the same simulation gives the
same file.

>>> from gf01_formal.scoring.simulation import simulate
>>> text = vcd(simulate(problem, ((20, 2, 1),)))
>>> text.splitlines()[:3]
['$version gf01-formal $end', '$timescale 1ns $end', '$scope module gf01 $end']
"""

from __future__ import annotations

import re

from gf01_formal.scoring.simulation import Simulation

_NAME = re.compile(r"[^A-Za-z0-9_\[\]$.]")


def _code(k: int) -> str:
    """The k-th VCD identifier code: printable ASCII 33..126, shortest first."""
    out = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 94)
        out = chr(33 + r) + out
    return out


def _unique(names: list[str]) -> list[str]:
    """``names`` with each repeat suffixed ``_2``, ``_3`` ...: two signals that read the same once cleaned (``x y`` and
    ``x_y``, an output called ``effect``) stay two wires a viewer tells apart."""
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        k, unique = 1, name
        while unique in seen:
            k += 1
            unique = f"{name}_{k}"
        seen.add(unique)
        out.append(unique)
    return out


def vcd(sim: Simulation) -> str:
    """The VCD text of both runs of ``sim`` (module docstring)."""
    system = sim.problem.system
    wires: list[tuple[str, str, str]] = []  # (scope, name, code)
    # The effect wire claims its name first (the module docstring's promise); the signals follow in order.
    effect, *signals = _unique(["effect", *(_NAME.sub("_", name) for name in (*system.inputs, *system.outputs))])
    names = [*signals, effect]
    for scope in ("base", "edited"):
        for name in names:
            wires.append((scope, name, _code(len(wires))))
    step_code = _code(len(wires))
    lines = ["$version gf01-formal $end", "$timescale 1ns $end", "$scope module gf01 $end",
             f"$var wire 1 {step_code} effect_step $end"]
    for scope in ("base", "edited"):
        lines.append(f"$scope module {scope} $end")
        lines += [f"$var wire 1 {code} {name} $end" for s, name, code in wires if s == scope]
        lines.append("$upscope $end")
    lines += ["$upscope $end", "$enddefinitions $end"]
    n_in, n_out = system.num_inputs, system.num_outputs
    last: dict[str, int] = {}
    for s in sim.steps:
        values: list[int] = []
        for xs, ys, eff in ((s.base_inputs, s.base_outputs, s.base_effect),
                            (s.edited_inputs, s.edited_outputs, s.edited_effect)):
            values += [(xs >> i) & 1 for i in range(n_in)] + [(ys >> j) & 1 for j in range(n_out)] + [int(eff)]
        values.append(int(s.effect_step))
        codes = [code for _, _, code in wires] + [step_code]
        changes = [f"{v}{c}" for c, v in zip(codes, values, strict=True) if last.get(c) != v]
        lines.append(f"#{s.t}")
        if s.t == 0:
            lines += ["$dumpvars", *changes, "$end"]
        else:
            lines += changes
        last.update(zip(codes, values, strict=True))
    lines.append(f"#{len(sim.steps)}")
    return "\n".join(lines) + "\n"


__all__ = ["vcd"]
