"""Arbiters with n clients, written as HOA: round-robin (rotating priority) and fixed priority, both with locking.

Inputs ``r0..r{n-1}`` (requests), outputs ``g0..g{n-1}`` (grants). An idle arbiter grants the first requesting
client in its priority order and locks on it; a locked arbiter keeps granting its owner while the owner requests,
and on release grants nobody for that step and returns to idle (round-robin: with priority starting after the
released owner). So a grant to a client while another holds the lock needs the owner to let go a step earlier:
effects need several timesteps.

- round_robin: states ``idle_p`` (priority starts at client p) and ``busy_c``: 2n states.
- priority: states ``idle`` (client 0 first) and ``busy_c``: n + 1 states.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gf01_formal.instances.families.base import (
    FamilySystem,
    Param,
    conj,
    draw_choice,
    draw_float,
    draw_int,
    hoa_text,
    lit,
)
from gf01_formal.instances.model import System

DEFAULTS: dict[str, Any] = {"clients": [2, 5], "variant": ["round_robin", "priority"], "trace_density": [0.3, 0.6]}
#: What a cfg may set: n clients are n inputs and up to 2n states (at n = 10 the tables take 2 s to build).
PARAMS = {"clients": Param("int", 2, 8), "variant": Param("choice", choices=("round_robin", "priority")),
          "trace_density": Param("float", 0.0, 1.0)}


def arbiter_hoa(n: int, variant: str) -> str:
    """HOA text of an ``n``-client locking arbiter (``variant``: round_robin or priority)."""
    req = [f"r{c}" for c in range(n)]
    gnt = [f"g{c}" for c in range(n)]

    def grant(c: int | None) -> str:
        return conj(*(lit(g, k == c) for k, g in enumerate(gnt)))

    rr = variant == "round_robin"
    idle_states = list(range(n)) if rr else [0]
    busy_base = len(idle_states)  # busy_c is state busy_base + c
    states: list[tuple[str, list[tuple[str, int]]]] = []
    for p in idle_states:
        order = [(p + k) % n for k in range(n)]
        edges = []
        for k, c in enumerate(order):
            edges.append((conj(req[c], *(lit(req[d], 0) for d in order[:k]), grant(c)), busy_base + c))
        edges.append((conj(*(lit(r, 0) for r in req), grant(None)), idle_states.index(p)))
        states.append((f"idle{p}" if rr else "idle", edges))
    for c in range(n):
        back = (c + 1) % n if rr else 0
        states.append(
            (f"busy{c}", [(conj(req[c], grant(c)), busy_base + c), (conj(lit(req[c], 0), grant(None)), back)])
        )
    return hoa_text(f"{variant.replace('_', '-')}-arbiter-{n}", req, gnt, states)


def build(rng: np.random.Generator, params: dict[str, Any], level: float) -> FamilySystem:
    """Draw an arbiter: client count and variant from ``params``."""
    p = {**DEFAULTS, **params}
    n = draw_int(rng, p, "clients", DEFAULTS["clients"], level)
    variant = draw_choice(rng, p, "variant", DEFAULTS["variant"])
    density = draw_float(rng, p, "trace_density", DEFAULTS["trace_density"])
    gnt = [f"g{c}" for c in range(n)]
    effects = [*gnt, *(f"{a} | {b}" for k, a in enumerate(gnt) for b in gnt[k + 1 :])]
    effects += [conj(*(lit(g, 0) for g in gnt))]
    return FamilySystem(
        family=f"arbiter_{variant}",
        params={"clients": n, "variant": variant, "trace_density": density},
        system=System(kind="hoa", inputs=[f"r{c}" for c in range(n)], outputs=gnt, hoa=arbiter_hoa(n, variant)),
        effects=tuple(effects),
        input_density=tuple([density] * n),
    )
