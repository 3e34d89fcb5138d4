"""Scoring a finished episode exactly (spec §5, §7.2-7.3): the MET-C/MET-M score, AP/TS precision, recall and F1
against the best match in M(I) (or, as a chosen option, in M_B(I)), and the optional SubsetMin diagnostic.

One :class:`Scorer` per instance serves every agent's run: the exact gold set behind the best match is built
once (listed completely when it has at most ``GOLD_LIST_MAX`` members, else left to the symbolic best-match query
per run, which is exact too). Nothing here guesses: a diagnostic that runs out of its limits is recorded as
``infeasible``, and a best match that runs out raises :class:`solvers.limits.Unknown` to the caller.

>>> scorer = Scorer(problem)                        # doctest: +SKIP
>>> scorer.score(episode.certificate)["score_c"]    # doctest: +SKIP
1
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from encoders.problem import Atom, Certificate, Problem
from gf01_formal.scoring.certificates import GoldSet, ParsedCertificate, certificate_to_json, gold_budget, score
from solvers import api
from solvers.limits import Limits, Unknown
from solvers.results import BestMatch, best_match_among

#: Largest gold set listed once and ranked per run; larger gold sets use the symbolic best-match query per run.
GOLD_LIST_MAX = 20_000


@dataclass
class Scorer:
    """Scores certificates of one problem; the gold set (``gold_set_name``: M(I) by default, section 7.3; ``"MB"``:
    M_B(I)) is built on first use and then shared."""

    problem: Problem
    limits: Limits | None = None
    gold_set_name: GoldSet = "M"
    _golds: list[Certificate] | None = field(default=None, init=False)
    _listed: bool = field(default=False, init=False)

    def gold_set(self) -> list[Certificate] | None:
        """The gold set in canonical order when it has at most GOLD_LIST_MAX members, else None (too large to list)."""
        if not self._listed:
            p = self.problem
            budget = gold_budget(p, self.gold_set_name)
            size = api.count(p, budget, limits=self.limits)
            if size <= GOLD_LIST_MAX:
                self._golds = list(api.enumerate_certificates(p, budget, limits=self.limits))
            self._listed = True
        return self._golds

    def best_match(self, atoms: Sequence[Atom]) -> BestMatch:
        """The DEC-025 best match of ``atoms`` in the gold set with its AP/TS P/R/F1."""
        golds = self.gold_set()
        if golds is not None:
            return best_match_among(self.problem, atoms, golds)
        return api.best_match(self.problem, atoms, gold_budget(self.problem, self.gold_set_name), limits=self.limits)

    def score_submitted(self, cert: ParsedCertificate) -> dict[str, Any]:
        """The scores of a certificate as submitted (an imported one may be malformed: then it scores false, with
        no best match, and its Eff counts the atoms as submitted; one over B_T is scored by Definitions 10-12 and
        flagged ``within_budget: false``)."""
        if cert.well_formed:
            return self.score(cert.atoms)
        s = score(self.problem, cert).to_json()
        return {**{k: v for k, v in s.items() if k not in ("subset_min", "errors")},
                **dict.fromkeys(("ap_precision", "ap_recall", "ap_f1", "ts_precision", "ts_recall", "ts_f1"), 0.0),
                "best_match_gold": None, "gold_set": self.gold_set_name, "subset_min": None,
                "diagnostic_status": "not-run", "diagnostic_note": None, "timing": {}}

    def score(
        self, atoms: Sequence[Atom], *, subset_min: bool = False, diagnostic_limits: Limits | None = None
    ) -> dict[str, Any]:
        """The scores of a well-formed certificate (an episode's is always well formed), as run-record fields.

        Timings of the diagnostic are under ``timing`` (the only field that depends on the machine).
        """
        p = self.problem
        eff_t = len({a[0] for a in atoms})
        within = None if p.budget_t is None else eff_t <= p.budget_t
        cert = ParsedCertificate(tuple(atoms), eff_t=eff_t, eff_a=len(atoms), within_budget=within)
        s = score(p, cert)
        bm = self.best_match(atoms)
        record: dict[str, Any] = {
            **{k: v for k, v in s.to_json().items() if k not in ("subset_min", "errors")},
            **bm.metrics(),
            # null when the gold set is empty: [] would say that the empty certificate is the gold.
            "best_match_gold": None if self.gold_set() == [] else certificate_to_json(bm.gold, p.system.inputs),
            "gold_set": self.gold_set_name,
            "subset_min": None,
            "diagnostic_status": "not-run",
            "diagnostic_note": None,
        }
        timing: dict[str, Any] = {}
        if subset_min:
            start = time.perf_counter()
            try:
                record["subset_min"] = api.subset_min(p, atoms, limits=diagnostic_limits)
                record["diagnostic_status"] = "exact"
            except Unknown as ex:
                record["diagnostic_status"] = "infeasible"
                record["diagnostic_note"] = ex.reason
            timing["diagnostic_ms"] = round((time.perf_counter() - start) * 1000, 3)
        record["timing"] = timing
        return record
