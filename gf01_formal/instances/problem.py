"""The semantic check of an instance's task and the solver-level Problem it gives, built once per task.

Every reader ends here: the models (:func:`gf01_formal.instances.io.instance_problem`), the pydantic-free reader
(:func:`gf01_formal.instances.plain.open_plain`) and the importers (:mod:`gf01_formal.instances.sources`) hand a
:class:`~gf01_formal.instances.spec.Task` to :func:`task_problem`. The views are kept per
:class:`~gf01_formal.instances.spec.SystemSpec` and the Problems per Task (the least recently used dropped first), so
equal systems share one parsed view (and its compiled tables) and equal tasks one Problem. An importer that has
parsed the file already hands its view (and the effect it parsed) over: the file is parsed once per command.
No pydantic here: the start-up path (``gf01 verify``) uses it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from gf01_formal.instances.spec import SystemSpec, Task
from hoa.errors import Gf01Error, quote

if TYPE_CHECKING:
    from aig.view import CircuitView
    from encoders.problem import Problem
    from hoa.label import Expr
    from hoa.mealy import MealyView

#: Views kept (one per distinct system) and Problems kept (one per distinct task): far more than a command's, a
#: task's or an evaluation's working set; a Problem shares its system's view.
VIEW_CACHE_SIZE = 256
PROBLEM_CACHE_SIZE = 4096

K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """A bounded map, least recently used dropped first; shared by threads (the browser, the thread executor)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[K, V] = OrderedDict()
        self.lock = threading.Lock()

    def find(self, key: K) -> V | None:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def keep(self, key: K, value: V) -> V:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


_views: _Lru[SystemSpec, MealyView | CircuitView] = _Lru(VIEW_CACHE_SIZE)
_problems: _Lru[Task, Problem] = _Lru(PROBLEM_CACHE_SIZE)


