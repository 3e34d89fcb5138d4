"""The Mealy view of a circuit: named inputs and outputs, ``step(q, x) -> (q', y)``, and bit-parallel simulation.

Inputs are the AIGER inputs; outputs are the AIGER outputs, then the bad-state properties, then the latches named in
``observe`` (docs/aiger.md). A state ``q`` is the latch valuation as an integer (bit ``k`` = latch ``k``), an input
valuation ``x`` and an output valuation ``y`` are integers with bit ``i`` = signal ``i`` (Python integers: a circuit
may have hundreds of inputs). Step semantics: the outputs at step t are the output functions of the current latches
and the inputs at t; the latches then take their next-state functions (AIGER's).

Bit-parallel simulation (:meth:`CircuitView.simulate_words`) evaluates many runs at once: every signal holds one
64-bit word per 64 runs, and the AND gates are evaluated level by level (all gates of one level in one numpy
expression), so a step costs a few numpy operations per level of the circuit, not one per gate.

>>> from aig.parser import parse
>>> view = CircuitView.from_aig(parse(b"aag 3 1 1 1 1\\n2\\n4 6\\n4\\n6 2 5\\n"))  # latch' = x AND NOT latch
>>> view.step(0, 1)
(1, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aig.model import Aig
from aig.writer import renumber
from hoa.errors import Gf01Error
from hoa.mealy import MealyMachine

_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass(frozen=True)
class CircuitView(MealyMachine):
    """A circuit (in canonical numbering) as a Mealy machine over named inputs and outputs.

    ``out_lits[j]`` is the literal of output ``j``; ``initial`` the reset latch valuation. ``memo`` keeps derived
    arrays (gate levels, tabulations by the solvers); it takes no part in equality.
    """

    aig: Aig
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    out_lits: tuple[int, ...]
    initial: int
    memo: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    # -- construction ------------------------------------------------------------------------------------------------

    @staticmethod
    def from_aig(aig: Aig, observe: Sequence[str] = ()) -> CircuitView:
        """The view of ``aig`` (renumbered canonically); ``observe`` names latches added as outputs.

        Unnamed signals get stable names from their section and position (``i3``, ``o0``, ``b1``, ``l7``). Refused
        with a Gf01Error: an uninitialised latch (a GF-01 system has one initial state), an invariant constraint (it
        would restrict the runs, which the Mealy view has no place for), a name used twice, an unknown ``observe``.
        """
        a = renumber(aig)
        names = dict(a.symbols)
        uninit = [k for k, latch in enumerate(a.latches) if not latch.initialised]
        if uninit:
            k = uninit[0]
            raise Gf01Error(f"latch {_name(names, 'l', k)} has no reset value (it starts 0 or 1, "
                            "nondeterministically); a GF-01 system has exactly one initial state")
        if a.constraints:
            raise Gf01Error(f"the circuit has {len(a.constraints)} invariant constraint(s) ({_name(names, 'c', 0)}, "
                            "...): the Mealy view has no way to restrict its runs to those that keep them")
        inputs = tuple(_name(names, "i", k) for k in range(len(a.inputs)))
        outputs = [_name(names, "o", k) for k in range(len(a.outputs))]
        outputs += [_name(names, "b", k) for k in range(len(a.bad))]
        out_lits = [*a.outputs, *a.bad]
        latch_names = {_name(names, "l", k): k for k in range(len(a.latches))}
        for name in observe:
            if name not in latch_names:
                known = ", ".join(sorted(latch_names)[:10]) or "none"
                raise Gf01Error(f"--observe {name!r}: no latch has that name (latches: {known})", field="observe")
            outputs.append(name)
            out_lits.append(a.latches[latch_names[name]].lit)
        seen: dict[str, str] = {}
        for kind, group in (("input", inputs), ("output", outputs)):
            for name in group:
                if name in seen:
                    raise Gf01Error(f"the name {name!r} is used twice (a {seen[name]} and an {kind}); a GF-01 system "
                                    "needs distinct signal names")
                seen[name] = kind
        initial = sum(1 << k for k, latch in enumerate(a.latches) if latch.reset == 1)
        return CircuitView(a, inputs, tuple(outputs), tuple(out_lits), initial)

    # -- sizes -------------------------------------------------------------------------------------------------------

    @property
    def num_latches(self) -> int:
        return len(self.aig.latches)

    @property
    def num_states(self) -> int:
        """2^latches: the state space (most of it usually unreachable)."""
        return 1 << self.num_latches

    @property
    def num_ands(self) -> int:
        return len(self.aig.ands)

    @property
    def has_tables(self) -> bool:
        """Circuits have no dense tables (the solvers tabulate reachable latch states when they are few)."""
        return False

    def state_name(self, q: int) -> str:
        """The latch valuation ``q`` as bits, latch 0 first."""
        return "".join(str((q >> k) & 1) for k in range(self.num_latches)) or "-"

    # -- the gates, level by level -----------------------------------------------------------------------------------

    @property
    def levels(self) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...]:
        """Per level: (lhs variables, rhs0 variables, rhs0 negation masks, rhs1 variables, rhs1 masks)."""
        got = self.memo.get("levels")
        if got is None:
            got = self._levels()
            self.memo["levels"] = got
        return got

    def _levels(self) -> tuple[tuple[np.ndarray, ...], ...]:
        a = self.aig
        first = len(a.inputs) + len(a.latches) + 1
        gates = np.array([(g.lhs, g.rhs0, g.rhs1) for g in a.ands], dtype=np.int64).reshape(-1, 3)
        level = np.zeros(a.max_var + 1, dtype=np.int64)
        # Canonical numbering puts every gate after its inputs, so one pass in order computes the levels.
        lv = level.tolist()
        for lhs, r0, r1 in gates.tolist():
            lv[lhs >> 1] = 1 + max(lv[r0 >> 1], lv[r1 >> 1])
        level = np.array(lv, dtype=np.int64)
        out = []
        if len(gates):
            glv = level[first:]
            order = np.argsort(glv, kind="stable")
            bounds = np.searchsorted(glv[order], np.arange(1, int(glv.max()) + 2))
            for k in range(len(bounds) - 1):
                g = gates[order[bounds[k] : bounds[k + 1]]]
                out.append((g[:, 0] >> 1, g[:, 1] >> 1, _neg(g[:, 1]), g[:, 2] >> 1, _neg(g[:, 2])))
        return tuple(out)

    def cone(self, outputs: frozenset[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The sequential cone of influence of the outputs with these indices: the gates (indices into
        ``aig.ands``, in order) and the latches (indices) whose values can reach them at any step. The rest of the
        circuit can be left out of an unrolling that only asks about these outputs."""
        key = ("cone", outputs)
        got = self.memo.get(key)
        if got is not None:
            return got
        a = self.aig
        first = len(a.inputs) + len(a.latches) + 1
        n_i = len(a.inputs)
        need = [False] * (a.max_var + 1)
        stack = [self.out_lits[j] >> 1 for j in sorted(outputs)]
        while stack:
            var = stack.pop()
            if need[var]:
                continue
            need[var] = True
            if var >= first:
                g = a.ands[var - first]
                stack += [g.rhs0 >> 1, g.rhs1 >> 1]
            elif var > n_i:
                stack.append(a.latches[var - n_i - 1].next >> 1)
        got = (tuple(k for k in range(len(a.ands)) if need[first + k]),
               tuple(k for k in range(len(a.latches)) if need[n_i + 1 + k]))
        self.memo[key] = got
        return got

    # -- simulation --------------------------------------------------------------------------------------------------

    def simulate_words(
        self, xs: np.ndarray, start: np.ndarray, *, every_step: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Bit-parallel runs: ``xs[t, i, w]`` input i at step t (bit r of word w = run 64w + r), ``start[k, w]`` the
        latches at the first step. Returns the outputs ``[t, j, w]`` and the latches after the last step ``[k, w]``
        (with ``every_step``, the latches before every step and after the last, ``[t, k, w]`` for t = 0 .. steps).
        """
        a = self.aig
        steps, _, width = xs.shape
        n_i, n_l = len(a.inputs), len(a.latches)
        values = np.zeros((a.max_var + 1, width), dtype=np.uint64)
        out_lits = np.array(self.out_lits, dtype=np.int64)
        next_lits = np.array([latch.next for latch in a.latches], dtype=np.int64)
        out_var, out_neg = out_lits >> 1, _neg(out_lits)
        next_var, next_neg = next_lits >> 1, _neg(next_lits)
        outs = np.empty((steps, len(out_lits), width), dtype=np.uint64)
        latches = np.asarray(start, dtype=np.uint64).reshape(n_l, width)
        levels = self.levels
        seen = [latches] if every_step else []
        for t in range(steps):
            values[1 : n_i + 1] = xs[t]
            values[n_i + 1 : n_i + n_l + 1] = latches
            for lhs, v0, m0, v1, m1 in levels:
                values[lhs] = (values[v0] ^ m0) & (values[v1] ^ m1)
            outs[t] = values[out_var] ^ out_neg
            latches = values[next_var] ^ next_neg
            if every_step:
                seen.append(latches)
        return outs, (np.stack(seen) if every_step else latches)

    def step(self, q: int, x: int) -> tuple[int, int]:
        """One transition from latch valuation ``q`` under input valuation ``x``: (next latches, outputs).

        One run, so plain Python over the gates (a numpy call per level costs more than a small circuit's gates).
        """
        gates = self.memo.get("step-gates")
        if gates is None:
            gates = [(g.rhs0 >> 1, g.rhs0 & 1, g.rhs1 >> 1, g.rhs1 & 1) for g in self.aig.ands]
            self.memo["step-gates"] = gates
        vals = [0]
        vals += [(x >> i) & 1 for i in range(self.num_inputs)]
        vals += [(q >> k) & 1 for k in range(self.num_latches)]
        for v0, n0, v1, n1 in gates:
            vals.append((vals[v0] ^ n0) & (vals[v1] ^ n1))
        q2 = sum(((vals[lt.next >> 1] ^ (lt.next & 1)) << k) for k, lt in enumerate(self.aig.latches))
        y = sum(((vals[lit >> 1] ^ (lit & 1)) << j) for j, lit in enumerate(self.out_lits))
        return q2, y


def _name(names: dict[tuple[str, int], str], kind: str, k: int) -> str:
    return names.get((kind, k), f"{kind}{k}")


def _neg(lits: np.ndarray) -> np.ndarray:
    """All-ones words where the literal is negated, zero words elsewhere, shaped to broadcast over run words."""
    return np.where((np.asarray(lits) & 1) == 1, _ONES, np.uint64(0)).astype(np.uint64)[:, None]


def pack_runs(bits: np.ndarray) -> np.ndarray:
    """A bool array ``[..., run]`` packed into uint64 words ``[..., word]`` (run r at bit r % 64 of word r // 64)."""
    runs = bits.shape[-1]
    words = max(1, (runs + 63) // 64)
    pad = np.zeros((*bits.shape[:-1], words * 64), dtype=bool)
    pad[..., :runs] = bits
    packed = np.packbits(pad, axis=-1, bitorder="little")
    return packed.view(np.uint64).reshape(*bits.shape[:-1], words)


def unpack_runs(words: np.ndarray, runs: int) -> np.ndarray:
    """The inverse of :func:`pack_runs`: uint64 words ``[..., word]`` to bools ``[..., run]``."""
    raw = np.ascontiguousarray(words).view(np.uint8)
    return np.unpackbits(raw, axis=-1, bitorder="little")[..., :runs].astype(bool)


__all__ = ["CircuitView", "pack_runs", "unpack_runs"]
