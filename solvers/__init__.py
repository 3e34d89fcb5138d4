"""Exact GF-01 queries (suff, min1, valid, subset_min, witness, count, enumerate, oracle, best_match) on backends.

>>> from solvers import oracle, valid
"""

from solvers.api import (
    BACKENDS,
    best_match,
    count,
    enumerate_certificates,
    min1,
    oracle,
    sample,
    subset_min,
    suff,
    valid,
    witness,
)
from solvers.limits import Limits, Unknown
from solvers.results import BestMatch, OracleResult

__all__ = ["BACKENDS", "BestMatch", "Limits", "OracleResult", "Unknown", "best_match", "count",
           "enumerate_certificates", "min1", "oracle", "sample", "subset_min", "suff", "valid", "witness"]
