"""Exact GF-01 queries (suff, min1, valid, check, subset_min, witness, count, enumerate, oracle, best_match, sample)
on backends: the contract (:mod:`.contract`), one dispatch table (:mod:`.api`), the backends (:mod:`.explicit`,
:mod:`.forward`, :mod:`.sat`, :mod:`.bdd`) and the check of a backend against the contract (:mod:`.conformance`).

>>> from solvers import oracle, valid
>>> valid(problem, oracle(problem, problem.budget_t).certificate)
True
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
