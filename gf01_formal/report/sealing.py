"""The ``sealing`` check of a public release: nothing in it regenerates or answers a private_eval instance.

DESIGN.md §6: from the public, a release withholds the private_eval instances and everything that would regenerate
or answer them (content, seeds and generator inputs, certificates, gold, the split key). Every file under the
release (or package) directory is read and every JSON value walked; a leak is named by file, line and what it is:

- ``private instance content``: an instance object (system, base trace, effect) whose content hash, id or split is
  a private_eval one of the manifest;
- ``private run record``: a run record on a private_eval instance (its certificate and best_match_gold answer it);
- ``private certificate or gold``: any object naming a private instance id beside a certificate, gold or
  certification;
- ``private side file``: a file under ``runs.jsonl.d/`` that no public run record refers to by its hash (the
  oracle's tool log holds its certificate, a transcript the model's view of the instance);
- ``generator inputs``: a generated bundle whose seed and cfg were not keyed by the split key (``gf01 generate
  --key-file``): its public seed regenerates every slot, the private ones included;
- ``split key``: the key itself, as a file, a line, a word or a JSON string (recognised by its published
  ``key_id``), and a manifest made with the public default key (which anyone holds);
- ``unlisted file``: a file of a package that its SHA256SUMS does not list, or a file of a release directory that
  is none of a release's files (what nobody checks can carry anything);
- ``unchecked file``: a file larger than 256 MiB, or one whose decoded layers pass 256 MiB, which is not read
  (the check fails closed).

The scan decodes what it reads, so a leak wrapped once or a few times is still found: every file (whatever its
name) as a JSON document, else line by line, each line as JSON or with the JSON objects embedded in its text; a
gzip stream inflated; a JSON string or a word of text that is base64 or hex decoded and scanned again (a key in
hex, an instance base64'd in a JSON string), up to :data:`MAX_DEPTH` layers deep.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gf01_formal.artifacts import read_json, sha256_hex
from gf01_formal.instances.keys import MIN_KEY_BYTES, key_id
from gf01_formal.instances.model import CONTENT_FIELDS

#: Keys of an object that carry an answer (a certificate, gold, or the generator's certification with the oracle's).
ANSWER_KEYS = ("certificate", "best_match_gold", "gold", "gold_certificate", "oracle_certificate", "certification")
#: Candidate key strings longer than this are not looked at (a key is short; a report line is not a key).
MAX_KEY_BYTES = 4096
#: The largest file the check reads (memory stays bounded); a larger one fails the check as unchecked.
MAX_SCAN_BYTES = 256 << 20
#: Leaks of one kind named in the one-line error (the check's JSON lists all of them).
SHOWN_PER_KIND = 3
#: Layers of encoding (gzip, base64, hex) the scan looks through.
MAX_DEPTH = 3
#: A string shorter than this is not decoded (no instance or key fits; a short word is not worth a look).
MIN_ENCODED = 24
#: Places in one line where an embedded JSON object is tried.
MAX_EMBEDDED = 64
#: Directories of a release whose files are its own (side files, figures).
RELEASE_DIRS = ("runs.jsonl.d/", "plots/")
_HEX = re.compile(rb"(?:[0-9a-fA-F]{2})+")
_BASE64 = re.compile(rb"[A-Za-z0-9+/_-]+={0,2}")


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, value
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _walk(value[k], f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")


def _documents(data: bytes) -> Iterator[tuple[str, Any]]:
    """(where, JSON value) of the whole of ``data`` when it is JSON, else of each line that is JSON and of each JSON
    object embedded in a line's text (``note: {...}``), whatever the file's name."""
    try:
        yield "", json.loads(data)
        return
    except (ValueError, RecursionError):
        pass
    decoder = json.JSONDecoder()
    for n, raw in enumerate(data.splitlines(), 1):
        line = raw.decode("utf-8", "replace")
        try:
            yield f"line {n}", json.loads(line)
            continue
        except (ValueError, RecursionError):
            pass
        at, tries = line.find("{"), 0
        while at >= 0 and tries < MAX_EMBEDDED:
            tries += 1
            try:
                value, end = decoder.raw_decode(line, at)
            except (ValueError, RecursionError):
                at = line.find("{", at + 1)
                continue
            yield f"line {n}", value
            at = line.find("{", end)


def _decodings(raw: bytes) -> Iterator[tuple[str, bytes]]:
    """The bytes ``raw`` stands for when it is hex or base64 (either alphabet), with the name of the encoding."""
    text = raw.strip()
    if len(text) < MIN_ENCODED:
        return
    if _HEX.fullmatch(text):
        yield "hex", binascii.unhexlify(text)
    if _BASE64.fullmatch(text):
        padded = text + b"=" * (-len(text.rstrip(b"=")) % 4) if not text.endswith(b"=") else text
        for name, decode in (("base64", base64.b64decode), ("base64url", base64.urlsafe_b64decode)):
            try:
                yield name, decode(padded)
            except (binascii.Error, ValueError):
                continue


def _content_hash(obj: dict[str, Any]) -> str | None:
    if not all(k in obj for k in CONTENT_FIELDS):
        return None
    return sha256_hex({k: obj[k] for k in CONTENT_FIELDS})


class _Scan:
    """The manifest's private identities and the leaks found so far."""

    def __init__(self, manifest: dict[str, Any]) -> None:
        rows = [r for r in manifest.get("instances") or [] if isinstance(r, dict)]
        private = [r for r in rows if r.get("split_id") == "private_eval"]
        self.ids = {str(r.get("instance_id")) for r in private}
        self.hashes = {str(r.get("content_hash")) for r in private if r.get("content_hash")}
        self.key_id = manifest.get("key_id")
        self.seed_key_id = manifest.get("seed_key_id")
        self.leaks: list[str] = []
        self.public_logs: set[str] = set()
        self.depth = 0
        #: Bytes the decoded layers may still take (the scan's memory stays bounded whatever a file unpacks to).
        self.budget = MAX_SCAN_BYTES

    def _is_private(self, obj: dict[str, Any]) -> bool:
        return (obj.get("split_id") == "private_eval" or str(obj.get("instance_id")) in self.ids
                or str(obj.get("instance_hash")) in self.hashes or str(obj.get("content_hash")) in self.hashes)

    def value(self, where: str, path: str, obj: Any) -> None:
        """Look at one JSON value (every value of every document passes here)."""
        if isinstance(obj, str):
            raw = obj.encode("utf-8", "surrogatepass")
            self.key_candidate(where, path, raw)
            self.decoded(f"{where}{f' ({path})' if path else ''}", raw)
            return
        if not isinstance(obj, dict):
            return
        at = f"{where} ({path})" if path else where
        if "system" in obj and "base_trace" in obj and "effect" in obj:
            digest = _content_hash(obj)
            if self._is_private(obj) or (digest is not None and digest in self.hashes):
                self.leaks.append(f"private instance content: {at}")
            return
        if "run_id" in obj and "instance_id" in obj:
            if self._is_private(obj):
                self.leaks.append(f"private run record (certificate, best_match_gold): {at} run "
                                  f"{obj.get('run_id')}")
            else:
                self.public_logs |= referenced_hashes(obj)
            return
        if str(obj.get("instance_id")) in self.ids and any(k in obj for k in ANSWER_KEYS):
            self.leaks.append(f"private certificate or gold: {at}")
        generated = isinstance(obj.get("instances"), list) and obj.get("provenance") == "generated"
        if generated and obj.get("seed") is not None:
            keyed = obj.get("seed_key_id")
            if not keyed or keyed != self.seed_key_id:
                self.leaks.append(f"generator inputs: {at} (seed {obj.get('seed')}, cfg_hash "
                                  f"{str(obj.get('cfg_hash'))[:16]}, count {obj.get('count_requested')}) were not "
                                  "keyed by this release's split key and regenerate its private_eval instances")

    def key_candidate(self, where: str, path: str, raw: bytes) -> None:
        cand = raw.strip()
        if self.key_id and MIN_KEY_BYTES <= len(cand) <= MAX_KEY_BYTES and key_id(cand) == self.key_id:
            self.leaks.append(f"split key: {where}{f' ({path})' if path else ''}")

    def file(self, root: Path, path: Path) -> None:
        rel = path.relative_to(root).as_posix()
        if path.stat().st_size > MAX_SCAN_BYTES:  # fail closed: what cannot be read cannot be vouched for
            self.leaks.append(f"unchecked file: {rel} (larger than {MAX_SCAN_BYTES >> 20} MiB, not scanned)")
            return
        self.blob(rel, path.read_bytes())

    def blob(self, where: str, data: bytes) -> None:
        """Scan the bytes of a file, or of a layer decoded from one: keys, gzip, JSON documents, encoded words."""
        if data[:2] == b"\x1f\x8b" and self.depth < MAX_DEPTH:
            inflated = self.gunzip(where, data)
            if inflated is not None:
                self.layer(f"{where} (gzip)", inflated)
                return
        before = len(self.leaks)
        self.key_candidate(where, "", data)
        if len(self.leaks) == before:
            for n, line in enumerate(data.splitlines(), 1):
                if len(line.strip()) <= MAX_KEY_BYTES:
                    self.key_candidate(f"{where} line {n}", "", line)
                    for word in line.split():
                        if word != line.strip():
                            self.key_candidate(f"{where} line {n}", "", word)
                for word in line.split():
                    self.decoded(f"{where} line {n}", word)
        for at, doc in _documents(data):
            for p, v in _walk(doc, ""):
                self.value(f"{where}{f' {at}' if at else ''}", p, v)

    def decoded(self, where: str, raw: bytes) -> None:
        """Scan again what ``raw`` decodes to, when it is hex or base64 and the layers allow."""
        if self.depth >= MAX_DEPTH:
            return
        for name, data in _decodings(raw):
            self.layer(f"{where} ({name})", data)

    def layer(self, where: str, data: bytes) -> None:
        if len(data) > self.budget:
            self.leaks.append(f"unchecked file: {where} (its decoded layers pass {MAX_SCAN_BYTES >> 20} MiB)")
            return
        self.budget -= len(data)
        self.depth += 1
        try:
            self.blob(where, data)
        finally:
            self.depth -= 1

    def gunzip(self, where: str, data: bytes) -> bytes | None:
        """The inflated gzip stream(s) of ``data``, never more than the budget (None and a leak past it; None when
        it is no gzip stream after all, which is then scanned as it is)."""
        out: list[bytes] = []
        size, rest = 0, data
        try:
            while rest[:2] == b"\x1f\x8b":
                inflater = zlib.decompressobj(wbits=31)
                out.append(inflater.decompress(rest, self.budget - size + 1))
                size += len(out[-1])
                if size > self.budget or inflater.unconsumed_tail:
                    self.leaks.append(f"unchecked file: {where} (it inflates past {MAX_SCAN_BYTES >> 20} MiB)")
                    return None
                rest = inflater.unused_data
        except zlib.error:  # a stream cut or corrupt: what inflated is scanned, or else the bytes as they are
            return b"".join(out) or None
        return b"".join(out)


