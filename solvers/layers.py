"""The layers of the forward pass (:mod:`solvers.forward_pass`): the live keys before a step (:class:`Layer`), what
expanding them at one step needs besides the keys (:class:`StepPlan`), and the layer that a step's packed next-key
codes stand for (:func:`next_layer`).

Both halves of a plain count read and make them: the forward steps and the class blocks
(:mod:`solvers.class_blocks`), and the backward half (:mod:`solvers.backward_half`), which keeps its later layers as
codes; so they live apart from either, and neither half imports the other.

>>> layer = next_layer(np.array([(2 << 3) | 5]), 0, 3, False)
>>> layer.q.tolist(), layer.s[:, 0].tolist(), layer.size
([2], [5], 1)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.quotient import StepTables


@dataclass
class Layer:
    """Live keys (edited run not yet showing the effect) before one step."""

    q: np.ndarray  # (K,) class
    s: np.ndarray  # (K, W) removal-run class set
    b: np.ndarray  # (K,) timesteps used
    extra: np.ndarray  # (K, E) extra fields
    cost: np.ndarray  # (K, M) least additive costs of a path into the key (see ``Forward.run``'s ``costs``)

    @property
    def size(self) -> int:
        return int(self.q.size)


@dataclass(frozen=True)
class StepPlan:
    """What expanding the keys of step ``t`` needs besides the keys: the step's tables, the budget's fields (its cap
    ``b_cap`` on |TS|, whether it binds (``capped``), whether |TS| is a key field (``track_b``)), and the extra
    fields' and costs' increments over the flip masks at this step."""

    t: int
    tab: StepTables
    b_cap: int
    capped: bool
    track_b: bool
    incs: tuple[np.ndarray, ...] = ()
    cost_incs: tuple[np.ndarray, ...] = ()


def next_layer(kept: np.ndarray, b_bits: int, size_next: int, track_b: bool) -> Layer:
    """The layer of the next keys ``kept`` (class, timesteps, class set packed as
    :meth:`solvers.forward_pass.Forward._step_blocks` packs them, without the source)."""
    rows = kept.size
    return Layer(
        kept >> (b_bits + size_next),
        (kept & ((1 << size_next) - 1)).astype(np.uint64)[:, None],
        (kept >> size_next) & ((1 << b_bits) - 1) if track_b else np.zeros(rows, dtype=np.int64),
        np.zeros((rows, 0), dtype=np.int64),
        np.zeros((rows, 0), dtype=np.int64),
    )


def take(layer: Layer, rows: np.ndarray) -> Layer:
    """The keys ``rows`` of ``layer``, in that order."""
    return Layer(layer.q[rows], layer.s[rows], layer.b[rows], layer.extra[rows], layer.cost[rows])
