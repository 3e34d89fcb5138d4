"""Scoring a finished episode exactly (spec §5, §7.2-7.3): the MET-C/MET-M score, AP/TS precision, recall and F1
against the best match in M(I) (or, as a chosen option, in M_B(I)), and the optional SubsetMin diagnostic.

One :class:`Scorer` per instance serves every agent's run: each best match comes by the cheaper exact route (its
class docstring: no query for a valid certificate, the gold set counted once and listed where that is cheaper than
the symbolic best-match query per run). Nothing here guesses: a diagnostic that runs out of its limits is recorded as
``infeasible``, and a best match that runs out raises :class:`solvers.limits.Unknown` to the caller.

>>> scorer = Scorer(problem)
>>> scorer.score([(20, 2, 1), (21, 2, 1)]).score_c
1
"""

from __future__ import annotations

import dataclasses
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
from gf01_formal.scoring.golds import GoldList
from gf01_formal.scoring.score import PRF_FIELDS
from gf01_formal.scoring.values import Diagnostic, Scores
from solvers import api
from solvers.canonical import canonical, timesteps
from solvers.limits import Limits, Unknown, guarded
from solvers.results import BestMatch

#: Largest gold set ever listed; a larger one is only ranked by the symbolic best-match query, run by run.
GOLD_LIST_MAX = 20_000
#: A listed member costs about 1/256 of a symbolic best match (measured, docs/solvers.md "Scoring: listing or the
#: symbolic best match"): a gold set is listed once the symbolic queries its scorer ran would have paid for it.
MEMBERS_PER_QUERY = 256

#: A table system whose table cells times T are at most this has its scoring queries run in the scorer's process,
#: under limits checked at each step of the forward pass (a step of such a system is microseconds), rather than
#: in a forked child per query (about 17 ms each, and the parent's readings of the child's memory while it waits):
#: the peer's pilot sizes (6 states x 8 letters x T 12 = 576) and T = 64 (3,072) are below; a circuit, whose SAT
#: calls cannot be interrupted, never is.
INLINE_CELLS = 1 << 12

#: Best matches a scorer computed, by certificate (its atoms sorted).
Answers = dict[Certificate, BestMatch]
#: Best matches by (instance content hash, gold set): what one campaign's scorers computed, for its own validation.
AnswerBook = dict[tuple[str, str], Answers]


