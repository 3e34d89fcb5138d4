"""Fuzzing the inputs users give: mutated instance files, certificates, effects and traces, through the library's
entry points (open_instance, parse_certificate + score, parse_effect) and through the CLI in-process. Anything but
the project's own Gf01Error (and Unknown, where a query has limits) is a bug.

A seeded mutator (numpy ``Generator(PCG64(seed))``), not hypothesis: the cases are the same on every run, and the
number is fixed (a few seconds in all). Mutations either keep each value's JSON type (so that schema checks pass and
the semantic checks behind them run; the instance's hash is then recomputed, so the hash check does not stop
them) or replace values with anything (wrong types, huge numbers, deep nesting, junk text).
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gf01_formal.artifacts import sha256_hex
from gf01_formal.cli import main
from gf01_formal.instances.model import Meta, System, TableSystem, content_id, content_of, make_instance
from gf01_formal.instances.sources import InstanceOptions, open_instance
from gf01_formal.instances.traces import parse_effect
from gf01_formal.scoring.certificates import parse_certificate, score
from hoa.errors import Gf01Error
from solvers.limits import Limits, Unknown

EXAMPLES = Path(__file__).resolve().parent.parent / "gf01_formal" / "examples"
HOA = EXAMPLES / "arbiter.hoa"
TRACE = "r0&!r1;!r0&!r1;!r0&!r1;!r0&r1"
SEEDS = range(4)
#: Replacement values of any type: the odd ones a user or a broken tool writes.
ODD: list[Any] = [None, True, False, 0, 1, -1, 2, 10**30, -(10**30), 2**63, 1.0, 0.5, 1e308, "", "x", "21", "g0",
                  "!g0", "r0", [], {}, [1, 2], {"a": 1}, "(" * 150, "!" * 300, "a" * 5000, [[[[[[[[[[]]]]]]]]]],
                  [[0, "r0", 1]], "é", "\x00"]
INTS = [0, 1, -1, 2, 3, 5, 21, 29, 30, 31, 100, 10**6, 10**30, -(10**30), 2**63]
CHARS = "!&|() tf01;:[]{}\"\\\n@-^,rgo"
#: Fields whose values select a schema branch: mutating them only tests the schema's enum.
SELECTORS = {"schema_version", "mode", "kind", "id_scheme", "provenance", "split_id", "policy", "content_hash",
             "instance_id"}
#: Where an instance's semantics live: most mutations aim here (a random path seldom reaches a table cell).
TARGETS = [("effect",), ("t_star",), ("window",), ("budget_t",), ("budget_a",), ("base_trace",),
           ("system", "inputs"), ("system", "outputs"), ("system", "hoa"), ("system", "table", "next"),
           ("system", "table", "out"), ("system", "table", "initial"), ("system", "table", "states")]


class Mutator:
    """Random edits of decoded JSON and of text, from one seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def pick(self, seq: list[Any]) -> Any:
        return copy.deepcopy(seq[int(self.rng.integers(len(seq)))])

    def text(self, s: str) -> str:
        """A few character insertions, deletions and duplications of a slice."""
        out = list(s)
        for _ in range(int(self.rng.integers(1, 5))):
            at = int(self.rng.integers(len(out) + 1))
            r = self.rng.random()
            if r < 0.4 and out:
                del out[min(at, len(out) - 1)]
            elif r < 0.8:
                out.insert(at, CHARS[int(self.rng.integers(len(CHARS)))])
            else:
                out[at:at] = list(s[: int(self.rng.integers(len(s) + 1))])
        return "".join(out)

    def anything(self, obj: Any) -> Any:
        """Replace, delete or add at a random path, with values of any type."""
        if isinstance(obj, dict | list) and obj and self.rng.random() < 0.8:
            slot = self.pick(list(obj)) if isinstance(obj, dict) else int(self.rng.integers(len(obj)))
            r = self.rng.random()
            if r < 0.15:
                del obj[slot]
            elif r < 0.45:
                obj[slot] = self.pick(ODD)
            elif r < 0.5:  # one more entry: a new key, or a copy of an item
                if isinstance(obj, dict):
                    obj["extra"] = self.pick(ODD)
                else:
                    obj.append(copy.deepcopy(obj[slot]))
            else:
                obj[slot] = self.anything(obj[slot])
            return obj
        if isinstance(obj, str) and obj and self.rng.random() < 0.7:
            return self.text(obj)
        return self.pick(ODD)

    def typed(self, obj: Any) -> Any:
        """Change a value at a random path keeping its JSON type (integers to odd integers, text edited)."""
        if isinstance(obj, dict) and obj:
            key = self.pick(list(obj))
            if key not in SELECTORS:
                obj[key] = self.typed(obj[key])
            return obj
        if isinstance(obj, list) and obj:
            i = int(self.rng.integers(len(obj)))
            r = self.rng.random()
            if r < 0.1:
                del obj[i]
            elif r < 0.2:
                obj.append(copy.deepcopy(obj[i]))
            else:
                obj[i] = self.typed(obj[i])
            return obj
        if isinstance(obj, bool):
            return not obj
        if isinstance(obj, int):
            return self.pick(INTS) if self.rng.random() < 0.7 else obj + int(self.rng.integers(-3, 4))
        if isinstance(obj, str):
            return self.text(obj) if obj else self.pick(ODD)
        return obj