def system_view(system: SystemSpec, *, built: MealyView | CircuitView | None = None) -> MealyView | CircuitView:
    """The Mealy view of a system, checked (distinct AP names, the APs the view has, input-complete tables within
    the size limit; canonical circuit text); errors name the field. ``built`` is the view of ``system`` that
    :func:`~gf01_formal.instances.spec.hoa_system` or :func:`~gf01_formal.instances.spec.aiger_system` made: it is
    checked and kept instead of parsing the text again."""
    view = _views.find(system)
    if view is not None:
        return view
    names = [*system.inputs, *system.outputs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise Gf01Error(f"{quote(dup, 60)} is named twice among the inputs and outputs", field="system")
    if system.kind == "aiger":
        view = circuit_view(system) if built is None else built
        _check_names(view, system.inputs, system.outputs)
    else:
        view = (_table_view(system) if system.kind == "table" else _hoa_view(system)) if built is None else built
        _check_tables(view, system)
    return _views.keep(system, view)


def _hoa_view(system: SystemSpec) -> MealyView:
    from hoa.mealy import mealy_from_text

    if not system.hoa:
        raise Gf01Error("a system of kind 'hoa' needs its HOA text", field="system.hoa")
    try:
        return mealy_from_text(system.hoa, system.outputs)
    except Gf01Error as ex:  # line:col are the HOA text's, not the instance file's
        where = ":".join(str(p) for p in (ex.line, ex.col) if p is not None)
        raise Gf01Error(f"{where + ': ' if where else ''}{ex.message}", field="system.hoa") from None


def _table_view(system: SystemSpec) -> MealyView:
    from hoa.mealy import MAX_TABLE_CELLS, MAX_TABLE_INPUTS, MealyView

    tab, inputs, outputs = system.table, system.inputs, system.outputs
    if tab is None:
        raise Gf01Error("a system of kind 'table' needs its table", field="system.table")
    states = tab.states
    if not 0 <= tab.initial < len(states):
        raise Gf01Error(f"initial state {tab.initial} out of range", field="system.table.initial")
    if len(tab.next) != len(states) or len(tab.out) != len(states):
        raise Gf01Error("next and out need one row per state", field="system.table")
    width = 1 << len(inputs) if len(inputs) <= MAX_TABLE_INPUTS else 0
    if not width or len(states) * width > MAX_TABLE_CELLS:
        raise Gf01Error(f"{len(states)} states x 2^{len(inputs)} input valuations is more than the "
                        f"{MAX_TABLE_CELLS:,} table cells an instance may have", field="system.table")
    for what, rows, limit in (("next", tab.next, len(states)), ("out", tab.out, 1 << len(outputs))):
        for q, row in enumerate(rows):
            if len(row) != width:
                raise Gf01Error(f"state {quote(states[q], 40)}: {len(row)} entries, one per input valuation "
                                f"(2^{len(inputs)} = {width}) needed", field=f"system.table.{what}")
            bad = [v for v in row if not 0 <= v < limit]
            if bad:
                raise Gf01Error(f"state {quote(states[q], 40)}: {quote(bad[0], 40)} is out of range "
                                f"[0, {limit - 1}]", field=f"system.table.{what}")
    try:
        return MealyView.from_table(list(inputs), list(outputs), [list(r) for r in tab.next],
                                    [list(r) for r in tab.out], tab.initial, list(states))
    except Gf01Error as ex:
        raise Gf01Error(ex.message, field="system.table") from ex


def _check_tables(view: MealyView, system: SystemSpec) -> None:
    from hoa.mealy import MAX_TABLE_CELLS, MAX_TABLE_INPUTS

    _check_names(view, system.inputs, system.outputs)
    if not view.has_tables:
        raise Gf01Error(
            f"{view.num_states} states x 2^{view.num_inputs} input valuations = {view.table_cells:,} table cells, "
            f"more than the {MAX_TABLE_CELLS:,} an instance may have (at most {MAX_TABLE_INPUTS} inputs)",
            field="system",
        )
    # The tables are compiled now (every query needs them): a state without an edge for some input, or a label the
    # tables cannot take, is refused here, naming the field, and not at the first query.
    try:
        view.tables  # noqa: B018
    except Gf01Error as ex:
        raise Gf01Error(ex.message, field="system") from ex


def _check_names(view: MealyView | CircuitView, inputs: Sequence[str], outputs: Sequence[str]) -> None:
    if list(view.inputs) != list(inputs) or list(view.outputs) != list(outputs):
        raise Gf01Error(
            f"the system's APs are inputs {list(view.inputs)}, outputs {list(view.outputs)}; the instance says "
            f"inputs {list(inputs)}, outputs {list(outputs)}",
            field="system",
        )


def circuit_view(system: SystemSpec) -> CircuitView:
    """The view of a circuit system: its canonical AIGER text parsed; the outputs past the circuit's outputs and
    bad-state properties are the latches it observes."""
    from aig.parser import parse as parse_aiger
    from aig.view import CircuitView
    from aig.writer import canonical as canonical_aiger

    text = system.aiger
    if not text:
        raise Gf01Error("a system of kind 'aiger' needs its AIGER text", field="system.aiger")
    try:
        circuit = parse_aiger(text)
    except Gf01Error as ex:  # the line is the AIGER text's, not the instance file's
        raise Gf01Error(f"{ex.line}: {ex.message}" if ex.line else ex.message, field="system.aiger") from None
    if canonical_aiger(circuit) != text:
        raise Gf01Error("the AIGER text is not in canonical form (what aig.writer.canonical writes): an instance "
                        "carries, and hashes, the canonical text", field="system.aiger")
    fixed = len(circuit.outputs) + len(circuit.bad)
    try:
        return CircuitView.from_aig(circuit, observe=system.outputs[fixed:])
    except Gf01Error as ex:
        raise Gf01Error(ex.message, field="system") from None


def task_problem(task: Task, *, view: MealyView | CircuitView | None = None, effect: Expr | None = None) -> Problem:
    """The solver-level Problem of an instance's task, everything checked; errors name the field. The hashes are the
    reader's to check. ``view`` (the view an importer built of ``task.system``, see :func:`system_view`) and
    ``effect`` (the expression whose text ``task.effect`` is, as reading that text back gives it:
    :func:`gf01_formal.instances.traces.read_effect`) spare parsing them again."""
    problem = _problems.find(task)
    if problem is not None:
        return problem
    from encoders.problem import Problem
    from gf01_formal.instances.traces import parse_effect, trace_from_json

    system = system_view(task.system, built=view)
    trace = trace_from_json(task.trace_json(), system.inputs, field="base_trace")
    if effect is None:
        effect = parse_effect(task.effect, system.outputs, field="effect")
    T = len(trace)
    t_star, mode, window, budget_t, budget_a = task.t_star, task.mode, task.window, task.budget_t, task.budget_a
    if not 0 <= t_star < T:
        raise Gf01Error(f"t* = {t_star} is outside [0, {T - 1}]", field="t_star")
    low = 1 if mode == "normal" else 0  # w_min = 1 (DEC-014b); a hard-mode window plays no part
    if not low <= window <= T:  # a window within the trace needs no look-up of w_max
        high = _window_high(T)
        if not low <= window <= high:
            raise Gf01Error(f"window {window} is outside [{low}, {high}] ({mode} mode)", field="window")
    if not 1 <= budget_t <= T:
        raise Gf01Error(f"B_T = {budget_t} is outside [1, {T}]", field="budget_t")
    max_atoms = T * system.num_inputs
    if system.num_inputs == 0:
        # Every budget check below would fail with an empty range ([1, 0]); say why instead (a SYNTCOMP-style
        # controller whose every AP is controllable, such as Spot's ltlsynt outputs for specifications without
        # environment inputs).
        raise Gf01Error("the system has no inputs (AP_in is empty): a certificate could edit nothing, so it makes "
                        "no instance; an HOA file's --outputs (or controllable-AP) must leave an input, a circuit's "
                        "--edit must name one", field="system")
    if not 1 <= budget_a <= max_atoms:
        raise Gf01Error(f"B_A = {budget_a} is outside [1, {max_atoms}] (T x |AP_in|)", field="budget_a")
    oracle_eff_a = task.oracle_eff_a
    if oracle_eff_a is not None and budget_a < oracle_eff_a:
        # The oracle (EVAL-OC) is the panel's ceiling: it must be able to play its certificate (Score_C = 1).
        raise Gf01Error(f"B_A = {budget_a} is below Eff_a = {oracle_eff_a} of the oracle certificate, "
                        f"which could then not be played (give B_A >= {oracle_eff_a})", field="budget_a")
    return _problems.keep(task, Problem(system=system, trace=trace, effect=effect, t_star=t_star, mode=mode,
                                        window=window, budget_t=budget_t, budget_a=budget_a))


def _window_high(T: int) -> int:
    """The largest window of a trace of T steps: w(I) does not depend on T (alpha_T = 0), so a short trace may get a
    window up to w_max = 6 longer than itself; E_norm reads [max(0, t* - w), t*], where any w >= t* covers the whole
    prefix."""
    from gf01_formal.instances.complexity import W_MAX  # with the complexity models (pydantic): only when asked

    return max(T, W_MAX)
