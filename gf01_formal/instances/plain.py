"""Instance files and bundles as plain JSON, without pydantic: the fast reader of the start-up path (``gf01 verify``,
:func:`open_plain`), a strict reader that accepts only what the models of :mod:`gf01_formal.instances.model` accept.
What it reads becomes the same :class:`~gf01_formal.instances.spec.Task` the models give
(:meth:`gf01_formal.instances.model.Instance.task`), and the same Problem
(:func:`gf01_formal.instances.problem.task_problem`).

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

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gf01_formal.artifacts import sha256_hex
from gf01_formal.instances.identity import BUNDLE_SCHEMA, INSTANCE_SCHEMA, check_identity
from hoa.errors import Gf01Error

if TYPE_CHECKING:
    from encoders.problem import Problem

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
    """The one instance that :func:`gf01_formal.instances.sources.open_instance` would pick from decoded instance-file
    or bundle JSON, as its ``model_dump(mode="json")``, when every check of the schemas, hashes and ids passes; None
    (declined) when anything is off or unsure: the models then read it and give their answer or their error. The
    semantic check (:func:`gf01_formal.instances.problem.task_problem`) is the caller's."""
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
    if inst is None:
        return None
    from gf01_formal.instances.problem import task_problem
    from gf01_formal.instances.spec import Task

    return task_problem(Task.of_json(inst))
