"""Split governance (DEC-054, ``gf01.split_policy.v1``): keyed, stratified assignment, manifest, policy check, release.

Assignment: instances are grouped into strata by (mode, difficulty band of z(I)); strata are taken in sorted order
and, inside each, instances are ordered by HMAC-SHA256(key, instance_id). Walking that order, instance k goes to
``PATTERN[k mod 5]`` = dev, val, private, private, private; so every stratum is split about 20/20/60 and the whole
bundle within one instance of it. Without the key nobody can tell which instances are private.

The counts are the pattern's whenever those meet the policy (0.20/0.20/0.60 within 0.05); for the few n where they
do not but some counts do (11, 12, 13, 17, 22), the walk takes the feasible counts nearest the targets and skips a
label whose quota is spent. For n where no counts can (1-4, 6-8) the split is refused before anything is written.

The default key is public (``PUBLIC_KEY``): fine for tests and for the public splits, but a private release must
supply its own key (``--key-file``), otherwise anyone can recompute the assignment. The key also seals the release
(instances/keys.py, docs/release.md): private_eval instances get opaque ids, the manifest carries the commitments
to the key and to the private instances, and a generated bundle must have been generated under the same key (else
its public seed and cfg regenerate the private instances).
"""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gf01_formal.artifacts import read_json, write_json_atomic
from gf01_formal.instances.keys import PUBLIC_KEY, key_commitment, key_id, read_key, sealed_id
from gf01_formal.instances.model import SPLITS, Bundle, Instance, instances_hash, make_bundle, validate_model
from hoa.errors import Gf01Error, quote

__all__ = ["PUBLIC_KEY", "key_id", "read_key"]  # re-exported: the key's helpers live in instances/keys.py

POLICY = "gf01.split_policy.v1"
MANIFEST_SCHEMA = "gf01-formal.split_manifest.v1"
PEER_MANIFEST_SCHEMA = "gf01.split_manifest.v1"
#: v2: private instances by keyed commitment (v1 listed their unkeyed content hashes).
PRIVATE_HASHES_SCHEMA = "gf01-formal.private_hashes.v2"
TARGETS = {"public_dev": 0.20, "public_val": 0.20, "private_eval": 0.60}
TOLERANCE = 0.05
PATTERN = ("public_dev", "public_val", "private_eval", "private_eval", "private_eval")
BANDS = (0.25, 0.5, 0.75)  # z(I) band edges: difficulty strata [0, .25), [.25, .5), [.5, .75), [.75, 1]


class ManifestEntry(BaseModel):
    """One instance's assignment: a public instance by its content hash, a private_eval one by its keyed
    commitment (:func:`instance_commitment`), which nobody without the key can test a guessed instance against."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    instance_id: str
    content_hash: str | None = Field(default=None, exclude_if=lambda v: v is None,
                                     description="sha256 of the instance's content (public instances)")
    commitment: str | None = Field(default=None, exclude_if=lambda v: v is None,
                                   description="HMAC-SHA256 under the split key of the content hash (private_eval)")
    split_id: Literal["public_dev", "public_val", "private_eval"]
    mode: str
    stratum: str


class SplitManifest(BaseModel):
    """The split manifest: policy, targets, key id, source bundle hash, and every instance's split."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal["gf01-formal.split_manifest.v1"] = MANIFEST_SCHEMA
    policy: Literal["gf01.split_policy.v1"] = POLICY
    targets: dict[str, float]
    tolerance: float
    key_id: str = Field(description="sha256 fingerprint of the split key (not the key)")
    public_key: bool = Field(description="whether the documented public default key was used")
    source_bundle_hash: str
    counts: dict[str, int]
    key_commitment: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="sha256 commitment to the split key (keys.key_commitment): a reveal of the key is checked by it")
    private_bundle_sha256: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="manifests before issue 29 only: the unkeyed instances_hash of the private_eval instances")
    private_bundle_commitment: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="HMAC-SHA256 under the split key of the private_eval instances' instances_hash (in bundle "
                    "order): a reveal is checked by it")
    seed_key_id: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="key_id of the key the source bundle's slot seeds derive from (generated bundles)")
    instances: list[ManifestEntry]


def _meets(counts: tuple[int, int, int], n: int) -> bool:
    return all(abs(c / n - t) <= TOLERANCE + 1e-12 for c, t in zip(counts, TARGETS.values(), strict=True))


@cache
def split_counts(n: int) -> tuple[int, int, int] | None:
    """The (public_dev, public_val, private_eval) counts of a split of ``n`` instances: the pattern's when they meet
    the policy, else the feasible counts nearest the targets; None when no counts meet it."""
    pattern = tuple(sum(1 for k in range(n) if PATTERN[k % len(PATTERN)] == s) for s in TARGETS)
    if _meets(pattern, n):  # type: ignore[arg-type]
        return pattern  # type: ignore[return-value]
    feasible = [(d, v, n - d - v) for d in range(n + 1) for v in range(n + 1 - d) if _meets((d, v, n - d - v), n)]
    if not feasible:
        return None
    return min(feasible, key=lambda c: (sum(abs(x / n - t) for x, t in zip(c, TARGETS.values(), strict=True)), c))


