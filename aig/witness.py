"""AIGER witnesses (the HWMCC format, as ``aigsim -w`` and model checkers write them) of a circuit's input trace.

A witness is ``1`` (the property fails), the failing properties (``b0``: the first bad-state property; ``j0`` a
justice property), the initial latch values, one line of input values per step (input 0 first), and ``.``. Latches
are in the circuit's canonical order, which keeps the file's order of inputs and latches (:mod:`aig.writer`).

>>> from aig.parser import parse
>>> witness(parse(b"aag 3 1 1 0 1 1\\n2\\n4 6 0\\n6\\n6 5 2\\n"), [1, 1], prop="b0")
'1\\nb0\\n0\\n1\\n1\\n.\\n'
"""

from __future__ import annotations

from collections.abc import Sequence

from aig.model import Aig
from hoa.errors import Gf01Error


def witness(aig: Aig, trace: Sequence[int], *, prop: str) -> str:
    """The witness that ``trace`` (input valuations, bit ``i`` = input ``i``) violates property ``prop`` of ``aig``
    (``b<k>`` or ``j<k>``; the caller checks that the trace does reach it). Raises Gf01Error for a circuit with an
    uninitialised latch (a witness must fix its initial state) or an unknown property."""
    kind, index = prop[:1], prop[1:]
    count = {"b": len(aig.bad) or len(aig.outputs), "j": len(aig.justice)}.get(kind, 0)
    if not index.isdigit() or not int(index) < count:
        raise Gf01Error(f"the circuit has no property {prop!r} (bad: b0..b{count - 1})" if count else
                        f"the circuit has no property {prop!r}", field="property")
    if any(not latch.initialised for latch in aig.latches):
        raise Gf01Error("the circuit has an uninitialised latch: a witness needs one initial state", field="property")
    init = "".join(str(latch.reset) for latch in aig.latches)
    n = len(aig.inputs)
    steps = ["".join(str((x >> i) & 1) for i in range(n)) for x in trace]
    return "\n".join(["1", prop, init, *steps, "."]) + "\n"


__all__ = ["witness"]
