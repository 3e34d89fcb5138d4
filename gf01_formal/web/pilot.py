"""Pilot files for ``gf01 serve --pilot``: the consent text participants must accept, the order in which they play
the bundle's instances, and the completion code they get at the end (docs/browser.md shows one).

>>> import json
>>> pilot_json = {"schema_version": PILOT_SCHEMA, "pilot_id": "p1", "consent": "I agree.",
...               "instances": [bundle.instances[0].instance_id],
...               "completion_code": "DONE-1"}
>>> _ = open("pilot.json", "w").write(json.dumps(pilot_json))
>>> load_pilot("pilot.json", [i.instance_id for i in bundle.instances]).instances == pilot_json["instances"]
True
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Collection
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gf01_formal.artifacts import read_json
from gf01_formal.instances.model import validate_model
from hoa.errors import Gf01Error, quote

PILOT_SCHEMA = "gf01-formal.pilot.v1"
#: Participant and pilot ids: what recruiting platforms hand out, and nothing that needs escaping anywhere.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class Pilot(BaseModel):
    """One pilot study: who plays what, in which order, after consenting to what."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    schema_version: Literal["gf01-formal.pilot.v1"] = PILOT_SCHEMA
    pilot_id: str = Field(pattern=ID_PATTERN, description="names the pilot in every run record it produces")
    title: str = Field(default="GF-01 study", min_length=1, max_length=200)
    consent: str = Field(min_length=1, max_length=50_000, description="the consent text, plain text; a blank line "
                         "separates paragraphs")
    consent_label: str = Field(default="I have read the information above and I agree to take part.",
                               min_length=1, max_length=500, description="the text of the box a participant ticks")
    instances: list[str] = Field(min_length=1, description="instance ids of the bundle, in the order played")
    completion_code: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="the head of each participant's "
                                 "completion code, shown after the last instance (completion_code())")

    @property
    def consent_sha256(self) -> str:
        """sha256 of the consent text as shown (run records keep it, so the text a participant accepted is known)."""
        return hashlib.sha256(self.consent.encode("utf-8")).hexdigest()


def load_pilot(path: str | os.PathLike[str], instance_ids: Collection[str]) -> Pilot:
    """The pilot of file ``path``, checked against the ids of the served bundle; a Gf01Error names what is wrong."""
    name = quote(os.fspath(path), 200, bare=True)
    pilot: Pilot = validate_model(Pilot, read_json(path), file=name)
    seen: set[str] = set()
    for iid in pilot.instances:
        if iid in seen:
            raise Gf01Error(f"instance {quote(iid, 60)} appears twice in the order", file=name, field="instances")
        if iid not in instance_ids:
            raise Gf01Error(f"instance {quote(iid, 60)} is not in the bundle", file=name, field="instances")
        seen.add(iid)
    return pilot


# -- issued participants and their completion codes (docs/browser.md, "Pilots") ------------------------------------
#
# The experimenter's key (random, beside the pilot file as <pilot>.key, mode 0600) signs each participant id the
# experimenter issues: a link carries the id and its signature, the server refuses an id without a good one, and
# every run record of the pilot carries the signature, so `gf01 validate --official --pilot FILE` rejects a run of an
# id that was never issued. The completion code is a keyed hash of the participant id: different for everyone,
# checkable with the key alone, and worthless to share.

#: Hex digits of a participant signature (128 bits) and of a completion code's check (40 bits: a code is checked
#: by the experimenter, never against a public oracle, so guessing one is a 1 in 10^12 shot).
SIG_HEX = 32
CODE_HEX = 10


def key_path(pilot_path: str | os.PathLike[str]) -> Path:
    """Where the pilot's key lives: beside the pilot file."""
    return Path(f"{os.fspath(pilot_path)}.key")


def load_key(pilot_path: str | os.PathLike[str], *, create: bool = False) -> bytes:
    """The pilot's key (made, readable by its owner only, when ``create`` and missing); a Gf01Error otherwise."""
    path = key_path(pilot_path)
    name = quote(str(path), 200, bare=True)
    if create and not path.exists():
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(secrets.token_hex(32) + "\n")
        except OSError as ex:
            raise Gf01Error(f"cannot write the pilot's key: {ex.strerror or ex}", file=name) from None
    if not path.exists():
        raise Gf01Error("the pilot has no key: issue its participants' links first (gf01 pilot issue)", file=name)
    from gf01_formal.instances.keys import check_key_strength, read_key_file

    text = read_key_file(path, what="pilot key").decode("ascii", errors="replace").strip()
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise Gf01Error("not a pilot key (64 hex digits; gf01 key new --kind pilot makes one)", file=name)
    key = bytes.fromhex(text)
    check_key_strength(key, what=name)
    return key


def _mac(key: bytes, *parts: str) -> str:
    return hmac.new(key, "\x1f".join(parts).encode("utf-8"), hashlib.sha256).hexdigest()


def participant_sig(key: bytes, pilot_id: str, participant_id: str) -> str:
    """The signature that makes ``participant_id`` an issued participant of the pilot."""
    return _mac(key, "gf01-participant", pilot_id, participant_id)[:SIG_HEX]


def is_issued(key: bytes, pilot_id: str, participant_id: str, sig: object) -> bool:
    """Whether ``sig`` is the signature of an issued participant (compared in constant time)."""
    # As bytes: compare_digest refuses str that is not ASCII, and a signature is whatever a link was edited to.
    return isinstance(sig, str) and hmac.compare_digest(sig.encode("utf-8"),
                                                        participant_sig(key, pilot_id, participant_id).encode())


def issued_ids(count: int, start: int = 1) -> list[str]:
    """The participant ids of an issue: P00001, P00002, ... (ids are not secret: the signature is)."""
    return [f"P{i:05d}" for i in range(start, start + count)]


def completion_code(key: bytes, pilot: Pilot, participant_id: str) -> str:
    """The participant's completion code: the pilot's code, the participant id and a keyed check."""
    check = _mac(key, "gf01-completion", pilot.pilot_id, participant_id)[:CODE_HEX].upper()
    return f"{pilot.completion_code}-{participant_id}-{check}"


def code_participant(key: bytes, pilot: Pilot, code: str) -> str | None:
    """The participant whose completion code ``code`` is (None: no participant's), whatever the case it was typed
    in: the participant id is tried as typed, in upper case and in lower case (issued ids, P00001, are upper)."""
    code = code.strip()
    head = f"{pilot.completion_code}-"
    if not code.upper().startswith(head.upper()) or "-" not in code[len(head):]:
        return None
    typed = code[len(head):].rsplit("-", 1)[0]
    for participant_id in dict.fromkeys((typed, typed.upper(), typed.lower())):
        want = completion_code(key, pilot, participant_id)
        if hmac.compare_digest(code.upper().encode("utf-8"), want.upper().encode("utf-8")):
            return participant_id
    return None
