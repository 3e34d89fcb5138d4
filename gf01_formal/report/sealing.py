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
- ``unchecked file``: a file larger than 256 MiB, which is not read (the check fails closed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
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


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, value
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _walk(value[k], f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")


def _documents(path: Path, data: bytes) -> Iterator[tuple[str, Any]]:
    """(where, JSON value) of a .json file or of each line of a .jsonl file; nothing for other files."""
    if path.suffix == ".json":
        try:
            yield "", json.loads(data)
        except ValueError:
            return
    elif path.suffix == ".jsonl":
        for n, line in enumerate(data.splitlines(), 1):
            try:
                yield f"line {n}", json.loads(line)
            except ValueError:
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

    def _is_private(self, obj: dict[str, Any]) -> bool:
        return (obj.get("split_id") == "private_eval" or str(obj.get("instance_id")) in self.ids
                or str(obj.get("instance_hash")) in self.hashes or str(obj.get("content_hash")) in self.hashes)

    def value(self, where: str, path: str, obj: Any) -> None:
        """Look at one JSON value (every value of every document passes here)."""
        if isinstance(obj, str):
            self.key_candidate(where, path, obj.encode("utf-8", "surrogatepass"))
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
        data = path.read_bytes()
        before = len(self.leaks)
        self.key_candidate(rel, "", data)
        if len(self.leaks) == before:
            for n, line in enumerate(data.splitlines(), 1):
                if len(line.strip()) <= MAX_KEY_BYTES:
                    self.key_candidate(f"{rel} line {n}", "", line)
                    for word in line.split():
                        if word != line.strip():
                            self.key_candidate(f"{rel} line {n}", "", word)
        for where, doc in _documents(path, data):
            for p, v in _walk(doc, ""):
                self.value(f"{rel}{f' {where}' if where else ''}", p, v)


def referenced_hashes(record: dict[str, Any]) -> set[str]:
    """The sha256 hex digests a run record names (its tool log, its transcript): the side files that are its own."""
    return {v for _, v in _walk(record, "") if isinstance(v, str) and len(v) == 64
            and all(c in "0123456789abcdef" for c in v)}


def sealing(scan_root: Path, manifest_path: Path) -> dict[str, Any]:
    """The sealing check of every file under ``scan_root`` against the manifest's private_eval split."""
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
