"""Push every file of the external corpus through the user-facing `gf01` commands and report what breaks.

    python bench/corpus_sweep.py CORPUS [--seed N] [--timeout S] [--jobs N] [--only hoa|aiger|peer] [--limit N]

For each HOA file: `hoa check`, `hoa print`, `hoa mealy`; for each file that is an input-complete controller (a game
arena, not output-deterministic, read with `--resolve first-edge`) and each AIGER circuit, a made-up task (a base
trace short or long, an effect on a real output or its negation, t* somewhere, hard or normal mode, for circuits an
`--edit` choice; all drawn from the seed) is imported and the instance goes through `enumerate --count` (every
backend that answers, which must agree exactly), `enumerate --count --unbounded`, `oracle`, `verify --best-match
--subset-min` with the oracle's certificate, the empty one and a random one, `sim`, `cnf` and `play --agent greedy`.
The peer's bundle and runs go through `import peer` and `import runs`. Every command runs under its `--seconds` cap
where it has one and under an outer timeout.

It prints one row per command (file, command, exit code, seconds, first stderr line) and then the findings: a
traceback, exit 70, a death by signal, a command past its outer timeout, more than one stderr line on exit 2, a
"valid" file refused or an "invalid" one accepted, an exit code docs/cli.md does not list for the command, the
oracle's certificate not valid, and backends that disagree on a count. Exit status: 1 when there is a finding.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

GF01 = [sys.executable, "-m", "gf01_formal"]

#: The exit codes docs/cli.md lists per command (the sweep's key, e.g. "enumerate-sat").
ALLOWED = {
    "hoa-check": {0, 1, 2},
    "hoa-print": {0, 2},
    "hoa-mealy": {0, 1, 2},
    "import": {0, 2},
    "enumerate": {0, 2, 3},
    "oracle": {0, 2, 3},
    "verify": {0, 2, 3},
    "sim": {0, 2},
    "cnf": {0, 2},
    "play": {0, 1, 2, 3},
}


@dataclass
class Row:
    file: str
    command: str
    rc: int | None
    seconds: float
    stderr: str
    stdout: str = ""
    task: str = ""
    findings: list[str] = field(default_factory=list)


def run(file: str, name: str, args: list[str], timeout: float, cwd: Path) -> Row:
    start = time.monotonic()
    try:
        proc = subprocess.run(GF01 + args, capture_output=True, text=True, timeout=timeout, cwd=cwd)
        rc: int | None = proc.returncode
        out, err = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc = None
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    row = Row(file, name, rc, time.monotonic() - start, err, out)
    kind = name.split(" ")[0]
    if rc is None:
        row.findings.append(f"hang: past the outer timeout of {timeout:g} s")
    elif rc < 0:
        row.findings.append(f"killed by signal {-rc}")
    elif rc == 70:
        row.findings.append("exit 70 (internal error)")
    elif kind in ALLOWED and rc not in ALLOWED[kind]:
        row.findings.append(f"exit {rc}, which docs/cli.md does not list")
    if "Traceback" in err:
        row.findings.append("a traceback on stderr")
    if rc == 2 and len([line for line in err.splitlines() if line.strip()]) > 1:
        row.findings.append("exit 2 with more than one stderr line")
    return row


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:160]
    return ""


def quote(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def make_task(rng: random.Random, inputs: list[str], outputs: list[str]) -> list[str]:
    """Instance options for a made-up task: trace length short or long, effect an output or its negation, t* and
    the mode drawn."""
    length = rng.choice([1, 2, 3, 6, 12])
    trace = [{name: rng.randint(0, 1) for name in inputs} for _ in range(length)]
    out = rng.choice(outputs)
    effect = quote(out) if rng.random() < 0.6 else "!" + quote(out)
    args = ["--trace", json.dumps(trace), "--effect", effect]
    if rng.random() < 0.5:
        args += ["--t-star", str(rng.randrange(length))]
    if rng.random() < 0.4:
        args += ["--mode", "normal"]
    return args


def chain(file: str, rng: random.Random, timeout: float, work: Path, seconds: str) -> list[Row]:
    """import has been done: INSTANCE is work/inst.json. The query commands on it."""
    rows: list[Row] = []
    inst = str(work / "inst.json")
    counts: dict[str, int | None] = {}
    for backend in ["default", "forward", "sat", "bdd", "explicit"]:
        extra = [] if backend == "default" else ["--backend", backend]
        row = run(file, f"enumerate-{backend} --count", ["enumerate", inst, "--count", "--json", "--seconds", seconds,
                                                       *extra], timeout, work)
        rows.append(row)
        if row.rc == 0:
            try:
                counts[backend] = json.loads(row.stdout.splitlines()[-1])["count"]
            except (ValueError, KeyError, IndexError) as exc:
                row.findings.append(f"exit 0 without a count in its JSON ({exc!r})")
    if len(set(counts.values())) > 1:
        rows[-1].findings.append(f"backends disagree on |M_B(I)|: {counts}")
    rows.append(run(file, "enumerate --count --unbounded", ["enumerate", inst, "--count", "--unbounded", "--json",
                                                            "--seconds", seconds], timeout, work))
    oracle = run(file, "oracle", ["oracle", inst, "--json", "--seconds", seconds], timeout, work)
    rows.append(oracle)
    certs: dict[str, list] = {"empty": []}
    if oracle.rc == 0:
        try:
            answer = json.loads(oracle.stdout.splitlines()[-1])
            if answer.get("certificate") is not None:
                certs["oracle"] = answer["certificate"]
        except (ValueError, IndexError) as exc:
            oracle.findings.append(f"oracle exit 0 without JSON ({exc!r})")
    # A random certificate: a few atoms over the trace's steps and inputs (read back from the instance file).
    try:
        spec = json.loads((work / "inst.json").read_text())
        trace = spec.get("trace") or spec.get("base_trace") or []
        steps = len(trace)
        names = sorted(trace[0]) if trace and isinstance(trace[0], dict) else []
        if steps and names:
            certs["random"] = [[rng.randrange(steps), rng.choice(names), rng.randint(0, 1)]
                               for _ in range(rng.randint(1, 3))]
    except (OSError, ValueError, TypeError, KeyError):
        pass
    for label, cert in certs.items():
        path = work / f"cert-{label}.json"
        path.write_text(json.dumps(cert))
        row = run(file, f"verify {label}", ["verify", inst, str(path), "--best-match", "--subset-min", "--json",
                                            "--seconds", seconds], timeout, work)
        rows.append(row)
        if label == "oracle" and row.rc == 0:
            try:
                if json.loads(row.stdout.splitlines()[-1]).get("valid") is not True:
                    row.findings.append("the oracle's certificate is not valid by verify")
            except (ValueError, IndexError):
                row.findings.append("verify exit 0 without JSON")
    sim_cert = [str(work / "cert-oracle.json")] if "oracle" in certs else []
    rows.append(run(file, "sim", ["sim", inst, *sim_cert, "--json"], timeout, work))
    rows.append(run(file, "cnf", ["cnf", inst, str(work / "out.cnf"), "--json"], timeout, work))
    rows.append(run(file, "play greedy", ["play", inst, "--agent", "greedy", "--json", "--seed", "0",
                                         "--scoring-seconds", seconds], timeout, work))
    return rows


def import_task(rel: str, command: list[str], task: list[str], timeout: float, work: Path) -> tuple[Row, list[str]]:
    """Import SYSTEM with TASK; when the base run already shows the effect (an instance that asks for no edit), the
    effect negated once more, so that most chains have certificates to find."""
    name = " ".join(command[:2])
    args = [*command, "-o", str(work / "inst.json"), "--seconds", "10", "--json"]
    imp = run(rel, name, [*args, *task], timeout, work)
    if imp.rc == 0 and "already shows the effect" in imp.stderr:
        at = task.index("--effect") + 1
        effect = task[at]
        task = [*task[:at], effect[1:] if effect.startswith("!") else "!" + effect, *task[at + 1:]]
        imp = run(rel, name, [*args, *task], timeout, work)
    imp.task = " ".join(task)
    return imp, task


def hoa_file(corpus: Path, entry: dict, seed: int, timeout: float) -> list[Row]:
    rel = entry["file"]
    path = str(corpus / "hoa" / rel)
    rng = random.Random(f"{seed}:{rel}")
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        work = Path(tmp)
        rows = [run(rel, "hoa-check", ["hoa", "check", path, "--json"], timeout, work)]
        check = rows[0]
        if entry["expected"] == "accept" and check.rc != 0:
            check.findings.append("a valid file refused")
        if entry["expected"] == "reject" and check.rc == 0:
            check.findings.append("an invalid file accepted")
        rows.append(run(rel, "hoa-print", ["hoa", "print", path], timeout, work))
        if (check.rc == 0) != (rows[-1].rc == 0):
            rows[-1].findings.append(f"hoa print exit {rows[-1].rc} but hoa check exit {check.rc}")
        controllable = any(a.get("controllable_AP") for a in entry.get("automata", []))
        mealy_args = ["hoa", "mealy", path, "--json"]
        if not controllable and check.rc == 0:
            # No controllable-AP: the last AP as the one output, a reading any automaton allows.
            head = (corpus / "hoa" / rel).read_text(errors="replace")
            match = re.search(r"^AP:\s*\d+((?:\s+\"(?:[^\"\\]|\\.)*\")*)", head, re.M)
            aps = re.findall(r"\"((?:[^\"\\]|\\.)*)\"", match.group(1)) if match else []
            if len(aps) < 2:
                return rows
            mealy_args += ["--outputs", aps[-1]]
        rows.append(run(rel, "hoa-mealy", mealy_args, timeout, work))
        mealy = rows[-1]
        if mealy.rc not in (0, 1):
            return rows
        view = json.loads(mealy.stdout.splitlines()[-1])
        # A game arena (input-complete, not output-deterministic) is read with the first-edge rule (--resolve).
        if mealy.rc == 1 and not (view["input_complete"] and view["output_deterministic"] is False):
            return rows
        if not view["inputs"] or not view["outputs"]:
            return rows
        task = make_task(rng, view["inputs"], view["outputs"])
        if not controllable:
            task += ["--outputs", ",".join(view["outputs"])]
        if mealy.rc == 1:
            task += ["--resolve", "first-edge"]
        imp, task = import_task(rel, ["import", "hoa", path], task, timeout, work)
        rows.append(imp)
        if imp.rc == 0:
            rows += chain(rel, rng, timeout, work, "20")
        for row in rows[rows.index(imp):]:
            row.task = imp.task
        return rows


def aag_names(path: Path) -> tuple[list[str], list[str]]:
    lines = path.read_text().splitlines()
    _, _m, i, _l, o, *rest = lines[0].split()
    b = int(rest[1]) if len(rest) > 1 else 0
    names = {}
    for line in lines:
        m = re.match(r"^([iob])(\d+) (.+)$", line)
        if m:
            names[(m.group(1), int(m.group(2)))] = m.group(3)
        if line == "c":
            break
    inputs = [names.get(("i", k), f"i{k}") for k in range(int(i))]
    outputs = [names.get(("o", k), f"o{k}") for k in range(int(o))] + [names.get(("b", k), f"b{k}") for k in range(b)]
    return inputs, outputs


def aiger_file(corpus: Path, entry: dict, seed: int, timeout: float) -> list[Row]:
    rel = entry["file"]
    path = corpus / "aiger" / rel
    rng = random.Random(f"{seed}:{rel}")
    inputs, outputs = aag_names(path)
    edit = rng.choice(["all", "uncontrollable", "controllable"])
    edited = [n for n in inputs if edit == "all" or (n.startswith("controllable") == (edit == "controllable"))]
    if len(edited) > 20:
        edit = "uncontrollable" if edit != "uncontrollable" else "controllable"
    task = [*make_task(rng, inputs, outputs), "--edit", edit]
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        work = Path(tmp)
        imp, task = import_task(rel, ["import", "aiger", str(path)], task, timeout, work)
        rows = [imp]
        if imp.rc == 0:
            rows += chain(rel, rng, timeout, work, "20")
        for row in rows[rows.index(imp):]:
            row.task = imp.task
        return rows


def peer(corpus: Path, timeout: float) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="sweep-") as tmp:
        work = Path(tmp)
        bundle = work / "peer.json"
        rows = [run("peer/instance_bundle_v1.json", "import peer",
                    ["import", "peer", str(corpus / "peer" / "instance_bundle_v1.json"), "-o", str(bundle), "--json"],
                    timeout, work)]
        for runs in ["runs_v1_valid.jsonl", "runs_pre_v1_legacy.jsonl"]:
            rows.append(run(f"peer/{runs}", "import runs", ["import", "runs", str(corpus / "peer" / runs), "-o",
                                                            str(work / f"{runs}.out"), "--bundle", str(bundle),
                                                            "--json"], timeout, work))
        manifest = str(corpus / "peer" / "split_manifest_v1.json")
        rows.append(run("peer/split_manifest_v1.json", "split-policy-check",
                        ["split-policy-check", manifest, "--json"], timeout, work))
        if rows[0].rc == 0:
            ids = [i["instance_id"] for i in json.loads(bundle.read_text())["instances"]]
            for iid in ids:
                for name, args in [("oracle", ["oracle", str(bundle), "--id", iid, "--json", "--seconds", "20"]),
                                   ("enumerate --count", ["enumerate", str(bundle), "--id", iid, "--count", "--json",
                                                          "--seconds", "20"]),
                                   ("play greedy", ["play", str(bundle), "--id", iid, "--agent", "greedy", "--json"])]:
                    rows.append(run(f"peer:{iid}", name, args, timeout, work))
        return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="outer timeout of each command, seconds")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", choices=["hoa", "aiger", "peer"])
    parser.add_argument("--limit", type=int, default=0, help="only the first N files of each kind (0: all)")
    parser.add_argument("--match", default="", help="only files whose name contains this")
    args = parser.parse_args()
    try:
        import gf01_formal  # noqa: F401  (the commands run as `python -m gf01_formal` of this interpreter)
    except ImportError:
        print("corpus_sweep: gf01_formal is not importable: activate the project's venv", file=sys.stderr)
        return 2
    corpus = args.corpus.resolve()
    jobs = []
    if args.only in (None, "hoa"):
        entries = [json.loads(line) for line in (corpus / "hoa" / "index.jsonl").read_text().splitlines() if line]
        entries = [e for e in entries if args.match in e["file"]]
        entries = entries[: args.limit] if args.limit else entries
        jobs += [(hoa_file, (corpus, e, args.seed, args.timeout)) for e in entries]
    if args.only in (None, "aiger"):
        entries = [json.loads(line) for line in (corpus / "aiger" / "index.jsonl").read_text().splitlines() if line]
        entries = [e for e in entries if args.match in e["file"]]
        entries = entries[: args.limit] if args.limit else entries
        jobs += [(aiger_file, (corpus, e, args.seed, args.timeout)) for e in entries]
    if args.only in (None, "peer"):
        jobs.append((peer, (corpus, args.timeout)))
    rows: list[Row] = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(lambda job: job[0](*job[1]), jobs):
            for row in result:
                rows.append(row)
                rc = "hang" if row.rc is None else str(row.rc)
                print(f"{row.file}\t{row.command}\t{rc}\t{row.seconds:.1f}\t{first_line(row.stderr)}", flush=True)
    findings = [(row, f) for row in rows for f in row.findings]
    print(f"\n# seed {args.seed}: {len(rows)} commands, {len(findings)} findings")
    for row, finding in findings:
        print(f"FINDING\t{row.file}\t{row.command}\t{finding}\t{first_line(row.stderr)}")
        if row.task:
            print(f"\ttask: {row.task}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
