"""User-supplied circuits as a family: a directory of AIGER files (``.aag``/``.aig``: SYNTCOMP controllers, HWMCC
designs).

cfg: ``{"kind": "aiger_dir", "path": "circuits/", "trace_density": [0.2, 0.5]}``. Each draw picks one file uniformly
from the directory's ``*.aag`` and ``*.aig`` files in sorted name order (so the draw does not depend on directory
listing order); its outputs are its outputs and bad-state properties (docs/aiger.md); the candidate effects are each
output and its negation. The system carries the canonical AIGER text, and the file's sha256 is recorded in the family
parameters, so an instance says exactly which circuit it used. A file that is not a circuit the Mealy view accepts
(malformed, an uninitialised latch, an invariant constraint) is refused with its name.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from gf01_formal.instances.families.base import FRACTION, FamilySystem, Param, directory_files, draw_float
from gf01_formal.instances.model import System
from gf01_formal.instances.problem import system_view
from gf01_formal.instances.spec import aiger_system
from hoa.errors import Gf01Error
from hoa.files import read_bytes

DEFAULTS: dict[str, Any] = {"trace_density": [0.2, 0.5]}
#: What a cfg may set.
PARAMS = {"path": Param("path"), "trace_density": FRACTION}



def check_dir(params: dict[str, Any], *, field: str) -> None:
    """Refuse an aiger_dir cfg entry without a ``path`` to a directory holding AIGER files."""
    directory_files(params, "aiger_dir", (".aag", ".aig"), field=field)


def build(rng: np.random.Generator, params: dict[str, Any], level: float) -> FamilySystem:
    """Draw one circuit of the directory ``params["path"]`` (its size is what it is: ``level`` is unused)."""
    files = directory_files(params, "aiger_dir", (".aag", ".aig"))
    f = files[int(rng.integers(len(files)))]
    density = draw_float(rng, {**DEFAULTS, **params}, "trace_density", DEFAULTS["trace_density"])
    data = read_bytes(f)
    try:
        spec, view = aiger_system(data, file=str(f))
        system_view(spec, built=view)  # kept for the generator: the circuit is parsed once
    except Gf01Error as ex:
        raise Gf01Error(ex.message, file=str(f), line=ex.line, col=ex.col, field=ex.field) from ex
    if not view.outputs:
        raise Gf01Error("the circuit has no output and no bad-state property to be an effect", file=str(f))
    system = System.of_spec(spec)
    effects = [*view.outputs, *(f"!{o}" for o in view.outputs)]
    return FamilySystem(
        family="aiger_dir",
        params={"file": f.name, "sha256": hashlib.sha256(data).hexdigest(), "trace_density": density},
        system=system,
        effects=tuple(effects),
        input_density=tuple([density] * view.num_inputs),
    )