def feasible_sizes_note(n: int) -> str:
    """Which bundle sizes can meet the policy, for the refusal of a split of ``n`` instances."""
    small = [m for m in range(1, 30) if split_counts(m) is not None]
    tail = next(m for m in range(29, 0, -1) if split_counts(m - 1) is None)  # every size from here on can
    few = [m for m in small if m < tail]
    return f"the smallest sizes that can are {', '.join(map(str, few))} and any n >= {tail}" if few else (
        f"any n >= {tail} can")


def difficulty_band(inst: Instance) -> str:
    """The band of z(I): ``z0`` [0, .25), ``z1`` [.25, .5), ``z2`` [.5, .75), ``z3`` [.75, 1]; ``zNA`` unmeasured.
    It is the ``difficulty_slice`` of run records and reports."""
    if inst.complexity is None:
        return "zNA"
    return f"z{sum(inst.complexity.z >= e for e in BANDS)}"


def stratum(inst: Instance) -> str:
    """The stratum of an instance: its mode and the band of z(I)."""
    return f"{inst.mode}/{difficulty_band(inst)}"


def assign(instances: list[Instance], key: bytes) -> dict[str, str]:
    """instance_id -> split label, by the keyed, stratified rule of the module docstring."""
    ids = [i.instance_id for i in instances]
    if len(set(ids)) != len(ids):
        raise Gf01Error("instance ids must be unique to assign splits", field="instances")
    n = len(instances)
    counts = split_counts(n) if n else (0, 0, 0)
    if counts is None:
        raise Gf01Error(f"a split of {n} instance(s) cannot meet {POLICY} (0.20/0.20/0.60 within {TOLERANCE} per "
                        f"split): {feasible_sizes_note(n)}; nothing written", field="instances")
    order = sorted(
        instances,
        key=lambda i: (stratum(i), hmac.new(key, i.instance_id.encode("utf-8"), hashlib.sha256).hexdigest()),
    )
    quota = dict(zip(TARGETS, counts, strict=True))
    out: dict[str, str] = {}
    for k, inst in enumerate(order):
        # The pattern's label, or the next one in pattern order whose quota is not spent.
        label = next(PATTERN[(k + j) % len(PATTERN)] for j in range(len(PATTERN))
                     if quota[PATTERN[(k + j) % len(PATTERN)]] > 0)
        quota[label] -= 1
        out[inst.instance_id] = label
    return out


def split_bundle(bundle: Bundle, key: bytes) -> tuple[Bundle, SplitManifest]:
    """The bundle with every instance's ``split_id`` set and the private_eval instances under their sealed ids, and
    its manifest. Refuses (Gf01Error, before anything is written) a generated bundle whose seed was not derived from
    this key, unless the key is the public one, and a size the policy cannot be met for."""
    if (key != PUBLIC_KEY and bundle.provenance == "generated" and bundle.seed is not None
            and bundle.seed_key_id != key_id(key)):
        how = ("under another key" if bundle.seed_key_id else
               f"without a key: its public seed {bundle.seed} and cfg regenerate every instance, the private ones too")
        raise Gf01Error(f"the bundle was generated {how}; generate it with the same --key-file to seal its private "
                        "split (docs/release.md)", field="seed_key_id")
    labels = assign(bundle.instances, key)
    insts = [_labelled(i, labels[i.instance_id], key) for i in bundle.instances]
    new = make_bundle(insts, **bundle.model_dump(exclude={"instances", "instances_hash"}))
    entries = sorted((_entry(i, key) for i in insts), key=lambda e: e.instance_id)
    counts = Counter(labels.values())
    manifest = SplitManifest(
        targets=dict(TARGETS),
        tolerance=TOLERANCE,
        key_id=key_id(key),
        public_key=key == PUBLIC_KEY,
        source_bundle_hash=new.instances_hash,
        counts={s: counts[s] for s in SPLITS},
        key_commitment=key_commitment(key),
        private_bundle_commitment=bundle_commitment(key, instances_hash([i for i in insts
                                                                         if i.split_id == "private_eval"])),
        seed_key_id=bundle.seed_key_id,
        instances=entries,
    )
    return new, manifest


def instance_commitment(key: bytes, content_hash: str) -> str:
    """The published commitment to a private_eval instance: HMAC-SHA256 under the split key of its content hash.
    An unkeyed hash would let anyone confirm a guessed instance (generated from the public cfg, say) offline; this
    one only the key holder can compute, and a reveal of the key lets everyone check it."""
    return hmac.new(key, f"gf01-formal.instance-commitment.v1:{content_hash}".encode(), hashlib.sha256).hexdigest()


def bundle_commitment(key: bytes, private_hash: str) -> str:
    """The published commitment to the private_eval instances as a whole (their instances_hash, keyed)."""
    return hmac.new(key, f"gf01-formal.private-bundle.v1:{private_hash}".encode(), hashlib.sha256).hexdigest()


