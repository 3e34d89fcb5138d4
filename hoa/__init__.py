"""HOA v1: label expressions, automaton model, parser, validator, writer and the Mealy view of a controller."""

from hoa.errors import Gf01Error

__all__ = ["Gf01Error"]
