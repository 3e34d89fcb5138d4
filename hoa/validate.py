"""HOA v1 semantic checks: the rules a syntactically correct automaton can still break, located at line:col.

Each check raises Gf01Error at the offending token (token indices come from the parser's :class:`hoa.spans.Spans`):
AP count and names, aliases (used before definition, redefined, undefined), AP, acceptance set and state numbers in
range, implicit-label edge counts, state labels mixed with edge labels, labelled and unlabelled edges in one state,
``controllable-AP`` indices, duplicate ``State:`` items, and ``properties:`` that contradict each other or the
automaton (labels, acceptance style, branching, determinism, completeness, weakness).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hoa.errors import Gf01Error
from hoa.label import AliasRef, And, Const, Expr, Not, Or, Var, aliases_used, variables
from hoa.lexer import Tokens
from hoa.model import Automaton, State
from hoa.spans import Spans

#: Deepest nesting of an alias definition once its aliases are expanded: like the parser's MAX_DEPTH, it keeps every
#: recursive walk over resolved labels (validator, Mealy view) far below Python's recursion limit.
MAX_ALIAS_DEPTH = 200

#: ``p -> q`` for properties with specified meaning: declaring p and !q is a contradiction.
IMPLIES: dict[str, tuple[str, ...]] = {
    "very-weak": ("weak", "inherently-weak"),
    "weak": ("inherently-weak",),
    "terminal": ("weak", "inherently-weak"),
    "deterministic": ("unambiguous", "semi-deterministic"),
    "implicit-labels": ("trans-labels",),
}
#: Properties that cannot both hold.
INCOMPATIBLE: tuple[tuple[str, str], ...] = (
    ("state-labels", "trans-labels"),
    ("state-labels", "implicit-labels"),
    ("implicit-labels", "explicit-labels"),
    ("univ-branch", "no-univ-branch"),
    ("stutter-invariant", "stutter-sensitive"),
)


def validate(aut: Automaton, spans: Spans, toks: Tokens) -> None:
    """Raise Gf01Error (file, line, col, rule) if ``aut`` breaks a rule of HOA v1.

    ``spans`` (from the parser) locates the automaton's items among ``toks`` for the messages.
    """
    _check_header(aut, spans, toks)
    _check_body(aut, spans, toks)
    if aut.properties:
        _check_properties(aut, spans, toks)


def _where(toks: Tokens, pos: int) -> str:
    line, col = toks.linecol(pos)
    return f"{line}:{col}"


def _check_header(aut: Automaton, spans: Spans, toks: Tokens) -> None:
    n_aps = len(aut.aps)
    seen: dict[str, int] = {}
    for j, ap in enumerate(aut.aps):
        if ap in seen:
            raise toks.error_at(
                f"duplicate AP name {ap!r}: AP {j} repeats AP {seen[ap]} (AP names must be distinct)",
                spans.ap_names[j],
            )
        seen[ap] = j
    defined: set[str] = set()
    depth: dict[str, int] = {}
    all_aliases = {name for name, _ in aut.aliases}
    for k, (name, _expr) in enumerate(aut.aliases):
        for atom, pos in spans.alias_atoms[k]:
            if isinstance(atom, str):
                if atom not in defined:
                    why = "used before its definition" if atom in all_aliases else "is not defined"
                    raise toks.error_at(f"alias @{atom} {why} (in the definition of @{name})", pos)
            elif atom >= n_aps:
                raise toks.error_at(_ap_range(atom, n_aps, f"the definition of @{name}"), pos)
        if name in defined:
            raise toks.error_at(f"alias @{name} redefined (an alias may be defined only once)", spans.alias_names[k])
        defined.add(name)
        depth[name] = _depth(_expr, depth)
        if depth[name] > MAX_ALIAS_DEPTH:
            raise toks.error_at(f"alias @{name} nests {depth[name]} levels deep once its aliases are expanded "
                                f"(at most {MAX_ALIAS_DEPTH})", spans.alias_names[k])
    for index, pos in spans.acc_atoms:
        if index >= aut.acc_sets:
            raise toks.error_at(_acc_range(index, aut.acc_sets, "the acceptance condition"), pos)
    for j, ap in enumerate(aut.controllable_ap or ()):
        if ap >= n_aps:
            raise toks.error_at(_ap_range(ap, n_aps, "controllable-AP"), spans.controllable[j])
    if aut.states_declared is not None:
        for conj, offs in zip(aut.start, spans.start_states, strict=True):
            for q, pos in zip(conj, offs, strict=True):
                if q >= aut.states_declared:
                    raise toks.error_at(_state_range(q, aut.states_declared, "initial state"), pos)


def _depth(expr: Expr, alias_depth: dict[str, int]) -> int:
    """The nesting depth of ``expr`` with its aliases expanded (their depths given)."""
    if isinstance(expr, AliasRef):
        return alias_depth[expr.name]
    if isinstance(expr, Not):
        return 1 + _depth(expr.arg, alias_depth)
    if isinstance(expr, And | Or):
        return 1 + max(_depth(a, alias_depth) for a in expr.args)
    return 1


def _ap_range(ap: int, n_aps: int, where: str) -> str:
    have = "no APs" if n_aps == 0 else f"APs 0..{n_aps - 1}"
    return f"AP index {ap} out of range in {where}: the automaton declares {have} (AP: {n_aps})"


def _acc_range(index: int, sets: int, where: str) -> str:
    have = "no acceptance sets" if sets == 0 else f"acceptance sets 0..{sets - 1}"
    return f"acceptance set {index} out of range in {where}: 'Acceptance: {sets}' declares {have}"


def _state_range(q: int, declared: int, what: str) -> str:
    return f"undefined state: {what} {q} is out of range, 'States: {declared}' declares states 0..{declared - 1}"


def _check_body(aut: Automaton, spans: Spans, toks: Tokens) -> None:
    n_aps = len(aut.aps)
    aliases = {name for name, _ in aut.aliases}
    declared = aut.states_declared
    sets = aut.acc_sets
    texts = toks.texts
    # The parser summarised the body labels: when the summary is in range, no label needs a look.
    labels_in_range = spans.label_max_ap < n_aps and spans.label_aliases <= aliases
    # Otherwise labels are checked one by one; they are shared objects, so each distinct one once.
    memo: dict[int, bool] = {}

    def label_ok(expr: Expr) -> bool:
        if labels_in_range:
            return True
        ok = memo.get(id(expr))
        if ok is None:
            ok = memo[id(expr)] = all(v < n_aps for v in variables(expr)) and aliases_used(expr) <= aliases
        return ok

    def label_error(at: int, where: str) -> Gf01Error:
        """The error for the first bad AP number or alias in the label starting at token ``at`` (its '[')."""
        i = at + 1
        while texts[i] != "]":
            t = texts[i]
            if t[0] == "@" and t[1:] not in aliases:
                return toks.error_at(f"alias {t} is not defined (no 'Alias: {t}' header)", i)
            if t.isdigit() and int(t) >= n_aps:
                return toks.error_at(_ap_range(int(t), n_aps, where), i)
            i += 1
        return toks.error_at(f"bad label in {where}", at)  # unreachable for labels the parser produced

    def acc_error(at: int, where: str) -> Gf01Error:
        """The error for the first out-of-range set in the acceptance signature at or after token ``at``."""
        i = texts.index("{", at)
        while texts[i] != "}":
            if texts[i].isdigit() and int(texts[i]) >= sets:
                return toks.error_at(_acc_range(int(texts[i]), sets, where), i)
            i += 1
        return toks.error_at(f"bad acceptance signature in {where}", at)

    defined: dict[int, int] = {}
    for k, st in enumerate(aut.states):
        if declared is not None and st.index >= declared:
            raise toks.error_at(_state_range(st.index, declared, "state"), spans.state_index[k])
        if st.index in defined:
            first = _where(toks, spans.states[defined[st.index]])
            raise toks.error_at(f"state {st.index} defined twice (first 'State: {st.index}' at {first})",
                                spans.state_index[k])
        defined[st.index] = k
        if st.label is not None and not label_ok(st.label):
            raise label_error(spans.state_label[k] or 0, f"the label of state {st.index}")
        if st.acc and max(st.acc) >= sets:
            raise acc_error(spans.state_acc[k] or 0, f"the acceptance signature of state {st.index}")
        edge_pos = spans.edges[k]
        for j, e in enumerate(st.edges):
            if e.label is not None and not label_ok(e.label):
                raise label_error(edge_pos[j], f"an edge label of state {st.index}")
            if declared is not None and max(e.dests) >= declared:
                i = edge_pos[j]
                if texts[i] == "[":
                    i = texts.index("]", i) + 1
                while not (texts[i].isdigit() and int(texts[i]) >= declared):
                    i += 1
                raise toks.error_at(_state_range(int(texts[i]), declared, "destination state"), i)
            if e.acc and max(e.acc) >= sets:
                raise acc_error(edge_pos[j], f"an edge's acceptance signature (state {st.index})")
        if st.edges:
            _check_labelling(st, edge_pos, n_aps, spans.states[k], toks)


def _check_labelling(st: State, edge_pos: list[int], n_aps: int, state_at: int, toks: Tokens) -> None:
    """State labels exclude edge labels; edges of a state are all labelled or all implicit (2^|AP| of them)."""
    labelled = [e.label is not None for e in st.edges]
    if st.label is not None:
        if any(labelled):
            j = labelled.index(True)
            raise toks.error_at(
                f"edge label in state {st.index}, which has a state label (a labelled state's edges are "
                "unlabelled)", edge_pos[j])
        return
    if labelled[0]:
        if not all(labelled):
            j = labelled.index(False)
            raise toks.error_at(
                f"unlabelled edge in state {st.index} after labelled ones (if one edge of a state has a label, "
                "all must)", edge_pos[j])
    elif any(labelled):
        j = labelled.index(True)
        raise toks.error_at(
            f"labelled edge in state {st.index} after unlabelled ones (implicit and explicit labels cannot be "
            "mixed in a state)", edge_pos[j])
    elif n_aps >= 64 or len(st.edges) != 1 << n_aps:
        raise toks.error_at(
            f"state {st.index} has {len(st.edges)} implicitly labelled edge(s), but implicit labels need exactly "
            f"2^{n_aps} edges (one per valuation of the {n_aps} AP(s))", state_at)


# ---------------------------------------------------------------------------------------------------------------
# properties:


def _check_properties(aut: Automaton, spans: Spans, toks: Tokens) -> None:
    declared: dict[str, tuple[bool, int]] = {}
    for prop, pos in zip(aut.properties, spans.properties, strict=True):
        value, name = (False, prop[1:]) if prop.startswith("!") else (True, prop)
        if name == "no-univ-branch":
            value, name = not value, "univ-branch"
        previous = declared.get(name)
        if previous is not None and previous[0] != value:
            raise toks.error_at(
                f"'properties: {prop}' contradicts '{'' if previous[0] else '!'}{name}' given at "
                f"{_where(toks, previous[1])}", pos)
        declared.setdefault(name, (value, pos))
    for p, qs in IMPLIES.items():
        if declared.get(p, (False, 0))[0]:
            for q in qs:
                if q in declared and not declared[q][0]:
                    raise toks.error_at(f"'properties: {p}' contradicts '!{q}' ({p} implies {q})", declared[p][1])
    for p, q in INCOMPATIBLE:
        if declared.get(p, (False, 0))[0] and declared.get(q, (False, 0))[0]:
            pp, qp = declared[p][1], declared[q][1]
            raise toks.error_at(f"'properties: {p}' is incompatible with '{q}'", max(pp, qp))

    def claim(name: str) -> bool | None:
        return declared[name][0] if name in declared else None

    def fail(name: str, message: str, pos: int | None = None) -> None:
        value, ppos = declared[name]
        shown = name if value else "!" + name
        where = f" at {_where(toks, pos)}" if pos is not None else ""
        raise toks.error_at(f"'properties: {shown}' is contradicted by the automaton: {message}{where}", ppos)

    implicit = [k for k, st in enumerate(aut.states) if st.edges and st.label is None and st.edges[0].label is None]
    state_labelled = [k for k, st in enumerate(aut.states) if st.label is not None]
    edge_labelled = [k for k, st in enumerate(aut.states) if st.edges and st.edges[0].label is not None]
    # Spot writes "state-labels explicit-labels" and labels some edges of state-labelled automata (valid corpus
    # files do both), so state-labels only excludes implicit edge labels and explicit-labels only excludes implicit
    # ones; trans-labels and implicit-labels exclude state labels.
    if claim("state-labels"):
        for k in implicit[:1]:
            fail("state-labels", f"state {aut.states[k].index} has implicit edge labels", spans.edges[k][0])
    if claim("trans-labels") or claim("implicit-labels"):
        name = "trans-labels" if claim("trans-labels") else "implicit-labels"
        for k in state_labelled[:1]:
            fail(name, f"state {aut.states[k].index} has a state label", spans.state_label[k])
    if claim("implicit-labels"):
        for k in edge_labelled[:1]:
            fail("implicit-labels", f"state {aut.states[k].index} has explicit edge labels", spans.edges[k][0])
    if claim("explicit-labels"):
        for k in implicit[:1]:
            fail("explicit-labels", f"state {aut.states[k].index} has implicit edge labels", spans.states[k])
    if claim("state-acc") and spans.edge_acc_first is not None:
        fail("state-acc", "an edge has an acceptance signature", spans.edge_acc_first)
    if claim("trans-acc"):
        for k, pos in enumerate(spans.state_acc):
            if pos is not None and aut.states[k].acc is not None:
                fail("trans-acc", f"state {aut.states[k].index} has an acceptance signature", pos)
    univ = claim("univ-branch")
    if univ is True and spans.univ_first is None:
        fail("univ-branch", "no initial state or edge is a conjunction of states")
    if univ is False and spans.univ_first is not None:
        fail("univ-branch", "universal branching (a conjunction of states)", spans.univ_first)
    for name, deterministic in (("deterministic", True), ("exist-branch", False)):
        c = claim(name)
        if c is None:
            continue
        witness = _nondeterminism(aut, spans, declared[name][1], toks)
        if c == deterministic and witness is not None:
            fail(name, f"the automaton is not deterministic: {witness[0]}", witness[1])
        if c != deterministic and witness is None:
            fail(name, "the automaton is deterministic (at most one Start: and disjoint edge labels in every state)")
    c = claim("complete")
    if c is not None:
        witness = _incompleteness(aut, spans, declared["complete"][1], toks)
        if c and witness is not None:
            fail("complete", f"the automaton is not complete: {witness[0]}", witness[1])
        if not c and witness is None:
            fail("complete", "the automaton is complete (every state has an edge for every valuation)")
    if _trivially_weak(aut):
        # All transitions carry the same acceptance marks, so every SCC is uniform: the automaton is weak.
        for name in ("weak", "inherently-weak"):
            if claim(name) is False:
                fail(name, "every transition belongs to the same acceptance sets, so the automaton is weak")
        if claim("very-weak") is False and aut.num_states <= 1:
            fail("very-weak", "an automaton with at most one state and uniform acceptance marks is very weak")


#: Most memory (bytes) the ``complete`` / ``deterministic`` checks may give CUDD. Labels of real automata need a
#: few MB at most, 10,000 APs about 90 MB; a label whose BDD is exponential in its size (an interleaved disjunction
#: of pairs, say) is refused with the property named instead of exhausting time and memory.
MAX_LABEL_BDD_BYTES = 128 << 20
#: The same bound in nodes, for dd.autoref (the pure-Python fallback, which has no memory limit of its own).
MAX_LABEL_BDD_NODES = 1 << 20


class _LabelBdds:
    """Labels as BDDs over the APs (dd.cudd, or dd.autoref where CUDD is missing), for determinism and completeness
    when the labels use more than :data:`MAX_TABLE_APS` APs (:class:`_LabelTables` otherwise).

    A BDD answers "do two labels overlap" and "do the labels cover every valuation" in time polynomial in the BDD
    size, where truth tables or case splits grow as 2^|AP|. Only the APs the labels use are declared (in order of
    first use), and the operands of a conjunction or disjunction are combined bottom-up (deepest top variable
    first), so that a long conjunction of literals costs linear time, not quadratic (a 10,000-literal label took
    29 s). Every operation runs under :meth:`bounded`; ``property_at`` is the token of the property being checked,
    which a refusal names.
    """

    def __init__(self, aut: Automaton, property_at: int, toks: Tokens) -> None:
        try:
            from dd.cudd import BDD
        except ImportError:  # pragma: no cover - the dd wheel ships CUDD; the pure-Python backend is the fallback
            from dd.autoref import BDD
        # Label BDDs are small: a small initial CUDD cache makes the manager cheap to create (about 30 us instead of
        # 10 ms), which matters for streams of many small automata; CUDD grows its tables when it needs to, up to
        # max_memory, past which an operation fails (dd raises ValueError).
        try:
            self.bdd = BDD(memory_estimate=1 << 22, initial_cache_size=1 << 10)
            self.bdd.configure(reordering=False, max_memory=MAX_LABEL_BDD_BYTES)
            self.counted = False
        except TypeError:  # pragma: no cover - dd.autoref takes no sizes: count its nodes instead
            self.bdd = BDD()
            self.bdd.configure(reordering=False)
            self.counted = True
        self.aliases = aut.alias_map()
        self.memo: dict[int, tuple[Expr, Any]] = {}  # id(expr) -> (expr kept alive, BDD)
        self.variables: dict[int, Any] = {}  # AP index -> its BDD variable, declared on first use
        self.property_at, self.toks = property_at, toks

    @contextmanager
    def bounded(self) -> Iterator[None]:
        """Run BDD operations, refusing the property (Gf01Error at its token) when they outgrow the limits."""
        try:
            yield
        except (ValueError, RuntimeError):  # dd.cudd: an operation or a declaration failed at CUDD's max_memory
            raise self._refusal() from None
        if self.counted and len(self.bdd) > MAX_LABEL_BDD_NODES:  # pragma: no cover - dd.autoref only
            raise self._refusal()

    def _refusal(self) -> Gf01Error:
        prop = self.toks.texts[self.property_at]
        return self.toks.error_at(
            f"'properties: {prop}' cannot be checked: the edge labels' BDDs need more than "
            f"{MAX_LABEL_BDD_BYTES >> 20} MiB (remove the property, or simplify the labels)", self.property_at)

    @property
    def none(self) -> Any:
        """The empty set of valuations."""
        return self.bdd.false

    def empty(self, u: Any) -> bool:
        return u == self.bdd.false

    def full(self, u: Any) -> bool:
        return u == self.bdd.true

    def _var(self, index: int) -> Any:
        u = self.variables.get(index)
        if u is None:
            self.bdd.declare(f"p{index}")
            u = self.variables[index] = self.bdd.var(f"p{index}")
        return u

    def of(self, expr: Expr) -> Any:
        """The BDD of ``expr`` (aliases expanded on the way)."""
        hit = self.memo.get(id(expr))
        if hit is not None:
            return hit[1]
        bdd = self.bdd
        if isinstance(expr, Var):
            u = self._var(expr.index)
        elif isinstance(expr, Const):
            u = bdd.true if expr.value else bdd.false
        elif isinstance(expr, AliasRef):
            u = self.of(self.aliases[expr.name])
        elif isinstance(expr, Not):
            u = ~self.of(expr.arg)
        else:
            conjunction = isinstance(expr, And)
            u = bdd.true if conjunction else bdd.false
            for v in sorted((self.of(a) for a in expr.args), key=lambda v: -v.level):
                u = (u & v) if conjunction else (u | v)
        self.memo[id(expr)] = (expr, u)
        return u

    def edge_labels(self, st: State) -> list[Any]:
        """The BDD of each edge of ``st`` as a transition sees it (the state's label or the edge's own)."""
        return [self.of(st.label if st.label is not None else e.label) for e in st.edges]  # type: ignore[arg-type]


#: Labels over at most this many APs are checked by truth tables (numpy) rather than BDDs: importing dd (and the
#: networkx it imports) cost a third of a small query on a controller that says ``deterministic``.
MAX_TABLE_APS = 10


class _LabelTables:
    """Labels as truth tables over the few APs the automaton's labels use: the interface of :class:`_LabelBdds`."""

    def __init__(self, aut: Automaton, used: list[int]) -> None:
        import numpy as np

        rows = np.arange(1 << len(used), dtype=np.int64)
        self.bits = {ap: ((rows >> j) & 1).astype(bool) for j, ap in enumerate(used)}
        self.none = np.zeros(rows.shape, dtype=bool)
        self.aliases = aut.alias_map()
        self.memo: dict[int, tuple[Expr, Any]] = {}  # id(expr) -> (expr kept alive, table)

    def of(self, expr: Expr) -> Any:
        """The truth table of ``expr`` (aliases expanded on the way, each once)."""
        hit = self.memo.get(id(expr))
        if hit is not None:
            return hit[1]
        if isinstance(expr, Var):
            u = self.bits[expr.index]
        elif isinstance(expr, Const):
            u = ~self.none if expr.value else self.none
        elif isinstance(expr, AliasRef):
            u = self.of(self.aliases[expr.name])
        elif isinstance(expr, Not):
            u = ~self.of(expr.arg)
        else:
            u = self.none if isinstance(expr, Or) else ~self.none
            for a in expr.args:
                u = (u | self.of(a)) if isinstance(expr, Or) else (u & self.of(a))
        self.memo[id(expr)] = (expr, u)
        return u

    def empty(self, u: Any) -> bool:
        return not u.any()

    def full(self, u: Any) -> bool:
        return bool(u.all())

    def edge_labels(self, st: State) -> list[Any]:
        return [self.of(st.label if st.label is not None else e.label) for e in st.edges]  # type: ignore[arg-type]

    @contextmanager
    def bounded(self) -> Iterator[None]:
        yield  # 2^MAX_TABLE_APS rows: nothing to bound


