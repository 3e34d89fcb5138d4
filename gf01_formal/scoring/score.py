"""The one score type: :class:`Score`, the exact score of one certificate with the run record's field names
(docs/runs.md). ``gf01 verify`` (``--json`` and ``--certs``), the episode scorer (:mod:`.scores`) and the run record
all carry it; the record's pydantic columns (:mod:`.values`) are generated from its fields, so a new check is one
field here (and the line of :func:`gf01_formal.scoring.certificates.score` that decides it).

The fields come in four parts (each field's ``part``): the checks (always decided), the certificate's structural
errors, the best match (measured when asked for: null otherwise) and the SubsetMin diagnostic (``not-run`` unless
asked for). Nothing here imports pydantic or a solver: ``gf01 verify``'s front door and reading runs for a report
load neither through it.

>>> s = Score.of_checks(suff=True, min1=True, eff_t=1, eff_a=2, within_budget=True)
>>> s.kappa, s.score_c, s.diagnostic_status
([1, 1, -1, -2], 1, 'not-run')
>>> fields_of("diagnostic")
('subset_min', 'diagnostic_status', 'diagnostic_note')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

#: The parts of a score: ``check`` (Definitions 10-12, MET-C, MET-M), ``certificate`` (its structural errors),
#: ``best_match`` (AP/TS against the DEC-025 gold) and ``diagnostic`` (SubsetMin).
Part = Literal["check", "certificate", "best_match", "diagnostic"]
DiagnosticStatus = Literal["exact", "infeasible", "not-run"]
#: The gold sets a best match can rank: M(I), every valid certificate (section 7.3, DEC-025: the default), or MB,
#: M_B(I), the valid certificates within the instance's B_T (a user-chosen option: budget-feasible gold).
GoldSet = Literal["M", "MB"]


class Bit(int):
    """A record's 0 or 1 (Score_C): an int, strictly (``true`` is not 1), and nothing else. A type of its own rather
    than ``Annotated[int, ...]``, whose bounds the record's nullable columns would drop, or ``Literal[0, 1]``, which
    takes ``true`` and ``1.0``; before it, a runs file with ``"score_c": 4294967296`` made ``gf01 report`` end in
    an internal error (a rate above 1, its Wilson interval NaN: the mutation fuzzer, bench/corpus_mutate.py)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.int_schema(strict=True, ge=0, le=1)


class Kappa(list):  # type: ignore[type-arg]
    """A record's kappa: a list of exactly four ints (M, G, -Eff_t, -Eff_a), strictly. A runs file with one of them
    removed made ``gf01 report`` end in an internal error (an index past the list: the mutation fuzzer)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.list_schema(core_schema.int_schema(strict=True), min_length=4, max_length=4, strict=True)


class Unit(float):
    """A record's precision, recall or F1: a float in [0, 1]. A runs file with ``"ap_f1": 1e308`` made ``gf01
    report`` end in an internal error (a mean overflowing to infinity, which JSON cannot hold: the mutation
    fuzzer)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.float_schema(ge=0.0, le=1.0, allow_inf_nan=False)


def _meta(part: Part, doc: str = "", *, record: Any = None, optional: bool = False) -> dict[str, Any]:
    """The metadata of a field of :class:`Score` in ``part``; ``record`` is the run record's type for it when that
    differs from the field's own (a best-match figure is null in a score that did not measure it, never in a record
    that did); ``optional``: a record may leave it out (its default), where every other column is required."""
    return {"part": part, "doc": doc, "record": record, "optional": optional}


