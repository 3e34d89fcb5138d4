"""Runs files: append-only JSON Lines of run records that survive a crash, kill -9 or Ctrl-C, with their side files.

A record is appended as one line, flushed and fsync'd before the next run starts, by a single writer (an exclusive
lock on the file, held while it is open: a second writer is refused, naming the first one's process), so a crash
can at worst leave a torn last line: opening the file again cuts it off (and says so), and removes the temporary
file of a side-file write it interrupted. A run id may appear more than once: a later record supersedes an earlier
one (a run recorded as ``harness_error`` is played again), and :meth:`RunsFile.final_ids` tells which runs are
done. Side files (tool logs, transcripts) are written, atomically and by content hash, into the directory
``<runs file>.d/``.

>>> from gf01_formal.agents.base import AgentSpec
>>> from gf01_formal.runs.runner import play_run
>>> from gf01_formal.scoring.scores import Scorer
>>> outcome = play_run(instance, problem, AgentSpec("oracle", "EVAL-OC"), seed=0, scorer=Scorer(problem))
>>> store = RunsFile("runs.jsonl")
>>> store.append(outcome).previous_signature is None  # as written: chained only when signed
True
>>> store.done(outcome.record.run_id)
True
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gf01_formal.artifacts import canonical_json, lock_exclusive, write_text_atomic
from gf01_formal.runs.record import FINAL_STATUSES, RUN_SCHEMA, RUN_SCHEMA_V1, RunOutcome, RunRecord
from hoa.errors import Gf01Error, quote
from hoa.files import iter_lines

if TYPE_CHECKING:
    from gf01_formal.runs.signing import Signer


class RunsFile:
    """One runs file, opened for appending (created when missing; a torn last line is cut off)."""

    def __init__(self, path: str | os.PathLike[str], *, signer: Signer | None = None) -> None:
        self.path = Path(path)
        #: The evaluator's key: each record appended is signed with it (runs/signing.py).
        self.signer = signer
        self.side_dir = Path(f"{self.path}.d")
        self._lock_fd: int | None = None
        # The lock first: what is done, and the torn tail, are only known while no one else writes.
        self._lock_fd = lock_exclusive(self.path)
        # A device (-o /dev/null) is written through: its records go where the device sends them, and side files
        # are not made beside it (no /dev/null.d).
        self.device = self._lock_fd is None
        try:
            # One read: the check returns the whole records, which also tell which runs are done.
            records = check_runs_file(self.path)
            self.repaired = cut_torn_tail(self.path)
        except BaseException:
            self.close()
            raise
        self._sweep()
        #: The signature of the file's last record (what the next signed record chains to; runs/signing.py).
        self.previous = chain_link(records[-1] if records and not self.device else None)
        last = {r["run_id"]: r for r in records if isinstance(r.get("run_id"), str)}
        self._final = {rid for rid, rec in last.items() if rec.get("status") in FINAL_STATUSES}
        self._gold_sets = {rec.get("gold_set") for rec in last.values() if rec.get("status") in FINAL_STATUSES}

    def check_gold_set(self, gold_set: str) -> None:
        """A Gf01Error when the file's finished runs ranked their gold in another set: resuming would mix two."""
        other = sorted(g for g in self._gold_sets if g != gold_set and g is not None)
        if other:
            raise Gf01Error(f"holds runs scored with --gold-set {other[0]}, not {gold_set}: resume with the same "
                            "gold set, or write to a new runs file", file=quote(os.fspath(self.path), 200, bare=True),
                            field="--gold-set")

    def close(self) -> None:
        """Release the lock (another writer may then open the file)."""
        if getattr(self, "_lock_fd", None) is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> RunsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _sweep(self) -> None:
        """Remove the temporary files of side-file writes that a kill -9 interrupted (one writer: none is live)."""
        if not self.device and self.side_dir.is_dir():
            for tmp in self.side_dir.rglob(".*.tmp"):
                tmp.unlink(missing_ok=True)

    def done(self, run_id: str) -> bool:
        """Whether the run has a final record (completed or agent_error)."""
        return run_id in self._final

    def final_ids(self) -> set[str]:
        """The run ids with a final record."""
        return set(self._final)

    def append(self, outcome: RunOutcome) -> RunRecord:
        """Write the outcome's side files, then append its record as one line (flushed and fsync'd); returns the
        record as written (with a signer: chained to the line before it, and signed)."""
        for rel, text in sorted(outcome.side_files.items()):
            target = self.side_dir / rel
            if not self.device and not target.exists():
                write_text_atomic(target, text)
        record = outcome.record
        if self.signer is not None:
            from gf01_formal.runs.signing import sign

            record = sign(record.model_copy(update={"previous_signature": self.previous}), self.signer)
        line = canonical_json(record.to_json()) + "\n"
        try:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                if not self.device:  # fsync of a character device is EINVAL
                    os.fsync(fh.fileno())
        except OSError as ex:
            raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=str(self.path)) from None
        self.previous = chain_link(record.to_json())
        if outcome.record.status in FINAL_STATUSES:
            self._final.add(outcome.record.run_id)
        return record


