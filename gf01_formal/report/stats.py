"""The statistics of reports: every estimate comes with its 95 % interval and the name of the method that made it.

- Rates (Score_C, goal): Wilson score intervals, statsmodels' ``proportion_confint(method="wilson")`` computed
  here by the same arithmetic (the same bits, without importing statsmodels and pandas for it).
- Means and medians over runs: a percentile bootstrap that resamples *instances* (clusters), not runs, from
  ``scipy.stats.bootstrap``; runs of the same instance (several seeds, several files) move together, so repeated
  runs do not pass for independent evidence. Every interval draws from a fresh ``PCG64`` generator seeded with
  :data:`BOOTSTRAP_SEED`, so an interval depends on its own data only (not on which other groups a report holds).
- Paired differences of two agents on the instances both played: the per-instance difference, bootstrapped over
  instances; for a binary outcome with one run per instance and agent, also McNemar's exact test (statsmodels'
  ``mcnemar(exact=True)``, computed here by the same arithmetic).
- Quartiles: by rank, ties broken by instance id; rank correlation: Spearman's rho (scipy).

Intervals need data: no interval for n = 0 (rates) or for fewer than two instances (bootstrap), with the reason.
Floats are rounded to :data:`DIGITS` decimals so that a report's bytes do not depend on the last bit of a sum.

>>> wilson(3, 10)["ci"]
[0.107791, 0.603222]
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_SEED = 20260112
BOOTSTRAP_RESAMPLES = 2000
DIGITS = 6
#: Each estimate names its method by one of these ids; :data:`METHODS` says what each id is.
WILSON, BOOTSTRAP, MCNEMAR, SPEARMAN = "wilson", "bootstrap-instances", "mcnemar-exact", "spearman"
METHODS = {
    WILSON: "Wilson score interval, 95 % (statsmodels.stats.proportion.proportion_confint, method='wilson')",
    BOOTSTRAP: f"percentile bootstrap resampling instances (runs clustered by instance_id), 95 %, "
               f"{BOOTSTRAP_RESAMPLES} resamples, each interval from a fresh PCG64 generator seeded {BOOTSTRAP_SEED} "
               "(scipy.stats.bootstrap, method='percentile'); no interval below 2 instances",
    MCNEMAR: "McNemar's exact binomial test on the discordant instances (statsmodels.stats.contingency_tables.mcnemar, "
             "exact=True), two-sided",
    SPEARMAN: "Spearman rank correlation (scipy.stats.spearmanr), two-sided p-value",
}


def rnd(x: float | None) -> float | None:
    """``x`` rounded to DIGITS decimals (None stays None; -0.0 becomes 0.0)."""
    if x is None:
        return None
    return round(float(x), DIGITS) + 0.0


#: The two-sided critical value of the Wilson interval, ``scipy.stats.norm.isf((1 - CONFIDENCE) / 2)`` as
#: statsmodels computes it on each call (tests/test_report.py asks scipy for it again).
WILSON_Z = 1.959963984540054


def _wilson_interval(k: Any, n: Any) -> tuple[np.ndarray, np.ndarray]:
    """statsmodels' ``proportion_confint(k, n, alpha=1 - CONFIDENCE, method="wilson")``, its arithmetic step for step
    on the same float64 arrays, so the bounds are the same bits (tests/test_report.py compares them on every k <= n
    below 300). Computed here because that call imports statsmodels and pandas (about 0.5 s of CPU in a process that
    makes a report) and validates its arguments for about 5 ms a call, several hundred calls a report."""
    count, nobs = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    q_ = count / nobs
    crit = np.float64(WILSON_Z)
    crit2 = crit**2
    denom = 1 + crit2 / nobs
    center = (q_ + crit2 / (2 * nobs)) / denom
    dist = crit * np.sqrt(q_ * (1.0 - q_) / nobs + crit2 / (4.0 * nobs**2))
    dist = dist / denom
    return np.clip(center - dist, 0, 1), np.clip(center + dist, 0, 1)


def wilson(k: int, n: int) -> dict[str, Any]:
    """A rate k/n with its Wilson interval: ``{"k", "n", "rate", "ci", "method"}`` (``ci`` None when n = 0)."""
    if n == 0:
        return {"k": 0, "n": 0, "rate": None, "ci": None, "method": WILSON, "note": "no runs"}
    lo, hi = (float(b) for b in _wilson_interval(k, n))
    return {"k": k, "n": n, "rate": rnd(k / n), "ci": [rnd(lo), rnd(hi)], "method": WILSON}


def wilson_bounds(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Wilson bounds (the same interval as :func:`wilson`), for simulations."""
    return _wilson_interval(k, n)