def _aimed(m: Mutator, data: Any, mutate: Callable[[Any], Any]) -> Any:
    """``mutate`` applied at one of the :data:`TARGETS` that ``data`` has (anywhere, when it has none)."""
    paths = [p for p in TARGETS if _get(data, p) is not None]
    if not paths or m.rng.random() < 0.2:
        return mutate(data)
    path = m.pick(paths)
    parent = _get(data, path[:-1])
    parent[path[-1]] = mutate(parent[path[-1]])
    return data


def _get(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _rehashed(data: Any) -> Any:
    """``data`` with its content hash and content id recomputed, where it still has the fields to compute them."""
    try:
        digest = sha256_hex(content_of(data))
    except Exception:  # the mutation removed a content field, or left one that has no JSON form
        return data
    return {**data, "content_hash": digest, "instance_id": content_id(digest)}


def _table_instance() -> dict[str, Any]:
    """A small instance whose system is an explicit table (the other kind the instance schema takes)."""
    system = System(kind="table", inputs=["a", "b"], outputs=["o"],
                    table=TableSystem(states=["s0", "s1"], initial=0, next=[[0, 1, 1, 0], [1, 0, 0, 1]],
                                      out=[[0, 0, 1, 1], [1, 0, 1, 0]]))
    inst = make_instance(system=system, base_trace=[{"a": t % 2, "b": 0} for t in range(6)], effect="o", t_star=5,
                         mode="normal", window=2, budget_t=3, budget_a=6,
                         meta=Meta(generator_version="test", provenance="generated", id_scheme="content"))
    return inst.model_dump(mode="json")


@pytest.fixture(scope="module")
def seeds_instances(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The instances mutated: the bundled example (HOA system), an imported HOA one, and a table one."""
    out = tmp_path_factory.mktemp("fuzz") / "hoa.json"
    assert main(["import", "hoa", str(HOA), "--trace", TRACE, "--effect", "g0 & !g1", "--mode", "normal",
                 "--window", "2", "--no-measure", "-o", str(out)]) == 0
    return [json.loads((EXAMPLES / "arbiter_priority.json").read_text()), json.loads(out.read_text()),
            _table_instance()]


def _only_our_errors(what: str, case: Any, run: Callable[[], object]) -> None:
    """Run ``run``; fail naming the case when it raises anything but Gf01Error or Unknown."""
    try:
        run()
    except (Gf01Error, Unknown):
        pass
    except Exception as ex:  # the bug this test is for
        pytest.fail(f"{what}: {type(ex).__name__}: {ex} on {str(case)[:300]}")


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_instance_files(seed: int, seeds_instances: list[dict[str, Any]], tmp_path: Path) -> None:
    m = Mutator(seed)
    path = tmp_path / "case.json"
    for _ in range(150):
        data = copy.deepcopy(m.pick(seeds_instances))
        typed = m.rng.random() < 0.7
        for _ in range(int(m.rng.integers(1, 4))):
            data = _aimed(m, data, m.typed if typed else m.anything)
        if m.rng.random() < 0.85:
            data = _rehashed(data)
        path.write_text(json.dumps(data))
        _only_our_errors("open_instance", data, lambda: open_instance(path))


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_certificates(seed: int) -> None:
    m = Mutator(100 + seed)
    _, problem = open_instance(EXAMPLES / "arbiter_priority.json")
    for _ in range(150):
        cert: Any = [[20, "r2", 1], [21, "r2", 1], [21, "r3", 1]]
        for _ in range(int(m.rng.integers(1, 5))):
            cert = m.typed(cert) if m.rng.random() < 0.5 else m.anything(cert)
        subset_min = bool(m.rng.random() < 0.2)

        def check(c: Any = cert, sm: bool = subset_min) -> None:
            parsed = parse_certificate(c, problem.system.inputs, horizon=problem.horizon, budget_t=problem.budget_t)
            record = score(problem, parsed, subset_min=sm, limits=Limits(seconds=5)).to_json()
            json.dumps(record, allow_nan=False)  # the record is plain JSON
            if parsed.errors:  # a malformed certificate is scored false, its entries counted as submitted
                assert not (record["suff"] or record["valid"])
                assert record["eff_a"] == (len(c) if isinstance(c, list) else 0)

        _only_our_errors("certificate", cert, check)


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_effects_and_traces(seed: int) -> None:
    m = Mutator(200 + seed)
    tokens = ["g0", "g1", "!", "&", "|", "(", ")", "t", "f", " ", "r0", "zz", "g0g1", "$", "\n"]
    for _ in range(150):
        if m.rng.random() < 0.5:
            effect = m.text("!(g0 & (g1 | !t)) | f")
        else:
            effect = "".join(m.pick(tokens) for _ in range(int(m.rng.integers(1, 60))))
        if m.rng.random() < 0.1:
            effect = m.pick(["!", "(", "!("]) * int(m.rng.integers(50, 3000)) + effect
        _only_our_errors("parse_effect", effect, lambda e=effect: parse_effect(e, ["g0", "g1"]))
    for _ in range(60):
        trace: Any = [{"r0": 1, "r1": 0}, {"r0": 0, "r1": 1}]
        r = m.rng.random()
        if r < 0.4:
            trace = m.text(TRACE)
        elif r < 0.7:
            trace[int(m.rng.integers(2))][m.pick(["r0", "r1", "zz"])] = m.pick([0, 1, 2, -1, 1.0, True, None, "1"])
        else:
            trace = m.anything(trace)
        if isinstance(trace, list) and m.rng.random() < 0.5:
            trace = json.dumps(trace)
        if not isinstance(trace, str | list):
            continue
        options = InstanceOptions(trace=trace, effect="g0", mode=m.pick(["hard", "normal"]), window=2)
        _only_our_errors("trace", trace, lambda o=options: open_instance(HOA, options=o))


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_command_lines(seed: int, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI answers every mutated command line with a documented status and at most one line on stderr."""
    m = Mutator(300 + seed)
    values = ["0", "1", "2", "3", "-1", "10", str(10**25), "x", "", "1.5", "nan", "inf"]
    inst, cert = str(EXAMPLES / "arbiter_priority.json"), str(EXAMPLES / "arbiter_priority_cert.json")
    for _ in range(10):
        cmd = m.pick(["verify", "enumerate", "oracle"])
        argv = [cmd, m.pick([str(HOA), inst])]
        if cmd == "verify":
            argv.append(m.pick([cert, str(EXAMPLES / "arbiter_cert_malformed.json")]))
        if argv[1] == str(HOA):
            argv += ["--trace", m.text(TRACE) if m.rng.random() < 0.4 else TRACE,
                     "--effect", m.text("g0 & !g1") if m.rng.random() < 0.4 else "g0"]
            for opt in ("--t-star", "--window", "--budget-t", "--budget-a"):
                if m.rng.random() < 0.3:
                    argv += [opt, m.pick(values)]
            if m.rng.random() < 0.5:
                argv += ["--mode", m.pick(["hard", "normal", "nope"])]
        if m.rng.random() < 0.3:
            argv += ["--backend", m.pick(["sat", "bdd", "nope"])]
        if cmd == "enumerate":
            argv += ["--limit", m.pick(values) if m.rng.random() < 0.3 else "3"]
        if m.rng.random() < 0.3:
            argv += ["--seconds", m.pick(["0", "0.5", "-1", "x"])]
        if m.rng.random() < 0.5:
            argv.append("--json")
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
            status = main(argv)
        assert status in (0, 2, 3), (status, argv, err.getvalue())
        assert err.getvalue().count("\n") <= 1 and "Traceback" not in err.getvalue(), (argv, err.getvalue())


#: What an output (or input) path may be: (kind, maker). Each maker makes ``path`` that kind, in ``tmp``.
def _file_kinds(tmp: Path) -> dict[str, Callable[[Path], None]]:
    import os
    import stat

    target = tmp / "elsewhere.txt"

    def device(p: Path) -> None:
        try:
            os.mknod(p, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except OSError:
            p.write_text("no device here\n")

    def link_to_file(p: Path) -> None:
        target.write_text("old\n")
        p.symlink_to(target)

    def loop(p: Path) -> None:
        p.symlink_to(p)

    def dir_(p: Path) -> None:
        p.mkdir()

    return {"new": lambda p: None, "file": lambda p: p.write_text("old\n"), "dir": dir_,
            "fifo": lambda p: os.mkfifo(p), "device": device, "symlink": link_to_file,
            "dangling symlink": lambda p: p.symlink_to(tmp / "made-by-link.txt"), "symlink loop": loop}


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_output_and_input_paths(seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every writing command, its output any kind of path (device, FIFO, symlinks, a loop, one of its inputs) and an
    input any kind of path: a documented status, at most one line, the inputs whole, and no device, FIFO or link
    replaced by a regular file."""
    import os
    import stat

    from gf01_formal.instances.io import load_bundle, save_artifact

    m = Mutator(400 + seed)
    inst = tmp_path / "inst.json"
    # A short instance (T = 5; the arbiter's T = 30 made a 4 MB CNF a second): the paths are the subject, not the work.
    short = next(i for i in load_bundle(EXAMPLES / "check_bundle.json").instances if len(i.base_trace) == 5)
    save_artifact(inst, short)
    runs = tmp_path / "runs.jsonl"
    assert main(["evaluate", str(inst), "--agent", "random", "-o", str(runs)]) == 0
    capsys.readouterr()
    originals = {p: p.read_bytes() for p in (inst, runs)}
    commands = [
        lambda o, i: ["report", str(i or runs), "-o", str(o)],
        lambda o, i: ["cnf", str(i or inst), str(o)],
        lambda o, i: ["evaluate", str(i or inst), "--agent", "random", "-o", str(o)],
        lambda o, i: ["import", "peer", str(i or inst), "--no-measure", "-o", str(o)],
        lambda o, i: ["caps", "derive", str(i or runs), "-o", str(o)],
        lambda o, i: ["split", str(i or inst), "-o", str(o), "--manifest", str(tmp_path / "m.json")],
    ]
    for case in range(12):
        work = tmp_path / f"case{case}"
        work.mkdir()
        kinds = _file_kinds(work)
        out_kind = m.pick([*sorted(kinds), "input"])
        out = work / "out"
        if out_kind == "input":
            out = m.pick([inst, runs])
        else:
            kinds[out_kind](out)
        source = None
        if m.rng.random() < 0.3:  # the input itself of an odd kind
            in_kind = m.pick(["fifo", "device", "dir", "symlink loop", "dangling symlink"])
            source = work / "in"
            kinds[in_kind](source)
        argv = m.pick(commands)(out, source)
        before = os.lstat(out).st_mode if os.path.lexists(out) else None
        status = main(argv)
        err = capsys.readouterr().err
        assert status in (0, 2), (status, argv, err)
        assert err.count("\n") <= 1 and "Traceback" not in err, (argv, err)
        assert {p: p.read_bytes() for p in originals} == originals, argv  # no input destroyed
        if before is not None and not stat.S_ISREG(before) and not stat.S_ISDIR(before):
            assert stat.S_IFMT(os.lstat(out).st_mode) == stat.S_IFMT(before), argv  # a device, FIFO or link kept


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_pilot_entries_and_codes(seed: int, tmp_path: Path) -> None:
    """Made-up participant ids, signatures, platform ids and completion codes: the server refuses (403 or 422) every
    one that is not an issued participant's, never fails otherwise; a made-up code is no participant's."""
    from gf01_formal.web.games import Games, RequestError
    from gf01_formal.web.pilot import code_participant, completion_code, load_key, participant_sig

    m = Mutator(500 + seed)
    inst = str(EXAMPLES / "arbiter_priority.json")
    iid = json.loads((EXAMPLES / "arbiter_priority.json").read_text())["instance_id"]
    pilot_path = tmp_path / "pilot.json"
    pilot_path.write_text(json.dumps({"schema_version": "gf01-formal.pilot.v1", "pilot_id": "fz", "consent": "ok?",
                                      "instances": [iid], "completion_code": "DONE"}))
    key = load_key(pilot_path, create=True)
    games = Games.open(inst, runs_out=tmp_path / "runs.jsonl", pilot=pilot_path)
    good = participant_sig(key, "fz", "P00001")
    values = [*ODD, good, good.upper(), good[:-1], good + "0", good + "é", "P00001", "P00002", "../x", "a" * 65]
    for _ in range(60):
        pid = m.pick(values) if m.rng.random() < 0.5 else m.text("P00001")
        sig = m.pick(values) if m.rng.random() < 0.7 else m.text(good)
        platform = m.pick(values) if m.rng.random() < 0.3 else None
        issued = isinstance(pid, str) and sig == participant_sig(key, "fz", pid)
        try:
            games.start_pilot(pid, True, sig, platform)
        except RequestError as ex:
            assert ex.status in (403, 409, 422), (pid, sig, ex.status)
            assert ex.status != 403 or not issued
        else:
            assert issued, (pid, sig)
        code = m.text(completion_code(key, games.pilot, "P00001")) + m.pick(["", "é", "\u2028"])
        who = code_participant(key, games.pilot, code)
        assert who is None or code == completion_code(key, games.pilot, who)
    games.runs.close()
