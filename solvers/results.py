"""Result records of the solver queries that answer more than a bool or an int: the oracle and the best match.

>>> OracleResult(certificate=((0, 1, 1),), eff_t=1, eff_a=1, optimal=True).eff_t
1
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from encoders.problem import Atom


@dataclass(frozen=True)
class OracleResult:
    """The valid certificate (within the budget) minimising (Eff_t, Eff_a); ``optimal`` is True when proven."""

    certificate: tuple[Atom, ...]
    eff_t: int
    eff_a: int
    optimal: bool


@dataclass(frozen=True)
class BestMatch:
    """The gold certificate of DESIGN.md §3.3 for an agent's certificate, with the AP- and TS-level P/R/F1.

    Metrics are exact rationals given as floats (``Fraction`` values are converted by the producer); all six are 0
    and ``gold`` is ``()`` when M_B(I) is empty.
    """

    gold: tuple[Atom, ...]
    ap_precision: float
    ap_recall: float
    ap_f1: float
    ts_precision: float
    ts_recall: float
    ts_f1: float


def prf(hits: int, predicted: int, gold: int) -> tuple[Fraction, Fraction, Fraction]:
    """Precision, recall and F1 of ``hits`` matches between sets of sizes ``predicted`` and ``gold`` (0 if empty)."""
    if predicted == 0 or gold == 0 or hits == 0:
        return Fraction(0), Fraction(0), Fraction(0)
    return Fraction(hits, predicted), Fraction(hits, gold), Fraction(2 * hits, predicted + gold)


__all__ = ["BestMatch", "OracleResult", "prf"]
