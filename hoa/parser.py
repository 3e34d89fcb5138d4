"""HOA v1 parser: a stream of automata (text) -> validated :class:`hoa.model.Automaton` values.

Recursive descent over the token lists of :mod:`hoa.lexer`. The parser checks the grammar and the header rules
(``HOA:`` first, mandatory ``Acceptance:``, headers that may occur once); :mod:`hoa.validate` checks the meaning,
using the token indices the parser records in a :class:`Spans` side structure (the frozen model carries no
positions). An automaton that reaches ``--ABORT--`` before its ``--END--`` is discarded and the stream goes on.

>>> [a.aps for a in parse('HOA: v1 AP: 1 "a" Acceptance: 0 t --BODY-- State: 0 [0] 0 --END--')]
[('a',)]
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from hoa.errors import Gf01Error, quote
from hoa.label import AliasRef, And, Const, Expr, Not, Or, Var
from hoa.lexer import Tokens, decode_string, tokenize
from hoa.model import AccAnd, AccConst, AccExpr, AccOr, AccSet, Automaton, Edge, State
from hoa.spans import Atom, Spans
from hoa.validate import validate

_E = TypeVar("_E", Expr, AccExpr)  # a label or an acceptance condition: _flatten serves both

#: Headers that may occur more than once (spec: every other HEADERNAME at most once).
REPEATABLE = frozenset({"Start", "Alias", "properties"})
SUPPORTED_VERSIONS = frozenset({"v1"})
#: Deepest nesting of '!' and '(' read in a label or acceptance condition: it bounds every recursive walk over
#: expressions (parser, writer, validator, Mealy view) far below Python's recursion limit.
MAX_DEPTH = 100



class _Reader:
    """A cursor over the tokens of one automaton: ``lo`` .. ``hi`` (exclusive, ``hi`` is its ``--END--``)."""

    def __init__(self, toks: Tokens, lo: int, hi: int) -> None:
        self.toks = toks
        self.kinds = toks.kinds
        self.texts = toks.texts
        self.i = lo
        self.hi = hi
        # Literal cache: token text -> (AP index, Var, Not(Var)). Labels are mostly literals, and sharing the
        # immutable objects saves building a frozen dataclass per occurrence.
        self.literals: dict[str, tuple[int, Var, Not]] = {}
        self.label_max_ap = -1  # the largest AP number and the aliases used in body labels
        self.label_aliases: set[str] = set()
        self.depth = 0  # nesting of '!' and '(' in the expression being read

    def literal(self, text: str) -> tuple[int, Var, Not]:
        """The cached (index, Var, Not(Var)) of the AP number ``text``."""
        lit = self.literals.get(text)
        if lit is None:
            var = Var(int(text))
            lit = self.literals[text] = (var.index, var, Not(var))
        return lit

    def nest(self, at: int) -> None:
        """Enter one more level of '!' or '(' at token ``at``; refuse nesting deeper than MAX_DEPTH."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"expression nested deeper than {MAX_DEPTH} levels of '!' and '('", at)

    def error(self, message: str, at: int | None = None) -> Gf01Error:
        """An error at token ``at`` (default: the current one); past the tokens, the pending lexical error."""
        return self.toks.error_at(message, self.i if at is None else at)

    def found(self) -> str:
        i = self.i
        if i >= len(self.kinds):
            return "end of input"
        return repr(self.texts[i])

    def expect_int(self, what: str) -> int:
        i = self.i
        if i < self.hi and self.kinds[i] == "int":
            self.i = i + 1
            return int(self.texts[i])
        raise self.error(f"expected {what} (an integer), found {self.found()}")


def parse(text: str, file: str | None = None) -> list[Automaton]:
    """Parse and validate an HOA stream; returns its automata (aborted ones dropped) or raises Gf01Error."""
    return list(iter_parse(text, file))


def parse_file(path: str | Path) -> list[Automaton]:
    """Parse and validate the HOA file at ``path`` (errors name the file)."""
    from hoa.files import read_text

    return parse(read_text(path), str(path))


