"""Token positions of one parsed automaton: the side structure the parser fills and the validator reads.

The frozen :class:`hoa.model.Automaton` carries no positions; the parser records the token indices the validator
needs for its messages here, so both depend on this module and neither on the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Atom = tuple[int | str, int]  # (AP index or alias name, token index)


@dataclass
class Spans:
    """Token indices of one automaton, recorded by the parser for the validator's messages (not part of the model).

    Body labels, destinations and acceptance signatures are not recorded one by one (that would cost as much as the
    parse): the validator checks them on the model and, on an error, finds the token from the edge's first token.
    """

    begin: int
    headers: dict[str, list[int]] = field(default_factory=dict)
    ap_count: int | None = None
    ap_names: list[int] = field(default_factory=list)
    alias_names: list[int] = field(default_factory=list)
    alias_atoms: list[list[Atom]] = field(default_factory=list)
    acc_count: int | None = None
    acc_atoms: list[tuple[int, int]] = field(default_factory=list)
    controllable: list[int] = field(default_factory=list)
    properties: list[int] = field(default_factory=list)
    start_states: list[list[int]] = field(default_factory=list)
    states: list[int] = field(default_factory=list)  # token of each "State:" item, in file order
    state_index: list[int] = field(default_factory=list)  # token of each state's number
    state_label: list[int | None] = field(default_factory=list)
    state_acc: list[int | None] = field(default_factory=list)
    edges: list[list[int]] = field(default_factory=list)  # per State item, token of each edge's first token
    edge_acc_first: int | None = None  # token of the first edge acceptance signature
    label_max_ap: int = -1  # the largest AP number in a body label
    label_aliases: frozenset[str] = frozenset()  # the aliases used in body labels
    univ_first: int | None = None  # first conjunction of states (Start: or edge)


__all__ = ["Atom", "Spans"]