def chain_link(obj: dict[str, Any] | None) -> str:
    """What the record after ``obj`` names as its ``previous_signature``: ``obj``'s signature (hex), '' for no
    record or an unsigned one. A signature is unique to its record, and checked on it (runs/signing.py)."""
    sig = obj.get("signature") if obj is not None else None
    return str(sig.get("sig", "")) if isinstance(sig, dict) else ""


def check_runs_file(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The whole records of ``path`` (none when it is missing or empty); a Gf01Error unless it holds run records of
    this toolkit only (its last line may be torn). Appending to another file (a bundle, the peer's records, any JSON
    Lines) would first cut its "torn" tail, that is destroy it, and then mix records into it."""
    target = Path(path)
    if not target.is_file() or target.stat().st_size == 0:
        return []
    name = quote(os.fspath(path), 200, bare=True)
    hint = f"not a runs file (gf01-formal run records, {RUN_SCHEMA}): give a new file or a runs file"
    records: list[dict[str, Any]] = []
    tail, number = "", 0
    # Line by line: memory holds the records, never a buffer sized for the largest file there could be.
    for number, line in enumerate(iter_lines(target), start=1):
        if not line.endswith("\n"):  # only the last line lacks its newline: torn, or whole but unterminated
            tail = line
            break
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            raise Gf01Error(f"{hint} (this line is not JSON)", file=name, line=number) from None
        if not isinstance(obj, dict) or obj.get("schema_version") != RUN_SCHEMA:
            found = obj.get("schema_version") if isinstance(obj, dict) else None
            if found == RUN_SCHEMA_V1:
                # v1 records ranked their gold in M_B(I): new records beside them would mix two gold sets.
                raise Gf01Error(f"holds {RUN_SCHEMA_V1} records (best match over M_B(I)); new records are "
                                f"{RUN_SCHEMA}: write them to a new runs file (reports and validate read both)",
                                file=name, line=number)
            raise Gf01Error(f"{hint} (this line's schema_version is {quote(found, 60)})", file=name,
                            line=number)
        records.append(obj)
    # A torn last line is the start of a record that was being written: canonical JSON, so it begins with '{"'.
    if tail and not tail.startswith('{"'):
        raise Gf01Error(f"{hint} (its last line is neither a record nor the start of one)", file=name,
                        line=number)
    if tail:
        try:
            obj = json.loads(tail)
        except (ValueError, RecursionError):
            return records
        if not isinstance(obj, dict) or obj.get("schema_version") != RUN_SCHEMA:
            raise Gf01Error(f"{hint} (its last line is a JSON value of another kind)", file=name, line=number)
    return records


def cut_torn_tail(path: str | os.PathLike[str]) -> int:
    """Cut the torn last line (no newline at the end) of a JSON Lines file written line by line; returns the bytes
    cut (0 when the file is whole or missing). Any append-only journal shares this repair."""
    target = Path(path)
    if not target.exists():
        return 0
    with target.open("rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size == 0:
            return 0
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return 0
        # Read backwards to the last newline: everything after it is a record that was never finished.
        pos, chunk = size, 1 << 16
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            block = fh.read(pos - start)
            cut = block.rfind(b"\n")
            if cut >= 0:
                pos = start + cut + 1
                break
            pos = start
        fh.truncate(pos)
        fh.flush()
        os.fsync(fh.fileno())
        return size - pos


def read_records(path: str | os.PathLike[str]) -> list[tuple[int, dict[str, Any]]]:
    """:func:`read_lines` of a file that must hold at least one record (an empty file is a Gf01Error naming it)."""
    rows = list(read_lines(path))
    if not rows:
        raise Gf01Error("holds no run record (an empty runs file)", file=quote(os.fspath(path), 200, bare=True))
    return rows


def read_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The (line number, decoded object) pairs of a JSON Lines file; a bad line is a Gf01Error naming it."""
    name = quote(os.fspath(path), 200, bare=True)
    for number, line in enumerate(iter_lines(path), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as ex:
            raise Gf01Error(f"not a JSON object: {quote(str(ex), 80, bare=True)}", file=name, line=number) from None
        if not isinstance(obj, dict):
            raise Gf01Error("not a JSON object", file=name, line=number)
        yield number, obj


def latest(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The last record of each run id in a runs file (missing file: none)."""
    if not Path(path).exists():
        return {}
    out: dict[str, dict[str, Any]] = {}
    for _, obj in read_lines(path):
        rid = obj.get("run_id")
        if isinstance(rid, str):
            out[rid] = obj
    return out
