"""Finite-horizon unrollings of a Mealy view under flip variables: CNF (python-sat) and BDD (dd) encodings."""

from encoders.problem import Atom, Certificate, Flip, Problem

__all__ = ["Atom", "Certificate", "Flip", "Problem"]
