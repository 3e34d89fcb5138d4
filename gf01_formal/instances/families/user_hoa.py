"""User-supplied controllers as a family: a directory of ``.hoa`` files (e.g. ltlsynt outputs).

cfg: ``{"kind": "hoa_dir", "path": "controllers/", "trace_density": [0.2, 0.5]}``, and ``"resolve": "first-edge"``
to read controllers that are not output-deterministic by the first-edge rule (without it they are refused). Each
draw picks one file uniformly from the directory's ``*.hoa`` files in sorted name order (so the draw does not
depend on directory listing order); its outputs are its ``controllable-AP``; the candidate effects are each output
and its negation. The file's sha256 is recorded in the family parameters, so an instance says exactly which
controller it used. A file that is not a single input-complete Mealy controller is refused with its name.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from gf01_formal.instances.families.base import FRACTION, FamilySystem, Param, directory_files, draw_float
from gf01_formal.instances.model import System
from gf01_formal.instances.problem import system_view
from gf01_formal.instances.spec import RESOLUTIONS, hoa_system
from hoa.errors import Gf01Error
from hoa.files import read_text

DEFAULTS: dict[str, Any] = {"trace_density": [0.2, 0.5]}
#: What a cfg may set.
PARAMS = {"path": Param("path"), "trace_density": FRACTION, "resolve": Param("choice", choices=RESOLUTIONS)}



def check_dir(params: dict[str, Any], *, field: str) -> None:
    """Refuse a hoa_dir cfg entry without a ``path`` to a directory holding ``.hoa`` files."""
    directory_files(params, "hoa_dir", (".hoa",), field=field)


def build(rng: np.random.Generator, params: dict[str, Any], level: float) -> FamilySystem:
    """Draw one controller of the directory ``params["path"]`` (its size is what it is: ``level`` is unused)."""
    files = directory_files(params, "hoa_dir", (".hoa",))
    f = files[int(rng.integers(len(files)))]
    density = draw_float(rng, {**DEFAULTS, **params}, "trace_density", DEFAULTS["trace_density"])
    text = read_text(f)
    try:
        spec, view = hoa_system(text, None, file=str(f), resolve=params.get("resolve"))
        system_view(spec, built=view)  # input-completeness, named in the error (and the view kept for the generator)
        system = System.of_spec(spec)
    except Gf01Error as ex:
        raise Gf01Error(ex.message, file=str(f), line=ex.line, col=ex.col, field=ex.field) from ex
    effects = [*view.outputs, *(f"!{o}" for o in view.outputs)]
    return FamilySystem(
        family="hoa_dir",
        params={"file": f.name, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "trace_density": density,
                **({"resolve": params["resolve"]} if "resolve" in params else {})},
        system=system,
        effects=tuple(effects),
        input_density=tuple([density] * view.num_inputs),
    )