@dataclass
class Scorer:
    """Scores certificates of one problem against the gold set (``gold_set_name``: M(I) by default, section 7.3;
    ``"MB"``: M_B(I)). ``answers`` keeps every best match it computes, by certificate (the panel's agents often commit
    the same one); a caller may hand in the answers an earlier scorer of the same instance content and gold set
    computed in this campaign (never values read from a record).

    Each best match is exact whichever way it is found, and the same (tests/test_scoring_gold.py): a valid certificate
    (within B_T for M_B(I)) is its own gold, with no query; otherwise the gold set is counted once, and listed (then
    ranked by :class:`~gf01_formal.scoring.golds.GoldList`) when that is cheaper than the symbolic best-match query:
    at once when the listing is one pass (:func:`solvers.api.list_members`), or once the symbolic queries this scorer
    ran would have paid for listing it (:data:`MEMBERS_PER_QUERY` members a query), never past
    :data:`GOLD_LIST_MAX`."""

    problem: Problem
    limits: Limits | None = None
    gold_set_name: GoldSet = "M"
    answers: Answers = field(default_factory=dict)
    _members: int | None = field(default=None, init=False)
    _golds: GoldList | None = field(default=None, init=False)
    _queries: int = field(default=0, init=False)

    def gold_set(self) -> list[Certificate] | None:
        """The gold set in canonical order when it has at most GOLD_LIST_MAX members, else None (too large to list)."""
        golds = self._listed(self.limits, force=True)
        return None if golds is None else golds.golds

    def best_match(self, atoms: Sequence[Atom], *, valid: bool | None = None,
                   limits: Limits | None = None) -> BestMatch:
        """The DEC-025 best match of ``atoms`` in the gold set with its AP/TS P/R/F1. ``valid``: Valid(atoms) when the
        caller knows it (else it is checked); ``limits``: those of this query (default: the scorer's)."""
        key = tuple(sorted(atoms))
        got = self.answers.get(key)
        if got is None:
            got = self.answers[key] = self._answer(key, valid, self.limits if limits is None else limits)
        return got

    def _answer(self, atoms: Certificate, valid: bool | None, limits: Limits | None) -> BestMatch:
        budget = gold_budget(self.problem, self.gold_set_name)
        limits = _in_process(self.problem, limits)
        if atoms and (budget is None or len(timesteps(atoms)) <= budget) and \
                (api.check(self.problem, atoms).valid if valid is None else valid):
            # F1_AP = 1 exactly when the gold is C_a itself: a valid certificate in the gold set is its own gold.
            return BestMatch(canonical(self.problem, atoms), 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
        try:
            golds = self._listed(limits)
        except Unknown as ex:  # counting or listing the gold set is this best match's work: it ran out
            raise Unknown("best_match", ex.reason, ex.spent) from None
        if golds is not None:
            return golds.best_match(atoms)
        self._queries += 1
        return api.best_match(self.problem, atoms, budget, limits=limits)

    def _listed(self, limits: Limits | None, *, force: bool = False) -> GoldList | None:
        """The listed gold set, listing it now when the rule (class docstring) says so, or ``force`` and it is small
        enough; None when it stays unlisted."""
        if self._golds is not None:
            return self._golds
        budget = gold_budget(self.problem, self.gold_set_name)
        limits = _in_process(self.problem, limits)
        if self._members is None:
            self._members, listed = _count_and_list(self.problem, budget, limits=limits)
            if listed is not None:
                self._golds = GoldList(self.problem, listed)
                return self._golds
        n = self._members
        if n <= GOLD_LIST_MAX and (force or (self._queries + 1) * MEMBERS_PER_QUERY >= n):
            self._golds = GoldList(self.problem, api.list_members(self.problem, budget, n, limits=limits))
        return self._golds

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
        bm = self.best_match(atoms, valid=s.valid)
        return Scores.of(with_best_match(self.problem, s, bm, self.gold_set_name))


def _in_process(problem: Problem, limits: Limits | None) -> Limits | None:
    """``limits`` checked in this process at each step when the problem is small (:data:`INLINE_CELLS`)."""
    from hoa.mealy import MealyView

    system = problem.system
    if limits is None or not limits.isolate or not isinstance(system, MealyView) or not system.has_tables or \
            system.table_cells * problem.horizon > INLINE_CELLS:
        return limits
    return dataclasses.replace(limits, isolate=False)


@guarded("best_match")
def _count_and_list(problem: Problem, budget: int | None, *,
                    limits: Limits | None = None) -> tuple[int, list[Certificate] | None]:
    """|M_B(I)| (``budget`` None: M(I)), and its members in canonical order when one pass lists them
    (:data:`solvers.api.ONE_PASS_CELLS`). One guarded query for both steps: under isolating limits each guarded query
    is a process of its own (about 17 ms)."""
    members = api.count(problem, budget, limits=limits)
    if members * problem.horizon > api.ONE_PASS_CELLS:
        return members, None
    return members, api.list_members(problem, budget, members, limits=limits)


def diagnose(problem: Problem, atoms: Sequence[Atom], *, backend: str | None = None,
             limits: Limits | None = None) -> tuple[Diagnostic, float]:
    """The SubsetMin diagnostic of a well-formed certificate
    (:func:`gf01_formal.scoring.certificates.subset_min_diagnostic`) and the milliseconds it took."""
    start = time.perf_counter()
    answer, status, note = subset_min_diagnostic(problem, atoms, backend=backend, limits=limits)
    return (Diagnostic(subset_min=answer, diagnostic_status=status, diagnostic_note=note),
            round((time.perf_counter() - start) * 1000, 3))
