"""Reading, checking and writing instance files and bundles; the solver-level Problem of an instance.

Every artifact loads as a bundle (:func:`load_set`: an instance file is a bundle of one, without a bundle hash), and
every command that takes INSTANCE accepts an instance file, or a bundle plus an id (``load_instance``). Loading
refuses a bad instance with a message naming the field: unknown AP in the trace or effect, t* out of range, window
or budgets out of range, system not input-complete, hash mismatch.

An instance's Problem is built once per process (:func:`check_instance` keeps the checked Problems of recent
instances, keyed by their content hash): the runner, the scorer, validate, the browser and the integrations all ask
it, and none keeps a cache of its own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from aig.parser import parse as parse_aiger
from aig.view import CircuitView
from aig.writer import canonical as canonical_aiger
from encoders.problem import Problem
from gf01_formal.artifacts import canonical_json, read_json, write_text_atomic
from gf01_formal.instances.complexity import W_MAX
from gf01_formal.instances.model import (
    BUNDLE_SCHEMA,
    INSTANCE_SCHEMA,
    OLD_SCHEMAS,
    Bundle,
    Instance,
    System,
    check_hashes,
    dumps,
    instances_hash,
    validate_model,
)
from gf01_formal.instances.traces import parse_effect, trace_from_json
from hoa.errors import Gf01Error, quote
from hoa.mealy import MAX_TABLE_CELLS, MAX_TABLE_INPUTS, MealyView, mealy_from_text


def system_view(system: System) -> MealyView | CircuitView:
    """The Mealy view of an instance's system (HOA parsed, the explicit table, or the circuit), checked
    (input-complete tables; canonical circuit text)."""
    return _view_cached(canonical_json(system.model_dump(mode="json")))


@lru_cache(maxsize=256)
def _view_cached(system_json: str) -> MealyView | CircuitView:
    # Keyed by the canonical JSON so that equal systems share one parsed view (and its compiled tables).
    system = System.model_validate_json(system_json)
    names = [*system.inputs, *system.outputs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise Gf01Error(f"{quote(dup, 60)} is named twice among the inputs and outputs", field="system")
    if system.kind == "aiger":
        view = circuit_view(system)
        _check_names(view, system)
        return view
    if system.kind == "hoa":
        if not system.hoa:
            raise Gf01Error("a system of kind 'hoa' needs its HOA text", field="system.hoa")
        try:
            view = mealy_from_text(system.hoa, system.outputs)
        except Gf01Error as ex:  # line:col are the HOA text's, not the instance file's
            where = ":".join(str(p) for p in (ex.line, ex.col) if p is not None)
            raise Gf01Error(f"{where + ': ' if where else ''}{ex.message}", field="system.hoa") from None
    else:
        tab = system.table
        if tab is None:
            raise Gf01Error("a system of kind 'table' needs its table", field="system.table")
        if not 0 <= tab.initial < len(tab.states):
            raise Gf01Error(f"initial state {tab.initial} out of range", field="system.table.initial")
        if len(tab.next) != len(tab.states) or len(tab.out) != len(tab.states):
            raise Gf01Error("next and out need one row per state", field="system.table")
        width = 1 << len(system.inputs) if len(system.inputs) <= MAX_TABLE_INPUTS else 0
        if not width or len(tab.states) * width > MAX_TABLE_CELLS:
            raise Gf01Error(f"{len(tab.states)} states x 2^{len(system.inputs)} input valuations is more than the "
                            f"{MAX_TABLE_CELLS:,} table cells an instance may have", field="system.table")
        for what, rows, limit in (("next", tab.next, len(tab.states)), ("out", tab.out, 1 << len(system.outputs))):
            for q, row in enumerate(rows):
                if len(row) != width:
                    raise Gf01Error(f"state {quote(tab.states[q], 40)}: {len(row)} entries, one per input valuation "
                                    f"(2^{len(system.inputs)} = {width}) needed", field=f"system.table.{what}")
                bad = [v for v in row if not 0 <= v < limit]
                if bad:
                    raise Gf01Error(f"state {quote(tab.states[q], 40)}: {quote(bad[0], 40)} is out of range "
                                    f"[0, {limit - 1}]", field=f"system.table.{what}")
        try:
            view = MealyView.from_table(system.inputs, system.outputs, tab.next, tab.out, tab.initial, tab.states)
        except Gf01Error as ex:
            raise Gf01Error(ex.message, field="system.table") from ex
    _check_names(view, system)
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
    return view


def _check_names(view: MealyView | CircuitView, system: System) -> None:
    if list(view.inputs) != list(system.inputs) or list(view.outputs) != list(system.outputs):
        raise Gf01Error(
            f"the system's APs are inputs {list(view.inputs)}, outputs {list(view.outputs)}; the instance says "
            f"inputs {list(system.inputs)}, outputs {list(system.outputs)}",
            field="system",
        )


def circuit_view(system: System) -> CircuitView:
    """The view of a circuit system: its canonical AIGER text parsed; the outputs past the circuit's outputs and
    bad-state properties are the latches it observes."""
    if not system.aiger:
        raise Gf01Error("a system of kind 'aiger' needs its AIGER text", field="system.aiger")
    try:
        circuit = parse_aiger(system.aiger)
    except Gf01Error as ex:  # the line is the AIGER text's, not the instance file's
        raise Gf01Error(f"{ex.line}: {ex.message}" if ex.line else ex.message, field="system.aiger") from None
    if canonical_aiger(circuit) != system.aiger:
        raise Gf01Error("the AIGER text is not in canonical form (what aig.writer.canonical writes): an instance "
                        "carries, and hashes, the canonical text", field="system.aiger")
    fixed = len(circuit.outputs) + len(circuit.bad)
    try:
        return CircuitView.from_aig(circuit, observe=system.outputs[fixed:])
    except Gf01Error as ex:
        raise Gf01Error(ex.message, field="system") from None


def instance_problem(inst: Instance) -> Problem:
    """The solver-level Problem of an instance (everything checked; errors name the field)."""
    view = system_view(inst.system)
    trace = trace_from_json(inst.base_trace, view.inputs, field="base_trace")
    effect = parse_effect(inst.effect, view.outputs, field="effect")
    T = len(trace)
    if not 0 <= inst.t_star < T:
        raise Gf01Error(f"t* = {inst.t_star} is outside [0, {T - 1}]", field="t_star")
    low = 1 if inst.mode == "normal" else 0  # w_min = 1 (DEC-014b); a hard-mode window plays no part
    # w(I) does not depend on T (alpha_T = 0), so a short trace may get a window up to w_max = 6 longer than itself;
    # E_norm reads [max(0, t* - w), t*], where any w >= t* covers the whole prefix.
    high = max(T, W_MAX)
    if not low <= inst.window <= high:
        raise Gf01Error(f"window {inst.window} is outside [{low}, {high}] ({inst.mode} mode)", field="window")
    if not 1 <= inst.budget_t <= T:
        raise Gf01Error(f"B_T = {inst.budget_t} is outside [1, {T}]", field="budget_t")
    max_atoms = T * view.num_inputs
    if not 1 <= inst.budget_a <= max_atoms:
        raise Gf01Error(f"B_A = {inst.budget_a} is outside [1, {max_atoms}] (T x |AP_in|)", field="budget_a")
    cert = inst.certification
    if cert is not None and cert.oracle_eff_a is not None and inst.budget_a < cert.oracle_eff_a:
        # The oracle (EVAL-OC) is the panel's ceiling: it must be able to play its certificate (Score_C = 1).
        raise Gf01Error(f"B_A = {inst.budget_a} is below Eff_a = {cert.oracle_eff_a} of the oracle certificate, "
                        f"which could then not be played (give B_A >= {cert.oracle_eff_a})", field="budget_a")
    return Problem(
        system=view,
        trace=trace,
        effect=effect,
        t_star=inst.t_star,
        mode=inst.mode,
        window=inst.window,
        budget_t=inst.budget_t,
        budget_a=inst.budget_a,
    )


def input_names(inst: Instance) -> tuple[str, ...]:
    """AP_in of an instance, in bit order (input index i = ``input_names(inst)[i]``)."""
    return tuple(inst.system.inputs)


def output_names(inst: Instance) -> tuple[str, ...]:
    """AP_out of an instance, in bit order."""
    return tuple(inst.system.outputs)


#: Checked Problems kept by :func:`check_instance` (least recently used dropped first): far more than a task's or an
#: evaluation's working set, small next to the views the Problems share (:func:`system_view`).
PROBLEM_CACHE_SIZE = 4096
_problems: OrderedDict[tuple[str, int | None], Problem] = OrderedDict()
_problems_lock = threading.Lock()


def check_instance(inst: Instance, *, file: str | None = None) -> Problem:
    """Check hashes and semantics of an instance; returns its Problem. Errors name the file and field.

    The hashes are checked on every call; the semantic check and the Problem it builds happen once per content (the
    content hash, which the hash check has just tied to the content, and the oracle's Eff_a that B_A is checked
    against): every caller shares that one Problem.
    """
    try:
        check_hashes(inst)
        cert = inst.certification
        key = (inst.content_hash, None if cert is None else cert.oracle_eff_a)
        with _problems_lock:
            problem = _problems.get(key)
            if problem is not None:
                _problems.move_to_end(key)
                return problem
        problem = instance_problem(inst)
    except Gf01Error as ex:
        msg = ex.message if ex.message.startswith("instance ") else f"instance {inst.instance_id}: {ex.message}"
        raise Gf01Error(msg, file=file or ex.file, line=ex.line, col=ex.col, field=ex.field) from ex
    with _problems_lock:
        _problems[key] = problem
        while len(_problems) > PROBLEM_CACHE_SIZE:
            _problems.popitem(last=False)
    return problem


@dataclass(frozen=True)
class InstanceSet:
    """An instance file or a bundle seen as a bundle: its instances in order, the bundle hash (None for an instance
    file, whose runs name no bundle) and the file it came from (for messages)."""

    instances: tuple[Instance, ...]
    bundle_hash: str | None
    file: str | None = None

    @classmethod
    def of(cls, art: Instance | Bundle, file: str | None = None) -> InstanceSet:
        """The set of a loaded artifact."""
        if isinstance(art, Instance):
            return cls((art,), None, file)
        return cls(tuple(art.instances), art.instances_hash, file)

    @property
    def by_id(self) -> dict[str, Instance]:
        """The instances by id."""
        return {i.instance_id: i for i in self.instances}

    @property
    def ids(self) -> list[str]:
        """The instance ids, in order."""
        return [i.instance_id for i in self.instances]

    def problem(self, inst: Instance) -> Problem:
        """The checked Problem of one of the instances (:func:`check_instance`, errors naming this file)."""
        return check_instance(inst, file=self.file)


def load_set(path: str | Path, *, check_all: bool = False) -> InstanceSet:
    """An instance file or a bundle as an :class:`InstanceSet`. Hashes and ids are checked; the semantics of every
    instance too with ``check_all``, else of each instance when its Problem is first asked for."""
    return InstanceSet.of(load_artifact(path, check_all=check_all), str(path))


def parse_artifact(data: Any, *, file: str | None = None, check_all: bool = True) -> Instance | Bundle:
    """An Instance or a Bundle from decoded JSON, by its ``schema_version``.

    Schemas, hashes and ids are always checked; the semantic checks (system, trace, effect, ranges) run on every
    instance of a bundle unless ``check_all`` is False (then the caller checks the instances it uses).
    """
    if not isinstance(data, dict):
        raise Gf01Error("expected a JSON object (an instance or a bundle)", file=file)
    version = data.get("schema_version")
    if version == INSTANCE_SCHEMA:
        inst = validate_model(Instance, data, file=file)
        if check_all:
            check_instance(inst, file=file)
        else:
            _check_hashes(inst, file)
        return inst
    if version == BUNDLE_SCHEMA:
        bundle = validate_model(Bundle, data, file=file)
        if instances_hash(bundle.instances) != bundle.instances_hash:
            raise Gf01Error("hash over the instances does not match", file=file, field="instances_hash")
        ids = [i.instance_id for i in bundle.instances]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise Gf01Error(f"instance id {quote(dup[0], 60)} occurs more than once", file=file, field="instances")
        for inst in bundle.instances:
            if check_all:
                check_instance(inst, file=file)
            else:
                _check_hashes(inst, file)
        return bundle
    hint = ""
    if str(version).startswith("gf01."):
        hint = " (a peer bundle? convert it with 'gf01 import peer')"
    elif version in OLD_SCHEMAS:
        hint = " (an earlier version of this toolkit's format: generate or import it again)"
    raise Gf01Error(
        f"unknown schema_version {quote(version, 60)}; expected {INSTANCE_SCHEMA} or {BUNDLE_SCHEMA}{hint}",
        file=file,
        field="schema_version",
    )


def load_artifact(path: str | Path, *, check_all: bool = True) -> Instance | Bundle:
    """Load and check an instance file or a bundle file (see :func:`parse_artifact`)."""
    return parse_artifact(read_json(path), file=str(path), check_all=check_all)


def load_bundle(path: str | Path) -> Bundle:
    """Load and check a bundle file (an instance file is refused)."""
    art = load_artifact(path)
    if not isinstance(art, Bundle):
        raise Gf01Error("expected a bundle, found a single instance", file=str(path), field="schema_version")
    return art


def load_instances(path: str | Path) -> list[Instance]:
    """All instances of an instance file (one) or a bundle (in bundle order), every one checked."""
    return list(load_set(path, check_all=True).instances)


def load_instance(path: str | Path, instance_id: str | None = None) -> Instance:
    """One instance: from an instance file, or from a bundle by ``instance_id`` (optional if it holds just one).

    Every instance's hash is checked, the semantics only of the one returned.
    """
    return load_checked(path, instance_id)[0]


def load_checked(path: str | Path, instance_id: str | None = None) -> tuple[Instance, Problem]:
    """:func:`load_instance` together with the Problem its semantic check built (so no caller builds it twice)."""
    return pick_instance(read_json(path), instance_id, file=str(path))


def pick_instance(data: Any, instance_id: str | None = None, *, file: str | None = None) -> tuple[Instance, Problem]:
    """One instance of decoded instance-file or bundle JSON, and its checked Problem.

    Every instance's hash is checked, the semantics only of the one picked (``instance_id``; optional when the
    artifact holds one instance).
    """
    art = parse_artifact(data, file=file, check_all=False)
    if isinstance(art, Instance):
        if instance_id is not None and instance_id != art.instance_id:
            raise Gf01Error(f"the file holds instance {art.instance_id}, not {quote(instance_id, 60)}", file=file)
        return art, check_instance(art, file=file)
    if instance_id is None:
        if len(art.instances) == 1:
            return art.instances[0], check_instance(art.instances[0], file=file)
        shown = ", ".join(i.instance_id for i in art.instances[:5])
        more = f", ... ({len(art.instances)} in all)" if len(art.instances) > 5 else ""
        raise Gf01Error(
            f"the bundle holds {len(art.instances)} instances: pick one with --id ID ({shown}{more})", file=file
        )
    for inst in art.instances:
        if inst.instance_id == instance_id:
            return inst, check_instance(inst, file=file)
    raise Gf01Error(f"no instance {quote(instance_id, 60)} in the bundle", file=file, field="instance_id")


def _check_hashes(inst: Instance, file: str | None) -> None:
    try:
        check_hashes(inst)
    except Gf01Error as ex:
        raise Gf01Error(ex.message, file=file, field=ex.field) from ex


def save_artifact(path: str | Path, art: Instance | Bundle) -> None:
    """Write an instance or bundle file atomically (sorted keys)."""
    write_text_atomic(path, dumps(art))