def iter_parse(text: str, file: str | None = None) -> Iterator[Automaton]:
    """The automata of an HOA stream one by one, each validated before it is yielded."""
    raw = iter_parse_raw(text, file)
    while True:
        with _gc_paused():  # one pause for reading and validating an automaton
            item = next(raw, None)
            if item is None:
                return
            validate(*item)
        yield item[0]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Cyclic GC off for a block: parsing allocates millions of small acyclic objects and GC passes only cost time."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def iter_parse_raw(text: str, file: str | None = None) -> Iterator[tuple[Automaton, Spans, Tokens]]:
    """The automata of an HOA stream with their token indices, syntax-checked but not validated."""
    toks = tokenize(text, file)
    kinds = toks.kinds
    n = len(kinds)
    ends = _indices(toks.texts, "--END--")
    aborts = _indices(toks.texts, "--ABORT--")
    i = 0
    while i < n or (i == n and toks.error is not None):
        if i > 0 and _trailing_text(toks, i):
            return
        e = ends[bisect_left(ends, i)] if ends and ends[-1] >= i else n
        ab = bisect_left(aborts, i)
        if ab < len(aborts) and aborts[ab] < e:
            i = aborts[ab] + 1  # the automaton was aborted: discard it, the stream goes on after --ABORT--
            continue
        with _gc_paused():
            aut, spans = _automaton(_Reader(toks, i, e))
        yield aut, spans, toks
        i = e + 1


def _indices(items: list[str], value: str) -> list[int]:
    """The positions of ``value`` in ``items`` (list.index scans at C speed)."""
    out: list[int] = []
    i = -1
    try:
        while True:
            i = items.index(value, i + 1)
            out.append(i)
    except ValueError:
        return out


_HOA_KEYWORD = re.compile(r"HOA:|--BODY--|--END--|--ABORT--")


def _trailing_text(toks: Tokens, i: int) -> bool:
    """Whether the text from token ``i`` on (after an automaton) is not HOA at all and ends the stream.

    Spot reads streams that mix HOA with other formats (LBTT, never claims). Text after an automaton that does not
    start with ``HOA:`` or ``--ABORT--`` and holds no HOA keyword anywhere is such foreign text; anything else there
    is an HOA error.
    """
    if i < len(toks.kinds) and (toks.kinds[i] == "abort" or toks.texts[i] == "HOA:"):
        return False
    after = toks.start(i - 1) + len(toks.texts[i - 1])  # the end of the previous --END-- or --ABORT--
    return _HOA_KEYWORD.search(toks.blanked, after) is None


# ---------------------------------------------------------------------------------------------------------------
# Header


