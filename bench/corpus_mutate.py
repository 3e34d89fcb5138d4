"""Mutate real files of the external corpus and run the `gf01` command that reads each one: every outcome must be
exit 0 with a correct answer or exit 2 with one line that says where.

    python bench/corpus_mutate.py CORPUS [--seed N] [--per-kind N] [--kinds K,...] [--timeout S] [--jobs N]

The bases are real: the corpus's HOA files (valid, tricky and invalid), its SYNTCOMP AIGER designs as they are
(ASCII) and written as binary AIGER (`aig.writer.binary`), the peer's bundle and runs, and what this project makes
from them in a setup step (an instance file per chosen HOA controller and AIGER design with the oracle's
certificate, the bundle `import peer` writes, the run records `import runs` writes). Each case draws a base and one
small mutation from the seed (`random.Random(f"{seed}:{kind}:{i}")`: the same cases on every machine): truncate at a
byte, delete / duplicate / swap lines, flip a digit, a number made huge or negative, a NUL or an invalid UTF-8 byte
inserted, two numbers swapped everywhere (HOA: two state numbers), a header item dropped, and for JSON a value's
type changed or a key removed. The command that reads the file runs under an outer timeout, and where the mutant
was accepted its answer is checked where another path can check it: `hoa print`'s text is valid HOA that prints
the same again; the oracle's certificate is valid by `verify`; `enumerate --count` agrees between two backends.

Findings: a traceback, exit 70, a signal, a hang (past the outer timeout), an exit code docs/cli.md does not list for
the command, exit 2 with more than one stderr line, exit 2 whose line names neither the file nor an option or field
given, and a wrong answer as above. Each finding's command is run again, on its mutant made again, as a real
`python -m gf01_formal` process of the code as it is now, and the report shows what that process did (the cases
themselves run in children forked from one process that imported gf01 once: about 0.1 s of CPU a command instead of
0.45 s of interpreter start-up). Exit status 1 when there is a finding.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

# The project's root first: bench/solvers.py would otherwise shadow the solvers package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GF01 = [sys.executable, "-m", "gf01_formal"]

#: The exit codes docs/cli.md lists per command.
ALLOWED = {
    "hoa check": {0, 1, 2},
    "hoa print": {0, 2},
    "hoa mealy": {0, 1, 2},
    "import hoa": {0, 2},
    "import aiger": {0, 2},
    "import peer": {0, 2},
    "import runs": {0, 2},
    "oracle": {0, 2, 3},
    "enumerate": {0, 2, 3},
    "verify": {0, 2, 3},
    "validate": {0, 2},
    "report": {0, 2},
}

#: The small SYNTCOMP designs whose instances the chains run on (the large ones only go through `import`).
SMALL_AIGER = ["toy_examples-add4y.aag", "toy_examples-cnt3y.aag", "toy_examples-mult2.aag", "toy_examples-stay2y.aag",
               "cycle_sched-cycle_sched_2_2_1.aag", "driver-driver_c4y.aag", "LTL2DBA-ltl2dba_C2-6_comp2_REAL.aag",
               "HWMCC12-6s31_c0to0.aag", "mult_matrix-mult_bool_matrix_dyn_2_2.aag",
               "factory_assembly_line-factory_assembly_3x3_1_1errors.aag",
               "moving_obstacle-moving_obstacle_8x8_0glitches.aag"]

#: Instance files made from HOA controllers (each costs an import and an oracle in the setup).
MAX_HOA_INSTANCES = 24

KINDS = ["hoa", "aag", "aig", "peer-bundle", "peer-runs", "bundle", "instance", "runs", "cert"]


@dataclass
class Result:
    case: str
    kind: str
    base: str
    mutation: str
    command: str
    argv: list[str]
    rc: int | None
    cpu: float
    stderr: str
    findings: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------------------
# Running a command: a child forked from this process, which imported gf01 once.

def preload() -> None:
    """Import what the commands import, once, before the workers fork (numpy single-threaded first, as `run` does)."""
    from gf01_formal.blas import load_numpy_single_threaded

    load_numpy_single_threaded()
    import importlib

    for module in ("gf01_formal.cli", "gf01_formal.cli.root", "gf01_formal.instances.sources",
                   "gf01_formal.scoring.certificates", "solvers.api", "solvers.forward", "solvers.sat", "typer",
                   "pydantic"):
        importlib.import_module(module)


def fork_run(argv: list[str], cwd: Path, timeout: float) -> tuple[int | None, str, str, float]:
    """``gf01 ARGV`` in a forked child in its own process group: (exit status or -signal, None past ``timeout``,
    stdout, stderr, CPU seconds of the child and its children)."""
    out_path, err_path = cwd / ".stdout", cwd / ".stderr"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: become `gf01 ARGV`
        code = 1
        try:
            os.setpgid(0, 0)
            os.chdir(cwd)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
            os.dup2(os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
            sys.argv = ["gf01", *argv]
            from gf01_formal.cli import run

            run()
            code = 0
        except SystemExit as ex:
            code = ex.code if isinstance(ex.code, int) else (0 if ex.code is None else 1)
        except BaseException:  # what the interpreter would do with an exception that escaped
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    deadline = time.monotonic() + timeout
    rc: int | None = None
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            rc = os.waitstatus_to_exitcode(status)
            cpu = usage.ru_utime + usage.ru_stime
            break
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            rc, cpu = None, usage.ru_utime + usage.ru_stime
            break
        time.sleep(0.005)
    with contextlib.suppress(ProcessLookupError, PermissionError):  # grandchildren (guarded queries) left over
        os.killpg(pid, signal.SIGKILL)
    out = out_path.read_text(errors="replace")
    err = err_path.read_text(errors="replace")
    return rc, out, err, cpu


def exec_run(argv: list[str], cwd: Path, timeout: float) -> tuple[int | None, str, str]:
    """``python -m gf01_formal ARGV`` as a real process (to confirm a finding)."""
    try:
        proc = subprocess.run(GF01 + argv, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        return None, "", ""


def judge(command: str, rc: int | None, err: str, where: list[str], timeout: float) -> list[str]:
    """What is wrong with an outcome, whatever the answer (the checks of the answer are the caller's)."""
    found = []
    if rc is None:
        found.append(f"hang: past the outer timeout of {timeout:g} s")
    elif rc < 0:
        found.append(f"killed by signal {-rc}")
    elif rc == 70:
        found.append("exit 70 (internal error)")
    elif rc not in ALLOWED[command]:
        found.append(f"exit {rc}, which docs/cli.md does not list for {command}")
    if "Traceback" in err:
        found.append("a traceback on stderr")
    lines = [line for line in err.splitlines() if line.strip()]
    if rc == 2:
        errors = [line for line in lines if line.startswith("gf01: error:")]
        if len(errors) != 1:
            found.append(f"exit 2 with {len(errors)} error lines")
        elif not any(w in errors[0] for w in where):
            found.append("exit 2 with an error that names neither the file nor an option or field given")
    return found


# ---------------------------------------------------------------------------------------------------------------
# Mutations: bytes in, bytes out, and a name for the report.

NUMBER = re.compile(rb"(?<![\w.])\d+(?![\w.])")


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [data]


def mutate_bytes(data: bytes, rng: random.Random, kind: str) -> tuple[bytes, str]:
    ops = ["truncate", "delete line", "duplicate line", "swap lines", "flip digit", "huge number", "negative number",
           "insert NUL", "insert invalid UTF-8", "swap numbers", "drop header item"]
    op = rng.choice(ops)
    if not data:
        return b"\n", "empty -> newline"
    lines = _lines(data)
    if op == "truncate":
        at = rng.randrange(len(data))
        return data[:at], f"truncate at byte {at}"
    if op in ("delete line", "duplicate line", "swap lines"):
        k = rng.randrange(len(lines))
        if op == "delete line":
            return b"".join(lines[:k] + lines[k + 1:]), f"delete line {k + 1}"
        if op == "duplicate line":
            return b"".join(lines[:k + 1] + lines[k:]), f"duplicate line {k + 1}"
        j = rng.randrange(len(lines))
        lines[k], lines[j] = lines[j], lines[k]
        return b"".join(lines), f"swap lines {k + 1} and {j + 1}"
    numbers = list(NUMBER.finditer(data))
    if op == "flip digit":
        digits = [m.start() for m in re.finditer(rb"\d", data)]
        if digits:
            at = rng.choice(digits)
            new = rng.choice([d for d in b"0123456789" if d != data[at]])
            return data[:at] + bytes([new]) + data[at + 1:], f"flip digit at byte {at} to {chr(new)}"
        op = "insert NUL"
    if op in ("huge number", "negative number") and numbers:
        m = rng.choice(numbers)
        if op == "huge number":
            new = rng.choice([b"4294967296", b"9223372036854775808", b"99999999999999999999999", b"1" + b"0" * 400])
        else:
            new = rng.choice([b"-1", b"-" + m.group()])
        return data[:m.start()] + new + data[m.end():], f"{op}: {m.group().decode()} at byte {m.start()} -> " \
                                                         f"{new[:24].decode()}"
    if op == "swap numbers" and len({m.group() for m in numbers}) > 1:
        values = sorted({m.group() for m in numbers}, key=lambda v: (len(v), v))[:40]
        a, b = rng.sample(values, 2)
        swapped = NUMBER.sub(lambda m: b if m.group() == a else a if m.group() == b else m.group(), data)
        return swapped, f"swap numbers {a.decode()} and {b.decode()}"
    if op == "drop header item":
        head = _header_lines(lines, kind)
        if head:
            k = rng.choice(head)
            return b"".join(lines[:k] + lines[k + 1:]), f"drop header item on line {k + 1}"
    if op == "insert invalid UTF-8":
        at = rng.randrange(len(data) + 1)
        bad = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80", b"\xf5\x80\x80\x80"])
        return data[:at] + bad + data[at:], f"insert {bad!r} at byte {at}"
    at = rng.randrange(len(data) + 1)
    return data[:at] + b"\x00" + data[at:], f"insert NUL at byte {at}"


def _header_lines(lines: list[bytes], kind: str) -> list[int]:
    if kind == "hoa":
        out = []
        for k, line in enumerate(lines):
            if line.startswith(b"--BODY--"):
                break
            if not line.startswith(b"HOA:"):
                out.append(k)
        return out
    if kind == "aag":
        # The header's own counts are the header items: drop one of them.
        return [0]
    return [0] if lines else []


def mutate_json(data: bytes, rng: random.Random, kind: str) -> tuple[bytes, str]:
    """A structured mutation of a JSON document or of one line of a JSON Lines file, else a byte-level one."""
    if rng.random() < 0.5:
        return mutate_bytes(data, rng, kind)
    jsonl = kind in ("peer-runs", "runs")
    lines = _lines(data) if jsonl else [data]
    k = rng.randrange(len(lines))
    try:
        doc = json.loads(lines[k])
    except ValueError:
        return mutate_bytes(data, rng, kind)
    paths: list[tuple] = []

    def walk(node: object, path: tuple) -> None:
        paths.append(path)
        if isinstance(node, dict):
            for key in sorted(node):
                walk(node[key], (*path, key))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, (*path, i))

    walk(doc, ())
    path = rng.choice(paths[1:] or paths)
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    op = rng.choice(["change type", "remove key", "huge number", "negative number", "empty container"])
    if not path:
        op = "change type"
    what = "/".join(str(p) for p in path)
    if op == "remove key":
        del parent[path[-1]]
    elif op == "huge number":
        value = rng.choice([2 ** 63, 10 ** 30, 1e308, 4294967296])
        parent[path[-1]] = value
        what += f" = {value:g}" if isinstance(value, float) else f" = {value}"
    elif op == "negative number":
        parent[path[-1]] = rng.choice([-1, -(2 ** 31)])
    elif op == "empty container":
        parent[path[-1]] = rng.choice([[], {}, ""])
    else:
        value = parent[path[-1]] if path else doc
        others = [v for v in ("7", 7, 7.5, True, None, [], {}, ["x"], {"x": 1}) if type(v) is not type(value)]
        new = rng.choice(others)
        if path:
            parent[path[-1]] = new
        else:
            doc = new
        what += f" -> {json.dumps(new)}"
    if kind in ("instance", "bundle") and rng.random() < 0.6 and rehash(doc):
        # Hashes made anew, so that the mutant gets past the hash check to the checks behind it.
        what += " (hashes made anew)"
    lines[k] = json.dumps(doc).encode() + (b"\n" if jsonl else b"")
    return b"".join(lines), f"{op} at {'line ' + str(k + 1) + ': ' if jsonl else ''}{what}"


