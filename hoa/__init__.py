"""HOA v1: label expressions, automaton model, parser (with the token positions it records, ``hoa.spans``),
validator, writer, the per-file records of ``gf01 hoa check`` and the Mealy view of a controller; with the
project's one error type (``hoa.errors``) and its one reader of user files (``hoa.files``), which every layer above
uses.

The names below are imported on first use (PEP 562), so ``from hoa.errors import Gf01Error`` costs nothing more.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Gf01Error": "hoa.errors",
    "MealyView": "hoa.mealy",
    "load_mealy": "hoa.mealy",
    "mealy_from_text": "hoa.mealy",
    "parse": "hoa.parser",
    "parse_file": "hoa.parser",
    "read_text": "hoa.files",
    "write": "hoa.writer",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hoa' has no attribute {name!r}")


__all__ = sorted(_LAZY)