def _automaton(r: _Reader) -> tuple[Automaton, Spans]:
    kinds, texts = r.kinds, r.texts
    if r.i >= r.hi or kinds[r.i] != "hdr" or texts[r.i] != "HOA:":
        raise r.error(f"an automaton must start with 'HOA:', found {r.found()}")
    spans = Spans(begin=r.i)
    r.i += 1
    if r.i >= r.hi or kinds[r.i] != "id":
        raise r.error(f"'HOA:' must be followed by a version identifier, found {r.found()}")
    version = texts[r.i]
    if version not in SUPPORTED_VERSIONS:
        raise r.error(f"unsupported HOA version {quote(version)} (this parser reads HOA v1)")
    r.i += 1
    fields: dict[str, object] = {"version": version}
    start: list[tuple[int, ...]] = []
    aliases: list[tuple[str, Expr]] = []
    properties: list[str] = []
    unknown: list[tuple[str, tuple[str, ...]]] = []
    while True:
        if r.i >= r.hi:
            raise r.error("missing --BODY-- (the header must be followed by --BODY-- and the body by --END--)")
        kind = kinds[r.i]
        if kind == "body":
            break
        if kind != "hdr":
            raise r.error(f"expected a header item (a name followed by ':') or --BODY--, found {r.found()}")
        name = texts[r.i][:-1]
        hpos = r.i
        if name == "HOA":
            raise r.error("'HOA:' inside a header: the automaton before it lacks --BODY-- ... --END--")
        seen = spans.headers.setdefault(name, [])
        if seen and name not in REPEATABLE:
            first = r.toks.linecol(seen[0])
            raise r.error(f"header '{name}:' occurs twice (first at line {first[0]}); only Start:, Alias: and "
                          "properties: may repeat")
        seen.append(hpos)
        r.i += 1
        if name == "States":
            fields["states_declared"] = r.expect_int("the number of states after 'States:'")
        elif name == "Start":
            conj, offs = _state_conj(r, "a state number after 'Start:'")
            if len(conj) > 1 and spans.univ_first is None:
                spans.univ_first = offs[1]
            start.append(conj)
            spans.start_states.append(offs)
        elif name == "AP":
            spans.ap_count = r.i if r.i < r.hi else None
            count = r.expect_int("the number of atomic propositions after 'AP:'")
            names = []
            while r.i < r.hi and kinds[r.i] == "str":
                names.append(decode_string(texts[r.i]))
                spans.ap_names.append(r.i)
                r.i += 1
            if len(names) != count:
                # Point at the first name too many, or at the count when names are missing.
                at = spans.ap_names[count] if len(names) > count else spans.ap_count
                raise r.toks.error_at(
                    f"'AP: {count}' declares {count} atomic proposition(s) but {len(names)} name(s) follow", at or 0
                )
            fields["aps"] = tuple(names)
        elif name == "Alias":
            if r.i >= r.hi or kinds[r.i] != "aname":
                raise r.error(f"expected an alias name (@name) after 'Alias:', found {r.found()}")
            spans.alias_names.append(r.i)
            alias = texts[r.i][1:]
            r.i += 1
            atoms: list[Atom] = []
            aliases.append((alias, _label_expr(r, atoms)))
            spans.alias_atoms.append(atoms)
        elif name == "Acceptance":
            spans.acc_count = r.i if r.i < r.hi else None
            fields["acc_sets"] = r.expect_int("the number of acceptance sets after 'Acceptance:'")
            fields["acceptance"] = _acc_cond(r, spans.acc_atoms)
        elif name == "acc-name":
            if r.i >= r.hi or kinds[r.i] != "id":
                raise r.error(f"expected an acceptance name (identifier) after 'acc-name:', found {r.found()}")
            acc_name = texts[r.i]
            r.i += 1
            params: list[str | int] = []
            while r.i < r.hi and kinds[r.i] in ("id", "bool", "int"):
                params.append(int(texts[r.i]) if kinds[r.i] == "int" else texts[r.i])
                r.i += 1
            fields["acc_name"] = (acc_name, tuple(params))
        elif name == "tool":
            tool = [_string(r, "the tool name (a string) after 'tool:'")]
            if r.i < r.hi and kinds[r.i] == "str":
                tool.append(_string(r, "the tool version"))
            fields["tool"] = tuple(tool)
        elif name == "name":
            fields["name"] = _string(r, "the automaton name (a string) after 'name:'")
        elif name == "properties":
            while r.i < r.hi:
                k = kinds[r.i]
                if k == "id":
                    properties.append(texts[r.i])
                    spans.properties.append(r.i)
                    r.i += 1
                elif k == "sym" and texts[r.i] == "!" and r.i + 1 < r.hi and kinds[r.i + 1] == "id":
                    # Spot's negated properties ("!complete"), kept with their "!" so they can be checked.
                    properties.append("!" + texts[r.i + 1])
                    spans.properties.append(r.i)
                    r.i += 2
                else:
                    break
        elif name == "controllable-AP":
            ctrl = []
            while r.i < r.hi and kinds[r.i] == "int":
                ctrl.append(int(texts[r.i]))
                spans.controllable.append(r.i)
                r.i += 1
            fields["controllable_ap"] = tuple(ctrl)
        else:
            vals = []
            while r.i < r.hi and kinds[r.i] in ("id", "bool", "int", "str"):
                vals.append(texts[r.i])
                r.i += 1
            unknown.append((name, tuple(vals)))
    if "Acceptance" not in spans.headers:
        raise r.toks.error_at("missing 'Acceptance:' header (mandatory in HOA v1)", spans.begin)
    r.i += 1
    states = _body(r, spans)
    if r.hi >= len(kinds):
        raise r.error("missing --END-- at the end of the automaton")
    aut = Automaton(
        start=tuple(start),
        aliases=tuple(aliases),
        properties=tuple(properties),
        headers=tuple(unknown),
        states=states,
        **fields,  # type: ignore[arg-type]
    )
    return aut, spans


