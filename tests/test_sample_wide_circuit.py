"""`gf01 enumerate --sample` on a circuit too wide to tabulate (found by the corpus sweep on a SYNTCOMP
factory_assembly design, 40 edited inputs): the default backend's refusal advised `--backend sat or bdd`, which
`--sample` refuses in turn ("draws on the forward backend only"). The refusal now says that no backend samples such
a circuit and what answers instead; one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus import corpus_path, needs_corpus

from gf01_formal.cli import main


def _check_refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--sample" in err and "no backend samples it" in err
    # Never advice that the same command then refuses.
    assert "use the sat or bdd backend" not in err


def test_sample_of_a_circuit_too_wide_to_tabulate_says_what_answers(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # 17 inputs (tabulation stops at 16), output o0 = i0.
    circuit = tmp_path / "wide.aag"
    circuit.write_text("\n".join(["aag 17 17 0 1 0", *(str(2 * (k + 1)) for k in range(17)), "2"]) + "\n")
    inst = tmp_path / "i.json"
    trace = json.dumps([{f"i{k}": 0 for k in range(17)}] * 2)
    assert main(["import", "aiger", str(circuit), "-o", str(inst), "--trace", trace, "--effect", "o0",
                 "--no-measure"]) == 0
    capsys.readouterr()
    _check_refusal(["enumerate", str(inst), "--sample", "2"], capsys)
    # What the message names does answer.
    assert main(["enumerate", str(inst), "--count", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 1
    assert main(["enumerate", str(inst), "--backend", "sat", "--json"]) == 0


@needs_corpus
def test_sample_of_the_sweeps_syntcomp_circuit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    design = corpus_path("aiger", "factory_assembly_line-factory_assembly_7x5_2_10errors.aag")
    lines = design.read_text().splitlines()
    inputs = [line.split(" ", 1)[1] for line in lines if line[:1] == "i" and line[1:2].isdigit()]
    trace = json.dumps([dict.fromkeys(inputs, 0) for _ in range(3)])
    inst = tmp_path / "i.json"
    assert main(["import", "aiger", str(design), "-o", str(inst), "--trace", trace, "--effect", "err",
                 "--edit", "uncontrollable", "--no-measure"]) == 0
    capsys.readouterr()
    _check_refusal(["enumerate", str(inst), "--sample", "3", "--seconds", "20"], capsys)
