"""Pathological HOA input: huge labels under ``properties:`` claims, labels whose BDDs explode, controllers with many
outputs or too many inputs. Each is answered (fast, in practice) or refused in one line naming the limit; and the
two ways of checking ``deterministic`` / ``complete`` (truth tables for few APs, BDDs beyond) agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import expressions

from gf01_formal.cli import main
from hoa import validate as validate_module
from hoa.check import check_text
from hoa.errors import Gf01Error
from hoa.label import to_text
from hoa.mealy import MAX_GUARD_OUTPUTS, mealy_from_text


def _automaton(aps: list[str], properties: str, states: list[list[str]], controllable: str = "") -> str:
    """HOA text: one state per entry of ``states``, each a list of edge labels going to state 0."""
    lines = ["HOA: v1", f"States: {len(states)}", "Start: 0", f"AP: {len(aps)} " + " ".join(f'"{a}"' for a in aps),
             "Acceptance: 0 t"]
    if properties:
        lines.append(f"properties: {properties}")
    if controllable:
        lines.append(f"controllable-AP: {controllable}")
    lines.append("--BODY--")
    for q, labels in enumerate(states):
        lines.append(f"State: {q}")
        lines += [f"[{label}] 0" for label in labels]
    return "\n".join([*lines, "--END--", ""])


def test_complete_claim_with_a_10000_literal_conjunction() -> None:
    """128 KB: 10,000 APs in one conjunction (this took 29 s; the conjunction is now built bottom-up, linearly)."""
    n = 10_000
    conj = "&".join(str(i) for i in range(n))
    aps = [f"p{i}" for i in range(n)]
    text = _automaton(aps, "complete", [[conj]])
    assert len(text) > 120_000
    record = check_text(text, "big.hoa")
    assert record["error"] == {"line": 6, "col": 13, "message": "'properties: complete' is contradicted by the "
                               "automaton: the automaton is not complete: some valuation has no edge in state 0 at 8:1"}
    assert check_text(_automaton(aps, "complete deterministic", [[conj, f"!({conj})"]]), "big.hoa")["ok"]


def test_a_label_whose_bdd_explodes_is_refused_at_the_property(monkeypatch: pytest.MonkeyPatch) -> None:
    """(x0 & y0) | (x1 & y1) | ... with every x declared before every y needs 2^n BDD nodes: refused, not run.

    Under a bound of 16 MiB rather than the real 128: CUDD's manager hits either on the same path (the message names
    the bound in force), and filling 128 MiB of nodes took 4 s of CPU where 16 take 0.3."""
    monkeypatch.setattr(validate_module, "MAX_LABEL_BDD_BYTES", 16 << 20)
    n = 200
    aps = [f"x{i}" for i in range(n)] + [f"y{i}" for i in range(n)]
    first = "&".join(str(i) for i in range(n))  # declares x0..x199 first: the worst order for the pairs
    pairs = " | ".join(f"({i} & {n + i})" for i in range(n))
    record = check_text(_automaton(aps, "complete", [[first, pairs, "t"]]), "pairs.hoa")
    assert record["error"]["line"] == 6 and record["error"]["col"] == 13
    assert record["error"]["message"].startswith("'properties: complete' cannot be checked: the edge labels' BDDs "
                                                 f"need more than {validate_module.MAX_LABEL_BDD_BYTES >> 20} MiB")


labels_over_4 = expressions(4, max_leaves=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(labels_over_4, min_size=1, max_size=4), min_size=1, max_size=3),
       st.sampled_from(["deterministic", "complete", "!deterministic", "!complete", "deterministic complete"]))
def test_truth_tables_and_bdds_give_the_same_verdicts(states: list, claim: str) -> None:
    """Few APs are checked by truth tables; forcing the BDD path on the same automata gives the same records."""
    text = _automaton(["a", "b", "c", "d"], claim, [[to_text(label) for label in labels] for labels in states])
    by_tables = check_text(text, "x.hoa")
    limit = validate_module.MAX_TABLE_APS
    validate_module.MAX_TABLE_APS = -1
    try:
        by_bdds = check_text(text, "x.hoa")
    finally:
        validate_module.MAX_TABLE_APS = limit
    assert by_tables == by_bdds


def test_a_label_fixing_40_outputs_is_one_table_pass() -> None:
    """A conjunction of the input part and 40 output literals (2^40 output candidates if enumerated)."""
    m = 40
    text = _automaton(["i", *(f"o{j}" for j in range(m))], "",
                      [["0 & " + " & ".join(str(j + 1) for j in range(m)), "!0"]],
                      controllable=" ".join(str(j + 1) for j in range(m)))
    view = mealy_from_text(text)
    nxt, out = view.tables
    assert out.tolist() == [[0, (1 << m) - 1]] and nxt.tolist() == [[0, 0]]


def test_a_label_tying_many_outputs_to_an_input_is_refused() -> None:
    k = MAX_GUARD_OUTPUTS + 1
    tied = " & ".join(f"(0 | {j + 1})" for j in range(k))  # each output's literal is or-ed with the input
    text = _automaton(["i", *(f"o{j}" for j in range(k))], "", [[tied, "!0"]],
                      controllable=" ".join(str(j + 1) for j in range(k)))
    with pytest.raises(Gf01Error, match=f"ties {k} outputs to the inputs; at most {MAX_GUARD_OUTPUTS}"):
        _ = mealy_from_text(text).tables


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 20-input, 256-state controller in 8 KB: 2^28 table cells."""
    n, q = 20, 256
    aps = [f"i{k}" for k in range(n)] + ["o"]
    lines = ["HOA: v1", f"States: {q}", "Start: 0", f"AP: {n + 1} " + " ".join(f'"{a}"' for a in aps),
             f"controllable-AP: {n}", "Acceptance: 0 t", "--BODY--"]
    for s in range(q):
        lines += [f"State: {s}", f"[0&{n}] {(s + 1) % q}", f"[!0] {s}"]
    path = tmp_path_factory.mktemp("wide") / "wide.hoa"
    path.write_text("\n".join([*lines, "--END--", ""]))
    assert path.stat().st_size < 8000
    return path


