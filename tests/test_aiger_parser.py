"""The AIGER 1.9 reader and writers: every section read, canonical text stable, binary = ASCII, errors located."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aig import Aig, And, Latch, binary, canonical, parse, parse_file
from hoa.errors import Gf01Error

# A toggle latch with reset 1, a request input, an output, a bad-state property, a constraint, a justice and a
# fairness property, symbols and a comment: every section of AIGER 1.9.
FULL = b"""aag 7 2 1 2 4 1 1 1 1
2
4
6 14 1
6
7
12
3
2
6
13
4
8 2 4
10 3 5
12 9 11
14 6 12
i0 req
i1 ack
l0 st
o0 out
b0 err
c0 env
j0 live
f0 fair
c
made by hand
second line
"""


def test_every_section_is_read() -> None:
    a = parse(FULL, file="full.aag")
    assert a.header == (7, 2, 1, 2, 4, 1, 1, 1, 1)
    assert a.inputs == (2, 4)
    assert a.latches == (Latch(6, 14, 1),)
    assert a.outputs == (6, 7) and a.bad == (12,) and a.constraints == (3,)
    assert a.justice == ((6, 13),) and a.fairness == (4,)
    assert a.ands[0] == And(8, 2, 4) and len(a.ands) == 4
    assert a.name("i", 1) == "ack" and a.name("b", 0) == "err" and a.name("o", 1) is None
    assert a.comments == ("made by hand", "second line")


def test_binary_and_ascii_give_the_same_canonical_text() -> None:
    a = parse(FULL)
    raw = binary(a)
    assert raw.startswith(b"aig 7 2 1 2 4 1 1 1 1\n")
    b = parse(raw)
    assert canonical(b) == canonical(a)
    assert b.comments == a.comments  # the binary writer keeps comments; canonical text drops them
    assert "made by hand" not in canonical(a)


def test_canonical_renumbers_and_is_a_fixpoint() -> None:
    # Gates listed parents first, an unused variable (M too large), no reset column, uninitialised latch.
    text = b"aag 9 1 2 1 2\n2\n4 10\n6 6 6\n10\n10 8 7\n8 2 4\n"
    c = canonical(parse(text))
    assert c == "aag 5 1 2 1 2\n2\n4 10 0\n6 6 6\n10\n8 4 2\n10 8 7\n"
    assert canonical(parse(c)) == c
    assert not parse(c).latches[1].initialised


def test_parse_file_reads_both_formats(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a.aag").write_bytes(FULL)
    (tmp_path / "a.aig").write_bytes(binary(parse(FULL)))
    assert canonical(parse_file(tmp_path / "a.aag")) == canonical(parse_file(tmp_path / "a.aig"))
    with pytest.raises(Gf01Error, match="cannot read"):
        parse_file(tmp_path / "missing.aag")


BAD = [
    (b"", 1, "unexpected end of file: expected the header"),
    (b"aiger 1 0 0 0 0\n", 1, "must start with 'aag'"),
    (b"aag 1 1 0\n", 1, "header: expected 'M I L O A'"),
    (b"aag 1 1 0 0 0 0 0 0 0 0\n2\n", 1, "header: expected"),
    (b"aag 1 2 0 0 0\n2\n4\n", 1, "M = 1 is less than I + L + A = 2"),
    (b"aig 3 1 0 0 1\n", 1, "binary file needs M = I + L + A"),
    (b"aig 9000000 9000000 0 0 0\n", 1, "M = 9000000 exceeds the 8388608 variables"),
    (b"aig 2000000 2000000 0 0 0\n", 1, "I = 2000000 exceeds the 1048576 inputs"),
    (b"aag 5 5 0 0 0\n2\n", 1, "more lines than the file has"),
    (b"aag 1 1 0 1 0\n3\n3\n", 2, "input 0: literal 3 must be even"),
    (b"aag 1 1 0 1 0\n2\n5\n", 3, "output 0: literal 5 exceeds 2M + 1 = 3"),
    (b"aag 2 2 0 0 0\n2\n2\n", 3, "input 1: variable 1 is defined twice"),
    (b"aag 1 1 0 1 0\n2\n 2\n", 3, "output 0: expected 1 unsigned decimal"),
    (b"aag 2 0 1 0 0\n2 4 1\n", 2, "latch 0: literal 4 uses variable 2, which is neither"),
    (b"aag 1 0 1 0 0\n2 2 3\n", 2, "latch 0: reset 3 is neither 0, 1 nor the latch's literal 2"),
    (b"aag 3 1 0 1 2\n2\n4\n4 6 2\n6 4 2\n", 5, "AND gate 1 (literal 6): combinational cycle"),
    (b"aag 2 1 0 1 1\n2\n4\n4 2 8\n", 4, "AND gate 0: literal 8 exceeds"),
    (b"aag 1 1 0 1 0 0 0 1 0\n2\n2\n0\n", 4, "justice property 0: it must have at least one literal"),
    (b"aig 2 1 0 1 1\n2\n\x05\x00", 3, "deltas 5, 0 break lhs > rhs0 >= rhs1"),
    (b"aig 2 0 0 1 2\n2\n\x02\x02\x80", 3, "AND gate 1 (literal 4): the binary AND section ends inside"),
    (b"aig 1 0 0 1 1\n2\n\x80\x80\x80\x80\x80\x80\x01\x00", 3, "a delta longer than 5 bytes"),
    (b"aag 1 1 0 1 0\n2\n2\nx0 foo\n", 4, "symbol table: expected '<kind><position> <name>'"),
    (b"aag 1 1 0 1 0\n2\n2\ni1 foo\n", 4, "symbol table: input 1 does not exist"),
    (b"aag 1 1 0 1 0\n2\n2\ni0 a\ni0 b\n", 5, "symbol table: input 0 is named twice"),
    (b"aag 1 1 0 1 0\n2\n2\ni0  a\n", 4, "surrounding spaces"),
    (b"aag 1 1 0 1 0\n2\n2\nc0 x\ncomment\n", 4, "constraint 0 does not exist"),
    (b"aag 1 1 0 1 0\n2\n2\n\n", 4, "symbol table: expected"),
]


@pytest.mark.parametrize(("data", "line", "message"), BAD, ids=[m for _, _, m in BAD])
def test_malformed_files_are_refused_with_line_and_rule(data: bytes, line: int, message: str) -> None:
    with pytest.raises(Gf01Error) as info:
        parse(data, file="bad.aag")
    assert info.value.file == "bad.aag" and info.value.line == line, str(info.value)
    assert message in info.value.message


@st.composite
def circuits(draw: st.DrawFn) -> Aig:
    """A random well-formed circuit in a random (shuffled) ASCII numbering."""
    n_i, n_l, n_a = draw(st.integers(0, 4)), draw(st.integers(0, 3)), draw(st.integers(0, 8))
    m = n_i + n_l + n_a + draw(st.integers(0, 2))
    perm = draw(st.permutations(range(1, m + 1)))
    ins, lat, gates = perm[:n_i], perm[n_i : n_i + n_l], perm[n_i + n_l : n_i + n_l + n_a]
    avail = [0] + [2 * v for v in ins + lat]
    ands = []
    for v in gates:
        a = draw(st.sampled_from(avail)) ^ draw(st.integers(0, 1))
        b = draw(st.sampled_from(avail)) ^ draw(st.integers(0, 1))
        ands.append(And(2 * v, a, b))
        avail.append(2 * v)
    ands = draw(st.permutations(ands))

    def lit() -> int:
        return draw(st.sampled_from(avail)) ^ draw(st.integers(0, 1))

    latches = tuple(Latch(2 * v, lit(), draw(st.sampled_from((0, 1, 2 * v)))) for v in lat)
    names = draw(st.lists(st.sampled_from(["a", "b c", "x[3]"]), max_size=n_i, unique=True))
    return Aig(m, tuple(2 * v for v in ins), latches, tuple(lit() for _ in range(draw(st.integers(0, 3)))),
               tuple(ands), bad=tuple(lit() for _ in range(draw(st.integers(0, 2)))),
               symbols=tuple((("i", k), n) for k, n in enumerate(names)))


def _ascii(a: Aig) -> bytes:
    """Plain ASCII text of ``a`` in its own numbering (not canonical), the reader's input."""
    h = [a.max_var, len(a.inputs), len(a.latches), len(a.outputs), len(a.ands), len(a.bad)]
    lines = [" ".join(["aag", *map(str, h)])]
    lines += [str(x) for x in a.inputs] + [f"{x.lit} {x.next} {x.reset}" for x in a.latches]
    lines += [str(x) for x in (*a.outputs, *a.bad)] + [f"{g.lhs} {g.rhs0} {g.rhs1}" for g in a.ands]
    lines += [f"{k}{p} {n}" for (k, p), n in a.symbols]
    return ("\n".join(lines) + "\n").encode()


@settings(max_examples=150, deadline=None)
@given(circuits())
def test_random_circuits_read_back_and_canonicalise(a: Aig) -> None:
    read = parse(_ascii(a))
    assert read == a
    c = canonical(read)
    assert canonical(parse(c)) == c
    assert canonical(parse(binary(read))) == c


def test_a_huge_declared_m_costs_nothing() -> None:
    """M may exceed what the circuit uses; arrays are sized by the variables used (no 8-million-entry allocation)."""
    import tracemalloc

    tracemalloc.start()
    try:
        c = canonical(parse(b"aag 8000000 1 0 1 0\n2\n3\n"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert c == "aag 1 1 0 1 0\n2\n3\n" and peak < 1 << 20
