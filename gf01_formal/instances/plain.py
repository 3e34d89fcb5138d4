"""Instance files and bundles as plain JSON, without pydantic: a strict reader that accepts only what the models of
:mod:`gf01_formal.instances.model` accept, and the solver-level Problem of an instance's :class:`Task` (the semantic
checks every reader shares, :func:`task_problem`).

The reader exists for start-up time: importing pydantic and building the instance model's validator cost a small
query (``gf01 verify`` of one certificate) more than the query itself. :func:`read_plain` either returns what the
pydantic models would have returned (the same values, as ``model_dump(mode="json")`` gives them) or *declines*
(returns None) whenever it is not sure: an unknown or missing field, a value of another type, a float where the
model wants an int or the reverse, a non-finite float, an integer past 64 bits, a string with a lone surrogate, a
hash that does not match. Declining is always safe: the caller then reads the file through the models, which accept
or refuse it with their own messages. So this module never refuses anything itself and has no error messages of its
own. ``tests/test_front_door.py`` checks the mirror below against the models (fields, defaults, and values
mutated at random).

>>> read_plain({"schema_version": "gf01-formal.instance.v2"}) is None  # declined: the models will say why
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from gf01_formal.artifacts import canonical_json, sha256_hex
from gf01_formal.instances.identity import BUNDLE_SCHEMA, INSTANCE_SCHEMA, check_identity
from hoa.errors import Gf01Error, quote

if TYPE_CHECKING:
    from aig.view import CircuitView
    from encoders.problem import Problem
    from hoa.mealy import MealyView

# -- the strict reader ------------------------------------------------------------------------------------------

class _Decline(Exception):
    """Not sure that the models accept this value (or sure that they refuse it): let them read it."""


#: A field without a default.
REQUIRED = object()

# The mirror of model.py, one entry per model: (field, type, default) in the model's order. Types: "str", "int",
# "float", "bool", "any"; ("lit", values); ("opt", T) for T | None; ("list", T); ("dict", T) for dict[str, T];
# ("union", (T, ...)) (each type keeps its own values: pydantic's smart union on exact types); ("range", T, low,
# high) for Field(ge=low, le=high); ("model", name). A default that is a type (dict, list) is a default factory.
SCHEMA: dict[str, tuple[tuple[str, Any, Any], ...]] = {
    "TableSystem": (
        ("states", ("list", "str"), REQUIRED),
        ("initial", ("range", "int", 0, None), REQUIRED),
        ("next", ("list", ("list", "int")), REQUIRED),
        ("out", ("list", ("list", "int")), REQUIRED),
    ),
    "System": (
        ("kind", ("lit", ("hoa", "table", "aiger")), REQUIRED),
        ("inputs", ("list", "str"), REQUIRED),
        ("outputs", ("list", "str"), REQUIRED),
        ("hoa", ("opt", "str"), None),
        ("table", ("opt", ("model", "TableSystem")), None),
        ("aiger", ("opt", "str"), None),
    ),
    "Knob": (
        ("raw", ("opt", ("union", ("float", "int"))), REQUIRED),
        ("norm", ("opt", ("range", "float", 0.0, 1.0)), REQUIRED),
        ("note", ("opt", "str"), None),
    ),
    "Complexity": (
        ("policy", ("lit", ("gf01.complexity_policy.v1",)), "gf01.complexity_policy.v1"),
        ("scales", "str", REQUIRED),
        *((knob, ("model", "Knob"), REQUIRED) for knob in ("states", "inputs", "outputs", "transitions", "horizon",
                                                            "effect_depth", "oracle_eff_t", "gold_count")),
        ("z", ("range", "float", 0.0, 1.0), REQUIRED),
        ("window", "int", REQUIRED),
    ),
    "Certification": (
        ("base_achieves_effect", "bool", REQUIRED),
        ("oracle_certificate", ("opt", ("list", ("list", "any"))), REQUIRED),
        ("oracle_eff_t", ("opt", "int"), REQUIRED),
        ("oracle_eff_a", ("opt", "int"), REQUIRED),
        ("oracle_backend", "str", REQUIRED),
        ("gold_count", ("opt", "int"), REQUIRED),
        ("gold_count_note", ("opt", "str"), None),
        ("gold_count_backend", ("opt", "str"), None),
        ("greedy_valid", ("opt", "bool"), REQUIRED),
        ("greedy_certificate", ("opt", ("list", ("list", "any"))), None),
    ),
    "Meta": (
        ("generator_version", "str", REQUIRED),
        ("provenance", ("lit", ("generated", "import:peer", "import:hoa", "import:aiger")), REQUIRED),
        ("id_scheme", ("lit", ("content", "imported", "sealed")), REQUIRED),
        ("seed", ("opt", "int"), None),
        ("slot", ("opt", "int"), None),
        ("attempt", ("opt", "int"), None),
        ("cfg_hash", ("opt", "str"), None),
        ("family", ("opt", "str"), None),
        ("family_params", ("dict", "any"), dict),
        ("source", ("opt", "str"), None),
        ("source_fields", ("dict", "any"), dict),
    ),
    "Instance": (
        ("schema_version", ("lit", (INSTANCE_SCHEMA,)), INSTANCE_SCHEMA),
        ("instance_id", "str", REQUIRED),
        ("content_hash", "str", REQUIRED),
        ("system", ("model", "System"), REQUIRED),
        ("base_trace", ("list", ("dict", "int")), REQUIRED),
        ("effect", "str", REQUIRED),
        ("t_star", "int", REQUIRED),
        ("mode", ("lit", ("hard", "normal")), REQUIRED),
        ("window", "int", REQUIRED),
        ("budget_t", "int", REQUIRED),
        ("budget_a", "int", REQUIRED),
        ("complexity", ("opt", ("model", "Complexity")), None),
        ("certification", ("opt", ("model", "Certification")), None),
        ("split_id", ("opt", ("lit", ("public_dev", "public_val", "private_eval"))), None),
        ("meta", ("model", "Meta"), REQUIRED),
    ),
    "Skip": (
        ("slot", "int", REQUIRED),
        ("seed", ("list", "int"), REQUIRED),
        ("attempts", "int", REQUIRED),
        ("reasons", ("dict", "int"), REQUIRED),
    ),
    "Bundle": (
        ("schema_version", ("lit", (BUNDLE_SCHEMA,)), BUNDLE_SCHEMA),
        ("generator_version", "str", REQUIRED),
        ("provenance", "str", REQUIRED),
        ("seed", ("opt", "int"), None),
        ("cfg", ("opt", ("dict", "any")), None),
        ("cfg_hash", ("opt", "str"), None),
        ("count_requested", ("opt", "int"), None),
        ("seed_key_id", ("opt", "str"), None),
        ("instances", ("list", ("model", "Instance")), REQUIRED),
        ("instances_hash", "str", REQUIRED),
        ("skipped", ("list", ("model", "Skip")), list),
        ("source_fields", ("dict", "any"), dict),
    ),
}

_INT64 = 1 << 63
_EXACT = {"str": str, "int": int, "float": float, "bool": bool}


def _plain(value: Any) -> None:
    """Decline JSON whose values the models might not keep as they are: non-finite floats (parse_json lets 1e999
    through as inf), integers past 64 bits, strings that cannot be UTF-8 (a lone surrogate from a \\ud800 escape)."""
    kind = type(value)
    if kind is dict:
        for k, v in value.items():
            _plain(k)
            _plain(v)
    elif kind is list:
        for v in value:
            _plain(v)
    elif kind is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _Decline from None
    elif kind is float:
        if not math.isfinite(value):
            raise _Decline
    elif kind is int:
        if not -_INT64 <= value < _INT64:
            raise _Decline
    elif value is not None and kind is not bool:
        raise _Decline


def _value(t: Any, v: Any) -> Any:
    """``v`` as the model's field of type ``t`` holds it (dumped as JSON); _Decline unless surely accepted."""
    if isinstance(t, str):
        if t == "any" or type(v) is _EXACT[t]:
            return v
        raise _Decline
    head = t[0]
    if head == "opt":
        return None if v is None else _value(t[1], v)
    if head == "lit":
        if type(v) is str and v in t[1]:
            return v
        raise _Decline
    if head == "list":
        if type(v) is not list:
            raise _Decline
        return [_value(t[1], x) for x in v]
    if head == "dict":
        if type(v) is not dict:
            raise _Decline
        return {k: _value(t[1], x) for k, x in v.items()}
    if head == "union":
        for option in t[1]:
            try:
                return _value(option, v)
            except _Decline:
                pass
        raise _Decline
    if head == "range":
        x = _value(t[1], v)
        if (t[2] is not None and x < t[2]) or (t[3] is not None and x > t[3]):
            raise _Decline
        return x
    if head == "model":
        return _model(t[1], v)
    raise AssertionError(f"unknown schema type {t!r}")


