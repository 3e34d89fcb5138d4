"""The Mealy view of an HOA controller (docs/semantics.md): inputs, outputs, ``step(q, x) -> (q', y)``, tables.

Signals are numbered inputs first (``0 .. n_in-1``), then outputs (``n_in .. n_in+n_out-1``); every guard is an
alias-free :mod:`hoa.label` expression over signals. Input valuations ``x`` and output valuations ``y`` are integers
with bit ``i`` holding input (output) ``i``.

Step semantics: in state ``q`` under ``x`` take the first edge of ``q`` (file order) whose guard is satisfiable
together with ``x``; the outputs are the least satisfying output valuation, comparing outputs by index, 0 before 1
(an unconstrained output is 0); the destination is the next state.

>>> view = MealyView.from_table(("a",), ("o",), next_table=[[0, 0]], out_table=[[0, 1]])
>>> view.step(0, 1)
(0, 1)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from hoa.errors import Gf01Error, quote
from hoa.label import (
    And,
    Const,
    Expr,
    Not,
    Or,
    conjunction_of_literals,
    evaluate_array,
    least_model,
    rename,
    resolve,
    restrict,
    variables,
)
from hoa.model import Automaton, Edge, State

#: Largest state count a Mealy view accepts (a ``States:`` header can declare billions of states that are never listed).
MAX_STATES = 1 << 22
#: Largest input count for which dense ``next[q, x]`` / ``out[q, x]`` tables are compiled.
MAX_TABLE_INPUTS = 20
#: Largest table (states x 2^inputs cells) compiled: 4 Mi cells take 48 MiB and about a second to build; a 256-state,
#: 20-input controller would ask for 3 GiB.
MAX_TABLE_CELLS = 1 << 22
_CHUNK = 1 << 22  # valuations evaluated at once when compiling tables (bounds memory)
#: Most outputs an edge label may tie to its inputs (their 2^k valuations are tried for every input valuation); a
#: label that is a conjunction of an input part and an output part may name any number.
MAX_GUARD_OUTPUTS = 16


@dataclass(frozen=True, slots=True)
class MealyEdge:
    """An edge of the Mealy view: a guard over signals and a destination state."""

    guard: Expr
    dest: int


@dataclass(frozen=True, slots=True)
class Ambiguity:
    """Where a Mealy view is not output-deterministic: in ``state`` under input valuation ``x``, edge ``first`` (the
    one the first-edge rule takes) and edge ``other`` are both enabled, with different outcomes ``(dest, y)``."""

    state: int
    x: int
    first: int
    other: int
    first_outcome: tuple[int, int]
    other_outcome: tuple[int, int]


class MealyMachine(ABC):
    """What every Mealy view offers from its named ``inputs`` and ``outputs``, its ``initial`` state and its
    ``step``: the signal counts and single runs. The views: :class:`MealyView` (an HOA controller) and
    :class:`aig.view.CircuitView` (a circuit)."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    initial: int

    @property
    def num_inputs(self) -> int:
        return len(self.inputs)

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    @abstractmethod
    def step(self, q: int, x: int) -> tuple[int, int]:
        """``(q', y)``: the next state and the outputs in state ``q`` under input valuation ``x``."""

    def run(self, trace: Sequence[int]) -> tuple[list[int], list[int]]:
        """States ``q_0 .. q_T`` and outputs ``y_0 .. y_{T-1}`` of the run on input valuations ``trace``."""
        states, outs = [self.initial], []
        for x in trace:
            q, y = self.step(states[-1], x)
            states.append(q)
            outs.append(y)
        return states, outs