@dataclass(frozen=True, kw_only=True)
class Score:
    """The exact score of one certificate (spec §5, §7.2-7.3; DEC-025 for the best match)."""

    suff: bool = field(metadata=_meta("check", "the certificate achieves the effect (Definition 10)"))
    min1: bool = field(metadata=_meta("check", "no single atom can be dropped (Definition 11)"))
    valid: bool = field(metadata=_meta("check", "Suff and Min1 (Definition 12)"))
    goal: bool = field(metadata=_meta("check", "G(I) = 1[Suff]"))
    eff_t: int = field(metadata=_meta("check", "distinct steps with edits"))
    eff_a: int = field(metadata=_meta("check", "atoms"))
    score_c: int = field(metadata=_meta("check", "Score_C = 1[Valid] (MET-C)", record=Bit))
    kappa: list[int] = field(metadata=_meta("check", "(M, G, -Eff_t, -Eff_a), the MET-M key", record=Kappa))
    certificate_errors: list[str] = field(default_factory=list, metadata=_meta(
        "certificate", "structural errors of the certificate as submitted (scored false); a well-formed one has none"))
    ap_precision: float | None = field(default=None, metadata=_meta("best_match", record=Unit))
    ap_recall: float | None = field(default=None, metadata=_meta("best_match", record=Unit))
    ap_f1: float | None = field(default=None, metadata=_meta("best_match", record=Unit))
    ts_precision: float | None = field(default=None, metadata=_meta("best_match", record=Unit))
    ts_recall: float | None = field(default=None, metadata=_meta("best_match", record=Unit))
    ts_f1: float | None = field(default=None, metadata=_meta("best_match", record=Unit))
    best_match_gold: list[list[Any]] | None = field(default=None, metadata=_meta(
        "best_match", "the DEC-025 gold the PRF is measured against"))
    gold_set: GoldSet | None = field(default=None, metadata=_meta(
        "best_match", "the set the gold was ranked in: M (M(I), every valid certificate, section 7.3) or MB (M_B(I), "
        "within B_T, an option)", record=GoldSet))
    within_budget: bool | None = field(metadata=_meta(
        "check", "the certificate touches at most B_T timesteps (a flag: an over-budget certificate is scored by "
        "Definitions 10-12); null for a malformed one"))
    subset_min: bool | None = field(default=None, metadata=_meta(
        "diagnostic", "the optional exact diagnostic (null: not run or infeasible)"))
    diagnostic_status: DiagnosticStatus = field(default="not-run", metadata=_meta("diagnostic"))
    diagnostic_note: str | None = field(default=None, metadata=_meta("diagnostic", optional=True))

    @classmethod
    def of_checks(cls, *, suff: bool, min1: bool, eff_t: int, eff_a: int, within_budget: bool | None,
                  certificate_errors: tuple[str, ...] | list[str] = ()) -> Score:
        """The score of the checks alone, with what follows from them: Valid = Suff and Min1, G = Suff, Score_C =
        1[Valid], kappa = (M, G, -Eff_t, -Eff_a)."""
        valid = suff and min1
        return cls(suff=suff, min1=min1, valid=valid, goal=suff, eff_t=eff_t, eff_a=eff_a, score_c=int(valid),
                   kappa=[int(valid), int(suff), -eff_t, -eff_a], within_budget=within_budget,
                   certificate_errors=list(certificate_errors))

    def with_best_match(self, metrics: Mapping[str, float], gold: list[list[Any]] | None,
                        gold_set: GoldSet) -> Score:
        """This score with its best match measured: the six AP/TS figures, the gold and the set it was ranked in."""
        return dataclasses.replace(self, **metrics, best_match_gold=gold, gold_set=gold_set)

    def with_diagnostic(self, subset_min: bool | None, status: DiagnosticStatus, note: str | None = None) -> Score:
        """This score with its SubsetMin diagnostic."""
        return dataclasses.replace(self, subset_min=subset_min, diagnostic_status=status, diagnostic_note=note)

    @property
    def measured(self) -> bool:
        """The best match was measured."""
        return self.gold_set is not None

    def part(self, *parts: Part) -> dict[str, Any]:
        """The fields of ``parts``, by name, in declaration order (the record's columns of those parts)."""
        return {name: getattr(self, name) for name in fields_of(*parts)}

    def to_json(self) -> dict[str, Any]:
        """Every field, as JSON (``gf01 verify --json``'s record: the run record's names)."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
                for f in dataclasses.fields(self)}


def fields_of(*parts: Part) -> tuple[str, ...]:
    """The names of the fields of ``parts``, in declaration order."""
    return tuple(f.name for f in dataclasses.fields(Score) if f.metadata["part"] in parts)


#: The AP/TS precision, recall and F1 fields (the reports' means).
PRF_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Score)
                                    if f.metadata["part"] == "best_match" and f.metadata["record"] is Unit)
