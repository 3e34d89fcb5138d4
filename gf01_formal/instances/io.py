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
from pathlib import Path
from typing import Any

from aig.view import CircuitView
from encoders.problem import Problem
from gf01_formal.artifacts import read_json, write_text_atomic
from gf01_formal.instances import plain
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
from hoa.errors import Gf01Error, quote
from hoa.mealy import MealyView


def system_view(system: System) -> MealyView | CircuitView:
    """The Mealy view of an instance's system (HOA parsed, the explicit table, or the circuit), checked
    (input-complete tables; canonical circuit text); one per distinct system (:func:`plain.system_view`)."""
    return plain.system_view(system.model_dump(mode="json"))


def circuit_view(system: System) -> CircuitView:
    """The view of a circuit system: its canonical AIGER text parsed; the outputs past the circuit's outputs and
    bad-state properties are the latches it observes."""
    return plain.circuit_view(system.model_dump(mode="json"))


def instance_problem(inst: Instance) -> Problem:
    """The solver-level Problem of an instance (everything checked; errors name the field)."""
    cert = inst.certification
    return plain.task_problem(plain.Task(
        system=inst.system.model_dump(mode="json"), base_trace=inst.base_trace, effect=inst.effect,
        t_star=inst.t_star, mode=inst.mode, window=inst.window, budget_t=inst.budget_t, budget_a=inst.budget_a,
        oracle_eff_a=None if cert is None else cert.oracle_eff_a))


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
