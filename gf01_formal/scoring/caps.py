"""The optional SubsetMin diagnostic under a campaign's caps (spec §9; DEC-019..023): :class:`CapSet` (the caps)
and :func:`run_diagnostic` (the diagnostic metered under them), beside the scorer so that playing a run needs
nothing of the reports. How caps are derived from pilot runs (``gf01 caps derive``) is the report's
(:mod:`gf01_formal.report.caps`); the metering itself is the solver floor's (:mod:`solvers.metering`).

Normative checks (Suff, Min1, Valid, the gold set and best match behind PRF) are never capped (DEC-019): only the
optional SubsetMin diagnostic runs here. Hybrid caps (DEC-020): platform caps P_ref (wall seconds, resident memory)
and algorithmic caps A_ref (SAT conflicts of the Glucose 4 engine PySAT can budget, BDD nodes), each optional.

Metering: the diagnostic always runs on an engine that counts its work, capped or not (the SAT backend under a
conflict budget uses Glucose 4, so a pilot measures the engine the caps will bound). What it spent goes into the run
record's ``timing`` (``diagnostic_ms``, ``diagnostic_peak_kib``, ``diagnostic_spent``): timing is the record's
machine-dependent part, and wall time and memory are. A diagnostic is ``exact`` only when it finished within every
cap; otherwise ``infeasible`` with the cap it hit in ``diagnostic_note``. Conflicts, nodes and time are enforced
while the query runs (the solver's budget, interrupt and checkpoints), memory at every checkpoint of the query; and
every cap once more against what was spent when the query ends (a solver checks its budget between steps, so it can
finish a little past it): an answer found above a cap is not recorded, so that exact / infeasible is decided by the
caps alone.

>>> CapSet(conflicts=5).limits().conflicts, CapSet().limits().conflicts == UNBOUNDED
(5, True)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from encoders.problem import Atom, Problem
from gf01_formal.scoring.scores import diagnose
from gf01_formal.scoring.values import Diagnostic
from hoa.errors import Gf01Error
from solvers.metering import UNBOUNDED, MeteredLimits

#: The backends a diagnostic can be metered on (the ones that count their work: conflicts, nodes).
BACKENDS = ("sat", "bdd")
#: DEC-021: the caps freeze at the pilot checkpoint (DEC-014d's N pilot instances).
SAMPLE_TARGET = 240


@dataclass(frozen=True)
class CapSet:
    """The caps a diagnostic runs under (None: uncapped), and the backend they were derived for."""

    backend: str = "sat"
    seconds: float | None = None
    memory_kib: int | None = None
    conflicts: int | None = None
    nodes: int | None = None
    #: Derived from fewer pilot instances than the DEC-021 checkpoint (SAMPLE_TARGET): not frozen caps.
    provisional: bool = False
    sample_instances: int | None = None

    def limits(self) -> MeteredLimits:
        """Fresh limits for one diagnostic: the caps, and an unreachable budget where the backend must count."""
        conflicts = self.conflicts if self.conflicts is not None else (UNBOUNDED if self.backend == "sat" else None)
        nodes = self.nodes if self.nodes is not None else (UNBOUNDED if self.backend == "bdd" else None)
        return MeteredLimits(seconds=self.seconds, conflicts=conflicts, nodes=nodes, memory_kib=self.memory_kib)

    def to_json(self) -> dict[str, Any]:
        """The caps as JSON (what a campaign records)."""
        out: dict[str, Any] = {"backend": self.backend, "seconds": self.seconds, "memory_kib": self.memory_kib,
                               "conflicts": self.conflicts, "nodes": self.nodes}
        if self.provisional:  # only then: campaigns under frozen caps record what they always did
            out.update(provisional=True, sample_instances=self.sample_instances)
        return out

    def capped(self) -> bool:
        """Whether any cap is set (a metered pilot runs with none)."""
        return any(v is not None for v in (self.seconds, self.memory_kib, self.conflicts, self.nodes))

    def report_section(self) -> dict[str, Any]:
        """What a report says about the caps its runs' diagnostics ran under."""
        return {"backend": self.backend, "seconds": self.seconds, "memory_kib": self.memory_kib,
                "conflicts": self.conflicts, "nodes": self.nodes, "provisional": self.provisional,
                "sample_instances": self.sample_instances, "checkpoint": SAMPLE_TARGET}

    def refuse_provisional(self, allow: bool, where: str) -> None:
        """Gf01Error when the caps are provisional and ``allow`` (--allow-provisional-caps) was not given."""
        if self.provisional and not allow:
            raise Gf01Error(f"provisional caps: derived from {self.sample_instances} pilot instance(s), before the "
                            f"DEC-021 checkpoint of {SAMPLE_TARGET}; {where} refuses them unless "
                            "--allow-provisional-caps", field="--caps")


def run_diagnostic(problem: Problem, atoms: Sequence[Atom], caps: CapSet) -> tuple[Diagnostic, dict[str, Any]]:
    """SubsetMin of ``atoms`` metered under ``caps`` (:func:`gf01_formal.scoring.scores.diagnose`): the diagnostic
    and its timing fields, as the module docstring says."""
    limits = caps.limits()
    start = time.perf_counter()
    diagnostic, _ = diagnose(problem, atoms, backend=caps.backend, limits=limits)
    elapsed = time.perf_counter() - start
    grew = limits.peak_growth_kib()
    # A counter the query never touched counted nothing (e.g. no SAT call for an empty certificate).
    zero = {"conflicts": 0, "sat_calls": 0} if caps.backend == "sat" else {"nodes": 0}
    spent = {"backend": caps.backend, **zero, **limits.spent()}
    timing = {"diagnostic_ms": round(elapsed * 1000, 3), "diagnostic_peak_kib": grew, "diagnostic_spent": spent}
    if diagnostic.diagnostic_status == "exact":
        # A solver checks its budget between steps, so it may finish a little past a cap: exact means within.
        over = None
        if caps.conflicts is not None and spent.get("conflicts", 0) > caps.conflicts:
            over = f"conflict limit {caps.conflicts} (spent {spent['conflicts']})"
        elif caps.nodes is not None and spent.get("nodes", 0) > caps.nodes:
            over = f"node limit {caps.nodes} (spent {spent['nodes']})"
        elif caps.seconds is not None and elapsed > caps.seconds:
            over = f"time limit {caps.seconds} s (took {elapsed:.3f} s)"
        elif caps.memory_kib is not None and grew is not None and grew > caps.memory_kib:
            over = f"memory limit {caps.memory_kib} KiB (peak growth {grew} KiB)"
        if over is not None:
            diagnostic = Diagnostic(subset_min=None, diagnostic_status="infeasible", diagnostic_note=over)
    return diagnostic, timing
