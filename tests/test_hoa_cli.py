"""``gf01 hoa check | print | mealy`` through the real CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import corpus_path, needs_corpus

from gf01_formal.cli import main
from hoa import parse, parse_file

CORPUS = corpus_path("hoa")
DATA = Path(__file__).resolve().parent / "data" / "hoa"  # the repository's own small files: no corpus needed
EX01 = str(DATA / "rabin.hoa")
CONTROLLER = str(DATA / "controller.hoa")
BAD = str(DATA / "undefined_state.hoa")
STREAM = str(DATA / "stream.hoa")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_exits_zero_iff_every_file_is_valid(capsys):
    code, out, _ = run(capsys, "hoa", "check", EX01, CONTROLLER)
    assert code == 0
    assert out.splitlines() == [f"{EX01}: ok (1 automaton: 2 states/3 edges)",
                                f"{CONTROLLER}: ok (1 automaton: 1 states/1 edges)"]
    code, out, _ = run(capsys, "hoa", "check", EX01, BAD)
    assert code == 1
    assert out.splitlines()[1].startswith(f"{BAD}:10:6: error: undefined state")


def test_check_json_gives_one_object_per_file(capsys, tmp_path):
    stream = tmp_path / "stream.hoa"
    stream.write_text('HOA: v1 States: 2 Start: 0&1 AP: 1 "a" controllable-AP: 0 Acceptance: 2 Inf(0) | Fin(!1)\n'
                      "--BODY-- State: 0 [0] 1 {0} State: 1 [t] 0&1 --END--\n"
                      "HOA: v1 Acceptance: 0 t\n--BODY--\nState: 0 [0] 0\n--END--\n")
    code, out, err = run(capsys, "hoa", "check", "--json", EX01, str(stream), str(tmp_path / "missing.hoa"))
    assert code == 2  # a file that cannot be read is a user error, not a verdict on its contents
    assert err == f"gf01: error: {tmp_path / 'missing.hoa'}: cannot read: No such file or directory\n"
    ex01, st = (json.loads(line) for line in out.splitlines())
    assert ex01 == {
        "file": EX01, "ok": True, "error": None,
        "automata": [{"states": 2, "aps": 2, "acc_sets": 2, "acceptance": "Fin(0) & Inf(1)", "start": [[0]],
                      "controllable_ap": None, "edges": 3}],
    }
    assert st["ok"] is False
    assert st["automata"] == [{"states": 2, "aps": 1, "acc_sets": 2, "acceptance": "Inf(0) | Fin(!1)",
                               "start": [[0, 1]], "controllable_ap": [0], "edges": 2}]
    assert st["error"]["line"] == 5 and st["error"]["col"] == 11 and "AP index 0" in st["error"]["message"]


@needs_corpus
def test_check_json_counts_match_the_corpus_index(capsys):
    entries = [json.loads(line) for line in (CORPUS / "index.jsonl").read_text().splitlines()]
    sample = [e for e in entries if e["expected"] == "accept"][::25]
    code, out, _ = run(capsys, "hoa", "check", "--json", *(str(CORPUS / e["file"]) for e in sample))
    assert code == 0
    for entry, line in zip(sample, out.splitlines(), strict=True):
        record = json.loads(line)
        ok = [a for a in entry["automata"] if a["parsed"] == "ok"]
        assert [(a["states"], a["aps"], a["acc_sets"], a["edges"]) for a in record["automata"]] == [
            (a["states"], a["aps"] or 0, a["acc_sets"], a["edges"]) for a in ok
        ]


def test_check_json_counts_defined_or_declared_states_only(capsys, tmp_path):
    f = tmp_path / "ref.hoa"
    f.write_text("HOA: v1 Start: 6 Acceptance: 0 t --BODY-- State: 1 [t] 9 --END--")
    code, out, _ = run(capsys, "hoa", "check", "--json", str(f))
    assert code == 0
    assert json.loads(out)["automata"][0]["states"] == 2  # State: 1 is defined; 6 and 9 are only referenced


def test_print_writes_the_canonical_text(capsys):
    stream = STREAM
    code, out, _ = run(capsys, "hoa", "print", stream)
    assert code == 0
    assert parse(out) == parse_file(stream)
    assert out.count("--END--") == 2


def test_print_reports_an_invalid_file_on_one_line(capsys):
    code, out, err = run(capsys, "hoa", "print", BAD)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"gf01: error: {BAD}:10:6: undefined state")


def test_mealy_shows_inputs_outputs_and_completeness(capsys):
    code, out, _ = run(capsys, "hoa", "mealy", CONTROLLER)
    assert code == 0
    assert out.splitlines() == ["inputs: i1, i2", "outputs: o1, o2, o3, o4", "states: 1", "initial: 0",
                                "input-complete", "output-deterministic"]
    code, out, _ = run(capsys, "hoa", "mealy", EX01, "--outputs", "b")
    # Under a=1 the automaton allows both b=0 (stay) and b=1 (move): an automaton, not a controller.
    assert code == 1 and "inputs: a\noutputs: b\nstates: 2\n" in out
    assert "not output-deterministic" in out.splitlines()[-1]


def test_mealy_names_the_first_missing_state_and_valuation(capsys, tmp_path):
    f = tmp_path / "partial.hoa"
    f.write_text('HOA: v1 States: 2 Start: 0 AP: 3 "x" "y" "o" controllable-AP: 2 Acceptance: 0 t --BODY--\n'
                 'State: 0 [t] 1 State: 1 "waiting" [0 & 2] 0 [!0 & !1] 1 --END--')
    code, out, _ = run(capsys, "hoa", "mealy", str(f))
    assert code == 1
    assert out.splitlines()[-1] == "not input-complete: state waiting has no edge for input x=0 y=1"


ARENA = ('HOA: v1 States: 2 Start: 0 AP: 2 "r" "g" controllable-AP: 1 Acceptance: 0 t --BODY--\n'
         'State: 0 [!0 & !1] 0 [0 & 1] 0 [0 & !1] 1 State: 1 [t] 1 --END--')


def test_mealy_says_a_game_arena_is_not_a_controller(capsys, tmp_path):
    # A specification's arena offers both values of g under r=1: taking the first edge in file order would pick
    # the controller's move silently, so the view is refused as a controller (exit 1), naming the state and input.
    f = tmp_path / "arena.hoa"
    f.write_text(ARENA)
    code, out, _ = run(capsys, "hoa", "mealy", str(f))
    assert code == 1
    assert out.splitlines()[-1] == ("not output-deterministic (a game arena, not a controller): state 0 under input "
                                    "r=1 has edges 1 (g=1 -> state 0) and 2 (g=0 -> state 1) enabled; the "
                                    "first-edge rule would pick edge 1 silently")
    code, out, _ = run(capsys, "hoa", "mealy", str(f), "--json")
    record = json.loads(out)
    assert code == 1 and record["output_deterministic"] is False and record["ambiguity"]["edges"] == [1, 2]


def test_mealy_refuses_a_stream_and_unknown_outputs(capsys):
    code, _, err = run(capsys, "hoa", "mealy", STREAM)
    assert code == 2 and "exactly one automaton" in err
    code, _, err = run(capsys, "hoa", "mealy", EX01, "--outputs", "zz")
    assert code == 2 and "'zz'" in err


def test_module_entry_point_runs_the_same_command():
    proc = subprocess.run([sys.executable, "-m", "gf01_formal", "hoa", "check", EX01, BAD],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == f"{EX01}: ok (1 automaton: 2 states/3 edges)"


def test_an_arena_is_refused_as_a_controller_unless_the_user_names_the_resolution(capsys, tmp_path):
    f = tmp_path / "arena.hoa"
    f.write_text(ARENA)
    flags = ["--trace", "r;r;!r", "--effect", "g", "-o", str(tmp_path / "i.json")]
    code, _, err = run(capsys, "import", "hoa", str(f), *flags)
    assert code == 2 and len(err.splitlines()) == 1 and not (tmp_path / "i.json").exists()
    assert "state 0 under input r=1 has edges 1 and 2 enabled" in err and "--resolve first-edge" in err
    code, _, err = run(capsys, "import", "hoa", str(f), *flags, "--resolve", "first-edge")
    assert code == 0, err
    code, _, err = run(capsys, "oracle", str(f), "--trace", "r;r;!r", "--effect", "g", "--resolve", "last-edge")
    assert code == 2 and "the one resolution is first-edge" in err