def _clusters(values: Sequence[float], clusters: Sequence[str]) -> list[np.ndarray]:
    """The values grouped by cluster, clusters in sorted order (so the result does not depend on input order)."""
    by: dict[str, list[float]] = {}
    for v, c in zip(values, clusters, strict=True):
        by.setdefault(c, []).append(float(v))
    return [np.array(sorted(by[c]), dtype=np.float64) for c in sorted(by)]


def _bootstrap(groups: list[np.ndarray], stat: Callable[[np.ndarray], float],
               vectorized: Callable[[np.ndarray], np.ndarray] | None) -> tuple[float, float] | None:
    """The percentile interval of ``stat`` over resampled clusters (indices into ``groups``)."""
    from scipy.stats import bootstrap

    idx = np.arange(len(groups))
    if vectorized is not None:
        def statistic(sample: np.ndarray, axis: int = -1) -> np.ndarray:
            return vectorized(np.moveaxis(sample, axis, -1).astype(np.int64))
    else:
        def statistic(sample: np.ndarray) -> float:  # type: ignore[misc]
            return stat(np.concatenate([groups[int(i)] for i in sample]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate samples warn; the interval is then a point, which is right
        res = bootstrap((idx,), statistic, n_resamples=BOOTSTRAP_RESAMPLES, vectorized=vectorized is not None,
                        confidence_level=CONFIDENCE, method="percentile",
                        rng=np.random.Generator(np.random.PCG64(BOOTSTRAP_SEED)))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if math.isnan(lo) or math.isnan(hi):
        return None
    return lo, hi


def clustered_mean(values: Sequence[float], clusters: Sequence[str]) -> dict[str, Any]:
    """The mean of ``values`` (one per run) with a bootstrap interval over the runs' instances ``clusters``."""
    out, groups = _clustered("mean", values, clusters)
    if not groups:
        return out
    sums = np.array([g.sum() for g in groups])
    counts = np.array([len(g) for g in groups], dtype=np.float64)
    out["mean"] = rnd(sums.sum() / counts.sum())
    return _with_interval(out, groups, lambda v: float(v.mean()),
                          lambda ix: sums[ix].sum(axis=-1) / counts[ix].sum(axis=-1))


def clustered_median(values: Sequence[float], clusters: Sequence[str]) -> dict[str, Any]:
    """The median of ``values`` with a bootstrap interval over instances (as :func:`clustered_mean`)."""
    out, groups = _clustered("median", values, clusters)
    if not groups:
        return out
    out["median"] = rnd(float(np.median(np.concatenate(groups))))
    single = all(len(g) == 1 for g in groups)
    flat = np.array([g[0] for g in groups]) if single else None
    return _with_interval(out, groups, lambda v: float(np.median(v)),
                          (lambda ix: np.median(flat[ix], axis=-1)) if flat is not None else None)


def _clustered(statistic: str, values: Sequence[float],
               clusters: Sequence[str]) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The result of a clustered ``statistic`` before it is computed (the counts; a note when there are no runs),
    and the values grouped by instance (none when there are no runs)."""
    out: dict[str, Any] = {"n": len(values), "instances": len(set(clusters)), statistic: None, "ci": None,
                           "method": BOOTSTRAP}
    if len(values) == 0:
        return {**out, "note": "no runs"}, []
    return out, _clusters(values, clusters)


def _with_interval(out: dict[str, Any], groups: list[np.ndarray], stat: Callable[[np.ndarray], float],
                   vectorized: Callable[[np.ndarray], np.ndarray] | None) -> dict[str, Any]:
    """``out`` with the bootstrap interval of ``stat`` over the instances' ``groups`` (:func:`_bootstrap`), or with
    a note saying why there is none."""
    if len(groups) < 2:
        return {**out, "note": "fewer than 2 instances: no interval"}
    ci = _bootstrap(groups, stat, vectorized)
    out["ci"] = None if ci is None else [rnd(ci[0]), rnd(ci[1])]
    return out


def paired_difference(a: dict[str, list[float]], b: dict[str, list[float]]) -> dict[str, Any]:
    """Mean over shared instances of (mean of a's runs - mean of b's runs) on the instance, bootstrapped over them.

    ``a`` and ``b`` map instance id -> the outcomes of that agent's runs there.
    """
    shared = sorted(set(a) & set(b))
    diffs = [float(np.mean(a[i]) - np.mean(b[i])) for i in shared]
    res = clustered_mean(diffs, shared)
    return {"instances": len(shared), "difference": res["mean"], "ci": res["ci"], "method": res["method"],
            **({"note": res["note"]} if "note" in res else {})}


def mcnemar_exact(a: dict[str, list[float]], b: dict[str, list[float]]) -> dict[str, Any]:
    """McNemar's exact test of a binary outcome on the shared instances (one run per instance and agent)."""
    shared = sorted(set(a) & set(b))
    if any(len(a[i]) != 1 or len(b[i]) != 1 for i in shared):
        return {"p_value": None, "method": MCNEMAR, "note": "more than one run per instance: not a paired binary table"}
    only_a = sum(1 for i in shared if a[i][0] and not b[i][0])
    only_b = sum(1 for i in shared if b[i][0] and not a[i][0])
    out: dict[str, Any] = {"a_only": only_a, "b_only": only_b, "method": MCNEMAR}
    if only_a + only_b == 0:
        return {**out, "p_value": 1.0, "note": "no discordant instance"}
    return {**out, "p_value": rnd(_mcnemar_exact_p(only_a, only_b))}


def _mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """statsmodels' ``mcnemar(table, exact=True).pvalue`` of a table with these discordant counts, by its own
    arithmetic (twice the binomial tail of the smaller count at p = 1/2, at most 1; the concordant cells do not
    enter): the same bits (tests/test_report.py compares them), without importing statsmodels and pandas for it
    (about 0.6 s of CPU a process; scipy.stats is the bootstrap's already)."""
    from scipy.stats import binom

    return float(np.minimum(binom.cdf(np.minimum(np.float64(only_a), np.float64(only_b)), int(only_a + only_b),
                                      0.5) * 2, 1))


def quartiles(items: Sequence[tuple[float, str]]) -> dict[str, int]:
    """Rank quartiles: item id -> 1..4, by value then id; quartile q holds ranks [(q-1)n/4, qn/4)."""
    order = sorted(items, key=lambda it: (it[0], it[1]))
    n = len(order)
    return {ident: min(4, (4 * rank) // n + 1) for rank, (_, ident) in enumerate(order)}


def spearman(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """Spearman's rho of x and y with its p-value; None (with the reason) when either side is constant."""
    out: dict[str, Any] = {"n": len(x), "rho": None, "p_value": None, "method": SPEARMAN}
    if len(x) < 3:
        return {**out, "note": "fewer than 3 runs"}
    if len(set(x)) < 2 or len(set(y)) < 2:
        return {**out, "note": "constant " + ("knob" if len(set(x)) < 2 else "outcome") + ": no rank correlation"}
    from scipy.stats import spearmanr

    res = spearmanr(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    return {**out, "rho": rnd(float(res.statistic)), "p_value": rnd(float(res.pvalue))}
