"""Exact GF-01 queries (suff, min1, valid, subset_min, witness, count, enumerate, oracle, best_match) on backends."""

from solvers.limits import Limits, Unknown

__all__ = ["Limits", "Unknown"]
