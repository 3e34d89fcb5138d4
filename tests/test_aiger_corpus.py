"""Designs nobody here wrote (issue 28, item 6): the SYNTCOMP AIGER circuits of the external corpus
(``$GF01_CORPUS/aiger``, skipped without it) through the commands a new user runs first. No command may end in an
internal error (exit 70) or print a solver library's own lines on stderr; a query that runs out of its seconds says
``unknown`` (exit 3). Timings and the per-design table are bench/aiger.py's (docs/performance.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus import CORPUS, corpus_path, needs_corpus

from aig import parse_file
from aig.view import CircuitView
from gf01_formal.cli import main
from hoa.label import name_text

DESIGNS = sorted(p.name for p in (CORPUS / "aiger").glob("*.aag")) if CORPUS is not None else ["<absent>"]
#: Steps of the base trace, and the seconds of the import's measurement and of each query: small, since the
#: question is "no internal error, and unknown said as unknown", not how far a design goes (bench/aiger.py's).
#: Every design still unrolls, encodes and answers or runs out of its seconds; a query past them is exit 3.
T = 4
SECONDS = "1"


def _options(path: Path) -> list[str]:
    """All-zero base trace of T steps, the error output (the first bad-state property, else the first output) at
    t* = T - 1, B_T = 2."""
    circuit = parse_file(path)
    view = CircuitView.from_aig(circuit)
    effect = view.outputs[len(circuit.outputs)] if circuit.bad else view.outputs[0]
    trace = json.dumps([dict.fromkeys(view.inputs, 0) for _ in range(T)])
    return ["--trace", trace, "--effect", effect, "--budget-t", "2"]


@needs_corpus
@pytest.mark.parametrize("design", DESIGNS)
def test_a_corpus_design_imports_counts_and_matches_without_an_internal_error(design: str, tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture[str]
                                                                                ) -> None:
    path = corpus_path("aiger", design)
    opts = _options(path)
    out = tmp_path / "i.json"
    effect = opts[opts.index("--effect") + 1]
    if name_text(effect) != effect:
        # An output called `err<0>` is refused bare, in one line (a user error, not a crash), and named in quotes.
        assert main(["import", "aiger", str(path), "-o", str(out), *opts]) == 2
        assert "effect: unexpected character" in capsys.readouterr().err
        opts[opts.index("--effect") + 1] = name_text(effect)
    # The import measures within its budget: |M_B(I)| exact or recorded unknown, never a hang.
    assert main(["import", "aiger", str(path), "-o", str(out), *opts, "--seconds", SECONDS, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["instance_id"]
    (tmp_path / "empty.json").write_text("[]")
    for argv in (["enumerate", str(out), "--count", "--seconds", SECONDS],
                 ["verify", str(out), str(tmp_path / "empty.json"), "--best-match", "--gold-set", "MB",
                  "--seconds", SECONDS],
                 ["oracle", str(out), "--seconds", SECONDS]):
        status = main(argv)
        captured = capsys.readouterr()
        assert status in (0, 3), (argv[0], status, captured.err)
        assert "CUDD" not in captured.err and "Traceback" not in captured.err
        if status == 3:
            assert "unknown" in captured.out