def rehash(doc: object) -> bool:
    """Give an instance file's (or every instance of a bundle's) JSON the content hash and id of its content, and a
    bundle its instances hash; False when the document has not the shape for it."""
    from gf01_formal.artifacts import sha256_hex
    from gf01_formal.instances.identity import content_hash, content_id

    def one(inst: object) -> None:
        assert isinstance(inst, dict)
        digest = content_hash(inst)
        inst["content_hash"] = digest
        if inst.get("meta", {}).get("id_scheme") == "content":
            inst["instance_id"] = content_id(digest)

    try:
        if isinstance(doc, dict) and isinstance(doc.get("instances"), list):
            for inst in doc["instances"]:
                one(inst)
            doc["instances_hash"] = sha256_hex(doc["instances"])
        else:
            one(doc)
    except (AssertionError, KeyError, TypeError, AttributeError, ValueError):
        return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# The bases, made once by real commands.

@dataclass
class Bases:
    hoa: list[tuple[str, Path, list[str]]]  # (name, path, the controller's task options or [])
    aag: list[tuple[str, Path, list[str]]]  # (name, path, task options)
    aig: list[tuple[str, Path, list[str]]]
    peer_bundle: Path
    peer_runs: list[Path]
    bundle: Path  # ours, from the peer's
    bundle_ids: list[str]
    instances: list[tuple[str, Path, Path]]  # (name, instance file, the oracle's certificate)
    runs: Path