def _string(r: _Reader, what: str) -> str:
    if r.i < r.hi and r.kinds[r.i] == "str":
        r.i += 1
        return decode_string(r.texts[r.i - 1])
    raise r.error(f"expected {what}, found {r.found()}")


def _state_conj(r: _Reader, what: str) -> tuple[tuple[int, ...], list[int]]:
    offs = [r.i] if r.i < r.hi else []
    conj = [r.expect_int(what)]
    while r.i < r.hi and r.texts[r.i] == "&" and r.kinds[r.i] == "sym":
        r.i += 1
        offs.append(r.i if r.i < r.hi else 0)
        conj.append(r.expect_int("a state number after '&'"))
    return tuple(conj), offs


# ---------------------------------------------------------------------------------------------------------------
# Label expressions: ! binds tighter than &, which binds tighter than |. Nested operators of the same kind are
# flattened ("(0 & 1) & 2" is And(0, 1, 2)) so that writing and reading again gives the same value.


def _label_expr(r: _Reader, atoms: list[Atom]) -> Expr:
    args = [_label_conj(r, atoms)]
    while r.i < r.hi and r.texts[r.i] == "|":
        r.i += 1
        args.append(_label_conj(r, atoms))
    if len(args) == 1:
        return args[0]
    return Or(tuple(_flatten(args, Or)))


def _label_conj(r: _Reader, atoms: list[Atom]) -> Expr:
    kinds, texts, hi = r.kinds, r.texts, r.hi
    args: list[Expr] = []
    while True:
        i = r.i
        # Fast paths for the common literals "n" and "!n"; anything else goes through _label_atom.
        if i < hi and kinds[i] == "int":
            ap, var, _ = r.literal(texts[i])
            atoms.append((ap, i))
            args.append(var)
            r.i = i + 1
        elif i + 1 < hi and texts[i] == "!" and kinds[i + 1] == "int":
            ap, _, neg = r.literal(texts[i + 1])
            atoms.append((ap, i + 1))
            args.append(neg)
            r.i = i + 2
        else:
            args.append(_label_atom(r, atoms))
        if r.i < hi and texts[r.i] == "&":
            r.i += 1
            continue
        break
    if len(args) == 1:
        return args[0]
    return And(tuple(_flatten(args, And)))


def _flatten(args: list[_E], op: type) -> list[_E]:
    out: list[_E] = []
    for a in args:
        if type(a) is op:
            out.extend(a.args)  # type: ignore[union-attr]
        else:
            out.append(a)
    return out


def _label_atom(r: _Reader, atoms: list[Atom]) -> Expr:
    i = r.i
    if i >= r.hi:
        raise r.error("unexpected end of the automaton in a label expression")
    kind, text = r.kinds[i], r.texts[i]
    r.i = i + 1
    if kind == "int":
        ap, var, _ = r.literal(text)
        atoms.append((ap, i))
        return var
    if kind == "sym":
        if text == "!":
            r.nest(i)
            arg = _label_atom(r, atoms)
            r.depth -= 1
            return Not(arg)
        if text == "(":
            r.nest(i)
            inner = _label_expr(r, atoms)
            r.depth -= 1
            if r.i >= r.hi or r.texts[r.i] != ")" or r.kinds[r.i] != "sym":
                raise r.error(f"expected ')' to close the '(' of line {r.toks.linecol(i)[0]}, "
                              f"found {r.found()}")
            r.i += 1
            return inner
    elif kind == "bool":
        return Const(text == "t")
    elif kind == "aname":
        atoms.append((text[1:], i))
        return AliasRef(text[1:])
    r.i = i
    raise r.error(f"expected a label expression (an AP number, t, f, @alias, '!' or '('), found {r.found()}")