def _label_sets(aut: Automaton, property_at: int, toks: Tokens) -> _LabelTables | _LabelBdds:
    """Truth tables when the labels use few APs, BDDs otherwise."""
    aliases = aut.alias_map()
    used: set[int] = set()
    seen: set[int] = set()  # ids of the expressions walked: a shared label or an alias is walked once
    stack = [lab for st in aut.states for lab in (st.label, *(e.label for e in st.edges)) if lab is not None]
    while stack and len(used) <= MAX_TABLE_APS:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Var):
            used.add(e.index)
        elif isinstance(e, AliasRef):
            stack.append(aliases[e.name])
        elif isinstance(e, Not):
            stack.append(e.arg)
        elif isinstance(e, And | Or):
            stack.extend(e.args)
    if len(used) <= MAX_TABLE_APS:
        return _LabelTables(aut, sorted(used))
    return _LabelBdds(aut, property_at, toks)


def _implicit(st: State) -> bool:
    return bool(st.edges) and st.label is None and st.edges[0].label is None


def _nondeterminism(aut: Automaton, spans: Spans, property_at: int, toks: Tokens) -> tuple[str, int | None] | None:
    """A reason and a token why ``aut`` is not deterministic, or None if it is."""
    if len(aut.start) > 1:
        return f"{len(aut.start)} Start: headers", spans.headers["Start"][1]
    sets: _LabelTables | _LabelBdds | None = None
    for k, st in enumerate(aut.states):
        if len(st.edges) < 2 or _implicit(st):
            continue  # implicit labels are pairwise disjoint
        sets = sets or _label_sets(aut, property_at, toks)
        with sets.bounded():
            seen = sets.none
            for j, u in enumerate(sets.edge_labels(st)):
                if not sets.empty(seen & u):
                    return f"edge {j} of state {st.index} overlaps an earlier edge", spans.edges[k][j]
                seen = seen | u
    return None


