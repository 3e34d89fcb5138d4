"""An instance's identity (docs/instances.md): the schema names of instance files and bundles, the task fields its
content hash covers, and the id derived from that hash. Plain values, no pydantic: the models
(:mod:`gf01_formal.instances.model`) and the pydantic-free reader (:mod:`gf01_formal.instances.plain`) share them.

>>> content_id("d78bf434bfab905eb725e77425b7606026707aec7ed9a2333e32d32ca8843f65")
'gf01f-d78bf434bfab905e'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gf01_formal.artifacts import sha256_hex
from hoa.errors import Gf01Error, quote

INSTANCE_SCHEMA = "gf01-formal.instance.v2"
BUNDLE_SCHEMA = "gf01-formal.bundle.v2"
#: The task fields that the content hash covers (the order is irrelevant: canonical JSON sorts keys).
CONTENT_FIELDS = ("system", "base_trace", "effect", "t_star", "mode", "window", "budget_t", "budget_a")
#: Prefix of content-derived instance ids; ``instance_id = ID_PREFIX + content_hash[:ID_HEX]``.
ID_PREFIX = "gf01f-"
ID_HEX = 16


def content_of(task: Mapping[str, Any]) -> dict[str, Any]:
    """The part of an instance dict that the content hash covers."""
    return {k: task[k] for k in CONTENT_FIELDS}


def content_hash(task: Mapping[str, Any]) -> str:
    """The content hash of an instance (or its task) as JSON: sha256 of the canonical JSON of its
    :data:`CONTENT_FIELDS`. Made once when an instance is made, checked once when it is read."""
    return sha256_hex(content_of(task))


def content_id(content_hash: str) -> str:
    """The content-derived instance id for ``content_hash``."""
    return ID_PREFIX + content_hash[:ID_HEX]


def check_identity(inst: Mapping[str, Any]) -> None:
    """Raise Gf01Error (field ``content_hash`` or ``instance_id``) if the stored hash, or the content-derived id, of
    an instance as JSON (its ``model_dump(mode="json")``) does not match its content."""
    digest = content_hash(inst)
    if digest != inst["content_hash"]:
        raise Gf01Error(
            f"instance {inst['instance_id']}: hash mismatch "
            f"(stored {inst['content_hash'][:16]}..., content {digest[:16]}...)",
            field="content_hash",
        )
    if inst["meta"]["id_scheme"] == "content" and inst["instance_id"] != content_id(digest):
        raise Gf01Error(
            f"instance id {quote(inst['instance_id'], 60)} does not match its content (expected "
            f"{content_id(digest)!r})",
            field="instance_id",
        )
