"""Result records of the solver queries that answer more than a bool or an int (the oracle and the best match), and
the DEC-025 best-match ranking over a complete list of golds.

>>> OracleResult(certificate=((0, 1, 1),), eff_t=1, eff_a=1, optimal=True).eff_t
1
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from encoders.problem import Atom, Problem
from solvers.canonical import certificate_digest, timesteps


@dataclass(frozen=True)
class Check:
    """Suff(C) and Min1(C) of one certificate, answered together (the ``check`` query); Valid is their conjunction."""

    suff: bool
    min1: bool

    @property
    def valid(self) -> bool:
        """Valid(C) = Suff(C) and Min1(C) (Definition 12)."""
        return self.suff and self.min1


@dataclass(frozen=True)
class OracleResult:
    """The valid certificate (within the budget) minimising (Eff_t, Eff_a); ``optimal`` is True when proven."""

    certificate: tuple[Atom, ...]
    eff_t: int
    eff_a: int
    optimal: bool


@dataclass(frozen=True)
class BestMatch:
    """The gold certificate (docs/semantics.md) for an agent's certificate, with the AP- and TS-level P/R/F1.

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

    def metrics(self) -> dict[str, float]:
        """The six P/R/F1 figures by field name, AP first (the run record's and ``verify --best-match``'s order)."""
        return {"ap_precision": self.ap_precision, "ap_recall": self.ap_recall, "ap_f1": self.ap_f1,
                "ts_precision": self.ts_precision, "ts_recall": self.ts_recall, "ts_f1": self.ts_f1}


def prf(hits: int, predicted: int, gold: int) -> tuple[Fraction, Fraction, Fraction]:
    """Precision, recall and F1 of ``hits`` matches between sets of sizes ``predicted`` and ``gold`` (0 if empty)."""
    if predicted == 0 or gold == 0 or hits == 0:
        return Fraction(0), Fraction(0), Fraction(0)
    return Fraction(hits, predicted), Fraction(hits, gold), Fraction(2 * hits, predicted + gold)


def best_match_among(problem: Problem, atoms: Iterable[Atom], golds: Iterable[tuple[Atom, ...]]) -> BestMatch:
    """The best match of ``atoms`` among the complete list ``golds``: argmax F1_AP, then F1_TS, then the lower
    Eff_t of the gold, then the lowest sha256 of the gold's canonical JSON (docs/semantics.md)."""
    agent = set(atoms)
    agent_ts = timesteps(agent)
    best = None
    for gold in golds:
        gold_set = set(gold)
        gold_ts = timesteps(gold_set)
        ap = prf(len(agent & gold_set), len(agent), len(gold_set))
        ts = prf(len(agent_ts & gold_ts), len(agent_ts), len(gold_ts))
        rank = (-ap[2], -ts[2], len(gold_ts))
        if best is not None and rank > best[0][:3]:
            continue
        full = (*rank, certificate_digest(problem, gold))
        if best is None or full < best[0]:
            best = (full, gold, ap, ts)
    if best is None:
        return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    _, gold, ap, ts = best
    return BestMatch(gold, *(float(v) for v in ap), *(float(v) for v in ts))


__all__ = ["BestMatch", "OracleResult", "best_match_among", "prf"]