def _model(name: str, data: Any) -> dict[str, Any]:
    """``data`` validated as model ``name`` and dumped as ``model_dump(mode="json")`` would (defaults filled)."""
    if type(data) is not dict:
        raise _Decline
    fields = SCHEMA[name]
    if len(data.keys() - {f for f, _, _ in fields}):  # extra="forbid"
        raise _Decline
    out: dict[str, Any] = {}
    for field, t, default in fields:
        if field in data:
            out[field] = _value(t, data[field])
        elif default is REQUIRED:
            raise _Decline
        else:
            out[field] = default() if isinstance(default, type) else default
    if name == "System" and out["aiger"] is None:
        del out["aiger"]  # the model's serializer omits an absent circuit (model.System)
    return out


def _hashes_match(inst: Mapping[str, Any]) -> bool:
    """Whether the stored content hash and (content-derived) id are those of the content."""
    try:
        check_identity(inst)
    except Gf01Error:
        return False
    return True


def read_plain(data: Any, instance_id: str | None = None) -> dict[str, Any] | None:
    """The one instance that ``gf01_formal.instances.io.pick_instance`` would pick from decoded instance-file or
    bundle JSON, as its ``model_dump(mode="json")``, when every check of the schemas, hashes and ids passes; None
    (declined) when anything is off or unsure: the models then read it and give their answer or their error. The
    semantic check (:func:`task_problem`) is the caller's."""
    if type(data) is not dict:
        return None
    try:
        _plain(data)
        version = data.get("schema_version")
        if version == INSTANCE_SCHEMA:
            inst = _model("Instance", data)
            ok = _hashes_match(inst) and instance_id in (None, inst["instance_id"])
            return inst if ok else None
        if version == BUNDLE_SCHEMA:
            bundle = _model("Bundle", data)
            instances = bundle["instances"]
            ids = [i["instance_id"] for i in instances]
            if sha256_hex(instances) != bundle["instances_hash"] or len(set(ids)) != len(ids):
                return None
            if not all(_hashes_match(i) for i in instances):
                return None
            if instance_id is None:
                return instances[0] if len(instances) == 1 else None
            return next((i for i in instances if i["instance_id"] == instance_id), None)
    except _Decline:
        return None
    return None