def referenced_hashes(record: dict[str, Any]) -> set[str]:
    """The sha256 hex digests a run record names (its tool log, its transcript): the side files that are its own."""
    return {v for _, v in _walk(record, "") if isinstance(v, str) and len(v) == 64
            and all(c in "0123456789abcdef" for c in v)}


def unlisted(scan_root: Path, files: list[Path], release_files: Iterable[str]) -> list[str]:
    """The files under ``scan_root`` nobody vouches for: in a package, those its SHA256SUMS does not list; in a
    release directory, those that are none of ``release_files`` (or of its side-file and figure directories)."""
    sums = scan_root / "SHA256SUMS"
    rels = [p.relative_to(scan_root).as_posix() for p in files]
    if sums.is_file():
        listed = {line.partition("  ")[2] for line in sums.read_text(encoding="utf-8", errors="replace").splitlines()}
        return [f"unlisted file: {r} (not in SHA256SUMS)" for r in rels if r not in listed and r != "SHA256SUMS"]
    known = set(release_files)
    return [f"unlisted file: {r} (none of a release's files)" for r in rels
            if r not in known and not r.startswith(RELEASE_DIRS)]


def sealing(scan_root: Path, manifest_path: Path, release_files: Iterable[str] = ()) -> dict[str, Any]:
    """The sealing check of every file under ``scan_root`` against the manifest's private_eval split
    (``release_files``: the names a release directory may hold, for the ``unlisted file`` check)."""
    manifest = read_json(manifest_path)
    scan = _Scan(manifest if isinstance(manifest, dict) else {})
    if isinstance(manifest, dict) and manifest.get("public_key"):
        scan.leaks.append("split key: the split was made with the public default key, which anyone holds (split "
                          "again with gf01 split --key-file)")
    files = sorted(p for p in scan_root.rglob("*") if p.is_file() and not p.is_symlink())
    for p in files:
        scan.file(scan_root, p)
    for p in files:
        rel = p.relative_to(scan_root).as_posix()
        if "runs.jsonl.d/" in rel and p.stem not in scan.public_logs:
            scan.leaks.append(f"private side file: {rel} (no public run record refers to it: a private run's tool "
                              "log or transcript?)")
    scan.leaks += unlisted(scan_root, files, release_files)
    leaks = list(dict.fromkeys(scan.leaks))  # in the order found: file by file, line by line
    out: dict[str, Any] = {"name": "sealing", "ok": not leaks, "files": len(files),
                           "private_instances": len(scan.ids), "leaks": leaks}
    if leaks:
        out["error"] = "the release leaks the private split: " + summary(leaks)
    return out


def summary(leaks: list[str]) -> str:
    """The leaks for one line: per kind, how many and where the first few are."""
    kinds: dict[str, list[str]] = {}
    for leak in leaks:
        kind, _, where = leak.partition(": ")
        kinds.setdefault(kind, []).append(where)
    parts = []
    for kind, wheres in kinds.items():
        shown = "; ".join(wheres[:SHOWN_PER_KIND]) + (f"; and {len(wheres) - SHOWN_PER_KIND} more"
                                                      if len(wheres) > SHOWN_PER_KIND else "")
        parts.append(f"{kind} x{len(wheres)}: {shown}" if len(wheres) > 1 else f"{kind}: {shown}")
    return "; ".join(parts)
