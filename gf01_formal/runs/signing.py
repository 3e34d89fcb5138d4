"""Record signatures: what a replay cannot prove about a run, the evaluator's harness vouches for with its key.

A replay shows that a record's steps are a possible play of its instance and that its scores are its certificate's;
it cannot show that the steps came from the agent the record names, on the track it names, in the sandbox it names.
The harness that plays an official evaluation (``gf01 evaluate --sign-key KEY``, ``gf01 campaign --sign-key KEY``)
therefore signs each record with the evaluator's Ed25519 key, and ``gf01 validate --key PUB`` checks every record
against the public half: an unsigned record, one signed by another key, and one changed after it was signed (any
field: a relabelled sandbox, agent or track; steps swapped and rescored) are violations.

What is signed: the record's canonical JSON (``artifacts.canonical_json`` of ``RunRecord.to_json()``) without its
``signature`` field, as UTF-8 bytes. The signature field holds the algorithm, the public key's fingerprint (the
sha256 of its 32 raw bytes, hex) and the signature (hex).

Key files (``gf01 key new --kind signing -o KEY`` writes both): the private key as PKCS#8 PEM (mode 0600), the
public key as SubjectPublicKeyInfo PEM beside it (``KEY.pub``); ``--key`` takes either, ``--sign-key`` the private
one. Both are read by :func:`gf01_formal.instances.keys.read_key_file` (a regular file of a few KiB at most).

The ``cryptography`` package is imported only here, and only when a key is used.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gf01_formal.artifacts import canonical_json
from gf01_formal.instances.keys import read_key_file
from gf01_formal.runs.record import RecordSignature, RunRecord
from hoa.errors import Gf01Error, quote

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ALGORITHM = "ed25519"


@dataclass(frozen=True)
class Signer:
    """The evaluator's private key, and the fingerprint of its public half."""

    key: Ed25519PrivateKey
    fingerprint: str


@dataclass(frozen=True)
class Verifier:
    """A public key that records are checked against, and its fingerprint."""

    key: Ed25519PublicKey
    fingerprint: str


def new_signing_key() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair as (private PKCS#8 PEM, public SubjectPublicKeyInfo PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


def fingerprint(public: Ed25519PublicKey) -> str:
    """The public key's fingerprint: the sha256 of its 32 raw bytes, hex."""
    from cryptography.hazmat.primitives import serialization

    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def load_signer(path: str | os.PathLike[str]) -> Signer:
    """The private signing key of the PEM file ``path`` (a Gf01Error naming the file otherwise)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    shown = quote(os.fspath(path), 200, bare=True)
    data = read_key_file(path, what="signing key")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as ex:
        raise Gf01Error(f"not an unencrypted PEM private key ({_first_line(ex)}); gf01 key new --kind signing "
                        "makes one", file=shown) from None
    except Exception as ex:  # the library's own errors (e.g. an unsupported algorithm) are the file's fault too
        raise Gf01Error(f"not a PEM private key ({_first_line(ex)})", file=shown) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise Gf01Error("not an Ed25519 private key (gf01 key new --kind signing makes one)", file=shown)
    return Signer(key, fingerprint(key.public_key()))


def load_verifier(path: str | os.PathLike[str]) -> Verifier:
    """The public key of the PEM file ``path``: a public key, or the private key whose public half it is."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    shown = quote(os.fspath(path), 200, bare=True)
    data = read_key_file(path, what="public key")
    if b"PRIVATE KEY" in data:
        signer = load_signer(path)
        return Verifier(signer.key.public_key(), signer.fingerprint)
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as ex:
        raise Gf01Error(f"not a PEM public key ({_first_line(ex)}); gf01 key new --kind signing writes one as "
                        "KEY.pub", file=shown) from None
    except Exception as ex:  # the library's own errors are the file's fault too
        raise Gf01Error(f"not a PEM public key ({_first_line(ex)})", file=shown) from None
    if not isinstance(key, Ed25519PublicKey):
        raise Gf01Error("not an Ed25519 public key", file=shown)
    return Verifier(key, fingerprint(key))


def signed_bytes(record: RunRecord) -> bytes:
    """What a record's signature covers: its canonical JSON without the ``signature`` field."""
    body: dict[str, Any] = record.to_json()
    body.pop("signature", None)
    return canonical_json(body).encode("utf-8")


def sign(record: RunRecord, signer: Signer) -> RunRecord:
    """``record`` with its signature by ``signer`` (any earlier signature replaced)."""
    sig = signer.key.sign(signed_bytes(record)).hex()
    stamp = RecordSignature(alg=ALGORITHM, key=signer.fingerprint, sig=sig)
    return record.model_copy(update={"signature": stamp})


def signature_fault(record: RunRecord, verifier: Verifier) -> str | None:
    """Why ``record`` is not signed by ``verifier``'s key as it stands (None: it is)."""
    return stamp_fault(record.signature, verifier, signed_bytes(record),
                       unsigned="the record is not signed (an official run is signed by the evaluator's harness: "
                                "--sign-key)",
                       changed="does not match the record: the record was changed after it was signed (or the "
                               "signature forged)")


def stamp_fault(stamp: RecordSignature | None, verifier: Verifier, payload: bytes, *, unsigned: str,
                changed: str) -> str | None:
    """Why ``stamp`` is not ``verifier``'s signature of ``payload`` (None: it is); ``unsigned`` and ``changed`` say
    what is missing or altered in the caller's words (a run record, a receipt)."""
    from cryptography.exceptions import InvalidSignature

    if stamp is None:
        return unsigned
    if stamp.alg != ALGORITHM:
        return f"signed with {quote(stamp.alg, 40)}, not {ALGORITHM}"
    if stamp.key != verifier.fingerprint:
        return f"signed by key {quote(stamp.key, 70, bare=True)}, not by the key given ({verifier.fingerprint})"
    try:
        sig = bytes.fromhex(stamp.sig)
    except ValueError:
        return "the signature is not hex"
    try:
        verifier.key.verify(sig, payload)
    except InvalidSignature:
        return changed
    return None


def _first_line(ex: BaseException) -> str:
    return quote(str(ex).splitlines()[0] if str(ex) else type(ex).__name__, 120, bare=True)
