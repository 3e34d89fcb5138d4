"""System families for the generator: random structured Mealy machines and real reactive systems written as HOA.

``FAMILIES`` maps a cfg ``kind`` to its ``build(rng, params, level) -> FamilySystem``; ``level`` in [0, 1] is
the attempt's size level (all sizes of one draw grow with it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from gf01_formal.families import arbiters, counters, random_mealy, registers, traffic, user_hoa
from gf01_formal.families.base import FamilySystem

FAMILIES: dict[str, Callable[[np.random.Generator, dict[str, Any], float], FamilySystem]] = {
    "random_mealy": random_mealy.build,
    "arbiter": arbiters.build,
    "register": registers.build,
    "counter": counters.build,
    "traffic_light": traffic.build,
    "hoa_dir": user_hoa.build,
}

__all__ = ["FAMILIES", "FamilySystem"]
