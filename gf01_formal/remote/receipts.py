"""Receipts of remote evaluation: what the server hands a team for each finished run, signed with the evaluator's
Ed25519 key (:mod:`gf01_formal.runs.signing`), so that anyone holding the public key can check it, and a reveal can
check it against the server's records (``gf01 eval receipt verify``; docs/remote.md).

A receipt holds the run id, the team, the agent's label and track, the status and Score_C, the sha256 of the run's
record as the server wrote it (its canonical JSON, signature included), and the split's commitments: the sha256 of
the split manifest, the commitment to the split key and to the private bundle, and the instance's own commitment
(the manifest's keyed commitment of a private instance; the content hash of a public one). Nothing in it answers
the instance. The signature covers the receipt's canonical JSON without its ``signature`` field, as a record's does.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gf01_formal.artifacts import canonical_json
from gf01_formal.runs.record import RecordSignature, RunRecord
from gf01_formal.runs.signing import ALGORITHM, Signer, Verifier, stamp_fault
from hoa.errors import Gf01Error, quote

RECEIPT_SCHEMA = "gf01-formal.remote_receipt.v1"


class Commitments(BaseModel):
    """What the receipt binds the run to: the split manifest and its commitments."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    manifest_sha256: str
    key_commitment: str | None = None
    private_bundle_commitment: str | None = None


class Receipt(BaseModel):
    """One finished run's receipt (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: str = RECEIPT_SCHEMA
    run_id: str
    team: str
    agent: str
    eval_track: str
    instance_id: str
    instance_commitment: str = Field(description="the manifest's keyed commitment (private) or content hash")
    status: str
    score_c: int | None
    record_sha256: str = Field(description="sha256 of the record's canonical JSON as the server wrote it")
    split: Commitments
    signature: RecordSignature | None = None


def record_sha256(record: RunRecord) -> str:
    """The sha256 of a record's canonical JSON (the line the server wrote, without its newline)."""
    return hashlib.sha256(canonical_json(record.to_json()).encode("utf-8")).hexdigest()


def _signed_bytes(receipt: Receipt) -> bytes:
    body = receipt.model_dump(mode="json")
    body.pop("signature", None)
    return canonical_json(body).encode("utf-8")


def make_receipt(record: RunRecord, *, team: str, agent: str, instance_commitment: str, split: Commitments,
                 signer: Signer) -> Receipt:
    """The signed receipt of a recorded run."""
    receipt = Receipt(run_id=record.run_id, team=team, agent=agent, eval_track=record.eval_track,
                      instance_id=record.instance_id, instance_commitment=instance_commitment, status=record.status,
                      score_c=record.score_c, record_sha256=record_sha256(record), split=split)
    sig = signer.key.sign(_signed_bytes(receipt)).hex()
    return receipt.model_copy(update={"signature": RecordSignature(alg=ALGORITHM, key=signer.fingerprint, sig=sig)})


def parse_receipt(data: Any, *, file: str | None = None) -> Receipt:
    """A receipt from JSON, or a Gf01Error naming the field."""
    from gf01_formal.instances.model import validate_model

    if not isinstance(data, dict) or data.get("schema_version") != RECEIPT_SCHEMA:
        raise Gf01Error(f"not a receipt (schema_version {RECEIPT_SCHEMA})", file=file, field="schema_version")
    receipt: Receipt = validate_model(Receipt, data, file=file)
    return receipt


def receipt_fault(receipt: Receipt, verifier: Verifier) -> str | None:
    """Why ``receipt`` is not signed by ``verifier``'s key as it stands (None: it is)."""
    return stamp_fault(receipt.signature, verifier, _signed_bytes(receipt), unsigned="the receipt is not signed",
                       changed="the signature does not match: the receipt was changed after it was signed (or "
                               "forged)")


def record_fault(receipt: Receipt, records: dict[str, dict[str, Any]]) -> str | None:
    """Why the server's records (run id -> the last record's JSON, ``runs.store.latest``) do not hold the run the
    receipt names as it was when the receipt was signed (None: they do)."""
    rec = records.get(receipt.run_id)
    if rec is None:
        return f"the runs hold no record of run {receipt.run_id}"
    digest = hashlib.sha256(canonical_json(rec).encode("utf-8")).hexdigest()
    if digest != receipt.record_sha256:
        return f"the record of run {receipt.run_id} is not the one the receipt names (its sha256 differs)"
    spec = rec.get("agent_spec") if isinstance(rec.get("agent_spec"), dict) else {}
    params = spec.get("params") if isinstance(spec.get("params"), dict) else {}
    if params.get("team") != receipt.team:
        return f"the record of run {receipt.run_id} is team {quote(params.get('team'), 60)}'s, not {receipt.team}'s"
    return None


def read_receipts(path: str | os.PathLike[str]) -> list[tuple[int, Receipt]]:
    """The receipts of a file, one per line (what ``gf01 evaluate --remote`` writes; a receipt saved alone as the
    server sent it is one line too). A Gf01Error names the file and line of a bad one."""
    from gf01_formal.runs.store import read_lines

    name = quote(os.fspath(path), 200, bare=True)
    out = [(line, parse_receipt(obj, file=f"{name}:{line}")) for line, obj in read_lines(path)]
    if not out:
        raise Gf01Error("holds no receipt", file=name)
    return out


def read_runs(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The last record of each run id in a server's runs file (run id -> its JSON); a Gf01Error for a file that is
    missing, empty or holds anything but run records."""
    from gf01_formal.runs.record import RUN_SCHEMA
    from gf01_formal.runs.store import read_records

    name = quote(os.fspath(path), 200, bare=True)
    out: dict[str, dict[str, Any]] = {}
    for line, obj in read_records(path):
        if obj.get("schema_version") != RUN_SCHEMA or not isinstance(obj.get("run_id"), str):
            raise Gf01Error(f"not a run record ({RUN_SCHEMA})", file=name, line=line)
        out[obj["run_id"]] = obj
    return out
