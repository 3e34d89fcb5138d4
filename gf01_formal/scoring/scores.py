"""Scoring a finished episode exactly (spec §5, §7.2-7.3): the MET-C/MET-M score, AP/TS precision, recall and F1
against the best match in M(I) (or, as a chosen option, in M_B(I)), and the optional SubsetMin diagnostic.

One :class:`Scorer` per instance serves every agent's run: the exact gold set behind the best match is built
once (listed completely when it has at most ``GOLD_LIST_MAX`` members, else left to the symbolic best-match query
per run, which is exact too). Nothing here guesses: a diagnostic that runs out of its limits is recorded as
``infeasible``, and a best match that runs out raises :class:`solvers.limits.Unknown` to the caller.

>>> scorer = Scorer(problem)
>>> scorer.score([(20, 2, 1), (21, 2, 1)]).score_c
1
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from encoders.problem import Atom, Certificate, Problem
from gf01_formal.scoring.certificates import GoldSet, ParsedCertificate, certificate_to_json, gold_budget, score
from gf01_formal.scoring.values import PRF_FIELDS, Diagnostic, Scores
from solvers import api
from solvers.limits import Limits, Unknown, guarded
from solvers.results import BestMatch, best_match_among

#: Largest gold set listed once and ranked per run; larger gold sets use the symbolic best-match query per run.
GOLD_LIST_MAX = 20_000

#: Best matches a scorer computed, by certificate (its atoms sorted).
Answers = dict[Certificate, BestMatch]
#: Best matches by (instance content hash, gold set): what one campaign's scorers computed, for its own validation.
AnswerBook = dict[tuple[str, str], Answers]


@dataclass
class Scorer:
    """Scores certificates of one problem; the gold set (``gold_set_name``: M(I) by default, section 7.3; ``"MB"``:
    M_B(I)) is built on first use and then shared. ``answers`` keeps every best match it computes, by certificate
    (the panel's agents often commit the same one); a caller may hand in the answers an earlier scorer of the same
    instance content and gold set computed in this campaign (never values read from a record)."""

    problem: Problem
    limits: Limits | None = None
    gold_set_name: GoldSet = "M"
    answers: Answers = field(default_factory=dict)
    _golds: list[Certificate] | None = field(default=None, init=False)
    _listed: bool = field(default=False, init=False)

    def gold_set(self) -> list[Certificate] | None:
        """The gold set in canonical order when it has at most GOLD_LIST_MAX members, else None (too large to list)."""
        if not self._listed:
            self._golds = _listing(self.problem, gold_budget(self.problem, self.gold_set_name), limits=self.limits)
            self._listed = True
        return self._golds

    def best_match(self, atoms: Sequence[Atom]) -> BestMatch:
        """The DEC-025 best match of ``atoms`` in the gold set with its AP/TS P/R/F1."""
        key = tuple(sorted(atoms))
        got = self.answers.get(key)
        if got is None:
            golds = self.gold_set()
            if golds is not None:
                got = best_match_among(self.problem, atoms, golds)
            else:
                got = api.best_match(self.problem, atoms, gold_budget(self.problem, self.gold_set_name),
                                     limits=self.limits)
            self.answers[key] = got
        return got

    def score_submitted(self, cert: ParsedCertificate) -> Scores:
        """The scores of a certificate as submitted (an imported one may be malformed: then it scores false, with
        no best match, and its Eff counts the atoms as submitted; one over B_T is scored by Definitions 10-12 and
        flagged ``within_budget: false``)."""
        if cert.well_formed:
            return self.score(cert.atoms)
        s = score(self.problem, cert)
        return Scores(suff=s.suff, min1=s.min1, valid=s.valid, goal=s.goal, eff_t=s.eff_t, eff_a=s.eff_a,
                      score_c=s.score_c, kappa=list(s.kappa), **dict.fromkeys(PRF_FIELDS, 0.0), best_match_gold=None,
                      gold_set=self.gold_set_name, within_budget=s.within_budget)

    def score(self, atoms: Sequence[Atom]) -> Scores:
        """The scores of a well-formed certificate (an episode's is always well formed)."""
        s = score(self.problem, ParsedCertificate.of_atoms(self.problem, atoms))
        bm = self.best_match(atoms)
        return Scores(suff=s.suff, min1=s.min1, valid=s.valid, goal=s.goal, eff_t=s.eff_t, eff_a=s.eff_a,
                      score_c=s.score_c, kappa=list(s.kappa), **bm.metrics(),
                      # null when the gold set is empty: [] would say that the empty certificate is the gold.
                      best_match_gold=None if self.gold_set() == [] else certificate_to_json(bm.gold,
                                                                                             self.problem.system.inputs),
                      gold_set=self.gold_set_name, within_budget=s.within_budget)


@guarded("gold_set")
def _listing(problem: Problem, budget: int | None, *, limits: Limits | None = None) -> list[Certificate] | None:
    """M_B(I) (``budget`` None: M(I)) in canonical order when it has at most GOLD_LIST_MAX members, else None. One
    guarded query for both steps: under isolating limits each guarded query is a process of its own (about 17 ms)."""
    if api.count(problem, budget, limits=limits) > GOLD_LIST_MAX:
        return None
    return list(api.enumerate_certificates(problem, budget, limits=limits))


def diagnose(problem: Problem, atoms: Sequence[Atom], *, backend: str | None = None,
             limits: Limits | None = None) -> tuple[Diagnostic, float]:
    """The SubsetMin diagnostic of a well-formed certificate and the milliseconds it took: ``exact`` with its answer,
    or ``infeasible`` with the reason when it ran out of ``limits`` (never a guess). Every diagnostic of the toolkit
    (a run's, a campaign's under its caps, validation's re-check) is decided here."""
    start = time.perf_counter()
    try:
        diagnostic = Diagnostic(subset_min=api.subset_min(problem, atoms, backend, limits=limits),
                                diagnostic_status="exact")
    except Unknown as ex:
        diagnostic = Diagnostic(subset_min=None, diagnostic_status="infeasible", diagnostic_note=ex.reason)
    return diagnostic, round((time.perf_counter() - start) * 1000, 3)
