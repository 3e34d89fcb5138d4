"""An instance's system and task as plain, hashable values (no pydantic), and the two ways a system file becomes one.

:class:`SystemSpec` is the one form of a system: the pydantic model (:meth:`gf01_formal.instances.model.System.spec`)
and the pydantic-free reader (:func:`SystemSpec.of_json`) both produce it, and the semantic check and the Problem
(:mod:`gf01_formal.instances.problem`) are built from it, keyed by it. :class:`Task` is what an instance asks (the
system, base trace, effect, t*, mode, window, budgets, the oracle's Eff_a), hashable too: equal tasks share one
Problem.

:func:`hoa_system` and :func:`aiger_system` are the one way from an HOA controller or an AIGER circuit to a system:
the importers (:mod:`gf01_formal.instances.sources`) and the directory families (``hoa_dir``, ``aiger_dir``) both use
them, and hand the view they built on to :func:`gf01_formal.instances.problem.system_view`, so the file is parsed
once.

>>> SystemSpec.of_json({"kind": "hoa", "inputs": ["r"], "outputs": ["g"], "hoa": "HOA: v1 ...", "table": None})
SystemSpec(kind='hoa', inputs=('r',), outputs=('g',), hoa='HOA: v1 ...', table=None, aiger=None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aig.view import CircuitView
    from hoa.mealy import MealyView


@dataclass(frozen=True)
class TableSpec:
    """An explicit Mealy table: ``next[q][x]`` and ``out[q][x]``, x and y bit-packed in input/output order."""

    states: tuple[str, ...]
    initial: int
    next: tuple[tuple[int, ...], ...]
    out: tuple[tuple[int, ...], ...]

    def to_json(self) -> dict[str, Any]:
        """As ``model.TableSystem``'s ``model_dump(mode="json")``."""
        return {"states": list(self.states), "initial": self.initial, "next": [list(r) for r in self.next],
                "out": [list(r) for r in self.out]}


@dataclass(frozen=True)
class SystemSpec:
    """The system A of an instance: its kind, AP_in and AP_out in bit order, and the HOA text (kind ``hoa``), the
    table (``table``) or the canonical AIGER text (``aiger``)."""

    kind: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    hoa: str | None = None
    table: TableSpec | None = None
    aiger: str | None = None

    @classmethod
    def of_json(cls, system: Mapping[str, Any]) -> SystemSpec:
        """The spec of a system as JSON (``model.System``'s ``model_dump(mode="json")``, or what the pydantic-free
        reader returns)."""
        tab = system.get("table")
        table = None if tab is None else TableSpec(
            tuple(tab["states"]), tab["initial"], tuple(map(tuple, tab["next"])), tuple(map(tuple, tab["out"])))
        return cls(system["kind"], tuple(system["inputs"]), tuple(system["outputs"]), system.get("hoa"), table,
                   system.get("aiger"))

    def to_json(self) -> dict[str, Any]:
        """As ``model.System``'s ``model_dump(mode="json")`` (the ``aiger`` key only for a circuit)."""
        out: dict[str, Any] = {"kind": self.kind, "inputs": list(self.inputs), "outputs": list(self.outputs),
                               "hoa": self.hoa, "table": None if self.table is None else self.table.to_json()}
        if self.aiger is not None:
            out["aiger"] = self.aiger
        return out


#: A base trace as a Task holds it: per step, the ``(input, value)`` pairs of its JSON object, in their order.
TraceJson = tuple[tuple[tuple[str, int], ...], ...]


@dataclass(frozen=True)
class Task:
    """What an instance asks, as its semantic check reads it: the system, the base trace (its JSON objects as
    pairs), the effect's text, t*, mode, window, the budgets, and the Eff_a of the oracle's certificate (None
    without a certification: B_A is checked against it)."""

    system: SystemSpec
    base_trace: TraceJson
    effect: str
    t_star: int
    mode: str
    window: int
    budget_t: int
    budget_a: int
    oracle_eff_a: int | None = None

    @classmethod
    def of_json(cls, inst: Mapping[str, Any], system: SystemSpec | None = None) -> Task:
        """The task of an instance as JSON (its ``model_dump(mode="json")``, or what the pydantic-free reader
        returns); ``system``, when given, is the spec of its system already made."""
        cert = inst.get("certification")
        return cls(SystemSpec.of_json(inst["system"]) if system is None else system, trace_pairs(inst["base_trace"]),
                   inst["effect"], inst["t_star"], inst["mode"], inst["window"], inst["budget_t"], inst["budget_a"],
                   None if cert is None else cert.get("oracle_eff_a"))

    def trace_json(self) -> list[dict[str, int]]:
        """The base trace as its JSON list of ``{input: 0|1}`` objects."""
        return [dict(step) for step in self.base_trace]


def trace_pairs(base_trace: Sequence[Mapping[str, int]]) -> TraceJson:
    """A base trace's JSON objects as the pairs a :class:`Task` holds."""
    return tuple(tuple(step.items()) for step in base_trace)


#: How a controller that is not output-deterministic may be read (``--resolve``): the first enabled edge in file order.
RESOLUTIONS = ("first-edge",)


def hoa_system(text: str, outputs: Sequence[str] | None = None, *, file: str | None = None,
               resolve: str | None = None) -> tuple[SystemSpec, MealyView]:
    """The system of Mealy HOA text (its outputs ``outputs``, else its ``controllable-AP``) and its view, not yet
    checked (:func:`gf01_formal.instances.problem.system_view` checks it when handed the view).

    A view that is not output-deterministic (a game arena: under one input, enabled edges with different outcomes)
    is refused unless ``resolve`` names how to read it (:data:`RESOLUTIONS`): the first-edge rule would otherwise
    pick the controller's moves silently. Judged on the dense tables; a view past their limits is not judged.
    """
    from hoa.errors import Gf01Error
    from hoa.mealy import mealy_from_text

    if resolve is not None and resolve not in RESOLUTIONS:
        raise Gf01Error(f"--resolve {resolve!r}: the one resolution is {', '.join(RESOLUTIONS)}", field="resolve")
    view = mealy_from_text(text, outputs, file=file)
    if resolve is None and view.has_tables and view.first_missing() is None:
        amb = view.first_ambiguity()
        if amb is not None:
            raise Gf01Error(
                f"not an output-deterministic controller (a game arena?): state {view.state_name(amb.state)} under "
                f"input {view.valuation_text(amb.x)} has edges {amb.first} and {amb.other} enabled with different "
                "outputs or successors; state --resolve first-edge to take the first enabled edge in file order",
                file=file, field="resolve")
    return SystemSpec("hoa", tuple(view.inputs), tuple(view.outputs), hoa=text), view


def aiger_system(data: bytes | str, observe: Sequence[str] = (), *,
                 file: str | None = None) -> tuple[SystemSpec, CircuitView]:
    """The system of an AIGER circuit (``.aag`` or ``.aig`` bytes; its outputs the AIGER outputs, then the bad-state
    properties, then the latches ``observe`` names) and its view. The system carries the canonical text, and the view
    is of the circuit in that canonical numbering, without comments: the view that reading the text back gives."""
    from dataclasses import replace

    from aig.parser import parse
    from aig.view import CircuitView
    from aig.writer import canonical, renumber

    # The canonical text keeps no comments: neither does the circuit whose view stands for reading that text back.
    circuit = replace(renumber(parse(data, file=file)), comments=())
    view = CircuitView.from_aig(circuit, observe=observe)
    return SystemSpec("aiger", tuple(view.inputs), tuple(view.outputs), aiger=canonical(circuit)), view