def _entry(inst: Instance, key: bytes) -> ManifestEntry:
    if inst.split_id == "private_eval":
        return ManifestEntry(instance_id=inst.instance_id, commitment=instance_commitment(key, inst.content_hash),
                             split_id=inst.split_id, mode=inst.mode, stratum=stratum(inst))
    return ManifestEntry(instance_id=inst.instance_id, content_hash=inst.content_hash, split_id=inst.split_id,
                         mode=inst.mode, stratum=stratum(inst))


def _labelled(inst: Instance, split: str, key: bytes) -> Instance:
    """``inst`` in ``split``; a private_eval instance also under its sealed id (all an agent sees of it)."""
    if split != "private_eval":
        return inst.model_copy(update={"split_id": split})
    meta = inst.meta.model_copy(update={"id_scheme": "sealed"})
    return inst.model_copy(update={"split_id": split, "instance_id": sealed_id(key, inst.content_hash), "meta": meta})


def write_release(directory: str | Path, bundle: Bundle, manifest: SplitManifest) -> list[Path]:
    """The release layout: public bundles, private_eval as hashes only, the manifest. Returns the written paths.

    ``public_dev.bundle.json`` and ``public_val.bundle.json`` hold the instances; ``private_eval.hashes.json`` holds
    only ``instance_id`` and the keyed ``commitment`` of each private instance (as the manifest does);
    ``split_manifest.json`` the manifest.
    """
    out = Path(directory)
    paths = []
    for split in ("public_dev", "public_val"):
        part = [i for i in bundle.instances if i.split_id == split]
        sub = make_bundle(part, **bundle.model_dump(exclude={"instances", "instances_hash", "skipped"}))
        p = out / f"{split}.bundle.json"
        write_json_atomic(p, sub.model_dump(mode="json"))
        paths.append(p)
    private = [{"instance_id": e.instance_id, "commitment": e.commitment} for e in manifest.instances
               if e.split_id == "private_eval"]
    p = out / "private_eval.hashes.json"
    write_json_atomic(p, {"schema_version": PRIVATE_HASHES_SCHEMA, "policy": POLICY,
                          "source_bundle_hash": manifest.source_bundle_hash,
                          **{k: v for k, v in (("key_commitment", manifest.key_commitment),
                                               ("private_bundle_commitment", manifest.private_bundle_commitment))
                             if v},
                          "instances": private})
    paths.append(p)
    p = out / "split_manifest.json"
    write_json_atomic(p, manifest.model_dump(mode="json"))
    paths.append(p)
    return paths


def policy_check(data: Any, *, file: str | None = None, tolerance: float | None = None) -> dict[str, Any]:
    """Check a split manifest (ours, or the peer's ``gf01.split_manifest.v1``) against DEC-054.

    Returns a report with each split's fraction and deviation; raises Gf01Error naming the first offending split
    (or unknown label) when a fraction is more than the tolerance away from its target.
    """
    if not isinstance(data, dict):
        raise Gf01Error("a split manifest is a JSON object", file=file)
    version = data.get("schema_version")
    if version == MANIFEST_SCHEMA:
        man = validate_model(SplitManifest, data, file=file)
        labels = [e.split_id for e in man.instances]
        tol = man.tolerance if tolerance is None else tolerance
    elif version == PEER_MANIFEST_SCHEMA:
        rows = data.get("instances")
        if not isinstance(rows, list):
            raise Gf01Error("expected a list", file=file, field="instances")
        labels = [r.get("split_id") if isinstance(r, dict) else None for r in rows]
        tol = TOLERANCE if tolerance is None else tolerance
    else:
        raise Gf01Error(f"unknown schema_version {quote(version, 60)}; expected {MANIFEST_SCHEMA} or "
                        f"{PEER_MANIFEST_SCHEMA}", file=file, field="schema_version")
    bad = [x for x in labels if x not in TARGETS]
    if bad:
        raise Gf01Error(f"unknown split label {quote(bad[0], 60)} (labels: {', '.join(SPLITS)})", file=file,
                        field="instances")
    n = len(labels)
    if n == 0:
        raise Gf01Error("the manifest lists no instances", file=file, field="instances")
    counts = Counter(labels)
    report = {
        "instances": n,
        "tolerance": tol,
        "splits": {
            s: {"count": counts[s], "fraction": round(counts[s] / n, 6), "target": t,
                "deviation": round(abs(counts[s] / n - t), 6)}
            for s, t in TARGETS.items()
        },
    }
    for s, t in TARGETS.items():
        frac = counts[s] / n
        if abs(frac - t) > tol + 1e-12:
            raise Gf01Error(
                f"split {s}: fraction {frac:.3f} ({counts[s]}/{n}) is more than {tol} away from its target {t}",
                file=file,
                field=s,
            )
    return report


def load_manifest_report(path: str | Path, tolerance: float | None = None) -> dict[str, Any]:
    """``policy_check`` on a manifest file."""
    return policy_check(read_json(path), file=str(path), tolerance=tolerance)