def _task(rng: random.Random, inputs: list[str], outputs: list[str], steps: int) -> list[str]:
    trace = [{name: rng.randint(0, 1) for name in inputs} for _ in range(steps)]
    return ["--trace", json.dumps(trace), "--effect", _quote(rng.choice(outputs))]


def _quote(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _must(argv: list[str], cwd: Path, timeout: float) -> None:
    rc, _, err, _ = fork_run(argv, cwd, timeout)
    if rc != 0:
        raise SystemExit(f"corpus_mutate: setup failed: gf01 {' '.join(argv)}: exit {rc}: {err.strip()[:300]}")


def make_bases(corpus: Path, work: Path, seed: int, timeout: float) -> Bases:
    rng = random.Random(f"{seed}:bases")
    hoa: list[tuple[str, Path, list[str]]] = []
    for sub in ("valid", "tricky", "invalid"):
        for path in sorted((corpus / "hoa" / sub).glob("*.hoa")):
            hoa.append((f"{sub}/{path.name}", path, []))
    # The controllers among them (an input-complete, output-deterministic Mealy view with inputs): a task each.
    tasks: dict[str, list[str]] = {}
    scratch = work / "bases"
    scratch.mkdir(parents=True)
    for name, path, _ in hoa:
        if not name.startswith("valid/"):
            continue
        data = path.read_bytes()
        # Without controllable-AP, the last AP as the one output (as bench/corpus_sweep.py reads such files).
        outputs = [] if b"controllable-AP" in data else ["--outputs", _last_ap(data)]
        rc, out, _, _ = fork_run(["hoa", "mealy", str(path), "--json", *outputs], scratch, timeout)
        view = _last_json(out) if rc == 0 else None
        if view and view["inputs"] and view["outputs"]:
            tasks[name] = [*_task(rng, view["inputs"], view["outputs"], rng.choice([2, 3, 5])), *outputs]
    hoa = [(n, p, tasks.get(n, [])) for n, p, _ in hoa]
    aag: list[tuple[str, Path, list[str]]] = []
    aig: list[tuple[str, Path, list[str]]] = []
    from aig.parser import parse_file
    from aig.writer import binary

    for path in sorted((corpus / "aiger").glob("*.aag")):
        circuit = parse_file(path)
        inputs = [circuit.name("i", k) or f"i{k}" for k in range(len(circuit.inputs))]
        outputs = [circuit.name("o", k) or f"o{k}" for k in range(len(circuit.outputs))]
        task = [*_task(rng, inputs, outputs or ["o0"], rng.choice([1, 2, 3])), "--edit",
                "uncontrollable" if len(inputs) > 16 else "all"]
        aag.append((path.name, path, task))
        out = scratch / (path.stem + ".aig")
        out.write_bytes(binary(circuit))
        aig.append((out.name, out, task))
    peer = corpus / "peer"
    bundle = work / "bases" / "bundle.json"
    _must(["import", "peer", str(peer / "instance_bundle_v1.json"), "-o", str(bundle), "--no-measure"], scratch,
          timeout)
    ids = [i["instance_id"] for i in json.loads(bundle.read_text())["instances"]]
    runs = work / "bases" / "runs.jsonl"
    _must(["import", "runs", str(peer / "runs_v1_valid.jsonl"), "-o", str(runs), "--bundle", str(bundle)], scratch,
          timeout)
    instances: list[tuple[str, Path, Path]] = []
    controllers = [h for h in hoa if h[2]]
    controllers = sorted(rng.sample(controllers, min(len(controllers), MAX_HOA_INSTANCES)))
    for name, path, task in [*controllers, *(a for a in aag if a[0] in SMALL_AIGER)]:
        stem = Path(name).stem
        inst = work / "bases" / f"{stem}.inst.json"
        command = "hoa" if path.suffix == ".hoa" else "aiger"
        rc, _, _, _ = fork_run(["import", command, str(path), "-o", str(inst), "--no-measure", *task], scratch,
                               timeout)
        if rc != 0:
            continue
        rc, out, _, _ = fork_run(["oracle", str(inst), "--json", "--seconds", "20"], scratch, timeout)
        cert = scratch / f"{stem}.cert.json"
        answer = (_last_json(out) if rc == 0 else None) or {}
        cert.write_text(json.dumps(answer.get("certificate") or [[0, "x", 1]]))
        instances.append((stem, inst, cert))
    return Bases(hoa, aag, aig, peer / "instance_bundle_v1.json",
                 [peer / "runs_v1_valid.jsonl", peer / "runs_pre_v1_legacy.jsonl"], bundle, ids, instances, runs)


# ---------------------------------------------------------------------------------------------------------------
# One case: a mutant and the commands that read it.

def _last_json(text: str) -> dict | None:
    for line in reversed(text.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


class Case:
    def __init__(self, case: str, kind: str, base: str, mutation: str, work: Path, timeout: float) -> None:
        self.case, self.kind, self.base, self.mutation, self.work, self.timeout = case, kind, base, mutation, work, \
            timeout
        self.results: list[Result] = []

    def run(self, command: str, argv: list[str], where: list[str]) -> tuple[int | None, str, str]:
        rc, out, err, cpu = fork_run(argv, self.work, self.timeout)
        result = Result(self.case, self.kind, self.base, self.mutation, command, argv, rc, round(cpu, 3),
                        err.strip()[:400], judge(command, rc, err, where, self.timeout))
        self.results.append(result)
        return rc, out, err

    def wrong(self, finding: str) -> None:
        self.results[-1].findings.append(finding)


def _where(*files: str, options: tuple[str, ...] = ()) -> list[str]:
    return [*(Path(f).name for f in files), *options]


TASK_FIELDS = ("backend", "trace", "effect", "outputs", "t_star", "t-star", "mode", "window", "budget", "edit",
               "resolve")


def run_chain(c: Case, inst: str, where: list[str], extra: list[str]) -> None:
    """The queries on an accepted instance, with the checks of their answers."""
    counts = {}
    for backend in ("default", "sat"):
        choice = [] if backend == "default" else ["--backend", backend]
        rc, out, _ = c.run("enumerate", ["enumerate", inst, "--count", "--json", "--seconds", "10", *choice, *extra],
                           where)
        if rc == 0:
            answer = _last_json(out)
            counts[backend] = None if answer is None else answer.get("count")
    if len(counts) == 2 and counts["default"] != counts["sat"]:
        c.wrong(f"backends disagree on |M_B(I)|: {counts}")
    rc, out, _ = c.run("oracle", ["oracle", inst, "--json", "--seconds", "10", *extra], where)
    answer = _last_json(out) if rc == 0 else None
    if answer and answer.get("certificate"):
        cert = c.work / "oracle-cert.json"
        cert.write_text(json.dumps(answer["certificate"]))
        rc, out, _ = c.run("verify", ["verify", inst, str(cert), "--json", *extra], [*where, cert.name])
        record = _last_json(out) if rc == 0 else None
        if rc == 0 and (record is None or record.get("valid") is not True):
            c.wrong("the oracle's certificate is not valid by verify")


def run_case(kind: str, i: int, bases: Bases, seed: int, timeout: float, root: Path, *,
             keep: bool = False) -> list[Result]:
    """Mutant ``i`` of ``kind`` and its commands; ``keep``: leave its folder (for a confirmation run)."""
    rng = random.Random(f"{seed}:{kind}:{i}")
    work = root / f"{kind}-{i}"
    work.mkdir(parents=True)
    json_kind = kind in ("peer-bundle", "peer-runs", "bundle", "instance", "runs", "cert")
    if kind == "hoa":
        base, path, task = rng.choice(bases.hoa)
    elif kind in ("aag", "aig"):
        base, path, task = rng.choice(bases.aag if kind == "aag" else bases.aig)
    elif kind == "peer-bundle":
        base, path, task = "peer/instance_bundle_v1.json", bases.peer_bundle, []
    elif kind == "peer-runs":
        path = rng.choice(bases.peer_runs)
        base, task = f"peer/{path.name}", []
    elif kind == "bundle":
        base, path, task = "import peer's bundle", bases.bundle, []
    elif kind == "runs":
        base, path, task = "import runs' records", bases.runs, []
    else:
        base, inst_path, cert_path = rng.choice(bases.instances)
        path = inst_path if kind == "instance" else cert_path
        task = []
    data = path.read_bytes()
    data, mutation = (mutate_json if json_kind else mutate_bytes)(data, rng, "aag" if kind == "aig" else kind)
    suffix = {"hoa": ".hoa", "aag": ".aag", "aig": ".aig", "peer-runs": ".jsonl", "runs": ".jsonl"}.get(kind, ".json")
    mutant = work / f"mutant{suffix}"
    mutant.write_bytes(data)
    m = str(mutant)
    c = Case(f"{kind}-{i}", kind, base, mutation, work, timeout)
    task_where = (*TASK_FIELDS, *(o for o in task if o.startswith("--")))
    if kind == "hoa":
        rc_check, _, _ = c.run("hoa check", ["hoa", "check", m, "--json"], _where(m))
        rc_print, out, _ = c.run("hoa print", ["hoa", "print", m], _where(m))
        if rc_check is not None and rc_print is not None and (rc_check == 0) != (rc_print == 0):
            c.wrong(f"hoa print exit {rc_print} but hoa check exit {rc_check}")
        if rc_print == 0:
            again = work / "printed.hoa"
            again.write_text(out)
            rc, out2, _ = c.run("hoa print", ["hoa", "print", str(again)], _where(str(again)))
            if rc != 0 or out2 != out:
                c.wrong(f"hoa print's text does not print the same again (exit {rc})")
        outputs = [] if b"controllable-AP" in data else ["--outputs", _last_ap(data)]
        c.run("hoa mealy", ["hoa", "mealy", m, "--json", *outputs], _where(m, options=("outputs",)))
        if task:
            rc, _, _ = c.run("import hoa", ["import", "hoa", m, "-o", str(work / "inst.json"), "--no-measure",
                                           *task], _where(m, options=task_where))
            if rc == 0:
                run_chain(c, str(work / "inst.json"), _where(m, "inst.json"), [])
    elif kind in ("aag", "aig"):
        rc, _, _ = c.run("import aiger", ["import", "aiger", m, "-o", str(work / "inst.json"), "--no-measure",
                                          "--seconds", "10", *task], _where(m, options=task_where))
        if rc == 0 and base in [a.replace(".aag", ".aig") if kind == "aig" else a for a in SMALL_AIGER]:
            run_chain(c, str(work / "inst.json"), _where(m, "inst.json"), [])
    elif kind == "peer-bundle":
        rc, _, _ = c.run("import peer", ["import", "peer", m, "-o", str(work / "b.json"), "--no-measure"],
                         _where(m))
        if rc == 0:
            ids = [x["instance_id"] for x in json.loads((work / "b.json").read_text())["instances"]]
            run_chain(c, str(work / "b.json"), _where(m, "b.json", options=("--id",)), ["--id", rng.choice(ids)])
    elif kind == "peer-runs":
        c.run("import runs", ["import", "runs", m, "-o", str(work / "r.jsonl"), "--bundle", str(bases.bundle)],
              _where(m, str(bases.bundle)))
    elif kind == "bundle":
        iid = rng.choice(bases.bundle_ids)
        run_chain(c, m, _where(m, options=("--id", "id")), ["--id", iid])
        c.run("validate", ["validate", str(bases.runs), "--bundle", m, "--json"], _where(m, str(bases.runs)))
    elif kind == "runs":
        c.run("validate", ["validate", m, "--bundle", str(bases.bundle), "--json"], _where(m, str(bases.bundle)))
        c.run("report", ["report", m, "-o", str(work / "report.json"), "--json"], _where(m))
    elif kind == "instance":
        run_chain(c, m, _where(m), [])
        c.run("verify", ["verify", m, str(bases_cert(bases, base)), "--best-match", "--json", "--seconds", "10"],
              _where(m, str(bases_cert(bases, base))))
    else:  # cert
        inst = next(p for n, p, _ in bases.instances if n == base)
        c.run("verify", ["verify", str(inst), m, "--best-match", "--json", "--seconds", "10"], _where(m, str(inst)))
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return c.results


def bases_cert(bases: Bases, name: str) -> Path:
    return next(cert for n, _, cert in bases.instances if n == name)


def _last_ap(data: bytes) -> str:
    match = re.search(rb"^AP:\s*\d+((?:\s+\"(?:[^\"\\]|\\.)*\")*)", data, re.M)
    aps = re.findall(rb"\"((?:[^\"\\]|\\.)*)\"", match.group(1)) if match else []
    return aps[-1].decode(errors="replace") if aps else "o"


# ---------------------------------------------------------------------------------------------------------------

def worker(jobs: list[tuple[str, int]], bases: Bases, seed: int, timeout: float, root: Path, out: Path) -> None:
    with out.open("w") as fh:
        for kind, i in jobs:
            for result in run_case(kind, i, bases, seed, timeout, root):
                fh.write(json.dumps(asdict(result)) + "\n")
                fh.flush()


def confirm(result: Result, bases: Bases, seed: int, timeout: float, root: Path) -> str:
    """Run a finding's command again as a real process, on its case made again: what it shows."""
    kind, i = result.case.rsplit("-", 1)
    keep = root / "confirm"
    shutil.rmtree(keep / result.case, ignore_errors=True)
    run_case(kind, int(i), bases, seed, timeout, keep, keep=True)
    argv = [a.replace(str(root / result.case), str(keep / result.case)) for a in result.argv]
    rc, _, err = exec_run(argv, keep / result.case, timeout)
    lines = [line for line in err.splitlines() if line.strip()]
    return f"as a process: exit {rc}, {len(lines)} stderr lines: {lines[-1][:200] if lines else ''}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-kind", type=int, default=200, help="mutants per file kind")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--timeout", type=float, default=60.0, help="outer timeout of each command, seconds")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rows", action="store_true", help="print every command's row, not only the findings")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"unknown kinds {unknown} (expected some of {','.join(KINDS)})")
    try:
        preload()
    except ImportError:
        print("corpus_mutate: gf01_formal is not importable: activate the project's venv", file=sys.stderr)
        return 2
    corpus = args.corpus.resolve()
    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        root = Path(tmp)
        started = time.monotonic()
        bases = make_bases(corpus, root, args.seed, args.timeout)
        print(f"# bases: {len(bases.hoa)} HOA ({sum(1 for h in bases.hoa if h[2])} controllers with a task), "
              f"{len(bases.aag)} AIGER (ASCII and binary), {len(bases.instances)} instances, the peer's bundle "
              f"and runs, ours; made in {time.monotonic() - started:.0f} s", flush=True)
        cases = [(kind, i) for i in range(args.per_kind) for kind in kinds]
        pids = []
        for w in range(args.jobs):
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    worker(cases[w::args.jobs], bases, args.seed, args.timeout, root, root / f"w{w}.jsonl")
                except BaseException:
                    import traceback

                    traceback.print_exc()
                    code = 1
                finally:
                    os._exit(code)
            pids.append(pid)
        failed = [pid for pid in pids if os.waitpid(pid, 0)[1] != 0]
        results = [Result(**json.loads(line)) for w in range(args.jobs)
                   for line in (root / f"w{w}.jsonl").read_text().splitlines()]
        results.sort(key=lambda r: (KINDS.index(r.kind), int(r.case.rsplit("-", 1)[1])))
        for r in results if args.rows else []:
            rc = "hang" if r.rc is None else str(r.rc)
            first = r.stderr.splitlines()[0][:120] if r.stderr else ""
            print(f"{r.case}\t{r.command}\t{rc}\t{r.cpu:.2f}\t{r.mutation[:60]}\t{first}")
        print(f"\n# seed {args.seed}: {len(results)} commands on {len(cases)} mutants "
              f"in {time.monotonic() - started:.0f} s wall")
        for kind in kinds:
            mine = [r for r in results if r.kind == kind]
            by_rc: dict[str, int] = {}
            for r in mine:
                key = "hang" if r.rc is None else str(r.rc)
                by_rc[key] = by_rc.get(key, 0) + 1
            cpu = sum(r.cpu for r in mine)
            print(f"# {kind}: {args.per_kind} mutants, {len(mine)} commands, exits "
                  f"{dict(sorted(by_rc.items()))}, {cpu:.0f} s CPU")
        findings = [(r, f) for r in results for f in r.findings]
        print(f"# {len(findings)} findings" + (f"; workers failed: {failed}" if failed else ""))
        for r, f in findings:
            print(f"FINDING\t{r.case}\t{r.base}\t{r.mutation}\t{r.command}\t{f}\t"
                  f"{r.stderr.splitlines()[-1][:200] if r.stderr else ''}")
            print(f"\t{confirm(r, bases, args.seed, args.timeout, root)}")
        return 1 if findings or failed else 0


if __name__ == "__main__":
    sys.exit(main())
