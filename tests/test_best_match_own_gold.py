"""A valid certificate within B_T is its own gold (DEC-025: F1_AP = 1 only for the gold C_a itself), on every path
that answers a best match: the forward pass and the scorer had that shortcut, the SAT optimisation (circuits too wide
to tabulate) did not, and `gf01 verify --best-match --gold-set MB` of the oracle's own certificate on a SYNTCOMP
factory_assembly design answered `unknown (time limit ...)` (the round-9 sweep)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus import corpus_path, needs_corpus

from gf01_formal.cli import main
from gf01_formal.instances.sources import open_instance
from solvers import api, optimise
from solvers.limits import Limits

WIDTH = 17  # one past the 16 edited inputs the forward pass tabulates


def _parity_circuit(path: Path) -> None:
    """o0 = the parity of 17 inputs: every odd set of flips at one step is valid, and a SAT search over that set
    needs conflicts (so a conflict cap of 0 shows whether the optimisation ran)."""
    ands: list[tuple[int, int, int]] = []
    top = WIDTH

    def xor(a: int, b: int) -> int:
        nonlocal top
        g1, g2, g3 = 2 * (top + 1), 2 * (top + 2), 2 * (top + 3)
        top += 3
        ands.extend([(g1, a, b ^ 1), (g2, a ^ 1, b), (g3, g1 ^ 1, g2 ^ 1)])
        return g3 ^ 1

    out = 2
    for k in range(1, WIDTH):
        out = xor(out, 2 * (k + 1))
    path.write_text("\n".join([f"aag {top} {WIDTH} 0 1 {len(ands)}", *(str(2 * (k + 1)) for k in range(WIDTH)),
                               str(out), *(f"{a} {b} {c}" for a, b, c in ands)]) + "\n")


@pytest.fixture
def parity(tmp_path: Path) -> Path:
    circuit = tmp_path / "parity.aag"
    _parity_circuit(circuit)
    inst = tmp_path / "parity.json"
    trace = json.dumps([dict.fromkeys((f"i{k}" for k in range(WIDTH)), 0)] * 2)
    assert main(["import", "aiger", str(circuit), "-o", str(inst), "--trace", trace, "--effect", "o0",
                 "--t-star", "1", "--budget-t", "1", "--no-measure"]) == 0
    return inst


def test_a_valid_certificate_is_its_own_gold_without_a_sat_call(parity: Path) -> None:
    _, problem = open_instance(parity)
    assert api.default_backend("best_match", problem) == "sat"
    cert = [(1, k, 1) for k in (0, 3, 4)]
    assert api.valid(problem, cert)
    # No conflict allowed: the answer may not come from the optimisation.
    no_search = Limits(conflicts=0, isolate=False)
    for budget in (None, 1):
        bm = optimise.best_match(problem, cert, budget, limits=no_search)
        assert bm.gold == tuple(sorted(cert)) and set(bm.metrics().values()) == {1.0}
        assert api.best_match(problem, list(reversed(cert)), budget, limits=no_search).gold == bm.gold


def test_the_shortcut_is_the_optimisations_answer(parity: Path) -> None:
    """Where it applies, the shortcut answers what the SAT search answers; where it does not (an invalid
    certificate, one over B_T), the search still runs."""
    _, problem = open_instance(parity)
    cert = [(1, 2, 1)]
    assert optimise.best_match(problem, cert, None).gold == tuple(cert)
    # Not valid (even), or valid but over B_T = 1 (two timesteps): the search ranks the gold set, and it has no
    # member equal to the agent's.
    even = optimise.best_match(problem, [(1, 0, 1), (1, 1, 1)], None)
    assert 0 < even.ap_f1 < 1 and len(even.gold) % 2 == 1
    over = [(0, 0, 1), (1, 0, 1)]  # t = 0 is no flip that matters: not valid, and two timesteps
    assert optimise.best_match(problem, over, 1).gold == ((1, 0, 1),)


def test_verify_best_match_on_a_wide_circuit_answers(parity: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cert = tmp_path / "c.json"
    cert.write_text(json.dumps([[1, "i5", 1], [1, "i7", 1], [1, "i16", 1]]))
    capsys.readouterr()
    for gold_set in ("MB", "M"):
        assert main(["verify", str(parity), str(cert), "--best-match", "--gold-set", gold_set, "--json"]) == 0
        record = json.loads(capsys.readouterr().out)
        assert record["valid"] is True and record["ap_f1"] == 1.0 and record["ts_f1"] == 1.0
        assert record["best_match_gold"] == [[1, "i16", 1], [1, "i5", 1], [1, "i7", 1]]


@needs_corpus
def test_own_gold_on_the_sweeps_syntcomp_design(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    design = corpus_path("aiger", "factory_assembly_line-factory_assembly_7x5_2_10errors.aag")
    inputs = [line.split(" ", 1)[1] for line in design.read_text().splitlines()
              if line[:1] == "i" and line[1:2].isdigit()]
    inst = tmp_path / "i.json"
    assert main(["import", "aiger", str(design), "-o", str(inst), "--trace",
                 json.dumps([dict.fromkeys(inputs, 0)] * 6), "--effect", "err", "--edit", "uncontrollable",
                 "--no-measure"]) == 0
    capsys.readouterr()
    assert main(["oracle", str(inst), "--json", "--seconds", "60"]) == 0
    certificate = json.loads(capsys.readouterr().out)["certificate"]
    cert = tmp_path / "c.json"
    cert.write_text(json.dumps(certificate))
    assert main(["verify", str(inst), str(cert), "--best-match", "--gold-set", "MB", "--json",
                 "--seconds", "20"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["valid"] is True and record["ap_f1"] == 1.0
    assert record["best_match_gold"] == sorted(certificate)