# ---------------------------------------------------------------------------------------------------------------
# Acceptance conditions: & binds tighter than |.


def _acc_cond(r: _Reader, atoms: list[tuple[int, int]]) -> AccExpr:
    return _acc_join(r, atoms, "|", AccOr, _acc_conj)


def _acc_conj(r: _Reader, atoms: list[tuple[int, int]]) -> AccExpr:
    return _acc_join(r, atoms, "&", AccAnd, _acc_atom)


def _acc_join(r: _Reader, atoms: list[tuple[int, int]], sym: str, op: type[AccAnd] | type[AccOr],
              operand: Callable[[_Reader, list[tuple[int, int]]], AccExpr]) -> AccExpr:
    """``operand (sym operand)*`` as one ``op`` node, nested nodes of the same operator flattened into it."""
    args = [operand(r, atoms)]
    while r.i < r.hi and r.texts[r.i] == sym and r.kinds[r.i] == "sym":
        r.i += 1
        args.append(operand(r, atoms))
    if len(args) == 1:
        return args[0]
    return op(tuple(_flatten(args, op)))


def _acc_atom(r: _Reader, atoms: list[tuple[int, int]]) -> AccExpr:
    i = r.i
    if i >= r.hi:
        raise r.error("unexpected end of the automaton in the acceptance condition")
    kind, text = r.kinds[i], r.texts[i]
    if kind == "bool":
        r.i += 1
        return AccConst(text == "t")
    if kind == "sym" and text == "(":
        r.nest(i)
        r.i += 1
        inner = _acc_cond(r, atoms)
        r.depth -= 1
        if r.i >= r.hi or r.texts[r.i] != ")" or r.kinds[r.i] != "sym":
            raise r.error(f"expected ')' in the acceptance condition, found {r.found()}")
        r.i += 1
        return inner
    if kind == "id":
        if text not in ("Inf", "Fin"):
            raise r.error(f"unknown acceptance primitive {quote(text)}, expected Fin or Inf")
        r.i += 1
        if r.i >= r.hi or r.texts[r.i] != "(" or r.kinds[r.i] != "sym":
            raise r.error(f"expected '(' after {text}, found {r.found()}")
        r.i += 1
        negated = r.i < r.hi and r.texts[r.i] == "!" and r.kinds[r.i] == "sym"
        if negated:
            r.i += 1
        pos = r.i
        index = r.expect_int(f"an acceptance set number in {text}(...)")
        atoms.append((index, pos))
        if r.i >= r.hi or r.texts[r.i] != ")" or r.kinds[r.i] != "sym":
            raise r.error(f"expected ')' after {text}({'!' if negated else ''}{index}, found {r.found()}")
        r.i += 1
        return AccSet(text, index, negated)
    raise r.error(f"expected an acceptance condition (Inf(n), Fin(n), t, f or '('), found {r.found()}")


# ---------------------------------------------------------------------------------------------------------------
# Body: (State: label? INT STRING? acc-sig? edge*)*, edge = label? state-conj acc-sig?


def _acc_sig(r: _Reader) -> tuple[int, ...]:
    r.i += 1  # the "{"
    kinds, texts, hi = r.kinds, r.texts, r.hi
    sets = []
    while r.i < hi and kinds[r.i] == "int":
        sets.append(int(texts[r.i]))
        r.i += 1
    if r.i >= hi or texts[r.i] != "}":
        raise r.error(f"expected an acceptance set number or '}}' in an acceptance signature, found {r.found()}")
    r.i += 1
    return tuple(sets)