@dataclass(frozen=True)
class MealyView(MealyMachine):
    """A Mealy machine over named inputs and outputs, given by guarded edges per state (in priority order)."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    edges: tuple[tuple[MealyEdge, ...], ...]
    initial: int = 0
    state_names: tuple[str, ...] = ()

    @property
    def num_states(self) -> int:
        return len(self.edges)

    @property
    def num_edges(self) -> int:
        return sum(len(es) for es in self.edges)

    @property
    def table_cells(self) -> int:
        """states x 2^inputs: the size of the dense tables."""
        return self.num_states << self.num_inputs

    @cached_property
    def has_tables(self) -> bool:
        """Whether the dense tables fit the limits (:data:`MAX_TABLE_INPUTS`, :data:`MAX_TABLE_CELLS`)."""
        return self.num_inputs <= MAX_TABLE_INPUTS and self.table_cells <= MAX_TABLE_CELLS

    def state_name(self, q: int) -> str:
        """The state's name if it has one, else its index."""
        return self.state_names[q] if q < len(self.state_names) and self.state_names[q] else str(q)

    def valuation_text(self, x: int) -> str:
        """An input valuation as ``a=1 b=0`` (inputs in order)."""
        return " ".join(f"{a}={(x >> i) & 1}" for i, a in enumerate(self.inputs)) or "(no inputs)"

    # -- semantics --------------------------------------------------------------------------------------------

    def step(self, q: int, x: int) -> tuple[int, int]:
        """``(q', y)``: the transition taken in state ``q`` under input valuation ``x``.

        Raises Gf01Error when no edge of ``q`` is enabled under ``x``.
        """
        if self.has_tables:
            nxt, out = self.tables
            return int(nxt[q, x]), int(out[q, x])
        return self._step_symbolic(q, x)

    def _step_symbolic(self, q: int, x: int) -> tuple[int, int]:
        n = self.num_inputs
        fixed = {i: bool((x >> i) & 1) for i in range(n)}
        order = range(n, n + self.num_outputs)
        for e in self.edges[q]:
            model = least_model(restrict(e.guard, fixed), order)
            if model is not None:
                return e.dest, sum(1 << (v - n) for v, bit in model.items() if bit)
        raise Gf01Error(
            f"not input-complete: state {self.state_name(q)} has no edge for input {self.valuation_text(x)}"
        )

    def run(self, trace: Sequence[int]) -> tuple[list[int], list[int]]:
        """States ``q_0 .. q_T`` and outputs ``y_0 .. y_{T-1}`` of the run on input valuations ``trace``."""
        if self.has_tables:  # one lock-step simulation beats a Python loop over the steps
            states, outs = self.simulate(np.asarray([list(trace)], dtype=np.int64).reshape(1, len(trace)))
            return [int(q) for q in states[0]], [int(y) for y in outs[0]]
        return super().run(trace)

    def simulate(self, xs: np.ndarray, start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Many runs in lock-step: ``xs[r, k]`` is run r's input valuation at its k-th step.

        Runs start in ``start[r]`` (default: the initial state). Returns the states ``[runs, steps + 1]`` (before
        each step, then the last) and the outputs ``[runs, steps]``. This is the one simulator of the project: the
        explicit backend, the baselines and the episode engine all step the system through it.
        """
        runs, steps = xs.shape
        q = np.full(runs, self.initial, dtype=np.int64) if start is None else np.asarray(start, dtype=np.int64)
        states = np.empty((runs, steps + 1), dtype=np.int64)
        outs = np.empty((runs, steps), dtype=np.int64)
        states[:, 0] = q
        if self.has_tables:
            nxt, out = self._flat_tables
            width = 1 << self.num_inputs
            qpre = q * width
            cols = np.ascontiguousarray(xs.T, dtype=np.int64)
            for k in range(steps):
                idx = qpre + cols[k]
                outs[:, k] = out[idx]
                qpre = nxt[idx]
                states[:, k + 1] = qpre // width
            return states, outs
        for r in range(runs):
            qq = int(q[r])
            for k in range(steps):
                qq, outs[r, k] = self._step_symbolic(qq, int(xs[r, k]))
                states[r, k + 1] = qq
        return states, outs

    @cached_property
    def _flat_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """The tables flattened for lock-step simulation: index ``q * 2^n + x``; next states pre-multiplied by 2^n."""
        nxt, out = self.tables
        width = 1 << self.num_inputs
        return nxt.ravel().astype(np.int64) * width, out.ravel()

    @cached_property
    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense ``next[q, x]`` (int32) and ``out[q, x]`` (int64 output valuation), within :attr:`has_tables`.

        Raises Gf01Error naming the first (state, input valuation) without an enabled edge, or when the tables
        would exceed the limits.
        """
        nxt, out, _ = self._compiled
        return nxt, out

    @cached_property
    def _compiled(self) -> tuple[np.ndarray, np.ndarray, Ambiguity | None]:
        """The tables and :meth:`first_ambiguity`'s answer, from one pass over every edge's outcomes (each edge's
        guard evaluated under every input valuation: most of loading a large controller, so done once)."""
        n = self.num_inputs
        if not self.has_tables:
            raise Gf01Error(
                f"the system has {self.num_states} states and {n} inputs: its dense tables would have "
                f"{self.table_cells:,} cells, more than the {MAX_TABLE_CELLS:,} supported "
                f"(states x 2^inputs; at most {MAX_TABLE_INPUTS} inputs)"
            )
        size = 1 << n
        nxt = np.full((self.num_states, size), -1, dtype=np.int32)
        out = np.zeros((self.num_states, size), dtype=np.int64)
        found: Ambiguity | None = None
        models: dict[tuple[Expr, tuple[int, ...]], dict[int, bool] | None] = {}
        for q, edges in enumerate(self.edges):
            for k, e in enumerate(edges):
                clash = found is None or found.state == q  # the first state with one is the answer
                for xs, enabled, ys in self._edge_outcomes(q, e, models):
                    open_ = enabled & (nxt[q, xs] < 0)
                    idx = xs[open_]
                    nxt[q, idx] = e.dest
                    out[q, idx] = ys[open_]
                    if clash:
                        # Where an earlier edge is taken (its outcome final: the first enabled edge wins), this
                        # one is enabled too and its outcome differs: the view is not output-deterministic there.
                        differs = enabled & ~open_ & ((nxt[q, xs] != e.dest) | (out[q, xs] != ys))
                        if differs.any():
                            j = int(np.argmax(differs))
                            x = int(xs[j])
                            if found is None or x < found.x:
                                found = Ambiguity(q, x, self._first_enabled(q, x), k,
                                                  (int(nxt[q, x]), int(out[q, x])), (e.dest, int(ys[j])))
                            clash = False
            missing = np.flatnonzero(nxt[q] < 0)
            if missing.size:
                raise Gf01Error(
                    f"not input-complete: state {self.state_name(q)} has no edge for input "
                    f"{self.valuation_text(int(missing[0]))}"
                )
        nxt.setflags(write=False)
        out.setflags(write=False)
        return nxt, out, found

    def _edge_outcomes(self, q: int, e: MealyEdge, models: dict[tuple[Expr, tuple[int, ...]], dict[int, bool] | None]
                       ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Chunks ``(xs, enabled, ys)`` over all input valuations: whether ``e`` is enabled under each ``x`` (its guard
        is satisfiable together with it) and the least output valuation it allows there (meaningful where enabled).
        ``models`` keeps the least models of output parts already solved (a controller's edges share few of them)."""
        n = self.num_inputs
        size = 1 << n
        outs = sorted(v for v in variables(e.guard) if v >= n)
        k = len(outs)
        split = _split_guard(e.guard, n)
        if split is not None:
            # inputs & outputs apart (the usual Mealy label): one least output valuation for every input.
            ins, outputs = split
            key = (outputs, tuple(outs))
            if key not in models:
                models[key] = least_model(outputs, outs)
            model = models[key]
            if model is None:
                return  # never enabled
            y = sum(1 << (v - n) for v, bit in model.items() if bit)
            for lo in range(0, size, _CHUNK):
                xs = np.arange(lo, min(size, lo + _CHUNK), dtype=np.int64)
                yield xs, evaluate_array(ins, xs), np.full(xs.shape, y, dtype=np.int64)
            return
        if k > MAX_GUARD_OUTPUTS:
            raise Gf01Error(
                f"state {self.state_name(q)}: an edge label ties {k} outputs to the inputs; at most "
                f"{MAX_GUARD_OUTPUTS} are supported where inputs and outputs are not in separate conjuncts"
            )
        # Candidate output valuations in lexicographic order, lowest output index most significant.
        cand = np.arange(1 << k, dtype=np.int64)
        ybits = np.zeros(1 << k, dtype=np.int64)
        yvals = np.zeros(1 << k, dtype=np.int64)
        for pos, v in enumerate(outs):
            bit = (cand >> (k - 1 - pos)) & 1
            ybits |= bit << v
            yvals |= bit << (v - n)
        step = max(1, _CHUNK >> k)
        for lo in range(0, size, step):
            xs = np.arange(lo, min(size, lo + step), dtype=np.int64)
            sat = evaluate_array(e.guard, xs[:, None] | ybits[None, :])
            yield xs, sat.any(axis=1), yvals[sat.argmax(axis=1)]

    def first_ambiguity(self) -> Ambiguity | None:
        """The first (state, input valuation) where the view is not output-deterministic, or None when it is.

        A controller is output-deterministic when, in every state and under every input valuation, all its enabled
        edges agree on the outcome (destination and least output valuation): then the first-edge rule of
        :meth:`step` decides nothing. A game arena (SYNTCOMP's HOA specifications) has, for the same input, edges
        for both values of an output: the first edge in file order would silently pick the controller's move.
        Checked on the dense tables (Gf01Error past :attr:`has_tables`).

        >>> view = mealy_from_text('HOA: v1\\nStates: 1\\nStart: 0\\nAP: 2 "a" "o"\\ncontrollable-AP: 1\\n'
        ...                        'Acceptance: 0 t\\n--BODY--\\nState: 0\\n[0 & 1] 0\\n[0 & !1] 0\\n[!0] 0\\n--END--')
        >>> view.first_ambiguity()
        Ambiguity(state=0, x=1, first=0, other=1, first_outcome=(0, 1), other_outcome=(0, 0))
        """
        return self._compiled[2]

    def _first_enabled(self, q: int, x: int) -> int:
        fixed = {i: bool((x >> i) & 1) for i in range(self.num_inputs)}
        order = range(self.num_inputs, self.num_inputs + self.num_outputs)
        return next(k for k, e in enumerate(self.edges[q]) if least_model(restrict(e.guard, fixed), order) is not None)

    def first_missing(self) -> tuple[int, int] | None:
        """The first (state, input valuation) with no enabled edge, or None when the view is input-complete."""
        n = self.num_inputs
        if self.has_tables:
            try:
                self.tables  # noqa: B018 - compiling the tables is the check
            except Gf01Error:
                pass
            else:
                return None
        for q, edges in enumerate(self.edges):
            # An input valuation is covered when some guard is satisfiable with it: exists outputs . guard.
            covered = [_exists(e.guard, range(n, n + self.num_outputs)) for e in edges]
            hole = Not(Or(tuple(covered))) if covered else Const(True)
            model = least_model(hole, range(n - 1, -1, -1))
            if model is not None:
                return q, sum(1 << v for v, bit in model.items() if bit)
        return None

    def check_input_complete(self) -> None:
        """Raise Gf01Error naming a state and an input valuation with no enabled edge, if there is one."""
        miss = self.first_missing()
        if miss is not None:
            q, x = miss
            raise Gf01Error(
                f"not input-complete: state {self.state_name(q)} has no edge for input {self.valuation_text(x)}"
            )

    # -- construction -----------------------------------------------------------------------------------------

    @staticmethod
    def from_automaton(aut: Automaton, outputs: Sequence[str] | None = None) -> MealyView:
        """The Mealy view of an HOA automaton (docs/semantics.md).

        Outputs are ``outputs`` if given, else the ``controllable-AP`` APs; inputs are the other APs, in AP order.
        Raises Gf01Error unless there is one initial state, no universal branching and the outputs are known.
        """
        if outputs is None:
            if aut.controllable_ap is None:
                raise Gf01Error("the automaton has no controllable-AP header: name its outputs explicitly")
            out_aps = sorted(set(aut.controllable_ap))
        else:
            unknown = [o for o in outputs if o not in aut.aps]
            if unknown:
                listed = ", ".join(aut.aps[:20]) + (f", ... ({len(aut.aps)} in all)" if len(aut.aps) > 20 else "")
                raise Gf01Error(f"output {quote(unknown[0])} is not an AP of the automaton (APs: {listed})")
            out_aps = sorted({aut.aps.index(o) for o in outputs})
        in_aps = [i for i in range(len(aut.aps)) if i not in set(out_aps)]
        if len(aut.start) != 1 or len(aut.start[0]) != 1:
            starts = " ".join("&".join(map(str, c)) for c in aut.start) or "none"
            raise Gf01Error(f"a Mealy system needs exactly one initial state (Start: {starts})")
        if aut.num_states > MAX_STATES:
            raise Gf01Error(f"{aut.num_states} states: a Mealy view holds at most {MAX_STATES}")
        signal = {ap: s for s, ap in enumerate([*in_aps, *out_aps])}
        aliases = aut.alias_map()
        by_index: dict[int, State] = {s.index: s for s in aut.states}
        n_aps = len(aut.aps)
        edges: list[tuple[MealyEdge, ...]] = []
        for q in range(aut.num_states):
            st = by_index.get(q)
            if st is None:
                edges.append(())
                continue
            implicit = st.label is None and st.edges and all(e.label is None for e in st.edges)
            mes = []
            for k, e in enumerate(st.edges):
                if len(e.dests) != 1:
                    raise Gf01Error(f"universal branching in state {q}: a Mealy system has one successor per edge")
                label = _edge_label(st, e, k, n_aps, bool(implicit))
                guard = rename(resolve(label, aliases), signal.__getitem__)
                mes.append(MealyEdge(guard, e.dests[0]))
            edges.append(tuple(mes))
        names = tuple((by_index[q].name or "") if q in by_index else "" for q in range(aut.num_states))
        return MealyView(
            inputs=tuple(aut.aps[i] for i in in_aps),
            outputs=tuple(aut.aps[i] for i in out_aps),
            edges=tuple(edges),
            initial=aut.start[0][0],
            state_names=names if any(names) else (),
        )

    @staticmethod
    def from_table(
        inputs: Sequence[str],
        outputs: Sequence[str],
        next_table: Sequence[Sequence[int]] | np.ndarray,
        out_table: Sequence[Sequence[int]] | np.ndarray,
        initial: int = 0,
        state_names: Sequence[str] = (),
    ) -> MealyView:
        """A view of an explicit Mealy table ``next[q][x]``, ``out[q][x]`` (x, y as bit-packed valuations).

        Each state gets one edge per distinct (next, output) pair, in order of the first input that takes it.
        """
        n, m = len(inputs), len(outputs)
        nxt = np.asarray(next_table, dtype=np.int64)
        out = np.asarray(out_table, dtype=np.int64)
        if nxt.shape != out.shape or nxt.ndim != 2 or nxt.shape[1] != 1 << n:
            raise Gf01Error(f"a Mealy table needs shape (states, 2^{n}); got {nxt.shape} and {out.shape}")
        edges = []
        # Guards are immutable: the minterm of each input letter and the conjunction of each output valuation are
        # built once and shared by every state's edges (a table of 6 states and 512 letters: 3,072 minterms, not
        # one per cell).
        minterms = [conjunction_of_literals((i, bool((x >> i) & 1)) for i in range(n)) for x in range(1 << n)]
        outs: dict[int, Expr] = {}
        for q in range(nxt.shape[0]):
            groups: dict[tuple[int, int], list[int]] = {}
            for x in range(1 << n):
                groups.setdefault((int(nxt[q, x]), int(out[q, x])), []).append(x)
            es = []
            for (dest, y), xs in groups.items():
                if not 0 <= dest < nxt.shape[0]:
                    raise Gf01Error(f"state {q}: next state {dest} out of range")
                cover = [minterms[x] for x in xs]
                guard_in = cover[0] if len(cover) == 1 else Or(tuple(cover))
                if len(xs) == 1 << n:
                    guard_in = Const(True)
                if y not in outs:
                    outs[y] = conjunction_of_literals((n + j, bool((y >> j) & 1)) for j in range(m))
                guard_out = outs[y]
                guard = guard_in if m == 0 else And((guard_in, guard_out))
                es.append(MealyEdge(guard, dest))
            edges.append(tuple(es))
        view = MealyView(tuple(inputs), tuple(outputs), tuple(edges), initial, tuple(state_names))
        if view.has_tables:
            # The tables are given: seed the cache instead of re-deriving them from the minterm guards (slow at
            # hundreds of states). Each edge reproduces exactly its (next, output) group, so the two agree.
            nxt_t, out_t = nxt.astype(np.int32), out.copy()
            nxt_t.setflags(write=False)
            out_t.setflags(write=False)
            view.__dict__["tables"] = (nxt_t, out_t)
        return view

    def to_automaton(self, name: str | None = None) -> Automaton:
        """This view as an HOA automaton: APs are inputs then outputs, outputs ``controllable-AP``.

        With that AP order a guard's signals are its AP indices, so ``from_automaton`` gives this view back.
        """
        n, m = self.num_inputs, self.num_outputs
        states = tuple(
            State(
                index=q,
                name=self.state_names[q] if q < len(self.state_names) and self.state_names[q] else None,
                edges=tuple(Edge(dests=(e.dest,), label=e.guard) for e in es),
            )
            for q, es in enumerate(self.edges)
        )
        return Automaton(
            states_declared=self.num_states,
            start=((self.initial,),),
            aps=(*self.inputs, *self.outputs),
            acc_name=("all", ()),
            name=name,
            properties=("trans-labels", "explicit-labels"),
            controllable_ap=tuple(range(n, n + m)),
            states=states,
        )


def mealy_from_text(text: str, outputs: Sequence[str] | None = None, *, file: str | None = None) -> MealyView:
    """The Mealy view of the single automaton in HOA ``text`` (outputs: ``outputs`` if given, else controllable-AP).

    The one way from HOA to a Mealy view: every error names ``file`` (and the line and column for syntax errors).
    """
    from hoa.parser import parse

    automata = parse(text, file)
    if len(automata) != 1:
        raise Gf01Error(f"a system is exactly one automaton; the HOA text holds {len(automata)}", file=file)
    try:
        return MealyView.from_automaton(automata[0], outputs)
    except Gf01Error as err:
        raise err.located(file) if file else err from None


def load_mealy(path: str | Path, outputs: Sequence[str] | None = None) -> MealyView:
    """The Mealy view of the single automaton in the HOA file at ``path`` (see :func:`mealy_from_text`)."""
    from hoa.files import read_text

    return mealy_from_text(read_text(path), outputs, file=str(path))


def _edge_label(st: State, e: Edge, k: int, n_aps: int, implicit: bool) -> Expr:
    if e.label is not None:
        return e.label
    if st.label is not None:
        return st.label
    if implicit:
        return conjunction_of_literals((i, bool((k >> i) & 1)) for i in range(n_aps))
    raise Gf01Error(f"state {st.index}: edge {k} has no label")


def _split_guard(guard: Expr, n: int) -> tuple[Expr, Expr] | None:
    """``(input part, output part)`` of a guard that is a conjunction of conjuncts over inputs only (signals below
    ``n``) and conjuncts over outputs only, or None when some conjunct mixes them."""
    args = guard.args if isinstance(guard, And) else (guard,)
    ins: list[Expr] = []
    outs: list[Expr] = []
    for a in args:
        vs = variables(a)
        if all(v < n for v in vs):
            ins.append(a)
        elif all(v >= n for v in vs):
            outs.append(a)
        else:
            return None
    return _conj(ins), _conj(outs)


def _conj(args: list[Expr]) -> Expr:
    return Const(True) if not args else args[0] if len(args) == 1 else And(tuple(args))


def _exists(expr: Expr, over: range) -> Expr:
    """``exists over . expr`` by Shannon expansion on the variables of ``over`` that occur in ``expr``."""
    for v in sorted(variables(expr) & set(over)):
        expr = _or(restrict(expr, {v: False}), restrict(expr, {v: True}))
    return expr


def _or(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const):
        return a if a.value else b
    if isinstance(b, Const):
        return b if b.value else a
    return Or((a, b))


__all__ = [
    "MAX_GUARD_OUTPUTS",
    "MAX_TABLE_CELLS",
    "MAX_TABLE_INPUTS",
    "Ambiguity",
    "MealyEdge",
    "MealyView",
    "load_mealy",
    "mealy_from_text",
]
