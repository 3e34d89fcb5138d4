"""Every command against a matrix of bad inputs: one line on stderr naming the file or option, the documented exit
status, no traceback, and nothing left behind where outputs go.

The matrix is :data:`CASES`, one row per (command, bad input). A command added to the CLI joins by adding rows:
:func:`test_every_command_has_rows` walks the command tree and fails for a command without any. Rows run in-process
through :func:`gf01_formal.cli.main` (a 10 MB argument cannot be passed to a child process); a few run as a real
process as well, to see exactly what a user sees.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gf01_formal.artifacts import sha256_hex
from gf01_formal.cli import app, main
from gf01_formal.instances.model import content_id, content_of

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "gf01_formal" / "examples"
HUGE = "x" * (10 << 20)  # a 10 MB file name or argument
#: How a message names a 10 MB input: cut, then its length, "(10485760 characters)" (a little more when it is quoted
#: or joined to a file name).
HUGE_NAMED = " (104857"
TRACE = "r0&!r1;!r0&!r1;!r0&!r1;!r0&r1"  # the arbiter's inputs are r0, r1; its outputs g0, g1


@dataclass
class Workspace:
    """The files a row may name: good inputs, bad inputs, and where outputs go (which must stay empty)."""

    root: Path
    out: Path  # every output of a row goes here (or below): it must be empty after the row
    unwritable: Path  # an existing directory nothing can be written into

    @property
    def instance(self) -> str:
        return str(EXAMPLES / "arbiter_priority.json")

    @property
    def cert(self) -> str:
        return str(EXAMPLES / "arbiter_priority_cert.json")

    @property
    def hoa(self) -> str:
        return str(EXAMPLES / "arbiter.hoa")

    @property
    def bundle(self) -> str:
        """A bundle holding the example instance alone."""
        return str(self.root / "bundle.json")

    @property
    def aiger(self) -> str:
        """A good AIGER circuit (a 2-entry FIFO: inputs push, pop, d0; outputs empty, full, q0, overflow)."""
        return str(self.root / "fifo.aag")

    @property
    def runs(self) -> str:
        """A good runs file (the random agent on the example instance)."""
        return str(self.root / "runs.jsonl")

    @property
    def peer_runs(self) -> str:
        """A good peer runs file (one row in the peer's format on the example instance; no corpus needed)."""
        return str(self.root / "peer_runs.jsonl")

    @property
    def pilot(self) -> str:
        """A pilot file over the example instance, with its key."""
        return str(self.root / "pilot" / "pilot.json")

    @property
    def pilot_without_key(self) -> str:
        return str(self.root / "pilot" / "keyless.json")

    @property
    def manifest(self) -> str:
        """A split manifest listing the example instance (of ``bundle``)."""
        return str(self.root / "manifest.json")

    @property
    def tokens(self) -> str:
        """A tokens file with one team's token (``remote-token``)."""
        return str(self.root / "tokens.json")

    @property
    def receipts(self) -> str:
        """A receipt of the run in ``runs``, signed with ``signing.key``."""
        return str(self.root / "receipts.jsonl")

    def copy(self, name: str) -> str:
        """A copy of an input (``instance.json``, ``arbiter.hoa``, ``runs.jsonl``) that a row may name as an output
        too: a command that wrote it anyway would destroy a copy, not the example itself."""
        return str(self.root / "copies" / name)

    def bad(self, kind: str) -> str:
        """The path of bad input ``kind`` (one of :data:`BAD_FILES`)."""
        return str(self.root / "bad" / kind)


def _instance_with(**fields: object) -> str:
    """The example instance with ``fields`` changed, its hash and id recomputed so that the field's own check runs."""
    data = json.loads((EXAMPLES / "arbiter_priority.json").read_text())
    data.update(fields)
    digest = sha256_hex(content_of(data))
    return json.dumps({**data, "content_hash": digest, "instance_id": content_id(digest)})


#: Bad input files: name -> contents (None: no such file; "dir": a directory; "fifo": a FIFO nobody writes).
BAD_FILES: dict[str, bytes | str | None] = {
    "missing": None,
    "directory": "dir",
    "fifo": "fifo",
    "empty": b"",
    "binary": b"\x00\x01\x02\xff binary",
    "non-utf8": '{"effect": "caf\xe9"}'.encode("latin-1"),
    "invalid-json": b'{"effect": ',
    "list-for-object": b"[1, 2, 3]",
    "string-t-star": _instance_with(t_star="21").encode(),
    "huge-t-star": _instance_with(t_star=10**30).encode(),
    "5000-digit-int": b'{"t_star": ' + b"9" * 5000 + b"}",
    "deep-json": b"[" * 100_000 + b"]" * 100_000,
    "deep-effect": _instance_with(effect="!" * 1000 + "g0").encode(),
    "deep-parens": _instance_with(effect="(" * 1000 + "g0" + ")" * 1000).encode(),
}
#: What the one error line says for each bad file (besides naming it).
SAYS = {
    "missing": "cannot read",
    "directory": "is a directory",
    "fifo": "FIFO",
    "empty": "",
    "binary": "binary data",
    "non-utf8": "not UTF-8",
    "invalid-json": "",
    "list-for-object": "",
    "string-t-star": "",
    "huge-t-star": "",
    "5000-digit-int": "",
    "deep-json": "",
    "deep-effect": "",
    "deep-parens": "",
}
UNREADABLE = ("missing", "directory", "fifo", "binary", "non-utf8")


@dataclass(frozen=True)
class Case:
    """One row: a command run with one bad input, and what it must answer."""

    command: str  # the command as typed, e.g. "hoa check" or "import peer"
    bad: str  # what is wrong, for the test id
    argv: Callable[[Workspace], list[str]]
    names: Callable[[Workspace], str]  # what the error line (stdout for a verdict) must contain: a file or an option
    status: int = 2

    @property
    def id(self) -> str:
        return f"{self.command}: {self.bad}"


def _file_rows(command: str, slot: str, argv: Callable[[Workspace, str], list[str]],
               status: Callable[[str], int] = lambda kind: 2) -> list[Case]:
    """One row per bad file given in ``slot`` (an argument or an option) of ``command``, plus the 10 MB name."""
    rows = [Case(command, f"{slot} {kind}", lambda ws, k=kind: argv(ws, ws.bad(k)),
                 lambda ws, k=kind: ws.bad(k), status(kind)) for kind in BAD_FILES]
    rows.append(Case(command, f"{slot} 10 MB name", lambda ws: argv(ws, HUGE), lambda ws: HUGE_NAMED))
    return rows


def _output_rows(command: str, slot: str, argv: Callable[[Workspace, str], list[str]]) -> list[Case]:
    """Rows for an output (file or directory) in ``slot`` that cannot be written."""
    return [
        Case(command, f"{slot} in an unwritable directory", lambda ws: argv(ws, str(ws.unwritable / "o" / "x.json")),
             lambda ws: str(ws.unwritable / "o" / "x.json")),
        Case(command, f"{slot} under a regular file", lambda ws: argv(ws, str(ws.out / "file" / "x.json")),
             lambda ws: str(ws.out / "file" / "x.json")),
        Case(command, f"{slot} 10 MB name", lambda ws: argv(ws, HUGE), lambda ws: HUGE_NAMED),
    ]


def _is_a_directory(command: str, slot: str, argv: Callable[[Workspace, str], list[str]]) -> Case:
    return Case(command, f"{slot} is a directory", lambda ws: argv(ws, str(ws.out / "dir")),
                lambda ws: str(ws.out / "dir"))


def _is_an_input(command: str, argv: Callable[[Workspace], list[str]]) -> Case:
    """A row whose output is one of the command's inputs: refused before anything is written."""
    return Case(command, "output is an input", argv, lambda ws: "is also an input")


def _option(command: str, bad: str, argv: Callable[[Workspace], list[str]], names: str) -> Case:
    return Case(command, bad, argv, lambda ws: names)


def _hoa_flags(*extra: str) -> list[str]:
    return ["--trace", TRACE, "--effect", "g0", *extra]


def _aiger_flags(*extra: str) -> list[str]:
    return ["--trace", "push&!pop&!d0;push&!pop&!d0;!push&!pop&!d0", "--effect", "overflow", *extra]


# A check's verdict on a file it could read is exit 1 (on stdout); a certificate that is not one is scored (exit 0).
_check_status = lambda kind: 2 if kind in UNREADABLE else 1  # noqa: E731
_cert_status = lambda kind: 2 if kind in (*UNREADABLE, "empty", "invalid-json", "5000-digit-int", "deep-json") else 0  # noqa: E731
_certs_status = lambda kind: 0 if kind == "empty" else 2  # noqa: E731 - no line, no certificate

CASES: list[Case] = [
    *_file_rows("hoa check", "FILE", lambda ws, f: ["hoa", "check", f], _check_status),
    *_file_rows("hoa print", "FILE", lambda ws, f: ["hoa", "print", f]),
    *_file_rows("hoa mealy", "FILE", lambda ws, f: ["hoa", "mealy", f]),
    _option("hoa mealy", "--outputs 10 MB", lambda ws: ["hoa", "mealy", ws.hoa, "--outputs", HUGE], "output 'xxx"),
    *_file_rows("verify", "INSTANCE", lambda ws, f: ["verify", f, ws.cert]),
    *_file_rows("verify", "CERT", lambda ws, f: ["verify", ws.instance, f], _cert_status),
    *_file_rows("verify", "--certs", lambda ws, f: ["verify", ws.instance, "--certs", f], _certs_status),
    _option("verify", "--seconds -1", lambda ws: ["verify", ws.instance, ws.cert, "--seconds", "-1"], "--seconds"),
    _option("verify", "--gold-set X", lambda ws: ["verify", ws.instance, ws.cert, "--best-match", "--gold-set", "X"],
            "--gold-set"),
    _option("verify", "--id 10 MB", lambda ws: ["verify", ws.instance, ws.cert, "--id", HUGE], HUGE_NAMED),
    _option("verify", "--trace-file and --trace", lambda ws: ["verify", ws.hoa, ws.cert, *_hoa_flags(),
                                                              "--trace-file", ws.cert], "--trace"),
    *_file_rows("enumerate", "INSTANCE", lambda ws, f: ["enumerate", f]),
    _option("enumerate", "--limit -1", lambda ws: ["enumerate", ws.instance, "--limit", "-1"], "--limit"),
    _option("enumerate", "--sample on another backend", lambda ws: ["enumerate", ws.instance, "--sample", "2",
                                                                     "--backend", "bdd"], "--backend"),
    _option("enumerate", "--window 0 in normal mode",
            lambda ws: ["enumerate", ws.hoa, *_hoa_flags("--mode", "normal", "--window", "0")], "--window"),
    _option("enumerate", "--effect with 1000 '!'",
            lambda ws: ["enumerate", ws.hoa, "--trace", TRACE, "--effect", "!" * 1000 + "g0"], "effect"),
    *_file_rows("oracle", "INSTANCE", lambda ws, f: ["oracle", f]),
    _option("oracle", "--trace 10 MB literal", lambda ws: ["oracle", ws.hoa, "--trace", HUGE, "--effect", "g0"],
            "trace"),
    _option("oracle", "--effect 10 MB", lambda ws: ["oracle", ws.hoa, "--trace", TRACE, "--effect", HUGE], "effect"),
    _option("oracle", "--effect with 1000 '('",
            lambda ws: ["oracle", ws.hoa, "--trace", TRACE, "--effect", "(" * 1000 + "g0" + ")" * 1000], "effect"),
    _option("oracle", "--t-star 10**30", lambda ws: ["oracle", ws.hoa, *_hoa_flags("--t-star", str(10**30))],
            "t_star"),
    _option("oracle", "--t-star of 5000 digits", lambda ws: ["oracle", ws.hoa, *_hoa_flags("--t-star", "9" * 5000)],
            "--t-star"),
    _option("oracle", "--budget-t -1", lambda ws: ["oracle", ws.hoa, *_hoa_flags("--budget-t", "-1")], "budget_t"),
    _option("oracle", "--seconds -1", lambda ws: ["oracle", ws.instance, "--seconds", "-1"], "--seconds"),
    _option("oracle", "--window in hard mode", lambda ws: ["oracle", ws.hoa, *_hoa_flags("--window", "2")], "window"),
    *_file_rows("sim", "INSTANCE", lambda ws, f: ["sim", f]),
    *_file_rows("sim", "CERT", lambda ws, f: ["sim", ws.instance, f]),
    *_output_rows("sim", "--vcd", lambda ws, o: ["sim", ws.instance, ws.cert, "--vcd", o]),
    _is_a_directory("sim", "--witness", lambda ws, o: ["sim", ws.aiger, *_aiger_flags(), "--witness", o]),
    _is_an_input("sim", lambda ws: ["sim", ws.copy("instance.json"), "--vcd", ws.copy("instance.json")]),
    _option("sim", "--witness of an HOA controller",
            lambda ws: ["sim", ws.instance, ws.cert, "--witness", str(ws.out / "w.aag")], "--witness"),
    _option("sim", "--witness of an effect that is not a property",
            lambda ws: ["sim", ws.aiger, "--trace", "push&!pop&!d0;push&!pop&!d0;!push&!pop&!d0", "--effect",
                        "overflow | full", "--witness", str(ws.out / "w.aag")], "--witness"),
    *_file_rows("cnf", "INSTANCE", lambda ws, f: ["cnf", f, str(ws.out / "x.cnf")]),
    *_output_rows("cnf", "OUT", lambda ws, o: ["cnf", ws.instance, o]),
    _is_a_directory("cnf", "OUT", lambda ws, o: ["cnf", ws.instance, o]),
    *_file_rows("generate", "--cfg", lambda ws, f: ["generate", "--count", "1", "--cfg", f,
                                                    "-o", str(ws.out / "b.json")]),
    *_output_rows("generate", "-o", lambda ws, o: ["generate", "--count", "1", "-o", o]),
    _is_a_directory("generate", "-o", lambda ws, o: ["generate", "--count", "1", "-o", o]),
    _option("generate", "--jobs 0", lambda ws: ["generate", "--jobs", "0", "-o", str(ws.out / "b.json")], "--jobs"),
    _option("generate", "--count -1", lambda ws: ["generate", "--count", "-1", "-o", str(ws.out / "b.json")],
            "--count"),
    # Huge numbers: refused in one line, not an overflow in poll(), a semaphore or a pool of 10^11 workers.
    _option("generate", "--jobs 1e11", lambda ws: ["generate", "--jobs", "100000000000", "-o",
                                                   str(ws.out / "b.json")], "--jobs"),
    _option("generate", "--count 1e20", lambda ws: ["generate", "--count", str(10**20), "-o", str(ws.out / "b.json")],
            "--count"),
    _option("enumerate", "--seconds 1e9", lambda ws: ["enumerate", ws.instance, "--count", "--seconds", "1e9"],
            "--seconds"),
    _option("verify", "--seconds inf", lambda ws: ["verify", ws.instance, ws.cert, "--seconds", "inf"], "--seconds"),
    _option("verify", "--memory 0", lambda ws: ["verify", ws.instance, ws.cert, "--memory", "0"], "--memory"),
    _option("generate", "--slot-seconds -1", lambda ws: ["generate", "-o", str(ws.out / "g.json"), "--count", "1",
                                                         "--slot-seconds", "-1"], "--slot-seconds"),
    _option("enumerate", "--memory lots", lambda ws: ["enumerate", ws.instance, "--count", "--memory", "lots"],
            "--memory"),
    _option("evaluate", "--diagnostic-seconds 1e12", lambda ws: ["evaluate", ws.instance, "--agent", "random",
                                                                 "--subset-min", "--diagnostic-seconds", "1e12", "-o",
                                                                 str(ws.out / "r.jsonl")], "--diagnostic-seconds"),
    _option("campaign", "--jobs 1e11", lambda ws: ["campaign", ws.instance, "--agents", "random", "--jobs",
                                                   "100000000000", "-o", str(ws.out / "c")], "--jobs"),
    _option("generate", "cfg with a huge family range", lambda ws: ["generate", "--count", "1", "--cfg", str(
        ws.root / "cfg-huge.json"), "-o", str(ws.out / "b.json")], "families[0].states"),
    _option("generate", "cfg with a string for a number", lambda ws: ["generate", "--count", "1", "--cfg", str(
        ws.root / "cfg-string.json"), "-o", str(ws.out / "b.json")], "families[0].states"),
    *_file_rows("import peer", "BUNDLE", lambda ws, f: ["import", "peer", f, "-o", str(ws.out / "p.json")]),
    *_output_rows("import peer", "-o", lambda ws, o: ["import", "peer", ws.instance, "-o", o]),
    _is_a_directory("import peer", "-o", lambda ws, o: ["import", "peer", ws.instance, "-o", o]),
    *_file_rows("import hoa", "SYSTEM", lambda ws, f: ["import", "hoa", f, *_hoa_flags(), "-o",
                                                       str(ws.out / "i.json")]),
    *_file_rows("import hoa", "--trace-file", lambda ws, f: ["import", "hoa", ws.hoa, "--trace-file", f, "--effect",
                                                             "g0", "-o", str(ws.out / "i.json")]),
    *_output_rows("import hoa", "-o", lambda ws, o: ["import", "hoa", ws.hoa, *_hoa_flags(), "-o", o]),
    _is_a_directory("import hoa", "-o", lambda ws, o: ["import", "hoa", ws.hoa, *_hoa_flags(), "-o", o]),
    _option("import hoa", "--window 0 in normal mode", lambda ws: ["import", "hoa", ws.hoa, *_hoa_flags(
        "--mode", "normal", "--window", "0"), "-o", str(ws.out / "i.json")], "--window"),
    _option("import hoa", "--seconds -1", lambda ws: ["import", "hoa", ws.hoa, *_hoa_flags("--seconds", "-1"),
                                                      "-o", str(ws.out / "i.json")], "--seconds"),
    *_file_rows("import aiger", "CIRCUIT", lambda ws, f: ["import", "aiger", f, *_aiger_flags(), "-o",
                                                          str(ws.out / "i.json")]),
    *_output_rows("import aiger", "-o", lambda ws, o: ["import", "aiger", ws.aiger, *_aiger_flags(), "-o", o]),
    _is_a_directory("import aiger", "-o", lambda ws, o: ["import", "aiger", ws.aiger, *_aiger_flags(), "-o", o]),
    _option("import aiger", "malformed AIGER", lambda ws: ["import", "aiger", str(ws.root / "bad.aag"),
                                                           *_aiger_flags(), "-o", str(ws.out / "i.json")],
            "bad.aag:2: latch 0: reset 3 is neither 0, 1 nor the latch's literal 2"),
    _option("import aiger", "--observe an unknown latch", lambda ws: ["import", "aiger", ws.aiger, *_aiger_flags(
        "--observe", "nope"), "-o", str(ws.out / "i.json")], "--observe 'nope'"),
    _option("import aiger", "--outputs", lambda ws: ["import", "aiger", ws.aiger, *_aiger_flags(
        "--outputs", "full"), "-o", str(ws.out / "i.json")], "--outputs is for HOA files"),
    _option("import aiger", "--effect on an unknown output", lambda ws: ["import", "aiger", ws.aiger, "--trace",
                                                                         "push&pop&d0", "--effect", "g0", "-o",
                                                                         str(ws.out / "i.json")], "g0"),
    _option("import aiger", "--trace of another circuit", lambda ws: ["import", "aiger", ws.aiger, *_hoa_flags(),
                                                                      "-o", str(ws.out / "i.json")], "trace"),
    *_file_rows("split", "BUNDLE", lambda ws, f: ["split", f, "-o", str(ws.out / "s.json"), "--manifest",
                                                  str(ws.out / "m.json")]),
    *_output_rows("split", "-o", lambda ws, o: ["split", ws.instance, "-o", o, "--manifest", str(ws.out / "m.json")]),
    *_output_rows("split", "--manifest", lambda ws, o: ["split", ws.instance, "-o", str(ws.out / "s.json"),
                                                        "--manifest", o]),
    _is_a_directory("split", "--manifest", lambda ws, o: ["split", ws.instance, "-o", str(ws.out / "s.json"),
                                                          "--manifest", o]),
    *[Case("split", f"--key-file {kind}", lambda ws, k=kind: ["split", ws.instance, "-o", str(ws.out / "s.json"),
                                                              "--manifest", str(ws.out / "m.json"), "--key-file",
                                                              ws.bad(k)], lambda ws, k=kind: ws.bad(k))
      for kind in ("missing", "directory", "empty")],
    _option("split", "a size the split policy cannot meet",
            lambda ws: ["split", str(ws.root / "bundle-of-one.json"), "-o", str(ws.out / "s.json"), "--manifest",
                        str(ws.out / "m.json")], "cannot meet gf01.split_policy.v1"),
    *[Case("generate", f"--key-file {kind}", lambda ws, k=kind: ["generate", "--count", "1", "--key-file", ws.bad(k),
                                                                 "-o", str(ws.out / "b.json")],
           lambda ws, k=kind: ws.bad(k)) for kind in ("missing", "directory", "empty")],
    _option("split", "--release under a regular file", lambda ws: ["split", ws.instance, "-o", str(ws.out / "s.json"),
            "--manifest", str(ws.out / "m.json"), "--release", str(ws.out / "file" / "r")], "file"),
    *_file_rows("split-policy-check", "MANIFEST", lambda ws, f: ["split-policy-check", f]),
    _option("split-policy-check", "--tolerance -1", lambda ws: ["split-policy-check", ws.instance, "--tolerance",
                                                                "-1"], "--tolerance"),
    *_output_rows("export-schemas", "DIR", lambda ws, o: ["export-schemas", o]),
    Case("export-schemas", "DIR is a file", lambda ws: ["export-schemas", str(ws.out / "file")],
         lambda ws: str(ws.out / "file")),
    *_file_rows("evaluate", "BUNDLE", lambda ws, f: ["evaluate", f, "--agent", "random", "-o",
                                                     str(ws.out / "r.jsonl")]),
    *_output_rows("evaluate", "-o", lambda ws, o: ["evaluate", ws.instance, "--agent", "random", "-o", o]),
    _is_a_directory("evaluate", "-o", lambda ws, o: ["evaluate", ws.instance, "--agent", "random", "-o", o]),
    _option("evaluate", "no agent", lambda ws: ["evaluate", ws.instance, "-o", str(ws.out / "r.jsonl")], "--agent"),
    _option("evaluate", "--agent nobody", lambda ws: ["evaluate", ws.instance, "--agent", "nobody", "-o",
                                                      str(ws.out / "r.jsonl")], "nobody"),
    _option("evaluate", "--agent-cmd that cannot start", lambda ws: ["evaluate", ws.instance, "--agent-cmd",
                                                                     "/nonexistent/agent", "-o",
                                                                     str(ws.out / "r.jsonl")], "/nonexistent/agent"),
    _option("evaluate", "--jobs 0", lambda ws: ["evaluate", ws.instance, "--agent", "random", "--jobs", "0", "-o",
                                                str(ws.out / "r.jsonl")], "--jobs"),
    _option("evaluate", "--executor nowhere", lambda ws: ["evaluate", ws.instance, "--agent", "random",
                                                          "--executor", "nowhere", "-o", str(ws.out / "r.jsonl")],
            "--executor"),
    _option("evaluate", "--executor dask://host:0", lambda ws: ["evaluate", ws.instance, "--agent", "random",
                                                                "--executor", "dask://host:0", "-o",
                                                                str(ws.out / "r.jsonl")], "--executor"),
    _option("evaluate", "--step-timeout 0", lambda ws: ["evaluate", ws.instance, "--agent-cmd", "python3", "-o",
                                                        str(ws.out / "r.jsonl"), "--step-timeout", "0"],
            "--step-timeout"),
    _option("evaluate", "--agent llm without --model", lambda ws: ["evaluate", ws.instance, "--agent", "llm", "-o",
                                                                   str(ws.out / "r.jsonl")], "--model"),
    *_file_rows("validate", "RUNS", lambda ws, f: ["validate", f]),
    *_file_rows("validate", "--bundle", lambda ws, f: ["validate", ws.runs, "--bundle", f]),
    *_file_rows("validate", "--key", lambda ws, f: ["validate", ws.runs, "--key", f]),
    _option("validate", "--key /dev/zero", lambda ws: ["validate", ws.runs, "--key", "/dev/zero"], "/dev/zero"),
    _option("validate", "--key a split key", lambda ws: ["validate", ws.runs, "--key", str(ws.root / "split.key")],
            "not a PEM public key"),
    *_file_rows("evaluate", "--sign-key", lambda ws, f: ["evaluate", ws.instance, "--agent", "random", "--sign-key",
                                                         f, "-o", str(ws.out / "r.jsonl")]),
    _option("evaluate", "--sign-key a public key", lambda ws: ["evaluate", ws.instance, "--agent", "random",
                                                               "--sign-key", str(ws.root / "signing.key.pub"), "-o",
                                                               str(ws.out / "r.jsonl")], "private key"),
    *_output_rows("key new", "-o", lambda ws, o: ["key", "new", "-o", o]),
    _is_a_directory("key new", "-o", lambda ws, o: ["key", "new", "-o", o]),
    _option("key new", "-o an existing file", lambda ws: ["key", "new", "-o", str(ws.out / "file")], "exists already"),
    _option("key new", "--kind signing -o an existing file", lambda ws: ["key", "new", "--kind", "signing", "-o",
                                                                          str(ws.out / "file")], "exists already"),
    _option("key new", "--kind nonsense", lambda ws: ["key", "new", "--kind", "nonsense", "-o",
                                                      str(ws.out / "k")], "--kind"),
    *[Case("split", f"--key-file {name}", lambda ws, k=key: ["split", ws.instance, "-o", str(ws.out / "s.json"),
                                                             "--manifest", str(ws.out / "m.json"), "--key-file",
                                                             k(ws)], lambda ws, k=key: k(ws))
      for name, key in (("fifo", lambda ws: ws.bad("fifo")), ("/dev/zero", lambda ws: "/dev/zero"),
                        ("16 identical letters", lambda ws: str(ws.root / "weak.key")),
                        ("of 200 kB", lambda ws: ws.bad("deep-json")))],
    _option("validate", "--official without --bundle", lambda ws: ["validate", ws.runs, "--official"], "--bundle"),
    _option("validate", "--official --gold-set MB", lambda ws: ["validate", ws.runs, "--bundle", ws.instance,
                                                                "--official", "--gold-set", "MB"], "--gold-set"),
    _option("evaluate", "--gold-set X", lambda ws: ["evaluate", ws.instance, "--agent", "random", "--gold-set", "X",
                                                    "-o", str(ws.out / "r.jsonl")], "--gold-set"),
    _option("evaluate", "--memory 0", lambda ws: ["evaluate", ws.instance, "--agent", "random", "--memory", "0",
                                                   "-o", str(ws.out / "r.jsonl")], "--memory"),
    _option("evaluate", "--memory lots", lambda ws: ["evaluate", ws.instance, "--agent", "random", "--memory", "lots",
                                                     "-o", str(ws.out / "r.jsonl")], "--memory"),
    _option("pilot-analyze", "--reference nobody", lambda ws: ["pilot-analyze", ws.runs, "--bundle", ws.bundle,
                                                               "--reference", "nobody", "-o", str(ws.out / "a.json")],
            "--reference"),
    *_file_rows("import runs", "PEER_RUNS", lambda ws, f: ["import", "runs", f, "--bundle", ws.instance, "-o",
                                                           str(ws.out / "r.jsonl")]),
    *_file_rows("import runs", "--bundle", lambda ws, f: ["import", "runs", ws.peer_runs, "--bundle", f, "-o",
                                                          str(ws.out / "r.jsonl")]),
    *_output_rows("import runs", "-o", lambda ws, o: ["import", "runs", ws.peer_runs, "--bundle", ws.instance,
                                                      "-o", o]),
    *_file_rows("import inspect", "LOG", lambda ws, f: ["import", "inspect", f, "-o", str(ws.out / "r.jsonl")]),
    *_output_rows("import inspect", "-o", lambda ws, o: ["import", "inspect", ws.bad("empty"), "-o", o]),
    *_file_rows("report", "RUNS", lambda ws, f: ["report", f, "-o", str(ws.out / "r.json")]),
    *_file_rows("report", "--manifest", lambda ws, f: ["report", ws.runs, "--manifest", f, "-o",
                                                       str(ws.out / "r.json")]),
    *_output_rows("report", "-o", lambda ws, o: ["report", ws.runs, "-o", o]),
    _is_a_directory("report", "-o", lambda ws, o: ["report", ws.runs, "-o", o]),
    _option("report", "--official without --manifest and --bundle", lambda ws: ["report", ws.runs, "--official",
                                                                               "-o", str(ws.out / "r.json")],
            "--official"),
    _option("report", "--official --panel core", lambda ws: ["report", ws.runs, "--official", "--panel", "core",
                                                              "-o", str(ws.out / "r.json")], "full panel"),
    _option("report", "--official with provisional --caps", lambda ws: [
        "report", ws.runs, "--official", "--caps", str(ws.root / "caps-provisional.json"), "-o",
        str(ws.out / "r.json")], "--allow-provisional-caps"),
    *_file_rows("report", "--caps", lambda ws, f: ["report", ws.runs, "--caps", f, "-o", str(ws.out / "r.json")]),
    _option("report", "--key without --official", lambda ws: ["report", ws.runs, "--key", ws.runs, "-o",
                                                              str(ws.out / "r.json")], "--key"),
    *(_option(cmd, f"--scoring-seconds {bad}", lambda ws, c=cmd, b=bad: [
        *{"evaluate": ["evaluate", ws.instance, "--agent", "random", "-o", str(ws.out / "r.jsonl")],
          "campaign": ["campaign", ws.instance, "--agents", "random", "-o", str(ws.out / "c")],
          "validate": ["validate", ws.runs],
          "serve": ["serve", "--bundle", ws.instance],
          "play": ["play", ws.instance, "--agent", "random"]}[c], "--scoring-seconds", b], "--scoring-seconds")
      for cmd in ("evaluate", "campaign", "validate", "serve", "play") for bad in ("0", "lots")),
    *_file_rows("report", "--private-results", lambda ws, f: ["report", ws.runs, "--private-results", f, "-o",
                                                              str(ws.out / "r.json")]),
    _option("campaign", "provisional --caps", lambda ws: ["campaign", ws.instance, "--agents", "random", "--caps",
                                                          str(ws.root / "caps-provisional.json"), "-o",
                                                          str(ws.out / "c")], "--allow-provisional-caps"),
    *(_option("report", f"--price-per-mtok {bad}", lambda ws, b=bad: ["report", ws.runs, "--price-per-mtok", b, "-o",
                                                                      str(ws.out / "r.json")], "--price-per-mtok")
      for bad in ("cheap", "1", "1,2,3", "-1,2", "nan,1", "1,inf")),
    *_file_rows("pilot-analyze", "RUNS", lambda ws, f: ["pilot-analyze", f, "--bundle", ws.instance, "-o",
                                                        str(ws.out / "a.json")]),
    *_file_rows("pilot-analyze", "--bundle", lambda ws, f: ["pilot-analyze", ws.runs, "--bundle", f, "-o",
                                                            str(ws.out / "a.json")]),
    *_output_rows("pilot-analyze", "-o", lambda ws, o: ["pilot-analyze", ws.runs, "--bundle", ws.instance, "-o", o]),
    *_output_rows("pilot-analyze", "--plots", lambda ws, o: ["pilot-analyze", ws.runs, "--bundle", ws.instance,
                                                             "--plots", o]),
    *_file_rows("caps derive", "RUNS", lambda ws, f: ["caps", "derive", f, "-o", str(ws.out / "caps.json")]),
    *_output_rows("caps derive", "-o", lambda ws, o: ["caps", "derive", ws.runs, "-o", o]),
    *[Case(cmd, f"DIR {what}", lambda ws, c=cmd, e=extra, p=path: [*c.split(), p(ws), *e(ws)],
           lambda ws, p=path, n=named: n(ws, p))
      for cmd, extra in (("release check", lambda ws: []),
                         ("release package", lambda ws: ["-o", str(ws.out / "pkg")]))
      for what, path, named in (("missing", lambda ws: ws.bad("missing"), lambda ws, p: p(ws)),
                                ("a regular file", lambda ws: str(ws.out / "file"), lambda ws, p: p(ws)),
                                ("10 MB name", lambda ws: HUGE, lambda ws, p: HUGE_NAMED))],
    *_output_rows("release package", "-o", lambda ws, o: ["release", "package", str(ws.root), "-o", o]),
    _option("release check", "--panel core (not official)", lambda ws: ["release", "check", str(ws.root), "--panel",
                                                                         "core"], "full panel"),
    _option("release package", "--panel core (not official)", lambda ws: ["release", "package", str(ws.root),
                                                                           "--panel", "core", "-o",
                                                                           str(ws.out / "pkg")], "full panel"),
    *_file_rows("release reveal", "--bundle", lambda ws, f: ["release", "reveal", str(ws.root), "--bundle", f,
                                                             "--key-file", str(ws.root / "split.key")]),
    *[Case("release reveal", f"--key-file {kind}", lambda ws, k=kind: ["release", "reveal", str(ws.root), "--bundle",
                                                                       ws.instance, "--key-file", ws.bad(k)],
           lambda ws, k=kind: ws.bad(k)) for kind in ("missing", "directory", "empty")],
    *[Case(cmd, f"--key-file {kind}", lambda ws, c=cmd, e=extra, k=kind: [*c.split(), str(ws.root), "--key-file",
                                                                          ws.bad(k), *e(ws)],
           lambda ws, k=kind: ws.bad(k))
      for cmd, extra in (("release check", lambda ws: []), ("release package", lambda ws: ["-o", str(ws.out / "p")]))
      for kind in ("missing", "directory", "empty")],
    *_file_rows("campaign", "BUNDLE", lambda ws, f: ["campaign", f, "--agents", "random", "-o", str(ws.out / "c")]),
    *[Case("campaign", f"--sign-key {kind}", lambda ws, k=kind: ["campaign", ws.bundle, "--agents", "random",
                                                                 "--sign-key", ws.bad(k), "-o", str(ws.out / "c")],
           lambda ws, k=kind: ws.bad(k)) for kind in ("missing", "fifo", "empty")],
    *_output_rows("campaign", "-o", lambda ws, o: ["campaign", ws.instance, "--agents", "random", "-o", o]),
    _option("campaign", "--jobs 0", lambda ws: ["campaign", ws.instance, "--agents", "random", "--jobs", "0", "-o",
                                                str(ws.out / "c")], "--jobs"),
    _option("campaign", "--memory 0", lambda ws: ["campaign", ws.instance, "--agents", "random", "--memory", "0",
                                                   "-o", str(ws.out / "c")], "--memory"),
    _option("campaign", "--memory 1e12", lambda ws: ["campaign", ws.instance, "--agents", "random", "--memory",
                                                     "1e12", "-o", str(ws.out / "c")], "--memory"),
    _option("campaign", "--executor nowhere", lambda ws: ["campaign", ws.instance, "--agents", "random",
                                                          "--executor", "nowhere", "-o", str(ws.out / "c")],
            "--executor"),
    *_file_rows("play", "INSTANCE", lambda ws, f: ["play", f, "--agent", "random"]),
    _option("play", "--track EVAL-OC for a person", lambda ws: ["play", ws.instance, "--track", "EVAL-OC"],
            "--track"),
    _option("play", "--track EVAL-TA for random", lambda ws: ["play", ws.instance, "--agent", "random", "--track",
                                                              "EVAL-TA"], "--track"),
    _option("play", "--track EVAL-XX", lambda ws: ["play", ws.instance, "--agent-cmd", "python3", "--track",
                                                   "EVAL-XX"], "--track"),
    _option("evaluate", "--track EVAL-TA for random", lambda ws: ["evaluate", ws.instance, "--agent", "random",
                                                                  "--track", "EVAL-TA", "-o",
                                                                  str(ws.out / "r.jsonl")], "--track"),
    _option("play", "--agent nobody", lambda ws: ["play", ws.instance, "--agent", "nobody"], "nobody"),
    _option("play", "--trace 10 MB literal", lambda ws: ["play", ws.hoa, "--agent", "random", "--trace", HUGE,
                                                          "--effect", "g0"], "trace"),
    *_file_rows("serve", "--bundle", lambda ws, f: ["serve", "--bundle", f, "--port", "0"]),
    *_file_rows("serve", "--pilot", lambda ws, f: ["serve", "--bundle", ws.instance, "--pilot", f, "--runs-out",
                                                   str(ws.out / "r.jsonl"), "--port", "0"]),
    *_output_rows("serve", "--runs-out", lambda ws, o: ["serve", "--bundle", ws.instance, "--runs-out", o,
                                                        "--port", "0"]),
    *[_option(name, f"--adaptation-condition {cond} {what}", lambda ws, c=cmd, a=args: [*c(ws), *a], named)
      for name, cmd in (
          ("evaluate", lambda ws: ["evaluate", ws.instance, "--agent", "random", "-o", str(ws.out / "r.jsonl")]),
          ("campaign", lambda ws: ["campaign", ws.instance, "--agents", "random", "-o", str(ws.out / "c")]),
          ("serve", lambda ws: ["serve", "--bundle", ws.instance, "--port", "0"]))
      for cond, what, args, named in (
          ("prompt_adaptation", "without a budget", ["--adaptation-condition", "prompt_adaptation"],
           "--adaptation-budget-tokens"),
          ("weight_finetune", "without a scope", ["--adaptation-condition", "weight_finetune",
                                                  "--adaptation-budget-tokens", "5"], "--adaptation-data-scope"),
          ("no_adaptation", "with a protocol", ["--adaptation-protocol-id", "p1"], "--adaptation-protocol-id"),
          ("lora", "(unknown)", ["--adaptation-condition", "lora"], "lora"),
          ("-", "budget -1", ["--adaptation-budget-tokens", "-1"], "--adaptation-budget-tokens"))],
    # Output = input: refused before anything is written, for every command that writes (issue 19).
    _is_an_input("cnf", lambda ws: ["cnf", ws.copy("instance.json"), ws.copy("instance.json")]),
    _is_an_input("generate", lambda ws: ["generate", "--count", "1", "--cfg", ws.copy("cfg.json"), "-o",
                                         ws.copy("cfg.json")]),
    _is_an_input("import peer", lambda ws: ["import", "peer", ws.copy("instance.json"), "-o",
                                            ws.copy("instance.json")]),
    _is_an_input("import aiger", lambda ws: ["import", "aiger", ws.copy("circuit.aag"), *_aiger_flags(), "-o",
                                             ws.copy("circuit.aag")]),
    _is_an_input("import hoa", lambda ws: ["import", "hoa", ws.copy("arbiter.hoa"), *_hoa_flags(), "-o",
                                           ws.copy("arbiter.hoa")]),
    _is_an_input("split", lambda ws: ["split", ws.copy("instance.json"), "-o", ws.copy("instance.json"),
                                      "--manifest", str(ws.out / "m.json")]),
    _is_an_input("split", lambda ws: ["split", ws.copy("instance.json"), "-o", str(ws.out / "s.json"),
                                      "--manifest", ws.copy("instance.json")]),
    _is_an_input("evaluate", lambda ws: ["evaluate", ws.copy("instance.json"), "--agent", "random", "-o",
                                         ws.copy("instance.json")]),
    _is_an_input("import runs", lambda ws: ["import", "runs", ws.copy("runs.jsonl"), "--bundle",
                                            ws.copy("instance.json"), "-o", ws.copy("runs.jsonl")]),
    _is_an_input("import inspect", lambda ws: ["import", "inspect", ws.copy("runs.jsonl"), "-o",
                                               ws.copy("runs.jsonl")]),
    _is_an_input("report", lambda ws: ["report", ws.copy("runs.jsonl"), "-o", ws.copy("runs.jsonl")]),
    _is_an_input("pilot-analyze", lambda ws: ["pilot-analyze", ws.copy("runs.jsonl"), "--bundle",
                                              ws.copy("instance.json"), "-o", ws.copy("instance.json")]),
    _is_an_input("caps derive", lambda ws: ["caps", "derive", ws.copy("runs.jsonl"), "-o", ws.copy("runs.jsonl")]),
    _is_an_input("campaign", lambda ws: ["campaign", ws.copy("campaign.json"), "--agents", "random", "-o",
                                         str(Path(ws.copy("campaign.json")).parent)]),
    _is_an_input("serve", lambda ws: ["serve", "--bundle", ws.copy("instance.json"), "--runs-out",
                                      ws.copy("instance.json"), "--port", "0"]),
    # Agents in a sandbox, pilots (issue 19).
    _option("evaluate", "--sandbox nowhere", lambda ws: ["evaluate", ws.instance, "--agent-cmd", "python3",
                                                         "--sandbox", "nowhere", "-o", str(ws.out / "r.jsonl")],
            "--sandbox"),
    _option("play", "--sandbox nowhere", lambda ws: ["play", ws.instance, "--agent-cmd", "python3", "--sandbox",
                                                     "nowhere"], "--sandbox"),
    _option("play", "--agent-network=1", lambda ws: ["play", ws.instance, "--agent-cmd", "python3",
                                                     "--agent-network=1"], "--agent-network"),
    *_file_rows("validate", "--pilot", lambda ws, f: ["validate", ws.runs, "--official", "--bundle", ws.instance,
                                                      "--pilot", f]),
    _option("validate", "--pilot without its key", lambda ws: ["validate", ws.runs, "--official", "--bundle",
                                                               ws.instance, "--pilot", ws.pilot_without_key],
            "no key"),
    *_file_rows("pilot issue", "--pilot", lambda ws, f: ["pilot", "issue", "--pilot", f, "--count", "2", "-o",
                                                         str(ws.out / "links.txt")]),
    *_output_rows("pilot issue", "-o", lambda ws, o: ["pilot", "issue", "--pilot", ws.pilot, "--count", "2",
                                                      "-o", o]),
    _is_a_directory("pilot issue", "-o", lambda ws, o: ["pilot", "issue", "--pilot", ws.pilot, "--count", "2",
                                                        "-o", o]),
    _is_an_input("pilot issue", lambda ws: ["pilot", "issue", "--pilot", ws.pilot, "--count", "2", "-o", ws.pilot]),
    _option("pilot issue", "--count 0", lambda ws: ["pilot", "issue", "--pilot", ws.pilot, "--count", "0", "-o",
                                                    str(ws.out / "links.txt")], "--count"),
    _option("pilot issue", "--base-url ftp", lambda ws: ["pilot", "issue", "--pilot", ws.pilot, "--count", "1",
                                                         "--base-url", "ftp://x", "-o", str(ws.out / "links.txt")],
            "--base-url"),
    *_file_rows("pilot check-code", "--pilot", lambda ws, f: ["pilot", "check-code", "X-P00001-ABC", "--pilot", f]),
    _option("pilot check-code", "--pilot without its key", lambda ws: ["pilot", "check-code", "X-P00001-ABC",
                                                                       "--pilot", ws.pilot_without_key], "no key"),
    _option("serve", "--pilot without its key", lambda ws: ["serve", "--bundle", ws.instance, "--pilot",
                                                            ws.pilot_without_key, "--runs-out",
                                                            str(ws.out / "r.jsonl"), "--port", "0"], "no key"),
    *_file_rows("bundle subset", "BUNDLE", lambda ws, f: ["bundle", "subset", f, "--count", "1", "-o",
                                                          str(ws.out / "s.json")]),
    *_output_rows("bundle subset", "-o", lambda ws, o: ["bundle", "subset", ws.bundle, "--count", "1", "-o", o]),
    _is_an_input("bundle subset", lambda ws: ["bundle", "subset", ws.copy("bundle.json"), "--count", "1", "-o",
                                              ws.copy("bundle.json")]),
    _option("bundle subset", "--count 0", lambda ws: ["bundle", "subset", ws.bundle, "--count", "0", "-o",
                                                      str(ws.out / "s.json")], "--count"),
    _option("bundle subset", "--ids unknown", lambda ws: ["bundle", "subset", ws.bundle, "--ids", "nope", "-o",
                                                          str(ws.out / "s.json")], "--ids"),
    _option("bundle subset", "an instance file", lambda ws: ["bundle", "subset", ws.instance, "--count", "1", "-o",
                                                             str(ws.out / "s.json")], "expected a bundle"),
    _option("evaluate", "--limit 0", lambda ws: ["evaluate", ws.instance, "--agent", "random", "--limit", "0", "-o",
                                                 str(ws.out / "r.jsonl")], "--limit"),
    _option("evaluate", "--max-provider-failures 0", lambda ws: ["evaluate", ws.instance, "--agent", "random",
                                                                 "--max-provider-failures", "0", "-o",
                                                                 str(ws.out / "r.jsonl")], "--max-provider-failures"),
    _option("evaluate", "--agent-name without a program", lambda ws: ["evaluate", ws.instance, "--agent", "random",
                                                                      "--agent-name", "x", "-o",
                                                                      str(ws.out / "r.jsonl")], "--agent-name"),
    _option("campaign", "--limit 0", lambda ws: ["campaign", ws.bundle, "--agents", "random", "--limit", "0", "-o",
                                                 str(ws.out / "c")], "--limit"),
    *_file_rows("pilot reset", "--pilot", lambda ws, f: ["pilot", "reset", "P00001", "--pilot", f, "--runs-out",
                                                         ws.runs]),
    _option("pilot reset", "--runs-out missing", lambda ws: ["pilot", "reset", "P00001", "--pilot", ws.pilot,
                                                             "--runs-out", str(ws.out / "none.jsonl")],
            "none.jsonl"),
    _option("pilot reset", "--runs-out a directory", lambda ws: ["pilot", "reset", "P00001", "--pilot", ws.pilot,
                                                                 "--runs-out", ws.bad("directory")], "directory"),
    _option("pilot reset", "PARTICIPANT ../x", lambda ws: ["pilot", "reset", "../x", "--pilot", ws.pilot,
                                                           "--runs-out", ws.runs], "PARTICIPANT"),
    _option("serve", "--proxy not an address", lambda ws: ["serve", "--bundle", ws.instance, "--proxy", "a.b",
                                                            "--port", "0"], "--proxy"),
    _option("serve", "--body-timeout 0", lambda ws: ["serve", "--bundle", ws.instance, "--body-timeout", "0",
                                                     "--port", "0"], "--body-timeout"),
    _option("serve", "--port 70000", lambda ws: ["serve", "--bundle", ws.instance, "--port", "70000"], "--port"),
    *_file_rows("agent check", "--bundle", lambda ws, f: ["agent", "check", "python3", "--bundle", f]),
    _option("agent check", "CMD that cannot start", lambda ws: ["agent", "check", "no-such-agent-program"], "CMD"),
    _option("agent check", "CMD empty", lambda ws: ["agent", "check", " "], "CMD"),
    _option("agent check", "CMD 10 MB", lambda ws: ["agent", "check", HUGE], "CMD"),
    _option("evaluate", "--agent-cmd 10 MB", lambda ws: ["evaluate", ws.instance, "--agent-cmd", HUGE, "-o",
                                                         str(ws.out / "r.jsonl")], "--agent-cmd"),
    _option("agent check", "--episodes 0", lambda ws: ["agent", "check", "python3", "--episodes", "0"], "--episodes"),
    _option("agent check", "--step-timeout 0", lambda ws: ["agent", "check", "python3", "--step-timeout", "0"],
            "--step-timeout"),
    # The second round's sandbox (issue 29): agent check's track and sandbox, the one output file an agent may write.
    _option("agent check", "--track EVAL-XX", lambda ws: ["agent", "check", "python3", "--track", "EVAL-XX"],
            "--track"),
    _option("agent check", "--sandbox nowhere", lambda ws: ["agent", "check", "python3", "--sandbox", "nowhere"],
            "--sandbox"),
    _option("evaluate", "--agent-output a directory", lambda ws: ["evaluate", ws.instance, "--agent-cmd", "python3",
                                                                  "--agent-output", str(ws.out), "-o",
                                                                  str(ws.out / "r.jsonl")], "--agent-output"),
    _option("play", "--agent-output a device", lambda ws: ["play", ws.instance, "--agent-cmd", "python3",
                                                           "--agent-output", "/dev/null"], "--agent-output"),
    _option("agent check", "--agent-output in no directory",
            lambda ws: ["agent", "check", "python3", "--agent-output", str(ws.out / "no" / "x.log")],
            "--agent-output"),
]


def _serve_remote(ws: Workspace, **changed: str) -> list[str]:
    """``gf01 eval serve`` with good inputs but those ``changed`` (option name without dashes -> value)."""
    opts = {"bundle": ws.bundle, "manifest": ws.manifest, "runs-out": str(ws.out / "runs.jsonl"),
            "tokens": ws.tokens, "sign-key": str(ws.root / "signing.key"), "port": "0", **changed}
    return ["eval", "serve", *(x for k, v in opts.items() for x in (f"--{k}", v))]


# Remote evaluation (issue 32): the server's inputs, the tokens file, receipts, and evaluate --remote.
_TOKEN_FILES = ("directory", "fifo", "empty", "binary", "non-utf8", "invalid-json", "list-for-object",
                "string-t-star")
CASES += [
    *_file_rows("eval serve", "--bundle", lambda ws, f: _serve_remote(ws, bundle=f)),
    *_file_rows("eval serve", "--manifest", lambda ws, f: _serve_remote(ws, manifest=f)),
    *_file_rows("eval serve", "--sign-key", lambda ws, f: _serve_remote(ws, **{"sign-key": f})),
    *(Case("eval serve", f"--tokens {kind}", lambda ws, k=kind: _serve_remote(ws, tokens=ws.bad(k)),
           lambda ws, k=kind: ws.bad(k)) for kind in _TOKEN_FILES),
    *_output_rows("eval serve", "--runs-out", lambda ws, o: _serve_remote(ws, **{"runs-out": o})),
    _option("eval serve", "a manifest without the instance", lambda ws: _serve_remote(
        ws, manifest=str(ws.root / "manifest-other.json")), "manifest-other.json"),
    _option("eval serve", "--sign-key a public key", lambda ws: _serve_remote(
        ws, **{"sign-key": str(ws.root / "signing.key.pub")}), "signing.key.pub"),
    _option("eval serve", "--port 70000", lambda ws: _serve_remote(ws, port="70000"), "--port"),
    _option("eval serve", "--step-timeout 0", lambda ws: [*_serve_remote(ws), "--step-timeout", "0"],
            "--step-timeout"),
    _option("eval serve", "--proxy not an address", lambda ws: [*_serve_remote(ws), "--proxy", "a.b"], "--proxy"),
    _option("eval token issue", "--team with a space", lambda ws: ["eval", "token", "issue", "--tokens",
                                                                   str(ws.out / "t.json"), "--team", "a b"], "--team"),
    _option("eval token issue", "--team 10 MB", lambda ws: ["eval", "token", "issue", "--tokens",
                                                            str(ws.out / "t.json"), "--team", HUGE], "--team"),
    _option("eval token issue", "--episodes-per-day 0", lambda ws: [
        "eval", "token", "issue", "--tokens", str(ws.out / "t.json"), "--team", "a", "--episodes-per-day", "0"],
        "--episodes-per-day"),
    _option("eval token issue", "--panel with a value", lambda ws: [
        "eval", "token", "issue", "--tokens", str(ws.out / "t.json"), "--team", "a", "--panel=yes"], "--panel"),
    *(Case("eval token issue", f"--tokens {kind}", lambda ws, k=kind: ["eval", "token", "issue", "--tokens",
                                                                        ws.bad(k), "--team", "a"],
           lambda ws, k=kind: ws.bad(k)) for kind in _TOKEN_FILES),
    *_output_rows("eval token issue", "--tokens", lambda ws, o: ["eval", "token", "issue", "--tokens", o,
                                                                  "--team", "a"]),
    _option("eval token revoke", "an unknown id", lambda ws: ["eval", "token", "revoke", "nobody", "--tokens",
                                                              ws.copy("tokens.json")], "TOKEN_OR_TEAM"),
    *(Case("eval token revoke", f"--tokens {kind}", lambda ws, k=kind: ["eval", "token", "revoke", "a", "--tokens",
                                                                         ws.bad(k)],
           lambda ws, k=kind: ws.bad(k)) for kind in _TOKEN_FILES),
    *_file_rows("eval token list", "--tokens", lambda ws, f: ["eval", "token", "list", "--tokens", f]),
    *_file_rows("eval receipt verify", "RECEIPTS", lambda ws, f: ["eval", "receipt", "verify", f, "--key",
                                                                  str(ws.root / "signing.key.pub")]),
    *_file_rows("eval receipt verify", "--key", lambda ws, f: ["eval", "receipt", "verify", ws.receipts, "--key",
                                                               f]),
    *_file_rows("eval receipt verify", "--runs", lambda ws, f: ["eval", "receipt", "verify", ws.receipts, "--key",
                                                                str(ws.root / "signing.key.pub"), "--runs", f]),
    _option("evaluate", "--remote with a BUNDLE", lambda ws: ["evaluate", ws.instance, "--remote",
                                                              "http://127.0.0.1:9", "--token", "t", "--agent",
                                                              "random", "-o", str(ws.out / "r.jsonl")], "BUNDLE"),
    _option("evaluate", "--remote without a token", lambda ws: ["evaluate", "--remote", "http://127.0.0.1:9",
                                                                "--agent", "random", "-o", str(ws.out / "r.jsonl")],
            "--token"),
    _option("evaluate", "--remote not a URL", lambda ws: ["evaluate", "--remote", "ftp://x", "--token", "t",
                                                          "--agent", "random", "-o", str(ws.out / "r.jsonl")],
            "--remote"),
    _option("evaluate", "--remote with --sign-key", lambda ws: [
        "evaluate", "--remote", "http://127.0.0.1:9", "--token", "t", "--agent", "random", "--sign-key",
        str(ws.root / "signing.key"), "-o", str(ws.out / "r.jsonl")], "--sign-key"),
    _option("evaluate", "no BUNDLE and no --remote", lambda ws: ["evaluate", "--agent", "random", "-o",
                                                                 str(ws.out / "r.jsonl")], "BUNDLE"),
    *_output_rows("evaluate", "--remote -o", lambda ws, o: ["evaluate", "--remote", "http://127.0.0.1:9", "--token",
                                                            "t", "--agent", "random", "-o", o]),
]


def command_paths() -> set[str]:
    """Every command of the CLI as typed ("verify", "hoa check", ...), by walking the click tree typer builds."""
    import typer

    def walk(cmd: object, prefix: tuple[str, ...]) -> set[str]:
        subs = getattr(cmd, "commands", None)
        if not subs:
            return {" ".join(prefix)}
        return set().union(*(walk(c, (*prefix, name)) for name, c in subs.items()))

    return walk(typer.main.get_command(app), ())


def test_every_command_has_rows() -> None:
    """A command without rows in CASES fails here: the matrix must grow with the CLI."""
    covered = {c.command for c in CASES}
    assert command_paths() - covered == set()
    assert covered - command_paths() == set()  # and no row names a command that does not exist


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bad input files (written once: rows only read them)."""
    root = tmp_path_factory.mktemp("inputs")
    bad = root / "bad"
    bad.mkdir()
    for name, content in BAD_FILES.items():
        if content == "dir":
            (bad / name).mkdir()
        elif content == "fifo":
            os.mkfifo(bad / name)
        elif isinstance(content, bytes):
            (bad / name).write_bytes(content)
    from gf01_formal.agents.base import AgentSpec
    from gf01_formal.campaign.evaluate import evaluate

    evaluate(EXAMPLES / "arbiter_priority.json", [AgentSpec("random", "EVAL-CB")], root / "runs.jsonl")
    from gf01_formal.instances.io import load_set, save_artifact
    from gf01_formal.instances.model import make_bundle

    save_artifact(root / "bundle.json", make_bundle([load_set(EXAMPLES / "arbiter_priority.json").instances[0]],
                                                 generator_version="test", provenance="import:hoa"))
    from aig.build import fifo
    from aig.writer import canonical

    (root / "fifo.aag").write_text(canonical(fifo(2)))
    (root / "bad.aag").write_text("aag 1 0 1 0 0\n2 2 3\n")
    example = json.loads((EXAMPLES / "arbiter_priority.json").read_text())
    cert = json.loads((EXAMPLES / "arbiter_priority_cert.json").read_text())
    (root / "peer_runs.jsonl").write_text(json.dumps({"instance_id": example["instance_id"], "certificate": cert,
                                                      "agent_name": "BL-00-Peer", "valid": True}) + "\n")
    (root / "cfg-huge.json").write_text(json.dumps({"families": [{"kind": "random_mealy", "states": 10**30}]}))
    (root / "pilot").mkdir()
    pilot = {"schema_version": "gf01-formal.pilot.v1", "pilot_id": "p", "consent": "Agree?",
             "instances": [json.loads((EXAMPLES / "arbiter_priority.json").read_text())["instance_id"]],
             "completion_code": "DONE"}
    for name in ("pilot.json", "keyless.json"):
        (root / "pilot" / name).write_text(json.dumps(pilot))
    from gf01_formal.web.pilot import load_key

    load_key(root / "pilot" / "pilot.json", create=True)
    (root / "weak.key").write_text("a" * 16 + "\n")  # long enough, but a letter repeated: refused as weak
    assert main(["key", "new", "-o", str(root / "split.key")]) == 0
    assert main(["key", "new", "--kind", "signing", "-o", str(root / "signing.key")]) == 0
    from gf01_formal.instances.splits import ManifestEntry, SplitManifest
    from gf01_formal.remote.receipts import Commitments, make_receipt
    from gf01_formal.remote.tokens import TokenStore
    from gf01_formal.runs.record import RunRecord
    from gf01_formal.runs.signing import load_signer

    inst = load_set(root / "bundle.json").instances[0]
    for name, iid in (("manifest.json", inst.instance_id), ("manifest-other.json", "gf01f-0000000000000000")):
        manifest = SplitManifest(targets={"private_eval": 1.0}, tolerance=0.05, key_id="0" * 64, public_key=False,
                                 source_bundle_hash="0" * 64, counts={"private_eval": 1}, instances=[ManifestEntry(
                                     instance_id=iid, content_hash=inst.content_hash, split_id="private_eval",
                                     mode=inst.mode, stratum="x")])
        (root / name).write_text(json.dumps(manifest.model_dump(mode="json")))
    TokenStore(root / "tokens.json").issue("remote-token")
    record = RunRecord.model_validate(json.loads((root / "runs.jsonl").read_text().splitlines()[0]))
    receipt = make_receipt(record, team="remote-token", agent="remote-token/random", instance_commitment="x",
                           split=Commitments(manifest_sha256="0" * 64), signer=load_signer(root / "signing.key"))
    (root / "receipts.jsonl").write_text(json.dumps(receipt.model_dump(mode="json")) + "\n")
    copies = root / "copies"
    copies.mkdir()
    shutil.copyfile(EXAMPLES / "arbiter_priority.json", copies / "instance.json")
    shutil.copyfile(EXAMPLES / "arbiter_priority.json", copies / "campaign.json")
    shutil.copyfile(EXAMPLES / "arbiter.hoa", copies / "arbiter.hoa")
    shutil.copyfile(root / "runs.jsonl", copies / "runs.jsonl")
    shutil.copyfile(root / "bundle.json", copies / "bundle.json")
    shutil.copyfile(root / "tokens.json", copies / "tokens.json")
    shutil.copyfile(root / "fifo.aag", copies / "circuit.aag")
    (copies / "cfg.json").write_text(json.dumps({"families": [{"kind": "random_mealy"}]}))
    (root / "cfg-string.json").write_text(json.dumps({"families": [{"kind": "random_mealy", "states": "5"}]}))
    from gf01_formal.instances.io import save_artifact
    from gf01_formal.instances.model import make_bundle
    from gf01_formal.instances.sources import open_instance

    one = open_instance(EXAMPLES / "arbiter_priority.json")[0]
    save_artifact(root / "bundle-of-one.json", make_bundle([one], generator_version="test", provenance="test"))
    cap = {"cap": 3, "unit": "conflicts"}
    (root / "caps-provisional.json").write_text(json.dumps({
        "schema_version": "gf01-formal.caps.v1", "backend": "sat", "provisional": True,
        "platform": {"seconds": {"cap": 1.0}, "memory_kib": {"cap": None}},
        "algorithmic": {"conflicts": cap, "nodes": {"cap": None}},
        "sample": {"instances": 8, "checkpoint": {"target": 240, "reached": False}}}))
    return root


@pytest.fixture
def ws(inputs: Path, tmp_path: Path) -> Workspace:
    """A workspace with the bad inputs, a fresh output directory and an unwritable directory."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "file").write_text("a regular file\n")
    (out / "dir").mkdir()
    return Workspace(inputs, out, _unwritable_dir(tmp_path))


def _unwritable_dir(tmp_path: Path) -> Path:
    """A directory that cannot be written: mode 0555, or (as root, who may write anywhere) /sys."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    for candidate in (locked, Path("/sys")):
        try:
            (candidate / ".gf01-test").mkdir()
        except OSError:
            return candidate
        (candidate / ".gf01-test").rmdir()
    pytest.skip("no directory here refuses writes (root without /sys)")


def _left_behind(ws: Workspace) -> list[str]:
    """Files an aborted command left where outputs go (the workspace's own two entries excepted)."""
    found = [str(p.relative_to(ws.out)) for p in ws.out.rglob("*") if p.name not in ("file", "dir")]
    if ws.unwritable != Path("/sys"):
        found += [str(p) for p in ws.unwritable.rglob("*")]
    return found


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input(case: Case, ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(case.argv(ws))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert status == case.status, err
    named = case.names(ws)
    if status == 2:
        # exactly one line, naming the file or option, ending in a newline
        assert err.count("\n") == 1 and err.endswith("\n") and err.startswith("gf01: error: "), err
        assert named in err, (named[:80], err)
        assert len(err) < 2100  # a huge input is quoted, not echoed
    elif status == 1:  # a check's verdict on the file, on stdout
        assert err == "" and out.startswith(named) and ": error: " in out
    else:  # a certificate that is not one is scored false with its reasons
        assert err == ""
        if out:
            assert "valid        false" in out and "error" in out
    assert _left_behind(ws) == []
    if case.bad == "output is an input":  # refused, and the input is whole
        copies = ws.root / "copies"
        assert (copies / "instance.json").read_bytes() == (EXAMPLES / "arbiter_priority.json").read_bytes()
        assert (copies / "runs.jsonl").read_bytes() == (ws.root / "runs.jsonl").read_bytes()


def test_bad_input_in_a_real_process(ws: Workspace) -> None:
    """What a user sees: the same one line from the installed entry point, for a file and an option."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for argv, named in ((["verify", ws.bad("non-utf8"), ws.cert], ws.bad("non-utf8")),
                        (["generate", "--jobs", "0", "-o", str(ws.out / "b.json")], "--jobs"),
                        (["cnf", ws.instance, str(ws.out / "file" / "x.cnf")], str(ws.out / "file"))):
        proc = subprocess.run([sys.executable, "-m", "gf01_formal", *argv], capture_output=True, text=True, env=env,
                              check=False, timeout=60)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("gf01: error: ") and named in proc.stderr
    assert _left_behind(ws) == []


def test_report_reads_its_inputs_before_building(ws: Workspace, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A bad --private-results file, or --official without its manifest, is said before the report is built (its
    statistics import statsmodels and scipy: seconds, for a command that ends on a missing input)."""
    from gf01_formal.report import build

    def unbuilt(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report was built before its inputs were read")

    monkeypatch.setattr(build, "build_report", unbuilt)
    out = str(ws.out / "r.json")
    for argv, says in ((["--private-results", ws.bad("missing")], "cannot read"), (["--official"], "--manifest")):
        assert main(["report", ws.runs, *argv, "-o", out]) == 2
        assert says in capsys.readouterr().err


def test_import_inspect_refuses_what_is_no_log_before_importing_inspect(ws: Workspace,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is no JSON object with an ``eval`` object (every bad file of the matrix that can be read, and an
    instance) is refused before inspect-ai is imported (about 3 s of CPU, for a command that ends on a bad file): with
    inspect-ai unimportable, each is still "not an inspect eval log", not "needs inspect-ai"."""
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # an import of it raises ImportError
    out = str(ws.out / "r.jsonl")
    readable = [kind for kind in BAD_FILES if kind not in UNREADABLE]
    for log in [ws.bad(kind) for kind in readable] + [ws.instance]:
        assert main(["import", "inspect", log, "-o", out]) == 2
        err = capsys.readouterr().err
        assert "not an inspect eval log" in err and log in err, err
    assert _left_behind(ws) == []
