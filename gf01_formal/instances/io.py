"""Reading instance files and bundles, and the solver-level Problem of an instance.

The doors to an instance (docs/architecture.md, "Instances"): :func:`load_set` reads an instance file or a bundle as an
:class:`InstanceSet` (an instance file is a bundle of one, without a bundle hash), :func:`load_bundle` a bundle, and
:func:`instance_problem` gives an instance's Problem; :func:`gf01_formal.instances.sources.open_instance` opens the
INSTANCE argument of a command (a file and options), and :func:`gf01_formal.instances.plain.open_plain` is the fast
reader of the start-up path. Reading refuses a bad instance with a message naming the field: unknown AP in the trace
or effect, t* out of range, window or budgets out of range, system not input-complete, hash mismatch. The hashes are
checked when a file is read (once per instance); the semantic check when the Problem is first asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from encoders.problem import Problem
from gf01_formal.artifacts import read_json, write_text_atomic
from gf01_formal.instances.model import (
    BUNDLE_SCHEMA,
    INSTANCE_SCHEMA,
    OLD_SCHEMAS,
    Bundle,
    Instance,
    check_hashes,
    dumps,
    instances_hash,
    validate_model,
)
from gf01_formal.instances.problem import task_problem
from hoa.errors import Gf01Error, quote


def instance_problem(inst: Instance, *, file: str | None = None) -> Problem:
    """The solver-level Problem of an instance, its semantics checked; errors name the file and field.

    Built once per task (:func:`gf01_formal.instances.problem.task_problem`): every caller (the runner, the scorer,
    validate, the browser, the integrations) shares that one Problem. The hashes are the reader's to check
    (:func:`load_set` does; :func:`gf01_formal.instances.model.make_instance` makes them).
    """
    try:
        return task_problem(inst.task())
    except Gf01Error as ex:
        msg = ex.message if ex.message.startswith("instance ") else f"instance {inst.instance_id}: {ex.message}"
        raise Gf01Error(msg, file=file or ex.file, line=ex.line, col=ex.col, field=ex.field) from ex


@dataclass(frozen=True)
class InstanceSet:
    """An instance file or a bundle seen as a bundle: its instances in order, the bundle hash (None for an instance
    file, whose runs name no bundle) and the file it came from (for messages)."""

    instances: tuple[Instance, ...]
    bundle_hash: str | None
    file: str | None = None

    @classmethod
    def of(cls, art: Instance | Bundle | InstanceSet, file: str | None = None) -> InstanceSet:
        """The set of an artifact (or of a set, read again under the name ``file``)."""
        if isinstance(art, InstanceSet):
            return cls(art.instances, art.bundle_hash, file)
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
        """The checked Problem of one of the instances (:func:`instance_problem`, errors naming this file)."""
        return instance_problem(inst, file=self.file)

    def pick(self, instance_id: str | None = None) -> Instance:
        """The instance ``instance_id`` (optional when the set holds one instance)."""
        file = self.file
        if self.bundle_hash is None:
            art = self.instances[0]
            if instance_id is not None and instance_id != art.instance_id:
                raise Gf01Error(f"the file holds instance {art.instance_id}, not {quote(instance_id, 60)}", file=file)
            return art
        if instance_id is None:
            if len(self.instances) == 1:
                return self.instances[0]
            shown = ", ".join(i.instance_id for i in self.instances[:5])
            more = f", ... ({len(self.instances)} in all)" if len(self.instances) > 5 else ""
            raise Gf01Error(
                f"the bundle holds {len(self.instances)} instances: pick one with --id ID ({shown}{more})", file=file
            )
        for inst in self.instances:
            if inst.instance_id == instance_id:
                return inst
        raise Gf01Error(f"no instance {quote(instance_id, 60)} in the bundle", file=file, field="instance_id")


def load_set(path: str | Path, *, check_all: bool = False) -> InstanceSet:
    """An instance file or a bundle as an :class:`InstanceSet`. Hashes and ids are checked; the semantics of every
    instance too with ``check_all``, else of each instance when its Problem is first asked for."""
    return InstanceSet.of(_artifact(read_json(path), file=str(path), check_all=check_all), str(path))


def load_bundle(path: str | Path) -> Bundle:
    """A bundle file, every instance checked (an instance file is refused)."""
    art = _artifact(read_json(path), file=str(path), check_all=True)
    if not isinstance(art, Bundle):
        raise Gf01Error("expected a bundle, found a single instance", file=str(path), field="schema_version")
    return art


def _artifact(data: Any, *, file: str | None, check_all: bool) -> Instance | Bundle:
    """An Instance or a Bundle from decoded JSON, by its ``schema_version``: schemas, hashes and ids checked, and
    the semantics (system, trace, effect, ranges) of every instance with ``check_all``."""
    if not isinstance(data, dict):
        raise Gf01Error("expected a JSON object (an instance or a bundle)", file=file)
    version = data.get("schema_version")
    if version == INSTANCE_SCHEMA:
        insts: tuple[Instance, ...] = (validate_model(Instance, data, file=file),)
        art: Instance | Bundle = insts[0]
    elif version == BUNDLE_SCHEMA:
        art = validate_model(Bundle, data, file=file)
        if instances_hash(art.instances) != art.instances_hash:
            raise Gf01Error("hash over the instances does not match", file=file, field="instances_hash")
        ids = [i.instance_id for i in art.instances]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise Gf01Error(f"instance id {quote(dup[0], 60)} occurs more than once", file=file, field="instances")
        insts = tuple(art.instances)
    else:
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
    for inst in insts:
        _check_hashes(inst, file)
        if check_all:
            instance_problem(inst, file=file)
    return art


def _check_hashes(inst: Instance, file: str | None) -> None:
    try:
        check_hashes(inst)
    except Gf01Error as ex:
        raise Gf01Error(ex.message, file=file, field=ex.field) from ex


def save_artifact(path: str | Path, art: Instance | Bundle) -> None:
    """Write an instance or bundle file atomically (sorted keys)."""
    write_text_atomic(path, dumps(art))
