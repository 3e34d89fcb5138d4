"""One instance form: a command parses its system once, canonicalises it once, builds one view, parses the effect
once, hashes the instance once and builds one Problem, whatever door the instance comes in by (an AIGER circuit or an
HOA file with options, an instance file of either kind). Counted at run time in a fresh interpreter (no cache of an
earlier test helps) by a profile hook on the functions' code objects, so that every way of importing them counts."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from aig.build import fifo
from aig.writer import binary, canonical
from gf01_formal.cli import main
from gf01_formal.instances.problem import circuit_view
from gf01_formal.instances.spec import SystemSpec, aiger_system
from gf01_formal.instances.traces import parse_effect, read_effect

EXAMPLES = Path(__file__).resolve().parent.parent / "gf01_formal" / "examples"
FIFO_TRACE = "push&!pop&d0;push&!pop&!d0;push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0"
ARBITER_TRACE = "r0&!r1;!r0&!r1;!r0&!r1;!r0&r1"

# Run in the child: count the calls of each function by its code object while the command runs.
COUNTER = r"""
import collections, contextlib, io, json, sys
import aig.parser, aig.view, aig.writer, encoders.problem, hoa.mealy
import gf01_formal.instances.identity as identity, gf01_formal.instances.traces as traces
from gf01_formal.cli import main

counted = {"parse_aiger": aig.parser.parse, "canonical": aig.writer.canonical,
           "view_of_circuit": aig.view.CircuitView.from_aig, "parse_hoa": hoa.mealy.mealy_from_text,
           "parse_effect": traces.parse_effect,
           "instance_hash": identity.content_hash, "problem": encoders.problem.Problem.__init__}
codes = {f.__code__: name for name, f in counted.items()}
calls = collections.Counter()

def hook(frame, event, arg):
    if event == "call" and frame.f_code in codes:
        calls[codes[frame.f_code]] += 1

sys.setprofile(hook)
with contextlib.redirect_stdout(io.StringIO()):
    status = main(json.loads(sys.argv[1]))
sys.setprofile(None)
print(json.dumps({"status": status, **{name: calls[name] for name in counted}}))
"""


def counts(*argv: str) -> dict[str, int]:
    """The calls of each counted function while ``gf01 ARGV`` runs in a fresh interpreter (and its exit status)."""
    done = subprocess.run([sys.executable, "-c", COUNTER, json.dumps(list(argv))], capture_output=True, text=True,
                          timeout=300, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("counts")
    (d / "fifo.aig").write_bytes(binary(fifo(3)))
    assert main(["import", "aiger", str(d / "fifo.aig"), "--trace", FIFO_TRACE, "--effect", "overflow",
                 "-o", str(d / "fifo.json")]) == 0
    return {"aig": d / "fifo.aig", "aig_instance": d / "fifo.json"}


def test_oracle_on_a_circuit_parses_and_hashes_once(files: dict[str, Path]) -> None:
    got = counts("oracle", str(files["aig"]), "--trace", FIFO_TRACE, "--effect", "overflow", "--json")
    assert got == {"status": 0, "parse_aiger": 1, "canonical": 1, "view_of_circuit": 1, "parse_hoa": 0,
                   "parse_effect": 1, "instance_hash": 1, "problem": 1}


def test_oracle_on_an_hoa_file_parses_and_hashes_once() -> None:
    got = counts("oracle", str(EXAMPLES / "arbiter.hoa"), "--trace", ARBITER_TRACE, "--effect", "g0", "--json")
    assert got == {"status": 0, "parse_aiger": 0, "canonical": 0, "view_of_circuit": 0, "parse_hoa": 1,
                   "parse_effect": 1, "instance_hash": 1, "problem": 1}


def test_oracle_on_instance_files_parses_and_hashes_once(files: dict[str, Path]) -> None:
    got = counts("oracle", str(files["aig_instance"]), "--json")
    # The canonical writer runs once: the check that the instance carries the canonical text.
    assert got == {"status": 0, "parse_aiger": 1, "canonical": 1, "view_of_circuit": 1, "parse_hoa": 0,
                   "parse_effect": 1, "instance_hash": 1, "problem": 1}
    got = counts("oracle", str(EXAMPLES / "arbiter_priority.json"), "--json")
    assert got == {"status": 0, "parse_aiger": 0, "canonical": 0, "view_of_circuit": 0, "parse_hoa": 1,
                   "parse_effect": 1, "instance_hash": 1, "problem": 1}


@pytest.mark.parametrize("form", ["ascii with comments", "binary"])
def test_the_view_an_importer_hands_over_is_the_view_its_text_gives(form: str) -> None:
    circuit = fifo(3)
    data = binary(circuit) if form == "binary" else (canonical(circuit) + "c\nmade by a test\n").encode()
    spec, view = aiger_system(data, ("v1",))
    assert view == circuit_view(spec)  # the same circuit (numbering, symbols, no comments), outputs and initial state
    assert SystemSpec.of_json(spec.to_json()) == spec


def test_the_effect_an_importer_hands_over_is_the_one_its_text_gives() -> None:
    outputs = ["a", "b", "c", "d"]
    rng = random.Random(5)

    def draw(depth: int) -> str:
        r = rng.random()
        if depth > 4 or r < 0.3:
            return rng.choice([*outputs, "t", "f"])
        if r < 0.45:
            return "!" + draw(depth + 1)
        if r < 0.6:
            return f"({draw(depth + 1)})"
        return rng.choice([" & ", " | ", "&", "|"]).join(draw(depth + 1) for _ in range(rng.randint(2, 3)))

    nested = 0
    for _ in range(3000):
        given = draw(0)
        text, effect = read_effect(given, outputs)
        assert parse_effect(text, outputs) == effect, given
        nested += parse_effect(given, outputs) != effect  # a parenthesised & in an & (| in |): printed flat
    assert nested > 100