def test_a_wide_controller_is_refused_in_one_line(wide: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """hoa mealy shows its view (no tables needed); making an instance of it is refused, naming the limit."""
    assert main(["hoa", "mealy", str(wide)]) == 0
    assert capsys.readouterr().out.endswith("states: 256\ninitial: 0\ninput-complete\n"
                                            "output-determinism not checked (too large for dense tables)\n")
    trace = ";".join("&".join(f"!i{k}" for k in range(20)) for _ in range(3))
    flags = ["--trace", trace, "--effect", "o"]
    for argv in (["import", "hoa", str(wide), *flags, "-o", str(tmp_path / "w.json")], ["oracle", str(wide), *flags],
                 ["enumerate", str(wide), *flags], ["cnf", str(wide), str(tmp_path / "w.cnf"), *flags],
                 ["verify", str(wide), str(tmp_path / "c.json"), *flags]):
        (tmp_path / "c.json").write_text("[]")
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{wide}: system: " in err
        assert "256 states x 2^20 input valuations = 268,435,456 table cells, more than the 4,194,304" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_one_line_costs_no_more_memory_than_many_lines() -> None:
    """The same automaton with every newline a space parses to the same result in about the same peak memory (issue
    19: a 56 MB one-line file; docs/performance.md has the times)."""
    import sys
    import tracemalloc

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from hoa_parse import generated

    from hoa import parse

    many = generated(5_000)
    one = many.replace("\n", " ")
    peaks = []
    for text in (many, one):
        tracemalloc.start()
        parsed = parse(text)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert parsed[0].num_edges == 5_000
    assert peaks[1] <= 1.5 * peaks[0], peaks