def _incompleteness(aut: Automaton, spans: Spans, property_at: int, toks: Tokens) -> tuple[str, int | None] | None:
    """A reason and a token why ``aut`` is not complete, or None if it is."""
    if aut.num_states == 0:
        return "it has no state", None
    if not aut.start:
        return "it has no initial state", None
    defined = {st.index for st in aut.states}
    for q in range(aut.num_states):  # stops at the first gap, so at most len(defined) + 1 steps
        if q not in defined:
            return f"state {q} is not defined (it has no edges)", None
    sets: _LabelTables | _LabelBdds | None = None
    for k, st in enumerate(aut.states):
        if _implicit(st):
            continue  # implicit labels cover every valuation
        if not st.edges:
            return f"state {st.index} has no edges", spans.states[k]
        sets = sets or _label_sets(aut, property_at, toks)
        with sets.bounded():
            covered = sets.none
            for u in sets.edge_labels(st):
                covered = covered | u
        if not sets.full(covered):
            return f"some valuation has no edge in state {st.index}", spans.states[k]
    return None


def _trivially_weak(aut: Automaton) -> bool:
    marks = {frozenset((st.acc or ()) + (e.acc or ())) for st in aut.states for e in st.edges}
    return len(marks) <= 1


__all__ = ["IMPLIES", "INCOMPATIBLE", "MAX_ALIAS_DEPTH", "MAX_LABEL_BDD_BYTES", "MAX_TABLE_APS", "validate"]