# -- the solver-level Problem of a task -----------------------------------------------------------------------------

def system_view(system: Mapping[str, Any]) -> MealyView | CircuitView:
    """The Mealy view of an instance's system as JSON (``model_dump(mode="json")`` of ``model.System``), checked
    (input-complete tables; canonical circuit text); errors name the field."""
    return _view_cached(canonical_json(system))


@lru_cache(maxsize=256)
def _view_cached(system_json: str) -> MealyView | CircuitView:
    # Keyed by the canonical JSON so that equal systems share one parsed view (and its compiled tables). The JSON
    # is that of a validated System: read back, it needs no second validation.
    from hoa.mealy import MAX_TABLE_CELLS, MAX_TABLE_INPUTS, MealyView, mealy_from_text

    system = json.loads(system_json)
    inputs, outputs = system["inputs"], system["outputs"]
    names = [*inputs, *outputs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise Gf01Error(f"{quote(dup, 60)} is named twice among the inputs and outputs", field="system")
    if system["kind"] == "aiger":
        view = circuit_view(system)
        _check_names(view, inputs, outputs)
        return view
    if system["kind"] == "hoa":
        if not system["hoa"]:
            raise Gf01Error("a system of kind 'hoa' needs its HOA text", field="system.hoa")
        try:
            view = mealy_from_text(system["hoa"], outputs)
        except Gf01Error as ex:  # line:col are the HOA text's, not the instance file's
            where = ":".join(str(p) for p in (ex.line, ex.col) if p is not None)
            raise Gf01Error(f"{where + ': ' if where else ''}{ex.message}", field="system.hoa") from None
    else:
        tab = system["table"]
        if tab is None:
            raise Gf01Error("a system of kind 'table' needs its table", field="system.table")
        states = tab["states"]
        if not 0 <= tab["initial"] < len(states):
            raise Gf01Error(f"initial state {tab['initial']} out of range", field="system.table.initial")
        if len(tab["next"]) != len(states) or len(tab["out"]) != len(states):
            raise Gf01Error("next and out need one row per state", field="system.table")
        width = 1 << len(inputs) if len(inputs) <= MAX_TABLE_INPUTS else 0
        if not width or len(states) * width > MAX_TABLE_CELLS:
            raise Gf01Error(f"{len(states)} states x 2^{len(inputs)} input valuations is more than the "
                            f"{MAX_TABLE_CELLS:,} table cells an instance may have", field="system.table")
        for what, rows, limit in (("next", tab["next"], len(states)), ("out", tab["out"], 1 << len(outputs))):
            for q, row in enumerate(rows):
                if len(row) != width:
                    raise Gf01Error(f"state {quote(states[q], 40)}: {len(row)} entries, one per input valuation "
                                    f"(2^{len(inputs)} = {width}) needed", field=f"system.table.{what}")
                bad = [v for v in row if not 0 <= v < limit]
                if bad:
                    raise Gf01Error(f"state {quote(states[q], 40)}: {quote(bad[0], 40)} is out of range "
                                    f"[0, {limit - 1}]", field=f"system.table.{what}")
        try:
            view = MealyView.from_table(inputs, outputs, tab["next"], tab["out"], tab["initial"], states)
        except Gf01Error as ex:
            raise Gf01Error(ex.message, field="system.table") from ex
    _check_names(view, inputs, outputs)
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


def _check_names(view: MealyView | CircuitView, inputs: Sequence[str], outputs: Sequence[str]) -> None:
    if list(view.inputs) != list(inputs) or list(view.outputs) != list(outputs):
        raise Gf01Error(
            f"the system's APs are inputs {list(view.inputs)}, outputs {list(view.outputs)}; the instance says "
            f"inputs {list(inputs)}, outputs {list(outputs)}",
            field="system",
        )


def circuit_view(system: Mapping[str, Any]) -> CircuitView:
    """The view of a circuit system (as JSON): its canonical AIGER text parsed; the outputs past the circuit's
    outputs and bad-state properties are the latches it observes."""
    from aig.parser import parse as parse_aiger
    from aig.view import CircuitView
    from aig.writer import canonical as canonical_aiger

    text = system.get("aiger")
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
        return CircuitView.from_aig(circuit, observe=system["outputs"][fixed:])
    except Gf01Error as ex:
        raise Gf01Error(ex.message, field="system") from None


@dataclass(frozen=True)
class Task:
    """What an instance asks, as its semantic check reads it: the system as JSON (``model.System``'s
    ``model_dump(mode="json")``), the base trace as JSON, the effect's text, t*, mode, window, the budgets, and the
    Eff_a of the oracle's certificate (None without a certification)."""

    system: Mapping[str, Any]
    base_trace: list[Any]
    effect: str
    t_star: int
    mode: str
    window: int
    budget_t: int
    budget_a: int
    oracle_eff_a: int | None = None

    @classmethod
    def of_json(cls, inst: Mapping[str, Any]) -> Task:
        """The task of an instance as JSON (its ``model_dump(mode="json")``, or what :func:`read_plain` returns)."""
        cert = inst.get("certification")
        return cls(inst["system"], inst["base_trace"], inst["effect"], inst["t_star"], inst["mode"], inst["window"],
                   inst["budget_t"], inst["budget_a"], None if cert is None else cert.get("oracle_eff_a"))


def task_problem(task: Task) -> Problem:
    """The solver-level Problem of an instance's task, everything checked; errors name the field. The hashes are the
    caller's to check."""
    from encoders.problem import Problem
    from gf01_formal.instances.traces import parse_effect, trace_from_json

    view = system_view(task.system)
    trace = trace_from_json(task.base_trace, view.inputs, field="base_trace")
    effect = parse_effect(task.effect, view.outputs, field="effect")
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
    max_atoms = T * view.num_inputs
    if not 1 <= budget_a <= max_atoms:
        raise Gf01Error(f"B_A = {budget_a} is outside [1, {max_atoms}] (T x |AP_in|)", field="budget_a")
    oracle_eff_a = task.oracle_eff_a
    if oracle_eff_a is not None and budget_a < oracle_eff_a:
        # The oracle (EVAL-OC) is the panel's ceiling: it must be able to play its certificate (Score_C = 1).
        raise Gf01Error(f"B_A = {budget_a} is below Eff_a = {oracle_eff_a} of the oracle certificate, "
                        f"which could then not be played (give B_A >= {oracle_eff_a})", field="budget_a")
    return Problem(system=view, trace=trace, effect=effect, t_star=t_star, mode=mode, window=window,
                   budget_t=budget_t, budget_a=budget_a)


def _window_high(T: int) -> int:
    """The largest window of a trace of T steps: w(I) does not depend on T (alpha_T = 0), so a short trace may get a
    window up to w_max = 6 longer than itself; E_norm reads [max(0, t* - w), t*], where any w >= t* covers the whole
    prefix."""
    from gf01_formal.instances.complexity import W_MAX  # with the complexity models (pydantic): only when asked

    return max(T, W_MAX)



def open_plain(path: str, instance_id: str | None = None) -> Problem | None:
    """The checked Problem of the instance that an instance file or a bundle at ``path`` holds (``instance_id``
    picks one of a bundle), read without pydantic; None (declined) for anything else (an HOA file, an AIGER
    circuit) or anything :func:`read_plain` declines. An unreadable file, bad JSON or a semantic error raises
    Gf01Error; the caller that wants the toolkit's own message for it reads the file through the models
    (:func:`gf01_formal.instances.sources.open_instance`), which give that message."""
    from gf01_formal.artifacts import parse_json
    from hoa.files import read_bytes

    data = read_bytes(path)
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # An instance or a bundle is a JSON object; anything else (HOA text, an AIGER header) is for the models' reader.
    if not text.lstrip(" \t\n\r").startswith("{"):
        return None
    inst = read_plain(parse_json(text), instance_id)
    return None if inst is None else task_problem(Task.of_json(inst))
