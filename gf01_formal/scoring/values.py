"""The run record's columns of the one score type (:class:`gf01_formal.scoring.score.Score`), as pydantic models:
:class:`Scores` (the checks and the best match) and :class:`Diagnostic` (the optional exact SubsetMin diagnostic),
as the run record carries them (docs/runs.md), and :class:`Result` (both: an agent's end message).

The models are generated from :class:`~gf01_formal.scoring.score.Score`'s fields, never written by hand: a new score
is one field there, and every list of score fields (the record's columns, what validation re-scores, what a failed
run leaves empty, what the browser shows) follows. No solver is imported here, so reading runs for a report never
loads one.

>>> Scores.model_fields["ap_f1"].annotation.__name__  # a float in [0, 1]
'Unit'
>>> PRF_FIELDS[:2]
('ap_precision', 'ap_recall')
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from gf01_formal.scoring.score import PRF_FIELDS, Part, Score, Unit, fields_of

_VALUE = ConfigDict(extra="forbid", frozen=True, strict=True)


class _Columns(BaseModel):
    model_config = _VALUE

    def to_json(self) -> dict[str, Any]:
        """The columns as record fields."""
        return self.model_dump(mode="json")


def _columns(name: str, doc: str, *parts: Part) -> Any:
    """A model of :class:`Score`'s fields of ``parts``, each with its record type and description, required."""
    hints = typing.get_type_hints(Score)
    columns: dict[str, Any] = {}
    for f in dataclasses.fields(Score):
        if f.metadata["part"] in parts:
            kind = f.metadata["record"] or hints[f.name]
            given = {"default": f.default} if f.metadata["optional"] else {}
            columns[f.name] = (kind, Field(description=f.metadata["doc"] or None, **given))
    return create_model(name, __base__=_Columns, __doc__=doc, **columns)


_ScoresModel = _columns("Scores", "The exact scores of one certificate (spec §5, §7.2-7.3; DEC-025 for the best "
                        "match), as record columns.", "check", "best_match")
_DiagnosticModel = _columns("Diagnostic", "The optional exact SubsetMin diagnostic: only an ``exact`` one has an "
                            "answer, only an ``infeasible`` one a note (the cap it hit).", "diagnostic")


class Scores(_ScoresModel):  # type: ignore[misc,valid-type]
    """The exact scores of one certificate (spec §5, §7.2-7.3; DEC-025 for the best match)."""

    @classmethod
    def of(cls, score: Score) -> Scores:
        """The record columns of ``score`` (its best match measured)."""
        return cls.model_validate(score.part("check", "best_match"))


class Diagnostic(_DiagnosticModel):  # type: ignore[misc,valid-type]
    """The optional exact SubsetMin diagnostic: only an ``exact`` one has an answer, only an ``infeasible`` one a
    note (the cap it hit)."""

    @classmethod
    def of(cls, score: Score) -> Diagnostic:
        """The diagnostic columns of ``score``."""
        return cls.model_validate(score.part("diagnostic"))


# An evaluation server's end message withholds the figures measured against a sealed instance's gold (one edit
# alone told whether it lies in a valid certificate and that certificate's size: docs/remote.md), so in a result
# they may be null where a record's columns may not.
_ResultModel = create_model(
    "Result", __base__=(Scores, Diagnostic),
    **{name: (Unit | None, Field(description=f"{name} against best_match_gold (DEC-025); null where an "
                                  "evaluation server withholds it (docs/remote.md)")) for name in PRF_FIELDS})


class Result(_ResultModel):  # type: ignore[misc,valid-type]
    """An episode's scored result, as the agent's end message carries it: its scores and its diagnostic.

    >>> Result.model_fields["ap_f1"].annotation == Unit | None, Scores.model_fields["ap_f1"].annotation is Unit
    (True, True)
    """

    @classmethod
    def of(cls, scores: Scores, diagnostic: Diagnostic) -> Result:  # type: ignore[override]
        """The result of ``scores`` with ``diagnostic``."""
        return cls(**scores.model_dump(), **diagnostic.model_dump())


#: The fields that show the best match's gold: the gold itself and the figures measured against it (what a sealed
#: instance's server, or a pilot before its end, withholds).
GOLD_FIELDS: tuple[str, ...] = ("best_match_gold", *PRF_FIELDS)
#: The score fields, in the model's order: what a re-verification recomputes (floats compared exactly: both sides
#: come from exact rationals), what a failed run leaves null.
SCORE_FIELDS: tuple[str, ...] = fields_of("check", "best_match")
DIAGNOSTIC_FIELDS: tuple[str, ...] = fields_of("diagnostic")
#: The diagnostic of a run that did not ask for one.
NOT_RUN = Diagnostic(subset_min=None, diagnostic_status="not-run")

__all__ = ["DIAGNOSTIC_FIELDS", "GOLD_FIELDS", "NOT_RUN", "PRF_FIELDS", "SCORE_FIELDS", "Diagnostic", "Result",
           "Scores"]
