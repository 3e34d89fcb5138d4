"""Split governance (DEC-054, ``gf01.split_policy.v1``): keyed, stratified assignment, manifest, policy check, release.

Assignment: instances are grouped into strata by (mode, difficulty band of z(I)); strata are taken in sorted order
and, inside each, instances are ordered by HMAC-SHA256(key, instance_id). Walking that order, instance k goes to
``PATTERN[k mod 5]`` = dev, val, private, private, private; so every stratum is split about 20/20/60 and the whole
bundle within one instance of it. Without the key nobody can tell which instances are private.

The default key is public (``PUBLIC_KEY``): fine for tests and for the public splits, but a private release must
supply its own key (``--key-file``), otherwise anyone can recompute the assignment.
"""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gf01_formal.artifacts import read_json, write_json_atomic
from gf01_formal.instances.model import SPLITS, Bundle, Instance, make_bundle, validate_model
from hoa.errors import Gf01Error, quote

POLICY = "gf01.split_policy.v1"
MANIFEST_SCHEMA = "gf01-formal.split_manifest.v1"
PEER_MANIFEST_SCHEMA = "gf01.split_manifest.v1"
TARGETS = {"public_dev": 0.20, "public_val": 0.20, "private_eval": 0.60}
TOLERANCE = 0.05
PATTERN = ("public_dev", "public_val", "private_eval", "private_eval", "private_eval")
PUBLIC_KEY = b"gf01-formal public split key v1 (not for private releases)"
BANDS = (0.25, 0.5, 0.75)  # z(I) band edges: difficulty strata [0, .25), [.25, .5), [.5, .75), [.75, 1]


class ManifestEntry(BaseModel):
    """One instance's assignment."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    instance_id: str
    content_hash: str
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
    instances: list[ManifestEntry]


def key_id(key: bytes) -> str:
    """A fingerprint of the split key that does not reveal it."""
    return hashlib.sha256(b"gf01-split-key-id:" + key).hexdigest()[:16]


def read_key(key_file: str | Path | None) -> bytes:
    """The split key: the bytes of ``key_file`` (surrounding whitespace stripped), or the public default key."""
    if key_file is None:
        return PUBLIC_KEY
    try:
        key = Path(key_file).read_bytes().strip()
    except OSError as ex:
        raise Gf01Error(f"cannot read the key file: {ex.strerror or ex}", file=str(key_file)) from ex
    if len(key) < 16:
        raise Gf01Error("a split key needs at least 16 bytes", file=str(key_file))
    return key


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
    order = sorted(
        instances,
        key=lambda i: (stratum(i), hmac.new(key, i.instance_id.encode("utf-8"), hashlib.sha256).hexdigest()),
    )
    return {inst.instance_id: PATTERN[k % len(PATTERN)] for k, inst in enumerate(order)}


def split_bundle(bundle: Bundle, key: bytes) -> tuple[Bundle, SplitManifest]:
    """The bundle with every instance's ``split_id`` set, and its manifest."""
    labels = assign(bundle.instances, key)
    insts = [i.model_copy(update={"split_id": labels[i.instance_id]}) for i in bundle.instances]
    new = make_bundle(insts, **bundle.model_dump(exclude={"instances", "instances_hash"}))
    entries = sorted(
        (
            ManifestEntry(instance_id=i.instance_id, content_hash=i.content_hash, split_id=labels[i.instance_id],
                          mode=i.mode, stratum=stratum(i))
            for i in insts
        ),
        key=lambda e: e.instance_id,
    )
    counts = Counter(labels.values())
    manifest = SplitManifest(
        targets=dict(TARGETS),
        tolerance=TOLERANCE,
        key_id=key_id(key),
        public_key=key == PUBLIC_KEY,
        source_bundle_hash=new.instances_hash,
        counts={s: counts[s] for s in SPLITS},
        instances=entries,
    )
    return new, manifest


def write_release(directory: str | Path, bundle: Bundle, manifest: SplitManifest) -> list[Path]:
    """The release layout: public bundles, private_eval as hashes only, the manifest. Returns the written paths.

    ``public_dev.bundle.json`` and ``public_val.bundle.json`` hold the instances; ``private_eval.hashes.json`` holds
    only ``instance_id`` and ``content_hash`` of each private instance; ``split_manifest.json`` the manifest.
    """
    out = Path(directory)
    paths = []
    for split in ("public_dev", "public_val"):
        part = [i for i in bundle.instances if i.split_id == split]
        sub = make_bundle(part, **bundle.model_dump(exclude={"instances", "instances_hash", "skipped"}))
        p = out / f"{split}.bundle.json"
        write_json_atomic(p, sub.model_dump(mode="json"))
        paths.append(p)
    private = sorted(
        ({"instance_id": i.instance_id, "content_hash": i.content_hash}
         for i in bundle.instances if i.split_id == "private_eval"),
        key=lambda d: d["instance_id"],
    )
    p = out / "private_eval.hashes.json"
    write_json_atomic(p, {"schema_version": "gf01-formal.private_hashes.v1", "policy": POLICY,
                          "source_bundle_hash": manifest.source_bundle_hash, "instances": private})
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
