"""A listed gold set ranked against many certificates: the DEC-025 best match of each (docs/semantics.md) by whole-array
operations over the members, where :func:`solvers.results.best_match_among` walks them one by one in Python.

The same ranking, exactly: per member, its atoms hit by the agent's (h), its size (g), its timesteps shared with the
agent's (u) and its Eff_t (e) are counted with numpy; F1_AP and F1_TS depend on (h, g) and (u, e) only, so the few
distinct (h, g, u, e) of a set are ranked with exact rationals (F1_AP desc, F1_TS desc, Eff_t asc), and the lowest
sha256 of the canonical JSON is taken among the members of the best rank alone (each member's digest is computed once,
when first needed, and kept).

>>> from solvers import api
>>> golds = GoldList(problem, api.list_members(problem, None, api.count(problem, None)))
>>> golds.best_match([(20, 2, 1)]) == api.best_match(problem, [(20, 2, 1)], None)
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from encoders.problem import Atom, Certificate, Problem
from solvers.canonical import certificate_digest, timesteps
from solvers.results import BestMatch, prf


class GoldList:
    """The members of a gold set (canonical certificates) as flat arrays, ready to rank any certificate against."""

    def __init__(self, problem: Problem, golds: Sequence[Certificate]) -> None:
        self.problem = problem
        self.golds = list(golds)
        n_in = problem.system.num_inputs
        sizes = np.fromiter((len(g) for g in self.golds), dtype=np.int64, count=len(self.golds))
        self._owner = np.repeat(np.arange(len(self.golds), dtype=np.int64), sizes)
        self._code = np.fromiter((_code(a, n_in) for g in self.golds for a in g), dtype=np.int64,
                                 count=int(sizes.sum()))
        self._size = sizes
        steps = [sorted(timesteps(g)) for g in self.golds]
        counts = np.fromiter((len(s) for s in steps), dtype=np.int64, count=len(steps))
        self._ts_owner = np.repeat(np.arange(len(self.golds), dtype=np.int64), counts)
        self._ts = np.fromiter((t for s in steps for t in s), dtype=np.int64, count=int(counts.sum()))
        self._eff_t = counts
        self._digests: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.golds)

    def best_match(self, atoms: Sequence[Atom]) -> BestMatch:
        """The best match of ``atoms`` among the members, as :func:`solvers.results.best_match_among` gives it."""
        n = len(self.golds)
        if n == 0:
            return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        agent = set(atoms)
        agent_ts = timesteps(agent)
        n_in = self.problem.system.num_inputs
        codes = np.fromiter((_code(a, n_in) for a in agent), dtype=np.int64, count=len(agent))
        hits = np.bincount(self._owner[np.isin(self._code, codes)], minlength=n)
        ts_codes = np.fromiter(agent_ts, dtype=np.int64, count=len(agent_ts))
        shared = np.bincount(self._ts_owner[np.isin(self._ts, ts_codes)], minlength=n)
        rows = np.stack((hits, self._size, shared, self._eff_t), axis=1)
        kinds, which = np.unique(rows, axis=0, return_inverse=True)
        ranks = []
        for h, g, u, e in kinds.tolist():
            ap = prf(h, len(agent), g)
            ts = prf(u, len(agent_ts), e)
            ranks.append((-ap[2], -ts[2], e))
        best = min(ranks)
        tied = np.flatnonzero(np.isin(which.reshape(-1), [k for k, r in enumerate(ranks) if r == best]))
        winner = min(tied.tolist(), key=self._digest)
        gold = self.golds[winner]
        ap = prf(int(hits[winner]), len(agent), len(gold))
        ts = prf(int(shared[winner]), len(agent_ts), int(self._eff_t[winner]))
        return BestMatch(gold, *(float(v) for v in ap), *(float(v) for v in ts))

    def _digest(self, k: int) -> str:
        got = self._digests.get(k)
        if got is None:
            got = self._digests[k] = certificate_digest(self.problem, self.golds[k])
        return got


def _code(atom: Atom, inputs: int) -> int:
    """An atom as one integer: (t, input, value) -> (t * inputs + input) * 2 + value."""
    t, i, v = atom
    return (t * inputs + i) * 2 + v


__all__ = ["GoldList"]
