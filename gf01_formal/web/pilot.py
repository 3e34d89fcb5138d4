"""Pilot files for ``gf01 serve --pilot``: the consent text participants must accept, the order in which they play
the bundle's instances, and the completion code they get at the end (docs/browser.md shows one).

>>> pilot = load_pilot("pilot.json", ["gf01f-0123456789abcdef"])   # doctest: +SKIP
>>> pilot.instances
['gf01f-0123456789abcdef']
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection
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
    completion_code: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="shown after the last instance")

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
