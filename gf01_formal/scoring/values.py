"""The typed results of scoring one certificate: :class:`Scores` (MET-C, MET-M, the AP/TS best match) and
:class:`Diagnostic` (the optional exact SubsetMin diagnostic), as the run record carries them (docs/runs.md).

Their fields are the run record's own (field names of the peer's ``gf01.run_record.v1`` where it has them): a new
score is one line in :class:`Scores`, and every list of score fields (the record's columns, what validation
re-scores, what a failed run leaves empty, what the browser shows) is derived from it. No solver is imported here,
so reading runs for a report never loads one.

>>> Scores.model_fields["ap_f1"].annotation
<class 'float'>
>>> PRF_FIELDS[:2]
('ap_precision', 'ap_recall')
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_VALUE = ConfigDict(extra="forbid", frozen=True, strict=True)


class Scores(BaseModel):
    """The exact scores of one certificate (spec §5, §7.2-7.3; DEC-025 for the best match)."""

    model_config = _VALUE

    suff: bool = Field(description="the certificate achieves the effect (Definition 10)")
    min1: bool = Field(description="no single atom can be dropped (Definition 11)")
    valid: bool = Field(description="Suff and Min1 (Definition 12)")
    goal: bool = Field(description="G(I) = 1[Suff]")
    eff_t: int = Field(description="distinct steps with edits")
    eff_a: int = Field(description="atoms")
    score_c: int = Field(description="Score_C = 1[Valid] (MET-C)")
    kappa: list[int] = Field(description="(M, G, -Eff_t, -Eff_a), the MET-M key")
    ap_precision: float
    ap_recall: float
    ap_f1: float
    ts_precision: float
    ts_recall: float
    ts_f1: float
    best_match_gold: list[list[Any]] | None = Field(description="the DEC-025 gold the PRF is measured against")
    gold_set: Literal["M", "MB"] = Field(description="the set the gold was ranked in: M (M(I), every valid "
                                         "certificate, section 7.3) or MB (M_B(I), within B_T, an option)")
    within_budget: bool | None = Field(description="the certificate touches at most B_T timesteps (a flag: an "
                                       "over-budget certificate is scored by Definitions 10-12); null for a "
                                       "malformed one")

    def to_json(self) -> dict[str, Any]:
        """The scores as record fields."""
        return self.model_dump(mode="json")


class Diagnostic(BaseModel):
    """The optional exact SubsetMin diagnostic: only an ``exact`` one has an answer, only an ``infeasible`` one a
    note (the cap it hit)."""

    model_config = _VALUE

    subset_min: bool | None = Field(description="the optional exact diagnostic (null: not run or infeasible)")
    diagnostic_status: Literal["exact", "infeasible", "not-run"]
    diagnostic_note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The diagnostic as record fields."""
        return self.model_dump(mode="json")


class Result(Scores, Diagnostic):
    """An episode's scored result, as the agent's end message carries it: its scores and its diagnostic."""

    @classmethod
    def of(cls, scores: Scores, diagnostic: Diagnostic) -> Result:
        """The result of ``scores`` with ``diagnostic``."""
        return cls(**scores.model_dump(), **diagnostic.model_dump())


#: The score fields, in the model's order: what a re-verification recomputes (floats compared exactly: both sides
#: come from exact rationals), what a failed run leaves null.
SCORE_FIELDS: tuple[str, ...] = tuple(Scores.model_fields)
#: The AP/TS precision, recall and F1 fields (the reports' means).
PRF_FIELDS: tuple[str, ...] = tuple(k for k, f in Scores.model_fields.items() if f.annotation is float)
DIAGNOSTIC_FIELDS: tuple[str, ...] = tuple(Diagnostic.model_fields)
#: The diagnostic of a run that did not ask for one.
NOT_RUN = Diagnostic(subset_min=None, diagnostic_status="not-run")
