"""HOA v1: label expressions, automaton model, parser, validator, writer and the Mealy view of a controller."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hoa.errors import Gf01Error
from hoa.mealy import MealyView
from hoa.parser import parse, parse_file
from hoa.writer import write


def load_mealy(path: str | Path, outputs: Sequence[str] | None = None) -> MealyView:
    """The Mealy view of the single automaton in the HOA file at ``path`` (outputs: names, else controllable-AP)."""
    automata = parse_file(path)
    if len(automata) != 1:
        raise Gf01Error(f"expected exactly one automaton, the file holds {len(automata)}", file=str(path))
    try:
        return MealyView.from_automaton(automata[0], outputs)
    except Gf01Error as err:
        raise err.located(str(path)) from None


__all__ = ["Gf01Error", "MealyView", "load_mealy", "parse", "parse_file", "write"]
