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
from gf01_formal.scoring.certificates import (
    GoldSet,
    ParsedCertificate,
    gold_budget,
    score,
    subset_min_diagnostic,
    with_best_match,
)
from gf01_formal.scoring.score import PRF_FIELDS
from gf01_formal.scoring.values import Diagnostic, Scores
from solvers import api
from solvers.limits import Limits, guarded
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
        s = score(self.problem, cert).with_best_match(dict.fromkeys(PRF_FIELDS, 0.0), None, self.gold_set_name)
        return Scores.of(s)

    def score(self, atoms: Sequence[Atom]) -> Scores:
        """The scores of a well-formed certificate (an episode's is always well formed)."""
        s = score(self.problem, ParsedCertificate.of_atoms(self.problem, atoms))
        return Scores.of(with_best_match(self.problem, s, self.best_match(atoms), self.gold_set_name))


@guarded("gold_set")
def _listing(problem: Problem, budget: int | None, *, limits: Limits | None = None) -> list[Certificate] | None:
    """M_B(I) (``budget`` None: M(I)) in canonical order when it has at most GOLD_LIST_MAX members, else None. One
    guarded query for both steps: under isolating limits each guarded query is a process of its own (about 17 ms)."""
    members = api.count(problem, budget, limits=limits)
    if members > GOLD_LIST_MAX:
        return None
    # Stop at the last member: the enumeration walks layer after layer (|TS| = 0, 1, ...) and cannot know that the
    # layers after the last member are empty, so unbounded it runs a pass for each of them (an 800-step arbiter with
    # |M(I)| = 1: 800 passes, more than 120 s, against 0.6 s for the count).
    return list(api.enumerate_certificates(problem, budget, limit=members, limits=limits))


def diagnose(problem: Problem, atoms: Sequence[Atom], *, backend: str | None = None,
             limits: Limits | None = None) -> tuple[Diagnostic, float]:
    """The SubsetMin diagnostic of a well-formed certificate
    (:func:`gf01_formal.scoring.certificates.subset_min_diagnostic`) and the milliseconds it took."""
    start = time.perf_counter()
    answer, status, note = subset_min_diagnostic(problem, atoms, backend=backend, limits=limits)
    return (Diagnostic(subset_min=answer, diagnostic_status=status, diagnostic_note=note),
            round((time.perf_counter() - start) * 1000, 3))
