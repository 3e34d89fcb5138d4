"""The AIGER 1.9 model: an and-inverter graph with latches, outputs and properties, as plain frozen data.

Literals are AIGER's: ``2 * variable + negated``; literal 0 is false, 1 is true. A circuit read from a file keeps its
file's numbering; :func:`aig.writer.canonical` renumbers it (inputs, then latches, then AND gates in topological
order, the binary format's numbering), so that equal circuits give equal text.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The symbol kinds of the symbol table, in the order the writer lists them (AIGER: i, l, o, b, c, j, f).
SYMBOL_KINDS = ("i", "l", "o", "b", "c", "j", "f")


@dataclass(frozen=True, slots=True)
class Latch:
    """A latch: its (even) literal, the literal of its next-state function, and its reset value.

    ``reset`` is 0, 1, or the latch's own literal (an uninitialised latch: any initial value).
    """

    lit: int
    next: int
    reset: int = 0

    @property
    def initialised(self) -> bool:
        return self.reset in (0, 1)


@dataclass(frozen=True, slots=True)
class And:
    """An AND gate ``lhs = rhs0 AND rhs1`` (lhs even)."""

    lhs: int
    rhs0: int
    rhs1: int


@dataclass(frozen=True)
class Aig:
    """An AIGER 1.9 circuit (``aag``/``aig`` header ``M I L O A B C J F``).

    ``symbols`` maps ``(kind, position)`` to a name, kinds from :data:`SYMBOL_KINDS`, sorted; ``comments`` are the
    lines after the ``c`` line (kept on reading, not written by the canonical writer).
    """

    max_var: int
    inputs: tuple[int, ...]
    latches: tuple[Latch, ...]
    outputs: tuple[int, ...]
    ands: tuple[And, ...]
    bad: tuple[int, ...] = ()
    constraints: tuple[int, ...] = ()
    justice: tuple[tuple[int, ...], ...] = ()
    fairness: tuple[int, ...] = ()
    symbols: tuple[tuple[tuple[str, int], str], ...] = ()
    comments: tuple[str, ...] = ()

    def name(self, kind: str, position: int) -> str | None:
        """The symbol-table name of the ``position``-th signal of ``kind``, or None."""
        return self._names.get((kind, position))

    @property
    def _names(self) -> dict[tuple[str, int], str]:
        # Not cached on the frozen value: look-ups are rare (views copy the names once).
        return dict(self.symbols)

    @property
    def header(self) -> tuple[int, ...]:
        """``(M, I, L, O, A, B, C, J, F)``."""
        return (self.max_var, len(self.inputs), len(self.latches), len(self.outputs), len(self.ands), len(self.bad),
                len(self.constraints), len(self.justice), len(self.fairness))


__all__ = ["SYMBOL_KINDS", "Aig", "And", "Latch"]
