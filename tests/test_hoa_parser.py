"""HOA v1 lexer, parser, validator and writer on small hand-written automata: every construct and every rule."""

from __future__ import annotations

import pytest

from hoa import parse, parse_file, write
from hoa.errors import Gf01Error
from hoa.label import AliasRef, And, Const, Not, Or, Var
from hoa.lexer import decode_string, encode_string, tokenize
from hoa.mealy import MealyView
from hoa.model import AccAnd, AccConst, AccOr, AccSet, Automaton, Edge, State


def one(text: str) -> Automaton:
    [aut] = parse(text)
    assert parse(write(aut)) == [aut]  # every automaton read here also round-trips
    return aut


def error(text: str) -> Gf01Error:
    with pytest.raises(Gf01Error) as info:
        parse(text, "t.hoa")
    assert info.value.file == "t.hoa"
    return info.value


def at(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """The (line, col) of the nth occurrence of ``needle`` in ``text``."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def assert_error_at(text: str, needle: str, words: str, nth: int = 0) -> None:
    err = error(text)
    assert (err.line, err.col) == at(text, needle, nth), err
    assert words in err.message, err


HEAD = 'HOA: v1\nStates: 2\nStart: 0\nAP: 2 "a" "b"\nAcceptance: 1 Inf(0)\n'


# ---------------------------------------------------------------------------------------------------------------
# Lexer


def test_nested_comments_anywhere_between_tokens():
    text = (
        "/* lead /* nested */ */HOA:/**/v1 States: /* a\nmulti-line /* nested */ comment */ 1 Start: 0\n"
        'AP: 1 /* x */ "a" Acceptance: 1 Inf(/* set */0) --BODY-- State: /*s*/ 0 {/*acc*/0}\n'
        "[/*l*/0/*&*/&/**/!/*n*/0] 0 [0] /*dest*/ 0 --END-- /* trailing */"
    )
    aut = one(text)
    assert aut.states_declared == 1 and aut.aps == ("a",)
    assert aut.states[0].edges[0].label == And((Var(0), Not(Var(0))))
    assert aut.states[0].acc == (0,)


def test_comment_opener_inside_a_string_is_text():
    aut = one('HOA: v1 AP: 1 "a/*b" Acceptance: 0 t --BODY-- --END--')
    assert aut.aps == ("a/*b",)


def test_strings_with_escapes_decode_and_encode():
    aut = one(r'HOA: v1 name: "say \"hi\" \\ \n" AP: 1 "q\"x" Acceptance: 0 t --BODY-- State: 0 "s\\0" --END--')
    assert aut.name == 'say "hi" \\ \\n'  # \n is not unescaped: it stays backslash + n
    assert aut.aps == ('q"x',)
    assert aut.states[0].name == "s\\0"
    for s in ['a"b', "c\\d", "\\n", ""]:
        assert decode_string(encode_string(s)) == s


def test_lexical_errors_are_located():
    assert_error_at('HOA: v1\nAP: 1 "a"\nx: foo.bar 1\n', ".", "unexpected character '.'")
    assert_error_at("HOA: v1\nStates: 01\n", "01", "leading zero")
    assert_error_at("HOA: v1\nStates: 2147483648\n", "2147483648", "2^31")
    assert_error_at("HOA: v1\nStates: 2147483647\nAcceptance: 0 t\n--BODY-- /* open\n--END--", "/*", "unclosed comment")
    assert_error_at('HOA: v1\nname: "open\nAcceptance: 0 t', '"', "unclosed string")
    assert_error_at("HOA: v1\n--FOO--\n", "-", "'-'")
    assert_error_at("HOA: v1\nAlias: @ 0\n", "@", "alias name")


def test_a_syntax_error_before_a_lexical_error_is_reported_first():
    text = "HOA: v1\nStates: x\nAcceptance: 0 t\n#"
    assert_error_at(text, "x", "expected the number of states")


def test_headername_needs_the_colon_attached_and_t_colon_is_a_header():
    toks = tokenize("t: f foo : HOA:")
    # "foo :" is an identifier and a stray ':' (a lexical error, so the tokens stop before it)
    assert (toks.kinds, toks.texts) == (["hdr", "bool", "id"], ["t:", "f", "foo"])
    assert toks.error is not None and toks.error.col == 10


# ---------------------------------------------------------------------------------------------------------------
# Header items


def test_every_header_item_is_read():
    text = (
        'HOA: v1\nname: "n"\ntool: "ltl2x" "1.2"\nStates: 3\nStart: 0\nStart: 1&2\nAP: 3 "a" "b" "c"\n'
        "controllable-AP: 2 0\nAlias: @a 0\nAlias: @ab @a & 1\nAcceptance: 2 Fin(!0) | Inf(1) & t\n"
        "acc-name: foo t 3 bar\nproperties: trans-labels explicit-labels\nproperties: univ-branch\n"
        'x-custom: 1 f "s" id\nlower-case: \n--BODY--\nState: 0\n[@ab] 1\nState: 1\n[t] 2\nState: 2\n[!2] 0\n--END--\n'
    )
    aut = one(text)
    assert aut.name == "n" and aut.tool == ("ltl2x", "1.2")
    assert aut.states_declared == 3 and aut.start == ((0,), (1, 2))
    assert aut.aps == ("a", "b", "c") and aut.controllable_ap == (2, 0)
    assert aut.aliases == (("a", Var(0)), ("ab", And((AliasRef("a"), Var(1)))))
    assert aut.acc_sets == 2
    assert aut.acceptance == AccOr((AccSet("Fin", 0, True), AccAnd((AccSet("Inf", 1), AccConst(True)))))
    assert aut.acc_name == ("foo", ("t", 3, "bar"))
    assert aut.properties == ("trans-labels", "explicit-labels", "univ-branch")
    assert aut.headers == (("x-custom", ("1", "f", '"s"', "id")), ("lower-case", ()))


def test_tool_with_one_string_and_empty_automaton():
    aut = one('HOA: v1 tool: "t" States: 0 Acceptance: 0 f --BODY-- --END--')
    assert aut.tool == ("t",) and aut.num_states == 0 and aut.acceptance == AccConst(False)


def test_acceptance_precedence_and_parentheses():
    aut = one("HOA: v1 Acceptance: 3 Inf(0) | Fin(1) & (Inf(!2) | t) & f --BODY-- --END--")
    assert aut.acceptance == AccOr(
        (AccSet("Inf", 0), AccAnd((AccSet("Fin", 1), AccOr((AccSet("Inf", 2, True), AccConst(True))), AccConst(False))))
    )
    nested = one("HOA: v1 Acceptance: 3 (Inf(0) & Inf(1)) & Inf(2) --BODY-- --END--")
    assert nested.acceptance == AccAnd((AccSet("Inf", 0), AccSet("Inf", 1), AccSet("Inf", 2)))


def test_label_precedence_not_over_and_over_or():
    aut = one(HEAD + "--BODY--\nState: 0\n[0 | 1 & !0 | !(0 | 1) & t] 0\n[!0 & 1 | f] 1\nState: 1\n[!!0] 1\n--END--")
    e0, e1 = aut.states[0].edges
    assert e0.label == Or((Var(0), And((Var(1), Not(Var(0)))), And((Not(Or((Var(0), Var(1)))), Const(True)))))
    assert e1.label == Or((And((Not(Var(0)), Var(1))), Const(False)))
    assert aut.states[1].edges[0].label == Not(Not(Var(0)))


def test_header_rules():
    assert_error_at("States: 1\nHOA: v1", "States:", "must start with 'HOA:'")
    assert_error_at("HOA: v2\nAcceptance: 0 t --BODY-- --END--", "v2", "unsupported HOA version")
    assert_error_at("HOA: v1\nStates: 1\nStates: 1\n", "States:", "occurs twice", nth=1)
    assert_error_at("HOA: v1\nStates: 1\nHOA: v1\n", "HOA:", "inside a header", nth=1)
    assert_error_at("HOA: v1\nAcceptance: 0 t\nname: \"a\"\nname: \"b\"", "name:", "occurs twice", nth=1)
    assert_error_at("HOA: v1\nStates: 1\n--BODY--\n--END--", "HOA:", "missing 'Acceptance:'")
    err = error("HOA: v1\nAcceptance: 0 t\n--BODY--\nState: 0\n")
    assert (err.line, err.col, err.message) == (5, 1, "missing --END-- at the end of the automaton")
    assert_error_at("HOA: v1\nAcceptance: 0 t\nfoo bar", "foo", "expected a header item")
    assert_error_at("HOA: v1\nAcceptance: 1 Foo(0)", "Foo", "expected Fin or Inf")
    assert_error_at("HOA: v1\nAcceptance: 1 Inf(0 --BODY--", "--BODY--", "expected ')'")


# ---------------------------------------------------------------------------------------------------------------
# Body


def test_state_and_edge_items():
    aut = one(HEAD + '--BODY--\nState: [0 & 1] 0 "zero" {0}\n1\n0&1 {0}\nState: 1\n--END--')
    s0, s1 = aut.states
    assert s0 == State(0, "zero", And((Var(0), Var(1))), (0,), (Edge((1,)), Edge((0, 1), None, (0,))))
    assert s1 == State(1)
    assert aut.num_edges == 2 and aut.num_states == 2


def test_implicit_labels_put_ap_0_in_the_least_significant_bit():
    aut = one('HOA: v1 States: 4 Start: 0 AP: 2 "a" "o" controllable-AP: 1 Acceptance: 0 t --BODY--\n'
              "State: 0 0 1 2 3\nState: 1 1 1 1 1\nState: 2 2 2 2 2\nState: 3 3 3 3 3\n--END--")
    view = MealyView.from_automaton(aut)
    # edge k of state 0 stands for the valuation k: a = bit 0, o = bit 1
    assert view.step(0, 0) == (0, 0)  # a=0: edge 0 (a=0, o=0) is the first enabled
    assert view.step(0, 1) == (1, 0)  # a=1: edge 1 (a=1, o=0)


def test_universal_branching_and_multiple_initial_states():
    aut = one(HEAD + "--BODY--\nState: 0\n[0] 0&1\n[!0] 1\nState: 1\n[t] 1&0&1\n--END--")
    assert aut.states[0].edges[0].dests == (0, 1) and aut.states[1].edges[0].dests == (1, 0, 1)
    multi = one('HOA: v1 States: 2 Start: 0 Start: 1 Start: 0&1 AP: 0 Acceptance: 0 t --BODY-- --END--')
    assert multi.start == ((0,), (1,), (0, 1))


def test_states_may_be_referenced_before_definition_and_without_states_header():
    aut = one('HOA: v1 Start: 2 AP: 0 Acceptance: 0 t --BODY-- State: 1 [t] 2 State: 2 [t] 1 --END--')
    assert aut.states_declared is None and aut.num_states == 3 and [s.index for s in aut.states] == [1, 2]


def test_streams_and_abort():
    text = (
        "HOA: v1 --ABORT--\n"
        'HOA: v1 Acceptance: 0 t --BODY-- State: 0 [t] 0 --END--\n'
        "HOA: v1 States: 1 Acceptance: 0 t --BODY-- State: 0 [t --ABORT-- --ABORT--\n"
        'HOA: v1 name: "kept" x: foo--ABORT-- Acceptance: 0 t --BODY-- State: 0 --END--\n'
    )
    automata = parse(text)
    assert len(automata) == 2 and automata[1].name == "kept"
    assert automata[1].headers == (("x", ("foo--ABORT--",)),)  # foo--ABORT-- is an identifier, not an abort
    assert parse("HOA: v1 Acceptance: 0 t --ABORT--") == []


def test_an_empty_stream_has_no_automaton():
    assert parse("") == [] and parse(" /* only /* a */ comment */\n") == []


def test_foreign_text_after_the_last_automaton_is_ignored_but_not_between_automata():
    ok = 'HOA: v1 Acceptance: 0 t --BODY-- --END--\n\n4 2ts\n0 1 -1\nnever { skip }\n'
    assert len(parse(ok)) == 1
    text = "HOA: v1 Acceptance: 0 t --BODY-- --END--\njunk\nHOA: v1 Acceptance: 0 t --BODY-- --END--"
    assert_error_at(text, "junk", "must start with 'HOA:'")


def test_body_syntax_errors():
    assert_error_at(HEAD + "--BODY--\n[0] 1\n--END--", "[0]", "expected 'State:'")
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0] x\n--END--", "x", "expected a destination state")
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0] 1\nx\n--END--", "x", "expected 'State:' or --END--")
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0 1] 1\n--END--", "1]", "expected ']'")
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0] 1 {a}\n--END--", "a}", "acceptance signature")
    assert_error_at(HEAD + '--BODY--\nState: 0\n[0] "s"\n--END--', '"s"', "destination state")
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0 & ] 1\n--END--", "]", "expected a label expression")
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0] 1&\n--END--", "--END--", "after '&'")


# ---------------------------------------------------------------------------------------------------------------
# Validation rules, each at the offending token


def test_ap_count_and_names():
    assert_error_at('HOA: v1\nAP: 1 "a" "b"\nAcceptance: 0 t', '"b"', "declares 1 atomic proposition(s) but 2")
    assert_error_at('HOA: v1\nAP: 3 "a" "b"\nAcceptance: 0 t', "3", "declares 3 atomic proposition(s) but 2")
    assert_error_at('HOA: v1\nAP: 2 "a" "a"\nAcceptance: 0 t --BODY-- --END--', '"a"', "duplicate AP", nth=1)


def test_alias_rules():
    head = 'HOA: v1\nAP: 2 "a" "b"\nAcceptance: 0 t\n'
    assert_error_at(head + "Alias: @c @b | 0\nAlias: @b 1\n--BODY-- --END--", "@b", "used before its definition")
    assert_error_at(head + "Alias: @c @c\n--BODY-- --END--", "@c", "used before its definition", nth=1)
    assert_error_at(head + "Alias: @b 1\nAlias: @b 0\n--BODY-- --END--", "@b", "redefined", nth=1)
    assert_error_at(head + "Alias: @b 2\n--BODY-- --END--", "2", "AP index 2 out of range", nth=1)
    assert_error_at(head + "Alias: @b 1\n--BODY--\nState: 0\n[@b & !@x] 0\n--END--", "@x", "not defined")


def test_range_rules():
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0 & 2] 1\n--END--", "2]", "AP index 2 out of range")
    assert_error_at(HEAD.replace("Inf(0)", "Inf(1)") + "--BODY-- --END--", "1)", "acceptance set 1 out of range")
    assert_error_at(HEAD + "--BODY--\nState: 0 {1}\n[0] 1\n--END--", "1}", "acceptance set 1 out of range")
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0] 1 {0 3}\n--END--", "3}", "acceptance set 3 out of range")
    assert_error_at(HEAD + "controllable-AP: 1 2\n--BODY-- --END--", "2\n--BODY", "AP index 2 out of range")
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0] 0&2\n--END--", "2\n--END", "undefined state")
    assert_error_at(HEAD + "--BODY--\nState: 2\n--END--", "2\n--END", "undefined state")
    assert_error_at(HEAD.replace("Start: 0", "Start: 0&5") + "--BODY-- --END--", "5", "undefined state")
    assert_error_at(HEAD + "--BODY--\nState: 1\nState: 1\n--END--", "1", "defined twice", nth=3)


def test_labelling_rules():
    assert_error_at(HEAD + "--BODY--\nState: 0\n0 1 1\n--END--", "State: 0", "need exactly 2^2")
    assert_error_at(HEAD + "--BODY--\nState: [0] 0\n1\n[1] 0\n--END--", "[1] 0", "has a state label")
    assert_error_at(HEAD + "--BODY--\nState: 0\n[0] 1\n1\n--END--", "1\n--END", "unlabelled edge")
    assert_error_at(HEAD + "--BODY--\nState: 0\n1\n[0] 1\n--END--", "[0] 1", "labelled edge")
    one(HEAD + "--BODY--\nState: 0\nState: 1\n0 1 1 0\n--END--")  # no edges at all, or exactly 2^|AP|


@pytest.mark.parametrize(
    ("props", "body", "needle", "words"),
    [
        ("complete !complete", "", "!complete", "contradicts"),
        ("univ-branch no-univ-branch", "", "no-univ-branch", "contradicts"),
        ("state-labels trans-labels", "", "trans-labels", "incompatible"),
        ("implicit-labels explicit-labels", "", "explicit-labels", "incompatible"),
        ("stutter-invariant stutter-sensitive", "", "stutter-sensitive", "incompatible"),
        ("very-weak !weak", "", "very-weak", "implies weak"),
        ("deterministic !unambiguous", "", "deterministic", "implies unambiguous"),
        ("trans-labels", "State: [0] 0\n1\nState: 1\n", "trans-labels", "state label"),
        ("implicit-labels", "State: 0\n[0] 1\nState: 1\n", "implicit-labels", "explicit edge labels"),
        ("explicit-labels", "State: 0\n0 1 1 0\n", "explicit-labels", "implicit edge labels"),
        ("state-acc", "State: 0\n[0] 1 {0}\n", "state-acc", "acceptance signature"),
        ("trans-acc", "State: 0 {0}\n[0] 1\n", "trans-acc", "acceptance signature"),
        ("univ-branch", "State: 0\n[0] 1\n", "univ-branch", "no initial state or edge is a conjunction"),
        ("!univ-branch", "State: 0\n[0] 1&0\n", "!univ-branch", "universal branching"),
        ("deterministic", "State: 0\n[0] 1\n[0 & 1] 0\n", "deterministic", "not deterministic"),
        ("exist-branch", "State: 0\n[0] 1\n[!0] 0\n", "exist-branch", "is deterministic"),
        ("complete", "State: 0\n[0] 1\nState: 1\n[t] 1\n", "complete", "not complete"),
        ("complete", "State: 0\n[t] 1\n", "complete", "state 1 is not defined"),
        ("!complete", "State: 0\n[0] 1\n[!0] 1\nState: 1\n[t] 0\n", "!complete", "is complete"),
        ("!weak", "State: 0\n[0] 1\n", "!weak", "is weak"),
    ],
)
def test_properties_contradictions(props: str, body: str, needle: str, words: str):
    text = HEAD + f"properties: {props}\n--BODY--\n{body}--END--"
    assert_error_at(text, needle, words)


def test_determinism_and_completeness_with_many_aps():
    n = 40  # far beyond truth tables: 2^40 valuations
    aps = " ".join(f'"p{i}"' for i in range(n))
    chain = " & ".join(f"!{i}" for i in range(n - 1))
    head = f"HOA: v1 States: 1 Start: 0 AP: {n} {aps} Acceptance: 0 t properties: deterministic complete --BODY--\n"
    edges = "".join(f"[{' & '.join(f'!{i}' for i in range(k))}{' & ' if k else ''}{k}] 0\n" for k in range(n))
    one(head + f"State: 0\n{edges}[{chain} & !{n - 1}] 0\n--END--")
    assert_error_at(head + f"State: 0\n{edges}--END--", "complete", "some valuation has no edge")
    overlap = head + f"State: 0\n{edges}[{chain} & !{n - 1}] 0\n[{n - 1} & 3] 0\n--END--"
    assert_error_at(overlap, "deterministic", "overlaps an earlier edge")


def test_properties_that_hold_are_accepted():
    aut = one(HEAD + "properties: deterministic complete trans-labels explicit-labels trans-acc !univ-branch\n"
              "--BODY--\nState: 0\n[0] 1\n[!0] 0 {0}\nState: 1\n[t] 1\n--END--")
    assert "deterministic" in aut.properties
    one(HEAD.replace("Start: 0\n", "Start: 0\nStart: 1\n") + "properties: !deterministic exist-branch\n--BODY--\n"
        "State: 0\n[t] 1\nState: 1\n[t] 0\n--END--")
    one(HEAD + "properties: state-labels explicit-labels\n--BODY--\nState: [0] 0\n1\nState: [!0] 1\n0\n--END--")


# ---------------------------------------------------------------------------------------------------------------
# Writer


def test_writer_is_canonical_and_minimal():
    aut = one(
        'HOA: v1\n/* c */ name: "a \\"q\\""\nStates: 1\nStart: 0\nAP: 2 "a" "b"\nAlias: @x (0 | 1) & !0\n'
        "Acceptance: 2 (Inf(0) | Fin(!1)) & t\nproperties: !complete\nproperties: deterministic\n--BODY--\n"
        "State: 0 {0}\n[(@x)] 0 {1 0}\n--END--"
    )
    assert write(aut) == (
        'HOA: v1\nname: "a \\"q\\""\nStates: 1\nStart: 0\nAP: 2 "a" "b"\nAlias: @x (0 | 1) & !0\n'
        "Acceptance: 2 (Inf(0) | Fin(!1)) & t\nproperties: !complete deterministic\n--BODY--\n"
        "State: 0 {0}\n[@x] 0 {1 0}\n--END--\n"
    )


def test_writer_round_trips_a_mealy_view():
    view = MealyView.from_table(("a",), ("o",), next_table=[[0, 1], [1, 0]], out_table=[[0, 1], [1, 1]])
    aut = view.to_automaton(name="m")
    [again] = parse(write(aut))
    back = MealyView.from_automaton(again)
    assert [[back.step(q, x) for x in range(2)] for q in range(2)] == [[view.step(q, x) for x in range(2)]
                                                                       for q in range(2)]


def test_files_that_are_not_utf8_or_missing_are_user_errors(tmp_path):
    bad = tmp_path / "latin1.hoa"
    bad.write_bytes(b'HOA: v1 name: "caf\xe9"')
    with pytest.raises(Gf01Error, match="not UTF-8") as info:
        parse_file(bad)
    assert info.value.file == str(bad)
    with pytest.raises(Gf01Error, match="cannot read"):
        parse_file(tmp_path / "absent.hoa")


def test_crlf_line_endings_and_tabs_count_as_whitespace():
    text = 'HOA: v1\r\nAP:\t1 "a"\r\nAcceptance: 0 t\r\n--BODY--\r\nState: 0\r\n[0 & 1] 0\r\n--END--\r\n'
    err = error(text)
    assert (err.line, err.col) == (6, 6)  # the "1" after "[0 & "


def test_nesting_is_bounded_so_no_walk_overflows_the_stack():
    body = 'HOA: v1 AP: 1 "a" Acceptance: 1 {acc} --BODY-- State: 0 [{label}] 0 --END--'
    one(body.format(acc="Inf(0)", label="(" * 99 + "!" + "0" + ")" * 99))
    for label in ("(" * 5000 + "0" + ")" * 5000, "!" * 5000 + "0", "!(" * 3000 + "0" + ")" * 3000):
        text = body.format(acc="Inf(0)", label=label)
        err = error(text)
        assert "nested deeper than 100 levels" in err.message and err.line == 1
    text = body.format(acc="(" * 500 + "Inf(0)" + ")" * 500, label="0")
    assert "nested deeper than 100 levels" in error(text).message
    chain = " ".join(f"Alias: @a{k + 1} !@a{k}" for k in range(300))
    text = f'HOA: v1 AP: 1 "a" Alias: @a0 0 {chain} Acceptance: 0 t --BODY-- State: 0 [@a300] 0 --END--'
    assert_error_at(text, "@a200 ", "nests 201 levels deep once its aliases are expanded")
