"""Inputs a player may not edit, made part of the circuit: SYNTCOMP's split of a specification's inputs into the
environment's and the controller's (``controllable_*``), and any other choice of which inputs the player edits.

GF-01's AP_in are the *intervenable* inputs (Definition 1). An input the player does not edit still moves: it
follows the base trace. :func:`freeze_inputs` makes that exact and keeps the system a plain circuit: the frozen
inputs become internal signals driven by a step counter (``ceil(log2(T + 1))`` latches that count to T and stay
there) through a small read-only table of their base values, so every solver, the play engine and the scorer see
an ordinary circuit over the editable inputs, and its runs are the original circuit's runs on the whole base trace.

>>> from aig.build import counter
>>> from aig.view import CircuitView
>>> frozen = freeze_inputs(counter(2), [1], [0, 0, 1])  # rst follows 0, 0, 1; en stays an input
>>> view = CircuitView.from_aig(frozen)
>>> view.inputs, view.run([1, 1, 1])[1] == CircuitView.from_aig(counter(2)).run([0b01, 0b01, 0b11])[1]
(('en',), True)
"""

from __future__ import annotations

from collections.abc import Sequence

from aig.build import Builder
from aig.model import Aig
from aig.writer import renumber
from hoa.errors import Gf01Error

#: The prefix SYNTCOMP gives the inputs its controller drives (the others are the environment's).
CONTROLLABLE = "controllable_"
#: What ``--edit`` may name besides a list of inputs.
EDIT_CHOICES = ("all", "uncontrollable", "controllable")


def input_names(aig: Aig) -> tuple[str, ...]:
    """The inputs' names as the Mealy view gives them (the symbol table's, else ``i<k>``)."""
    return tuple(aig.name("i", k) or f"i{k}" for k in range(len(aig.inputs)))


def edited_inputs(names: Sequence[str], edit: str) -> tuple[int, ...]:
    """The positions of the inputs the player edits: ``all``; ``uncontrollable`` (SYNTCOMP: the environment's, the
    inputs not named ``controllable_*``); ``controllable`` (the controller's); or a comma-separated list of names.

    >>> edited_inputs(["req", "controllable_grant"], "uncontrollable")
    (0,)
    """
    if edit == "all":
        return tuple(range(len(names)))
    if edit in ("uncontrollable", "controllable"):
        keep = tuple(k for k, n in enumerate(names) if n.startswith(CONTROLLABLE) == (edit == "controllable"))
        if not keep:
            raise Gf01Error(f"--edit {edit}: the circuit has no {edit} input (SYNTCOMP names the controller's inputs "
                            f"{CONTROLLABLE}*)", field="--edit")
        return keep
    wanted = [w.strip() for w in edit.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in names]
    if unknown or not wanted:
        shown = ", ".join(list(names)[:10]) or "none"
        raise Gf01Error(f"--edit {edit!r}: {'no input is named ' + repr(unknown[0]) if unknown else 'names no input'}"
                        f" ({' or '.join(EDIT_CHOICES)}, or input names: {shown})", field="--edit")
    return tuple(k for k, n in enumerate(names) if n in set(wanted))


def freeze_inputs(aig: Aig, frozen: Sequence[int], values: Sequence[int]) -> Aig:
    """``aig`` with the inputs at positions ``frozen`` replaced by their base values: ``values[t]`` holds, bit ``j``,
    the value of input ``frozen[j]`` at step ``t`` (``T = len(values)`` steps; after them the frozen inputs read 0,
    which no query of a T-step instance sees). The other inputs keep their order and names; outputs and bad-state
    properties keep theirs; justice and fairness properties, which no GF-01 query reads, are not carried."""
    if aig.constraints:
        raise Gf01Error("the circuit has invariant constraints: the Mealy view has no place for them")
    a = renumber(aig)  # gates in a topological order: each gate's inputs are built before it
    names = input_names(a)
    frozen_at = {k: j for j, k in enumerate(frozen)}
    b = Builder()
    lit_of: dict[int, int] = {0: 0}  # variable of ``a`` -> literal of the builder

    def lit(x: int) -> int:
        return lit_of[x >> 1] ^ (x & 1)

    for k, var_lit in enumerate(a.inputs):
        if k not in frozen_at:
            lit_of[var_lit >> 1] = b.input(names[k])
    latches = [b.latch(a.name("l", k) or f"l{k}", latch.reset) for k, latch in enumerate(a.latches)]
    for latch, made in zip(a.latches, latches, strict=True):
        lit_of[latch.lit >> 1] = made
    if frozen:
        steps = len(values)
        bits = [b.latch(f"gf01_step{i}") for i in range(max(1, steps.bit_length()))]
        at = [b.all([c if (t >> i) & 1 else c ^ 1 for i, c in enumerate(bits)]) for t in range(steps + 1)]
        carry = at[steps] ^ 1  # count to T, then stay
        for c in bits:
            b.set_next(c, b.xor(c, carry))
            carry = b.and_(carry, c)
        for k, j in frozen_at.items():
            lit_of[a.inputs[k] >> 1] = b.any([at[t] for t in range(steps) if (values[t] >> j) & 1])
    for g in a.ands:
        lit_of[g.lhs >> 1] = b.and_(lit(g.rhs0), lit(g.rhs1))
    for latch, made in zip(a.latches, latches, strict=True):
        b.set_next(made, lit(latch.next))
    for k, x in enumerate(a.outputs):
        b.output(a.name("o", k) or f"o{k}", lit(x))
    for k, x in enumerate(a.bad):
        b.bad_state(a.name("b", k) or f"b{k}", lit(x))
    return b.aig()


__all__ = ["CONTROLLABLE", "EDIT_CHOICES", "edited_inputs", "freeze_inputs", "input_names"]
