"""The split key (DEC-054, docs/release.md): what it derives and what may be published about it.

One secret key seals a release. From it (HMAC-SHA256, each use under its own label, so no output stands in for
another) derive:

- the generator's slot seeds (``slot_seed``): slot k of ``gf01 generate --seed S --key-file K`` draws from
  ``SeedSequence([slot_seed(K, S, k), k])``; so the public ``seed`` S, the cfg and the count regenerate nothing
  without the key, a public instance's own ``meta.seed`` regenerates only that slot, and the holder regenerates
  every instance bit for bit (DEC-024 with the key among the inputs);
- the opaque ids of private_eval instances (``sealed_id``), which is all an agent or a public record sees of them;
- the split assignment itself (splits.assign).

Published about the key: ``key_id`` (a 64-bit fingerprint, to tell keys apart) and ``key_commitment`` (the full
sha256 a later reveal of the key is checked against). Neither reveals the key.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from hoa.errors import Gf01Error

#: The documented public default key: fine for tests and public-only splits, never for a private release.
PUBLIC_KEY = b"gf01-formal public split key v1 (not for private releases)"
#: Prefix of the opaque ids of private_eval instances (``gf01p-`` + 16 hex digits).
SEALED_PREFIX = "gf01p-"
MIN_KEY_BYTES = 16


def read_key(key_file: str | Path | None) -> bytes:
    """The split key: the bytes of ``key_file`` (surrounding whitespace stripped), or the public default key."""
    if key_file is None:
        return PUBLIC_KEY
    try:
        key = Path(key_file).read_bytes().strip()
    except OSError as ex:
        raise Gf01Error(f"cannot read the key file: {ex.strerror or ex}", file=str(key_file)) from ex
    if len(key) < MIN_KEY_BYTES:
        raise Gf01Error(f"a split key needs at least {MIN_KEY_BYTES} bytes", file=str(key_file))
    return key


def _mac(key: bytes, label: str) -> bytes:
    return hmac.new(key, label.encode("utf-8"), hashlib.sha256).digest()


def key_id(key: bytes) -> str:
    """A fingerprint of the split key that does not reveal it (16 hex digits)."""
    return hashlib.sha256(b"gf01-split-key-id:" + key).hexdigest()[:16]


def key_commitment(key: bytes) -> str:
    """The published commitment to the key: a reveal of ``key`` is checked by recomputing this sha256."""
    return hashlib.sha256(b"gf01-split-key-commitment:" + key).hexdigest()


def slot_seed(key: bytes, seed: int, slot: int) -> int:
    """The 64-bit seed of generator slot ``slot`` under ``key`` for the public seed ``seed``."""
    return int.from_bytes(_mac(key, f"gf01-formal.slot-seed.v1:{seed}:{slot}")[:8], "big")


def sealed_id(key: bytes, content_hash: str) -> str:
    """The opaque id of a private_eval instance: nobody without the key links it to the instance's content."""
    return SEALED_PREFIX + _mac(key, f"gf01-formal.sealed-id.v1:{content_hash}").hex()[:16]
