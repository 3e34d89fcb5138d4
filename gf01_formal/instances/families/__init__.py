"""System families for the generator: random structured Mealy machines, real reactive systems written as HOA, and
directories of user HOA controllers or AIGER circuits.

``FAMILIES`` maps a cfg ``kind`` to its ``build(rng, params, level) -> FamilySystem``; ``level`` in [0, 1] is
the attempt's size level (all sizes of one draw grow with it). ``PARAMS`` maps it to the parameters a cfg may set,
which :func:`check_family` checks before any work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gf01_formal.instances.families import (
    arbiters,
    counters,
    random_mealy,
    registers,
    traffic,
    user_aiger,
    user_hoa,
)
from gf01_formal.instances.families.base import FamilySystem, Param, check_params

FAMILIES: dict[str, Callable[[np.random.Generator, dict[str, Any], float], FamilySystem]] = {
    "random_mealy": random_mealy.build,
    "arbiter": arbiters.build,
    "register": registers.build,
    "counter": counters.build,
    "traffic_light": traffic.build,
    "hoa_dir": user_hoa.build,
    "aiger_dir": user_aiger.build,
}

PARAMS: dict[str, Mapping[str, Param]] = {
    "random_mealy": random_mealy.PARAMS,
    "arbiter": arbiters.PARAMS,
    "register": registers.PARAMS,
    "counter": counters.PARAMS,
    "traffic_light": traffic.PARAMS,
    "hoa_dir": user_hoa.PARAMS,
    "aiger_dir": user_aiger.PARAMS,
}


def check_family(kind: str, params: Mapping[str, Any], *, field: str) -> None:
    """Raise Gf01Error naming ``field``'s parameter unless ``params`` are what family ``kind`` takes."""
    check_params(params, PARAMS[kind], field=field)
    if kind == "random_mealy":
        random_mealy.check_size(params, field=field)
    if kind == "hoa_dir":
        user_hoa.check_dir(dict(params), field=field)
    if kind == "aiger_dir":
        user_aiger.check_dir(dict(params), field=field)


__all__ = ["FAMILIES", "PARAMS", "FamilySystem", "check_family"]
