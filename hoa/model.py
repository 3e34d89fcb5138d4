"""The HOA v1 automaton as plain frozen data: what the parser produces, the validator checks and the writer prints.

Labels are :mod:`hoa.label` expressions over AP indices (aliases kept as ``AliasRef``); states are referenced by
their integer index. Equality of two ``Automaton`` values is the round-trip criterion ``parse(write(a)) == a``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hoa.label import Expr


@dataclass(frozen=True, slots=True)
class AccSet:
    """``Inf(n)``, ``Fin(n)``, ``Inf(!n)`` or ``Fin(!n)``."""

    kind: str  # "Inf" or "Fin"
    index: int
    negated: bool = False


@dataclass(frozen=True, slots=True)
class AccConst:
    """``t`` or ``f`` in an acceptance condition."""

    value: bool


@dataclass(frozen=True, slots=True)
class AccAnd:
    args: tuple[AccExpr, ...]


@dataclass(frozen=True, slots=True)
class AccOr:
    args: tuple[AccExpr, ...]


AccExpr = AccSet | AccConst | AccAnd | AccOr


@dataclass(frozen=True, slots=True)
class Edge:
    """An edge: optional label, destination conjunction (more than one state = universal branching), acc sets."""

    dests: tuple[int, ...]
    label: Expr | None = None
    acc: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class State:
    """A ``State:`` item with its edges, in file order."""

    index: int
    name: str | None = None
    label: Expr | None = None
    acc: tuple[int, ...] | None = None
    edges: tuple[Edge, ...] = ()


@dataclass(frozen=True, slots=True)
class Automaton:
    """One automaton of an HOA stream.

    ``start`` holds one tuple per ``Start:`` header (a conjunction of states when longer than one).
    ``acc_name`` is the name and its parameters (identifiers as str, integers as int).
    ``headers`` keeps unknown headers (name without the colon, raw values as written) in file order.
    """

    version: str = "v1"
    states_declared: int | None = None
    start: tuple[tuple[int, ...], ...] = ()
    aps: tuple[str, ...] = ()
    aliases: tuple[tuple[str, Expr], ...] = ()
    acc_sets: int = 0
    acceptance: AccExpr = field(default_factory=lambda: AccConst(True))
    acc_name: tuple[str, tuple[str | int, ...]] | None = None
    tool: tuple[str, ...] | None = None
    name: str | None = None
    properties: tuple[str, ...] = ()
    controllable_ap: tuple[int, ...] | None = None
    headers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    states: tuple[State, ...] = ()

    @property
    def num_states(self) -> int:
        """States declared by ``States:`` or defined or referenced, whichever is larger."""
        seen = [s.index for s in self.states]
        seen += [d for s in self.states for e in s.edges for d in e.dests]
        seen += [q for conj in self.start for q in conj]
        return max([self.states_declared or 0, *(i + 1 for i in seen)])

    @property
    def num_edges(self) -> int:
        """The number of edges over all states."""
        return sum(len(s.edges) for s in self.states)

    def alias_map(self) -> dict[str, Expr]:
        """Alias name -> definition."""
        return dict(self.aliases)
