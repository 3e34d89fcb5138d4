"""Random Mealy machines with controllable structure: states, inputs, outputs, guard density and locality.

Unlike uniformly random tables (where almost every effect is one flip away), each state reads only a random subset
of the inputs (``guard_density`` of them), idles when the inputs it reads are all 0, and otherwise moves to a state
at most ``locality`` steps away on a ring. Outputs are mostly a function of the state (each output bit is 1 with
probability ``output_density``), with a ``mealy`` fraction of transitions perturbing one output bit. Reaching a
state whose outputs show the effect therefore takes several steps, and sparse base traces keep the system near
where it is. The machine is written as HOA (one edge per pattern of the inputs a state reads, so the guard density
is visible in the labels), input-complete by construction.

The family also hands over the Mealy view of that text, built from the drawn edges and tables directly: parsing the
text back and compiling its tables took more time than every query of a small candidate (issue 33). The view is the
one parsing gives, edge for edge (tests/test_generator_families.py compares them).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from gf01_formal.instances.families.base import (
    FRACTION,
    FamilySystem,
    Param,
    draw_float,
    draw_int,
    hoa_text_of_labels,
)
from gf01_formal.instances.model import System
from hoa.errors import Gf01Error
from hoa.label import And, Not, Var
from hoa.mealy import MealyEdge, MealyView

DEFAULTS: dict[str, Any] = {
    "states": [2, 16],
    "inputs": [1, 5],
    "outputs": [1, 4],
    "guard_density": [0.3, 0.8],
    "locality": [1, 2],
    "output_density": [0.2, 0.4],
    "mealy": [0.0, 0.3],
    "trace_density": [0.1, 0.35],
}
#: What a cfg may set. A state reading k inputs has 2^k edges, so the HOA text grows as states x 2^inputs, which
#: :data:`MAX_EDGES` bounds as well.
PARAMS = {
    "states": Param("int", 1, 4096),
    "inputs": Param("int", 1, 12),
    "outputs": Param("int", 1, 16),
    "guard_density": FRACTION,
    "locality": Param("int", 0, 4096),
    "output_density": FRACTION,
    "mealy": FRACTION,
    "trace_density": FRACTION,
}
#: Most edges a drawn machine may have (states x 2^inputs at the top of both ranges): 2^18 is the largest size of the
#: generator benchmark (512 states, 9 inputs), an HOA text of about 20 MB.
MAX_EDGES = 1 << 18


def check_size(params: Mapping[str, Any], *, field: str) -> None:
    """Refuse ranges whose largest machine would have more than :data:`MAX_EDGES` edges (ranges checked before)."""
    p = {**DEFAULTS, **params}
    states, inputs = (max(v) if isinstance(v, list) else v for v in (p["states"], p["inputs"]))
    if states << inputs > MAX_EDGES:
        raise Gf01Error(f"{states} states and {inputs} inputs make machines of up to {states << inputs:,} edges, more "
                        f"than the {MAX_EDGES:,} the generator draws (fewer states or inputs)", field=f"{field}.states")


def build(rng: np.random.Generator, params: dict[str, Any], level: float) -> FamilySystem:
    """Draw one random structured Mealy machine (see the module docstring for the parameters)."""
    p = {**DEFAULTS, **params}
    n_q = draw_int(rng, p, "states", DEFAULTS["states"], level)
    n_in = draw_int(rng, p, "inputs", DEFAULTS["inputs"], level)
    n_out = draw_int(rng, p, "outputs", DEFAULTS["outputs"], level)
    density = draw_float(rng, p, "guard_density", DEFAULTS["guard_density"])
    locality = draw_int(rng, p, "locality", DEFAULTS["locality"], level)
    out_density = draw_float(rng, p, "output_density", DEFAULTS["output_density"])
    mealy = draw_float(rng, p, "mealy", DEFAULTS["mealy"])
    trace_density = draw_float(rng, p, "trace_density", DEFAULTS["trace_density"])
    inputs = [f"i{k}" for k in range(n_in)]
    outputs = [f"o{k}" for k in range(n_out)]
    k_read = max(1, round(density * n_in))
    state_out = (rng.random((n_q, n_out)) < out_density).astype(np.int64)
    weights = 1 << np.arange(n_out, dtype=np.int64)
    states = []
    # The view's edges and dense tables, made along with the text (see the module docstring).
    view_edges = []
    # The draws, state by state in the order the stream gives them; the arithmetic on them, for all states at once.
    n_pat = 1 << k_read
    reads = np.empty((n_q, k_read), dtype=np.int64)
    steps = np.empty((n_q, n_pat), dtype=np.int64)
    perturb = np.empty((n_q, n_pat), dtype=bool)
    bits = np.empty((n_q, n_pat), dtype=np.int64)
    for q in range(n_q):
        reads[q] = np.sort(rng.choice(n_in, size=k_read, replace=False))
        steps[q] = rng.integers(-locality, locality + 1, size=n_pat)
        perturb[q] = rng.random(n_pat) < mealy
        bits[q] = rng.integers(0, n_out, size=n_pat)
    steps[:, 0] = 0  # the all-zero reading idles
    dest = (np.arange(n_q, dtype=np.int64)[:, None] + steps) % n_q
    y_base = (state_out * weights).sum(axis=1)
    ys = np.where(perturb, y_base[:, None] ^ (1 << bits), y_base[:, None])
    xs = np.arange(1 << n_in, dtype=np.int64)
    pattern = np.zeros((n_q, 1 << n_in), dtype=np.int64)  # [q, x]: the pattern of the inputs q reads in x
    for j in range(k_read):
        pattern |= ((xs[None, :] >> reads[:, j : j + 1]) & 1) << j
    rows = np.arange(n_q)[:, None]
    nxt = dest[rows, pattern].astype(np.int32)
    out = ys[rows, pattern]
    for q, (q_reads, q_dests, q_ys) in enumerate(zip(reads.tolist(), dest.tolist(), ys.tolist(), strict=True)):
        reads_key = tuple(q_reads)
        labels, guards = zip(*(_edge_guard(n_in, n_out, reads_key, pat, y) for pat, y in enumerate(q_ys)), strict=True)
        states.append((f"s{q}", list(zip(labels, q_dests, strict=True))))
        view_edges.append(tuple(MealyEdge(g, d) for g, d in zip(guards, q_dests, strict=True)))
    effects = [o for o in outputs] + [f"!{o}" for o in outputs]
    effects += [f"{a} & {b}" for k, a in enumerate(outputs) for b in outputs[k + 1 :]]
    effects += [f"{a} & !{b}" for a in outputs for b in outputs if a != b]
    return FamilySystem(
        family="random_mealy",
        params={
            "states": n_q,
            "inputs": n_in,
            "outputs": n_out,
            "guard_density": density,
            "locality": locality,
            "output_density": out_density,
            "mealy": mealy,
            "trace_density": trace_density,
        },
        system=System(
            kind="hoa",
            inputs=inputs,
            outputs=outputs,
            hoa=hoa_text_of_labels(f"random-mealy-{n_q}-{n_in}-{n_out}", inputs, outputs, states),
        ),
        effects=tuple(effects),
        input_density=tuple([trace_density] * n_in),
        view=_view(inputs, outputs, view_edges, nxt, out),
    )


@functools.lru_cache(maxsize=1 << 16)
def _edge_guard(n_in: int, n_out: int, reads: tuple[int, ...], pat: int, y: int) -> tuple[str, And]:
    """The guard of the edge a state reading inputs ``reads`` takes on their pattern ``pat``, writing outputs ``y``:
    a conjunction of literals over signals (inputs, then outputs, numbered as the HOA APs), as label text and as
    expression, made from the same literals. Machines of one size repeat the same few guards attempt after attempt,
    so each is made once (expressions are immutable)."""
    lits = [(i, (pat >> j) & 1) for j, i in enumerate(reads)] + [(n_in + b, (y >> b) & 1) for b in range(n_out)]
    return (" & ".join(str(sig) if bit else f"!{sig}" for sig, bit in lits),
            And(tuple(Var(sig) if bit else Not(Var(sig)) for sig, bit in lits)))


def _view(inputs: list[str], outputs: list[str], edges: list[tuple[MealyEdge, ...]], nxt: np.ndarray,
          out: np.ndarray) -> MealyView:
    """The Mealy view of the drawn machine, its tables given (they are what the edges compile to: exactly one edge
    of a state is enabled under each input valuation, the one of the pattern its read inputs show)."""
    view = MealyView(tuple(inputs), tuple(outputs), tuple(edges), 0, tuple(f"s{q}" for q in range(len(edges))))
    nxt.setflags(write=False)
    out.setflags(write=False)
    view.__dict__["tables"] = (nxt, out)
    return view
