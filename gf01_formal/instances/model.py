"""The GF-01 instance and bundle artifacts (spec Definition 9): pydantic schemas and content hashes.

An instance is the task (system, base trace, effect, t*, mode, window, budgets) plus what the generator measured
about it (complexity knobs, certification) and where it came from (meta). The ``content_hash`` covers the task
fields only (:data:`CONTENT_FIELDS`), so a split assignment or a re-measurement never changes an instance's identity.
See docs/instances.md for every decision recorded here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer

from gf01_formal.artifacts import pretty_json, sha256_hex

# Re-exported: the identity rules are shared with the pydantic-free reader (plain.py).
from gf01_formal.instances.identity import (  # noqa: F401
    BUNDLE_SCHEMA,
    CONTENT_FIELDS,
    ID_HEX,
    ID_PREFIX,
    INSTANCE_SCHEMA,
    check_identity,
    content_hash,
    content_id,
    content_of,
)
from gf01_formal.instances.spec import SystemSpec, TableSpec, Task, trace_pairs
from hoa.errors import Gf01Error, quote

#: Earlier schema versions, refused with a hint (v1 spelled the budgets budget_timesteps / budget_atoms).
OLD_SCHEMAS = ("gf01-formal.instance.v1", "gf01-formal.bundle.v1")
SPLITS = ("public_dev", "public_val", "private_eval")

# strict: a JSON string "21" is not the integer 21, and true is not 1. defer_build: a model's validator is built when
# it is first used, so that a command reading one instance does not build the bundle's.
_FROZEN = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


class TableSystem(BaseModel):
    """An explicit Mealy table: ``next[q][x]`` and ``out[q][x]`` with x, y bit-packed in input/output order."""

    model_config = _FROZEN
    states: list[str] = Field(description="state names, index = state number")
    initial: int = Field(ge=0)
    next: list[list[int]]
    out: list[list[int]]


class System(BaseModel):
    """The system A: HOA text (outputs = ``outputs``), an imported explicit table, or an AIGER circuit.

    A circuit is its canonical ASCII AIGER text (:func:`aig.writer.canonical`); its outputs are the AIGER outputs,
    then the bad-state properties, then the latches it observes (docs/aiger.md).
    """

    model_config = _FROZEN
    kind: Literal["hoa", "table", "aiger"]
    inputs: list[str] = Field(description="AP_in in bit order (bit i of a valuation = inputs[i])")
    outputs: list[str] = Field(description="AP_out in bit order")
    hoa: str | None = Field(default=None, description="HOA v1 text (kind = hoa)")
    table: TableSystem | None = Field(default=None, description="explicit Mealy table (kind = table)")
    aiger: str | None = Field(default=None, description="canonical ASCII AIGER 1.9 text (kind = aiger)")

    @classmethod
    def of_spec(cls, spec: SystemSpec) -> System:
        """The model of a system spec (what :func:`gf01_formal.instances.spec.hoa_system` and ``aiger_system``
        make)."""
        return validate_model(cls, spec.to_json())

    def spec(self) -> SystemSpec:
        """This system as the one hashable value its semantic check and Problem are built from."""
        tab = self.table
        table = None if tab is None else TableSpec(tuple(tab.states), tab.initial, tuple(map(tuple, tab.next)),
                                                   tuple(map(tuple, tab.out)))
        return SystemSpec(self.kind, tuple(self.inputs), tuple(self.outputs), self.hoa, table, self.aiger)

    @model_serializer(mode="wrap")
    def _omit_absent_circuit(self, handler: Any) -> dict[str, Any]:
        # The aiger key is written only for circuits: the content hashes of every HOA and table instance made
        # before circuits existed stay what they were.
        data = handler(self)
        if data.get("aiger") is None:
            data.pop("aiger", None)
        return data


class Knob(BaseModel):
    """One complexity knob: its raw value and its normalised value in [0, 1] (null when unknown)."""

    model_config = _FROZEN
    raw: float | int | None
    norm: float | None = Field(ge=0.0, le=1.0)
    note: str | None = Field(default=None, description="why the value is null, when it is")


class Complexity(BaseModel):
    """The DEC-058 knobs (measured in hard mode at t*), z(I) their equal-weight mean, and the window they give."""

    model_config = _FROZEN
    policy: Literal["gf01.complexity_policy.v1"] = "gf01.complexity_policy.v1"
    scales: str = Field(description="identifier of the documented normalisation scales (docs/instances.md)")
    states: Knob
    inputs: Knob
    outputs: Knob
    transitions: Knob
    horizon: Knob
    effect_depth: Knob
    oracle_eff_t: Knob
    gold_count: Knob
    z: float = Field(ge=0.0, le=1.0, description="equal-weight mean of the known normalised knobs")
    window: int = Field(description="w(I) = clamp(1, 6, round(1 + 0*T + 2*z)) (DEC-014b)")


class Certification(BaseModel):
    """What exact solver queries proved about the instance as stored (its own mode, window and B_T)."""

    model_config = _FROZEN
    base_achieves_effect: bool
    oracle_certificate: list[list[Any]] | None = Field(
        description="a (Eff_t, Eff_a)-optimal valid certificate within B_T; null when proven none exists"
    )
    oracle_eff_t: int | None
    oracle_eff_a: int | None
    oracle_backend: str
    gold_count: int | None = Field(description="|M_B(I)| exactly, or null when the count ran out of its limits")
    gold_count_note: str | None = None
    gold_count_backend: str | None = None
    greedy_valid: bool | None = Field(description="whether the greedy baseline found a valid certificate within B_T")
    greedy_certificate: list[list[Any]] | None = None


class Meta(BaseModel):
    """Provenance: generator version, seed, cfg hash, family, and how the instance id was made."""

    model_config = _FROZEN
    generator_version: str
    provenance: Literal["generated", "import:peer", "import:hoa", "import:aiger"]
    id_scheme: Literal["content", "imported", "sealed"] = Field(
        description="content: instance_id derives from content_hash; imported: an id kept from the source; "
        "sealed: the opaque id of a private_eval instance, keyed by the split key (instances/keys.py)"
    )
    seed: int | None = None
    slot: int | None = None
    attempt: int | None = None
    cfg_hash: str | None = None
    family: str | None = None
    family_params: dict[str, Any] = Field(default_factory=dict)
    source: str | None = Field(default=None, description="source file or record the instance was imported from")
    source_fields: dict[str, Any] = Field(default_factory=dict, description="source fields kept verbatim")


class Instance(BaseModel):
    """A GF-01 instance (spec Definition 9)."""

    model_config = _FROZEN
    schema_version: Literal["gf01-formal.instance.v2"] = INSTANCE_SCHEMA
    instance_id: str
    content_hash: str = Field(description="sha256 of the canonical JSON of the CONTENT_FIELDS")
    system: System
    base_trace: list[dict[str, int]] = Field(description="one {input: 0|1} object per step")
    effect: str = Field(description="Boolean expression over output names")
    t_star: int
    mode: Literal["hard", "normal"]
    window: int
    budget_t: int = Field(description="B_T: max distinct timesteps of a certificate")
    budget_a: int = Field(description="B_A: atom budget carried for the play protocol; not a validity constraint")
    complexity: Complexity | None = None
    certification: Certification | None = None
    split_id: Literal["public_dev", "public_val", "private_eval"] | None = None
    meta: Meta

    def task(self) -> Task:
        """What this instance asks, as the one hashable value its semantic check and Problem are built from."""
        cert = self.certification
        return Task(self.system.spec(), trace_pairs(self.base_trace), self.effect, self.t_star, self.mode,
                    self.window, self.budget_t, self.budget_a, None if cert is None else cert.oracle_eff_a)


class Skip(BaseModel):
    """A generator slot whose attempts all failed: reported, never a crash."""

    model_config = _FROZEN
    slot: int
    seed: list[int] = Field(description="the SeedSequence entropy of the slot")
    attempts: int
    reasons: dict[str, int] = Field(description="rejection reason -> number of attempts")


class Bundle(BaseModel):
    """Many instances with versions, the cfg and its hash, and a hash over the instances."""

    model_config = _FROZEN
    schema_version: Literal["gf01-formal.bundle.v2"] = BUNDLE_SCHEMA
    generator_version: str
    provenance: str
    seed: int | None = None
    cfg: dict[str, Any] | None = None
    cfg_hash: str | None = None
    count_requested: int | None = None
    seed_key_id: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="key_id of the split key the slot seeds derive from (gf01 generate --key-file); absent when the "
        "seed alone regenerates the bundle",
    )
    instances: list[Instance]
    instances_hash: str = Field(description="sha256 of the canonical JSON of the list of instances")
    skipped: list[Skip] = Field(default_factory=list)
    source_fields: dict[str, Any] = Field(default_factory=dict, description="source bundle fields kept verbatim")


def make_instance(
    *,
    system: System,
    base_trace: list[dict[str, int]],
    effect: str,
    t_star: int,
    mode: str,
    window: int,
    budget_t: int,
    budget_a: int,
    meta: Meta,
    complexity: Complexity | None = None,
    certification: Certification | None = None,
    split_id: str | None = None,
    instance_id: str | None = None,
) -> Instance:
    """An Instance with its content hash filled in; the id is content-derived unless ``instance_id`` is given."""
    task = {
        "system": system.model_dump(mode="json"),
        "base_trace": base_trace,
        "effect": effect,
        "t_star": t_star,
        "mode": mode,
        "window": window,
        "budget_t": budget_t,
        "budget_a": budget_a,
    }
    digest = content_hash(task)
    if instance_id is None:
        if meta.id_scheme != "content":
            raise Gf01Error("an imported id scheme needs the source's instance_id", field="instance_id")
        instance_id = content_id(digest)
    return validate_model(
        Instance,
        {
            **task,
            "instance_id": instance_id,
            "content_hash": digest,
            "complexity": complexity.model_dump(mode="json") if complexity else None,
            "certification": certification.model_dump(mode="json") if certification else None,
            "split_id": split_id,
            "meta": meta.model_dump(mode="json"),
        },
    )


def check_hashes(inst: Instance) -> None:
    """Raise Gf01Error (field ``content_hash`` or ``instance_id``) if the stored hash or id does not match."""
    check_identity(inst.model_dump(mode="json"))


def instances_hash(instances: list[Instance]) -> str:
    """The hash over a bundle's instances: sha256 of the canonical JSON of their list, in bundle order."""
    return sha256_hex([i.model_dump(mode="json") for i in instances])


def make_bundle(instances: list[Instance], **fields: Any) -> Bundle:
    """A Bundle over ``instances`` with its instances hash filled in."""
    return Bundle(instances=instances, instances_hash=instances_hash(instances), **fields)


def validate_model(model: type[BaseModel], data: Any, *, file: str | None = None) -> Any:
    """``model.model_validate(data)``, with a pydantic error turned into Gf01Error naming the field path."""
    try:
        return model.model_validate(data)
    except ValidationError as ex:
        err = ex.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or model.__name__
        got = f" (got {quote(err['input'], 60)})" if err["type"] != "missing" and "input" in err else ""
        raise Gf01Error(err["msg"] + got, file=file, field=where) from None


def dumps(model: BaseModel) -> str:
    """The on-disk text of an artifact model (sorted keys, indented)."""
    return pretty_json(model.model_dump(mode="json"))