def _bracket_label(r: _Reader, cache: dict[tuple[str, ...], Expr]) -> Expr:
    """The label ``[ ... ]`` at token ``r.i``; leaves ``r.i`` after the ``]``.

    Labels repeat a lot, so each distinct token sequence is parsed once and its (immutable) value shared.
    """
    i, texts = r.i, r.texts
    try:
        j = texts.index("]", i + 1, r.hi)
    except ValueError:
        j = -1
    if j > 0:
        key = tuple(texts[i + 1 : j])
        label = cache.get(key)
        if label is not None:
            r.i = j + 1
            return label
    r.i = i + 1
    atoms: list[Atom] = []
    label = _label_expr(r, atoms)
    # Summarise what body labels use, so the validator checks AP and alias ranges once, not per label.
    for atom, _ in atoms:
        if isinstance(atom, str):
            r.label_aliases.add(atom)
        elif atom > r.label_max_ap:
            r.label_max_ap = atom
    if r.i >= r.hi or texts[r.i] != "]":
        raise r.error(f"expected ']' to close the label, found {r.found()}")
    if r.i == j:
        cache[key] = label
    r.i += 1
    return label


def _body(r: _Reader, spans: Spans) -> tuple[State, ...]:
    kinds, texts, hi = r.kinds, r.texts, r.hi
    labels: dict[tuple[str, ...], Expr] = {}
    accs: dict[str, tuple[int, ...]] = {}  # "{n}" signatures, shared
    states: list[State] = []
    while r.i < hi:
        if kinds[r.i] != "hdr" or texts[r.i] != "State:":
            raise r.error(f"expected 'State:' or --END--, found {r.found()}")
        spans.states.append(r.i)
        r.i += 1
        label = None
        if r.i < hi and texts[r.i] == "[":
            spans.state_label.append(r.i)
            label = _bracket_label(r, labels)
        else:
            spans.state_label.append(None)
        spans.state_index.append(r.i)
        index = r.expect_int("a state number after 'State:'")
        name = None
        if r.i < hi and kinds[r.i] == "str":
            name = decode_string(texts[r.i])
            r.i += 1
        acc = None
        if r.i < hi and texts[r.i] == "{":
            spans.state_acc.append(r.i)
            acc = _acc_sig(r)
        else:
            spans.state_acc.append(None)
        edges: list[Edge] = []
        edge_pos: list[int] = []
        i = r.i
        while i < hi:
            edge_pos.append(i)
            elabel = None
            if texts[i] == "[":
                r.i = i
                elabel = _bracket_label(r, labels)
                i = r.i
            elif kinds[i] != "int":
                edge_pos.pop()
                break
            if i >= hi or kinds[i] != "int":
                r.i = i
                raise r.error(f"expected a destination state number, found {r.found()}")
            dest = int(texts[i])
            i += 1
            if i < hi and texts[i] == "&":
                conj = [dest]
                if spans.univ_first is None:
                    spans.univ_first = i - 1
                while i < hi and texts[i] == "&":
                    r.i = i + 1
                    conj.append(r.expect_int("a state number after '&'"))
                    i = r.i
                dests = tuple(conj)
            else:
                dests = (dest,)
            eacc = None
            if i < hi and texts[i] == "{":
                if spans.edge_acc_first is None:
                    spans.edge_acc_first = i
                if i + 2 < hi and texts[i + 2] == "}" and kinds[i + 1] == "int":
                    eacc = accs.get(texts[i + 1])
                    if eacc is None:
                        eacc = accs[texts[i + 1]] = (int(texts[i + 1]),)
                    i += 3
                else:
                    r.i = i
                    eacc = _acc_sig(r)
                    i = r.i
            edges.append(Edge(dests, elabel, eacc))
        r.i = i
        spans.edges.append(edge_pos)
        states.append(State(index, name, label, acc, tuple(edges)))
    spans.label_max_ap = r.label_max_ap
    spans.label_aliases = frozenset(r.label_aliases)
    return tuple(states)


__all__ = [
    "MAX_DEPTH",
    "REPEATABLE",
    "SUPPORTED_VERSIONS",
    "Spans",
    "iter_parse",
    "iter_parse_raw",
    "parse",
    "parse_file",
]
