"""AIGER 1.9 (and-inverter graphs with latches): reader, model, canonical writer, and the Mealy view of a circuit.

A ground-floor package above :mod:`hoa`: of the project it imports only ``hoa.errors``, ``hoa.files`` and
``hoa.mealy`` (docs/architecture.md states each layer's imports; tests/test_layering.py holds them).

>>> from aig import parse, canonical
>>> canonical(parse(b"aag 1 1 0 1 0\\n2\\n3\\n"))
'aag 1 1 0 1 0\\n2\\n3\\n'
"""

from aig.model import Aig, And, Latch
from aig.parser import parse, parse_file
from aig.writer import binary, canonical, renumber

__all__ = ["Aig", "And", "Latch", "binary", "canonical", "parse", "parse_file", "renumber"]
