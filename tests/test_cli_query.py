"""The verify / enumerate / oracle / cnf commands on the example arbiter controller, the certificate parser and
scores, and the one way from an HOA file to a problem (query commands and ``import hoa`` agree)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gf01_formal.cli import main
from gf01_formal.instances.sources import InstanceOptions, open_instance
from gf01_formal.scoring.certificates import parse_certificate, score

EXAMPLES = Path(__file__).resolve().parent.parent / "gf01_formal" / "examples"
HOA = str(EXAMPLES / "arbiter.hoa")
# Round-robin arbiter: the request r0 at t=0 gives priority to r1, so at t=3 "g0" needs r0 up and r1 down, or a
# change of priority earlier.
FLAGS = ["--trace", "r0&!r1;!r0&!r1;!r0&!r1;!r0&r1", "--effect", "g0"]
ALL = [
    [[3, "r0", 1], [3, "r1", 0]],
    [[0, "r0", 0], [3, "r0", 1]],
    [[1, "r1", 1], [3, "r0", 1]],
    [[2, "r1", 1], [3, "r0", 1]],
]


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main([*args, *FLAGS, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("backend", ["explicit", "sat"])
def test_verify_valid_certificate(capsys: pytest.CaptureFixture[str], backend: str) -> None:
    rec = run_json(capsys, "verify", HOA, str(EXAMPLES / "arbiter_cert_valid.json"), "--subset-min",
                   "--backend", backend)
    nulls = dict.fromkeys(("ap_precision", "ap_recall", "ap_f1", "ts_precision", "ts_recall", "ts_f1",
                           "best_match_gold", "gold_set", "diagnostic_note"))
    assert rec == {"suff": True, "min1": True, "valid": True, "goal": True, "eff_t": 1, "eff_a": 2, "score_c": 1,
                   "kappa": [1, 1, -1, -2], "subset_min": True, "diagnostic_status": "exact", "within_budget": True,
                   "certificate_errors": [], **nulls}


def test_verify_sufficient_but_not_min1(capsys: pytest.CaptureFixture[str]) -> None:
    rec = run_json(capsys, "verify", HOA, str(EXAMPLES / "arbiter_cert_not_min1.json"))
    assert (rec["suff"], rec["min1"], rec["valid"], rec["score_c"]) == (True, False, False, 0)
    assert rec["kappa"] == [0, 1, -2, -3] and rec["subset_min"] is None and rec["diagnostic_status"] == "not-run"


def test_verify_malformed_certificate_scores_false_with_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    rec = run_json(capsys, "verify", HOA, str(EXAMPLES / "arbiter_cert_malformed.json"))
    assert not (rec["suff"] or rec["min1"] or rec["valid"] or rec["goal"])
    assert rec["certificate_errors"] == [
        "atom 1: a second atom on (t=3, r0)",
        "atom 2: time 9 is outside [0, 3]",
        "atom 2: 'zz' is not an input (inputs: r0, r1)",
        "atom 2: value 2 must be 0 or 1",
    ]
    # The atoms count as submitted, so a malformed answer never ranks above an honest one of the same size.
    assert (rec["eff_t"], rec["eff_a"], rec["kappa"]) == (2, 3, [0, 0, -2, -3])
    assert main(["verify", HOA, str(EXAMPLES / "arbiter_cert_malformed.json"), *FLAGS]) == 0
    out = capsys.readouterr().out
    assert '[[3, "r0", 1], [3, "r0", 0], [9, "zz", 2]]' in out  # both conflicting atoms are shown


def test_verify_over_budget(capsys: pytest.CaptureFixture[str]) -> None:
    # Definitions 10-12 have no budget: a certificate over B_T is scored by them, and flagged.
    cert = str(EXAMPLES / "arbiter_cert_not_min1.json")
    rec = run_json(capsys, "verify", HOA, cert, "--budget-t", "1")
    within = run_json(capsys, "verify", HOA, cert, "--budget-t", "2")
    assert rec["certificate_errors"] == [] and rec["within_budget"] is False and within["within_budget"] is True
    assert (rec["suff"], rec["min1"], rec["valid"]) == (within["suff"], within["min1"], within["valid"]) \
        == (True, False, False)


@pytest.mark.parametrize("backend", ["explicit", "sat"])
def test_enumerate_lists_all_in_canonical_order(capsys: pytest.CaptureFixture[str], backend: str) -> None:
    rec = run_json(capsys, "enumerate", HOA, "--backend", backend)
    assert rec == {"count": 4, "certificates": ALL}
    rec = run_json(capsys, "enumerate", HOA, "--backend", backend, "--limit", "2")
    assert rec == {"count": 4, "certificates": ALL[:2]}
    rec = run_json(capsys, "enumerate", HOA, "--backend", backend, "--count", "--budget-t", "1")
    assert rec == {"count": 1}
    rec = run_json(capsys, "enumerate", HOA, "--backend", backend, "--unbounded", "--budget-t", "1")
    assert rec["count"] == 4


@pytest.mark.parametrize("backend", ["explicit", "sat"])
def test_oracle(capsys: pytest.CaptureFixture[str], backend: str) -> None:
    rec = run_json(capsys, "oracle", HOA, "--backend", backend)
    assert rec == {"certificate": ALL[0], "eff_t": 1, "eff_a": 2, "optimal": True}
    assert main(["oracle", HOA, *FLAGS[:3], "g0 & g1", "--backend", backend, "--json"]) == 0  # never both granted
    rec = json.loads(capsys.readouterr().out)
    assert rec == {"certificate": None, "eff_t": None, "eff_a": None, "optimal": True}
    assert main(["oracle", HOA, *FLAGS[:3], "g0 & g1"]) == 0
    assert "no valid certificate within B_T = 4 (proven)" in capsys.readouterr().out
    assert main(["oracle", HOA, *FLAGS, "--budget-t", "0"]) == 2
    assert "B_T = 0 is outside [1, 4]" in capsys.readouterr().err


def test_readable_output_and_unknown_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oracle", HOA, *FLAGS]) == 0
    assert "Eff_t = 1, Eff_a = 2, optimal (proven)" in capsys.readouterr().out
    assert main(["enumerate", HOA, *FLAGS, "--backend", "sat", "--seconds", "0"]) == 3
    assert "unknown (time limit 0 s" in capsys.readouterr().out
    # Under --json the answer stays JSON: the list so far and why it stops, or the unknown answer alone.
    assert main(["enumerate", HOA, *FLAGS, "--backend", "sat", "--seconds", "0", "--json"]) == 3
    got = json.loads(capsys.readouterr().out)
    assert got["certificates"] == [] and got["count"] is None
    assert got["unknown"]["query"] == "enumerate" and got["unknown"]["reason"] == "time limit 0 s"
    assert main(["enumerate", HOA, *FLAGS, "--backend", "sat", "--seconds", "0", "--count", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["unknown"]["reason"] == "time limit 0 s"
    assert main(["verify", HOA, str(EXAMPLES / "arbiter_cert_valid.json"), *FLAGS, "--subset-min", "--seconds",
                 "0"]) == 3


def test_bad_flags_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oracle", HOA, "--trace", "r0;r1", "--effect", "g0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gf01: error: trace:") and err.count("\n") == 1
    assert main(["oracle", HOA, *FLAGS[:2], "--effect", "nope"]) == 2
    assert "unknown name 'nope'" in capsys.readouterr().err


def test_json_trace_and_defaults() -> None:
    trace = json.dumps([{"r0": 1, "r1": 0}, {"r0": 0, "r1": 1}])
    _, p = open_instance(HOA, options=InstanceOptions(trace=trace, effect="g1", mode="normal", window=1, budget_t=2))
    assert p.trace == (1, 2) and p.t_star == 1 and p.mode == "normal" and p.budget_t == 2
    _, p = open_instance(HOA, options=InstanceOptions(trace=FLAGS[1], effect="g0"))
    assert (p.t_star, p.mode, p.budget_t, p.budget_a) == (3, "hard", 4, 8)  # T-1, hard, T, T x |AP_in|


def test_parse_certificate_and_score_directly() -> None:
    _, p = open_instance(HOA, options=InstanceOptions(trace=FLAGS[1], effect="g0"))
    names = p.system.inputs
    parsed = parse_certificate([[3, "r1", 0], [3, "r0", 1]], names, horizon=p.horizon, budget_t=None)
    assert parsed.atoms == ((3, 0, 1), (3, 1, 0)) and parsed.errors == ()
    assert score(p, parsed).valid
    # (2, r1, 0) restates the base value: allowed, and it breaks Min1
    parsed = parse_certificate([[3, "r1", 0], [3, "r0", 1], [2, "r1", 0]], names, horizon=p.horizon, budget_t=None)
    rec = score(p, parsed)
    assert parsed.errors == () and rec.suff and not rec.min1
    bad = parse_certificate([[1.0, "r0", 1], [True, "r0", 0], ["x"]], names, horizon=p.horizon, budget_t=None)
    assert bad.atoms == () and bad.errors == (
        "atom 0: time 1.0 is not an integer", "atom 1: time True is not an integer",
        "atom 2: expected [t, \"input\", v], got ['x']")
    assert (bad.eff_t, bad.eff_a) == (3, 3)  # 1.0, true and the entry without a time are three timesteps
    assert parse_certificate({"t": 1}, names, horizon=p.horizon, budget_t=None).errors == (
        'a certificate is a JSON list of [t, "input", v] atoms, not an object',
    )
    # Min1 follows Definition 11 literally: an insufficient certificate whose every removal is insufficient is Min1.
    lone = score(p, parse_certificate([[0, "r1", 1]], names, horizon=p.horizon, budget_t=None))
    assert (lone.suff, lone.min1, lone.valid, lone.kappa) == (False, True, False, [0, 0, -1, -1])
    # A malformed certificate never outranks an honest one with as many atoms.
    malformed = score(p, parse_certificate([[0, "r9", 1]], names, horizon=p.horizon, budget_t=None))
    assert malformed.kappa <= lone.kappa


def test_cnf_writes_dimacs_whose_flip_models_are_m_of_i(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pysat.formula import CNF
    from pysat.solvers import Solver

    out = tmp_path / "arbiter.cnf"
    assert main(["cnf", HOA, str(out), *FLAGS]) == 0
    assert "flips 1..8" in capsys.readouterr().out
    cnf = CNF(from_file=str(out))
    names = {int(w[2]): (int(w[3][2:]), w[4][6:]) for w in (c.split() for c in cnf.comments) if w[1] == "flip"}
    found = []
    with Solver(name="minisat22", bootstrap_with=cnf.clauses) as s:
        while s.solve():
            model = s.get_model()
            found.append(sorted(names[v] for v in names if model[v - 1] > 0))
            s.add_clause([-v if model[v - 1] > 0 else v for v in names])
    assert sorted(found) == sorted(sorted((t, a) for t, a, _ in c) for c in ALL)
    assert main(["cnf", HOA, str(out), *FLAGS, "--query", "nope"]) == 2
    assert main(["cnf", HOA, str(tmp_path / "missing" / "dir" / "x.cnf"), *FLAGS]) == 0  # parents are created


@pytest.mark.parametrize("extra", [[], ["--mode", "normal"], ["--mode", "normal", "--window", "2", "--budget-t", "2"]])
def test_queries_on_an_hoa_file_and_on_its_import_agree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    """One way from an HOA file to a problem: the same defaults (t* = T-1, B_T = T, window w(I)) either way."""
    inst = str(tmp_path / "arbiter.json")
    assert main(["import", "hoa", HOA, "-o", inst, *FLAGS, *extra]) == 0
    capsys.readouterr()
    for args in (["enumerate", inst, "--backend", "sat"], ["oracle", inst], ["enumerate", inst, "--count"]):
        assert main([*args, "--json"]) == 0
        direct = json.loads(capsys.readouterr().out)
        assert main([*args[:1], HOA, *args[2:], *FLAGS, *extra, "--json"]) == 0
        assert direct == json.loads(capsys.readouterr().out)


def test_instance_files_are_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inst = str(tmp_path / "arbiter.json")
    assert main(["import", "hoa", HOA, "-o", inst, *FLAGS, "--t-star", "3"]) == 0
    capsys.readouterr()
    assert main(["verify", inst, str(EXAMPLES / "arbiter_cert_valid.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] is True
    assert main(["oracle", inst, "--effect", "g1"]) == 2
    assert "apply to HOA files and AIGER circuits only" in capsys.readouterr().err
    assert main(["oracle", inst, "--id", "nope"]) == 2
    assert "not 'nope'" in capsys.readouterr().err


def test_verify_best_match_on_the_bundled_instance(capsys: pytest.CaptureFixture[str]) -> None:
    """verify --best-match ranks M(I) by default and M_B(I) with --gold-set MB, as the BDD backend does, and by hand.
    (The SAT backend's best match over this M(I) takes 10 s of CPU; it is checked against the brute twin in
    tests/test_backends.py and tests/test_conformance.py.)"""
    from solvers import api

    inst, cert = str(EXAMPLES / "arbiter_priority.json"), str(EXAMPLES / "arbiter_priority_cert.json")
    _, problem = open_instance(inst)
    parsed = parse_certificate(json.loads(Path(cert).read_text()), problem.system.inputs, horizon=problem.horizon,
                               budget_t=problem.budget_t)
    atoms = parsed.atoms
    assert not parsed.errors
    names = problem.system.inputs
    assert api.count(problem, None) > api.count(problem, problem.budget_t)  # M(I) != M_B(I) here
    for flag, budget in (("M", None), ("MB", problem.budget_t)):
        assert main(["verify", inst, cert, "--best-match", "--gold-set", flag, "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        want = api.best_match(problem, atoms, budget, "bdd")
        assert got["gold_set"] == flag
        assert got["best_match_gold"] == [[t, names[i], v] for t, i, v in want.gold] == [[20, "r2", 1], [21, "r2", 1]]
        for key in ("ap_precision", "ap_recall", "ap_f1", "ts_precision", "ts_recall", "ts_f1"):
            assert got[key] == getattr(want, key)
    # 2 of the agent's 3 atoms are the gold's 2 atoms; both touch steps {20, 21}.
    assert (got["ap_precision"], got["ap_recall"], got["ts_f1"]) == (pytest.approx(2 / 3), 1.0, 1.0)


def test_verify_many_certificates_in_one_process(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """--certs: one JSON line per certificate, in order, the same records as one verify per certificate."""
    from gf01_formal.scoring import batch

    monkeypatch.setattr(batch, "CHUNK", 1)  # scored a line at a time: a bad line must still stop it before any
    inst = str(EXAMPLES / "arbiter_priority.json")
    lines = [json.dumps({"certificate": c}) for c in (
        [[20, "r2", 1], [21, "r2", 1]], [[20, "r2", 1]], [[21, "zz", 1]], [[20, "r3", 1], [21, "r3", 1]], [])]
    certs = tmp_path / "certs.jsonl"
    certs.write_text("\n".join(lines) + "\n\n")
    assert main(["verify", inst, "--certs", str(certs), "--json"]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["line"] for r in got] == [1, 2, 3, 4, 5]
    for r, line in zip(got, lines, strict=True):
        one = tmp_path / "one.json"
        one.write_text(json.dumps(json.loads(line)["certificate"]))
        assert main(["verify", inst, str(one), "--json"]) == 0
        single = json.loads(capsys.readouterr().out)
        assert {k: v for k, v in r.items() if k not in ("line", "instance_id")} == single
    assert [r["valid"] for r in got] == [True, False, False, True, False]
    certs.write_text(lines[0] + "\nnot json\n")
    assert main(["verify", inst, "--certs", str(certs)]) == 2
    out, err = capsys.readouterr()
    assert f"{certs}:2:" in err and err.count("\n") == 1
    assert out == ""  # nothing is scored before every line is read: no run of results that stops part-way
    assert main(["verify", inst]) == 2
    assert "give one certificate" in capsys.readouterr().err


def test_enumerate_streams_its_table(tmp_path: Path) -> None:
    """The first rows of a huge M(I) (1.7 x 10^11 certificates, a counter left idle for 40 steps) are printed while
    the enumeration is still running, not after it: the command is still alive when they arrive."""
    import os
    import queue
    import subprocess
    import sys
    import threading

    from gf01_formal.instances.families.counters import counter_hoa

    system = tmp_path / "counter.hoa"
    system.write_text(counter_hoa(5))
    argv = [sys.executable, "-m", "gf01_formal", "enumerate", str(system), "--trace", ";".join(["!inc&!rst"] * 40),
            "--effect", "wrap", "--mode", "normal", "--window", "6", "--unbounded"]
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    assert stdout is not None
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    try:
        # A guard against a hang, not a measure: listing 10^11 certificates before printing would never end.
        rows = [lines.get(timeout=120) for _ in range(4)]
        assert proc.poll() is None  # still enumerating
    finally:
        proc.kill()
        proc.wait()
    assert rows[0].split() == ["#", "Eff_t", "Eff_a", "certificate"]
    assert [r.split()[0] for r in rows[1:]] == ["0", "1", "2"] and all("inc, 1)" in r for r in rows[1:])


def test_enumerate_sample_is_a_seeded_subset_of_the_whole_set(capsys: pytest.CaptureFixture[str]) -> None:
    inst = str(EXAMPLES / "arbiter_priority.json")
    assert main(["enumerate", inst, "--unbounded", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    drawn = []
    for seed in ("1", "1", "2"):
        assert main(["enumerate", inst, "--unbounded", "--sample", "5", "--seed", seed, "--json"]) == 0
        drawn.append(json.loads(capsys.readouterr().out))
    assert drawn[0] == drawn[1] and drawn[0]["count"] == whole["count"] == 48
    for d in drawn:
        assert len(d["certificates"]) == 5 and all(c in whole["certificates"] for c in d["certificates"])
        positions = [whole["certificates"].index(c) for c in d["certificates"]]
        assert positions == sorted(set(positions))  # distinct, in canonical order
    assert drawn[0]["certificates"] != drawn[2]["certificates"]
    assert main(["enumerate", inst, "--unbounded", "--sample", "100", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["certificates"] == whole["certificates"]
    assert main(["enumerate", inst, "--sample", "2", "--count"]) == 2
    assert "--sample" in capsys.readouterr().err


def test_memory_limit_is_unknown(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--memory caps each exact query's process: below what even a small count's process holds, the answer is
    unknown (exit 3), for the count, the enumeration and the best match alike; the default limit answers."""
    assert main(["enumerate", HOA, *FLAGS, "--count", "--memory", "1"]) == 3
    assert "unknown (memory limit 1 MiB" in capsys.readouterr().out
    assert main(["enumerate", HOA, *FLAGS, "--memory", "1", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["unknown"]["reason"] == "memory limit 1 MiB"
    empty = tmp_path / "empty.json"  # (a valid certificate is its own best match: no pass to bound)
    empty.write_text("[]")
    assert main(["verify", HOA, str(empty), *FLAGS, "--best-match", "--memory", "1"]) == 3
    assert "unknown (memory limit 1 MiB" in capsys.readouterr().out
    assert run_json(capsys, "enumerate", HOA, "--count")["count"] == len(ALL)


def test_verify_certs_streams_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch is checked in a first reading, then scored chunk by chunk in a second: the first records come out
    before the second reading has gone past the first chunk (memory holds one chunk, not the file)."""
    from gf01_formal.scoring import batch

    monkeypatch.setattr(batch, "CHUNK", 2)
    cert = json.loads((EXAMPLES / "arbiter_priority_cert.json").read_text())
    read: list[int] = []

    def lines() -> Iterator[str]:
        read.append(0)
        for k in range(7):
            read[-1] = k + 1
            yield json.dumps({"certificate": cert if k % 2 else []})

    records = batch.verify_lines(str(EXAMPLES / "arbiter_priority.json"), lines, file="certs.jsonl")
    first = next(records)
    assert len(read) == 2 and read[1] <= 3  # the check read all 7; the scoring only the first chunk (and a peek)
    rest = list(records)
    assert [r["line"] for r in [first, *rest]] == list(range(1, 8))
    assert [r["eff_a"] for r in [first, *rest]] == [0, len(cert)] * 3 + [0]


@pytest.mark.parametrize("limit", [["--seconds", "0"], ["--memory", "1"]])
def test_verify_out_of_limits_prints_the_verdicts_it_decided(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             limit: list[str]) -> None:
    """issue 28 item 3: a best match (and a SubsetMin) that runs out of --seconds/--memory leaves the verdicts
    decided printed, with `best_match: unknown (...)`, and exits 3 (it used to print the unknown alone)."""
    inst, cert = str(EXAMPLES / "arbiter_priority.json"), str(EXAMPLES / "arbiter_priority_cert.json")
    args = ["verify", inst, cert, "--best-match", "--subset-min", *limit]
    assert main([*args, "--json"]) == 3
    rec = json.loads(capsys.readouterr().out)
    assert (rec["suff"], rec["min1"], rec["valid"], rec["kappa"]) == (True, False, False, [0, 1, -2, -3])
    assert rec["unknown"]["query"] == "best_match" and rec["unknown"]["reason"].split()[0] in ("time", "memory")
    assert rec["ap_f1"] is None and rec["best_match_gold"] is None and rec["gold_set"] is None
    assert (rec["subset_min"], rec["diagnostic_status"]) == (None, "infeasible") and rec["diagnostic_note"]
    assert main(args) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[1:3] == ["suff         true", "min1         false"]
    assert out[-1].startswith("best_match   unknown (") and out[-2].startswith("subset_min   unknown (")
    certs = tmp_path / "certs.jsonl"
    certs.write_text(json.dumps({"certificate": [[20, "r2", 1]]}) + "\n")
    assert main(["verify", inst, "--certs", str(certs), "--best-match", *limit, "--json"]) == 3
    line = json.loads(capsys.readouterr().out)
    assert line["suff"] is False and line["unknown"]["query"] == "best_match"


def test_verify_and_the_run_record_share_one_score_type(capsys: pytest.CaptureFixture[str]) -> None:
    """issue 30: verify --json prints every field of the one score type, each by the run record's own name (the
    record has them all as columns), and the record's score columns are the type's checks and best match."""
    import dataclasses

    from gf01_formal.runs.record import RunRecord
    from gf01_formal.scoring.score import Score
    from gf01_formal.scoring.values import DIAGNOSTIC_FIELDS, SCORE_FIELDS

    names = {f.name for f in dataclasses.fields(Score)}
    assert main(["verify", str(EXAMPLES / "arbiter_priority.json"), str(EXAMPLES / "arbiter_priority_cert.json"),
                 "--best-match", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert set(rec) == names and names <= set(RunRecord.model_fields)
    assert set(SCORE_FIELDS) | set(DIAGNOSTIC_FIELDS) | {"certificate_errors"} == names


@pytest.mark.parametrize("kind", ["hoa", "aiger"])
def test_a_measured_system_whose_base_run_shows_the_effect_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 kind: str) -> None:
    if kind == "hoa":
        system, trivial = HOA, ["--trace", "r0&!r1;r0&!r1", "--effect", "g0"]
    else:
        (tmp_path / "copy.aag").write_text("aag 1 1 0 1 0\n2\n2\ni0 a\no0 y\n")  # y copies the input a
        system, trivial = str(tmp_path / "copy.aag"), ["--trace", "a;a", "--effect", "y"]
    # Normal mode without a window: the instance is measured for w(I), and the measurement finds it trivial.
    assert main(["oracle", system, *trivial, "--mode", "normal"]) == 0
    out, err = capsys.readouterr()
    assert "Eff_t = 0" in out
    assert [line for line in err.splitlines() if line.startswith("gf01: warning: ")] == [
        line for line in err.splitlines() if "Eff_t is 0" in line] != []
    # Not measured (a window given): no warning, the query answers as before.
    assert main(["oracle", system, *trivial, "--mode", "normal", "--window", "1"]) == 0
    assert "gf01: warning:" not in capsys.readouterr().err


def test_a_limit_is_reported_as_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--seconds 1`` is reported as ``time limit 1 s``, not as what was left of it when the query began."""
    from gf01_formal.instances.families.arbiters import arbiter_hoa

    hoa = tmp_path / "arb4.hoa"
    hoa.write_text(arbiter_hoa(4, "round_robin"))
    # 12 steps x 4 inputs: 48 flip positions, far more subsets than the explicit backend counts in a second.
    args = ["enumerate", str(hoa), "--trace", ";".join(["r0&!r1&!r2&!r3"] + ["!r0&!r1&!r2&!r3"] * 11),
            "--effect", "g1", "--count", "--backend", "explicit", "--seconds", "1"]
    assert main(args) == 3
    assert capsys.readouterr().out.startswith("unknown (time limit 1 s; spent ")
    assert main([*args, "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["unknown"]["reason"] == "time limit 1 s"


def _on_terminal(cmd: list[str]) -> tuple[int, bytes, bytes]:
    """Run ``cmd`` with stderr on a pseudo-terminal: its exit status, its stdout, what the terminal showed."""
    import os
    import pty
    import select
    import subprocess

    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                            env={**os.environ, "TERM": "xterm", "COLUMNS": "100"})
    os.close(slave)
    seen = b""
    while True:  # drain the terminal while the command runs (a full pty buffer would block it)
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the command closed its end
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    return proc.wait(timeout=120), out, seen


@pytest.mark.parametrize("command, bars", [
    (["cnf", HOA, "{tmp}/a.cnf", *FLAGS], [b"encoding steps", b"writing clauses"]),
    (["import", "hoa", HOA, "-o", "{tmp}/i.json", *FLAGS], [b"measuring (exact queries)"]),
])
def test_progress_shows_on_a_terminal_and_nothing_elsewhere(tmp_path: Path, command: list[str], bars: list[bytes],
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    """A large CNF or a measurement takes seconds: a terminal sees progress bars on stderr, a pipe nothing."""
    import sys

    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    status, out, seen = _on_terminal([sys.executable, "-m", "gf01_formal", *args])
    assert status == 0 and b"wrote" in out
    assert all(bar in seen for bar in bars), seen
    # Elsewhere: the same command in this process, its standard streams files (capfd: not a terminal, whatever runs
    # pytest), an interpreter less than a second process.
    capfd.readouterr()
    assert main(args) == 0
    printed = capfd.readouterr()
    assert "wrote" in printed.out and printed.err == ""
