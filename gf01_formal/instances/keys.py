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
sha256 a later reveal of the key is checked against). Neither reveals the key, as long as the key cannot be guessed:
a split key (and a pilot's key) must pass :func:`check_key_strength`, and ``gf01 key new`` makes one that does
(:func:`new_key`). Every key file is read by :func:`read_key_file`: a regular file of at most
:data:`MAX_KEY_FILE_BYTES`, never a FIFO or a device (which could be read forever or without end).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import secrets
import stat
from collections import Counter
from pathlib import Path
from typing import Literal

from hoa.errors import Gf01Error, quote

#: The documented public default key: fine for tests and public-only splits, never for a private release.
PUBLIC_KEY = b"gf01-formal public split key v1 (not for private releases)"
#: Prefix of the opaque ids of private_eval instances (``gf01p-`` + 16 hex digits).
SEALED_PREFIX = "gf01p-"
MIN_KEY_BYTES = 16
#: A key's estimated entropy (its length times the Shannon entropy of its byte frequencies) must reach this many
#: bits, and its bytes this many bits each: a guard against a key typed by hand (16 identical letters have 0 bits,
#: ``abababab...`` 1 a byte, a word repeated little more), not a measure of randomness. ``gf01 key new`` writes 64
#: random hex digits (256 bits; about 3.8 bits a byte by this estimate).
MIN_KEY_BITS = 56.0
MIN_BITS_PER_BYTE = 3.0
#: The largest key file read (a key is a line; a PEM signing key a few lines).
MAX_KEY_FILE_BYTES = 4096
KeyKind = Literal["split", "pilot", "signing"]


def read_key_file(path: str | os.PathLike[str], *, what: str = "key") -> bytes:
    """The bytes of the key file ``path``: a regular file of at most :data:`MAX_KEY_FILE_BYTES` bytes. A FIFO, a
    device or a directory is refused before anything is read (opened non-blocking, so a FIFO without a writer does
    not wait), and a larger file is refused after reading one byte more than the cap."""
    shown = quote(os.fspath(path), 200, bare=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as ex:
        raise Gf01Error(f"cannot read the {what} file: {ex.strerror or ex}", file=shown) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode) else \
                "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file"
            raise Gf01Error(f"is {kind}, not a {what} file (a key is read from a regular file)", file=shown)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_KEY_FILE_BYTES:
            chunk = os.read(fd, MAX_KEY_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_KEY_FILE_BYTES:
            raise Gf01Error(f"is larger than a {what} file ({MAX_KEY_FILE_BYTES} bytes at most)", file=shown)
        return b"".join(chunks)
    except OSError as ex:
        raise Gf01Error(f"cannot read the {what} file: {ex.strerror or ex}", file=shown) from None
    finally:
        os.close(fd)


def check_key_strength(key: bytes, *, what: str) -> None:
    """A Gf01Error (one line naming ``what``, e.g. the key file) when ``key`` is too short or too regular to be a
    secret: fewer than :data:`MIN_KEY_BYTES` bytes, fewer than :data:`MIN_BITS_PER_BYTE` bits a byte, or fewer than
    :data:`MIN_KEY_BITS` bits in all by the estimate of :data:`MIN_KEY_BITS`."""
    if len(key) < MIN_KEY_BYTES:
        raise Gf01Error(f"a weak key: {len(key)} bytes; a key needs at least {MIN_KEY_BYTES} bytes (gf01 key new "
                        "makes a good one)", file=what)
    per_byte = sum(n / len(key) * math.log2(len(key) / n) for n in Counter(key).values())
    if per_byte < MIN_BITS_PER_BYTE or per_byte * len(key) < MIN_KEY_BITS:
        raise Gf01Error(f"a weak key: its bytes repeat too much to be a secret ({per_byte:.1f} bits a byte, "
                        f"{per_byte * len(key):.0f} in all; gf01 key new makes a good one)", file=what)


def read_key(key_file: str | Path | None) -> bytes:
    """The split key: the bytes of ``key_file`` (surrounding whitespace stripped; refused when weak), or the public
    default key."""
    if key_file is None:
        return PUBLIC_KEY
    key = read_key_file(key_file, what="split key").strip()
    check_key_strength(key, what=quote(os.fspath(key_file), 200, bare=True))
    return key


def new_key(kind: Literal["split", "pilot"]) -> str:
    """The text of a new split or pilot key file: 64 random hex digits (256 bits) and a newline."""
    del kind  # the same form serves both (a pilot key is 64 hex digits, web/pilot.py)
    return secrets.token_hex(32) + "\n"


def write_new_secret(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o600) -> None:
    """Write ``data`` as the new file ``path`` (``mode``), atomically and never over an existing file (or a link,
    a device, a FIFO): the bytes go to a temporary file beside it, which is then linked under its name; the link
    fails if the name exists, so a half-written key is never seen and no file is replaced."""
    import tempfile

    target = Path(path)
    shown = quote(os.fspath(path), 200, bare=True)
    if os.path.lexists(target):
        raise Gf01Error("exists already: a key file is never overwritten (give a new name)", file=shown)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, target)
    except FileExistsError:
        raise Gf01Error("exists already: a key file is never overwritten (give a new name)", file=shown) from None
    except OSError as ex:
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=shown) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


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
