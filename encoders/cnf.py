"""CNF encoding of a GF-01 problem: the Mealy view unrolled under one flip variable per (t, input), Tseitin gates.

Input ``i`` at step ``t`` is ``tau_t(i) XOR f[t][i]``, which is the literal ``f[t][i]`` or ``-f[t][i]`` (tau is a
constant), so no input variables exist. Only steps ``0 .. t*`` are unrolled: later inputs cannot change the effect.

A table system's state is in binary (log) code by default: ``ceil(log2 R)`` variables a step for its R reachable
states, each next-state bit and the effect a Boolean function of the code bits and the inputs, written as clauses
without auxiliary variables (:mod:`encoders.state_code`). Where that does not apply (no dense tables, or a domain
past :data:`encoders.state_code.MAX_POINTS`), or with ``states="one-hot"``, the state is one-hot instead:

Per step the state is one-hot (one literal per state, constants folded); edge k of state q fires when
``s[q] AND enabled_k(x) AND NOT (enabled_0(x) OR .. OR enabled_{k-1}(x))`` (a prefix-OR chain), where
``enabled_k = exists outputs . guard_k``; output j is ``OR_{q,k} (fires AND out_{k,j}(x))`` where ``out_{k,j}`` is
bit j of the least output completion of k's guard, as a Boolean function of the inputs (computed once per edge by
Shannon expansion over the edge's few outputs). These per-edge functions are compiled once into a shared netlist
that is instantiated at each step. The next state is the OR of the fires into it. The effect is one literal:
e(y_{t*}) in hard mode, OR over the window in normal mode. Every gate is a full Tseitin equivalence, so the CNF is
a circuit: each flip assignment has exactly one model.

On a circuit system the state is one literal per latch (constants at step 0) and a step is the circuit's AND gates,
one Tseitin gate each, on the step's input and latch literals; no state is enumerated.

Min1 terms (``with_valid=True``): for each flip position p = (t0, i0), a copy of the steps ``t0 .. t*`` that starts
from the main run's state at t0 and reads the base value at p; ``Valid = Suff AND AND_p (f_p -> NOT Suff_p)``.

Rank copies (:func:`rank_min1_term`, the SAT search's lazy Min1): copy j is the unrolling with the j-th flip of C
(positions in order) undone, chosen by a sequential counter over the flip variables, and ``|C| >= j -> NOT
Suff(copy j)``; its Suff is the named literal ``("suff-rank", j)``.

Variable numbering is canonical (one ``pysat.formula.IDPool``, deterministic construction order): flips first,
``("f", t, i)`` = ``1 + t * |AP_in| + i``, then ``("true",)``, then named literals (``("ts", t)``, ``("suff",)``,
``("suff", t, i)``, ``("valid",)``) and hash-consed gates ``("and", lits)`` / ``("or", lits)`` in creation order.

>>> enc = encode(problem, with_valid=True)
>>> with open("valid.cnf", "w") as fp:
...     enc.write_dimacs(fp, assert_lits=[enc.valid])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from pysat.card import CardEnc, EncType
from pysat.formula import CNF, IDPool

from aig.view import CircuitView
from encoders.problem import Flip, Problem
from encoders.state_code import FunctionClauses, LogStep, log_step
from hoa.label import FALSE, TRUE, And, Const, Expr, Not, Or, Var, restrict, variables


@dataclass(frozen=True)
class EdgeLogic:
    """One edge's behaviour as Boolean functions of the inputs: when it is enabled, and each output bit then."""

    enabled: Expr  # some output valuation satisfies the guard together with x
    outputs: tuple[Expr, ...]  # bit j of the least output completion (meaningful when the edge is enabled)
    dest: int


def edge_logic(problem: Problem) -> tuple[tuple[EdgeLogic, ...], ...]:
    """Per state, per edge (file order): :class:`EdgeLogic` with every expression over input indices only.

    Edges that are never enabled are left out; the edge taken is the first enabled one.
    """
    system = problem.system
    n, m = system.num_inputs, system.num_outputs
    out_vars = range(n, n + m)
    result = []
    for edges in system.edges:
        logic = []
        for e in edges:
            enabled = _simplify(_exists(e.guard, out_vars))
            if enabled == FALSE:
                continue
            bits = []
            for bit in _least_completion(e.guard, n, m):
                # Only bit AND enabled matters: the common shapes "not enabled" / "enabled" fold to constants.
                if bit == enabled:
                    bit = TRUE
                elif bit == _simplify(Not(enabled)):
                    bit = FALSE
                bits.append(bit)
            logic.append(EdgeLogic(enabled, tuple(bits), e.dest))
        result.append(tuple(logic))
    return tuple(result)


def _least_completion(guard: Expr, n: int, m: int) -> tuple[Expr, ...]:
    """Bits of the least satisfying output valuation (outputs compared by index, 0 before 1) as functions of x."""
    cur = guard
    bits: list[Expr] = []
    for j in range(m):
        v = n + j
        if v not in variables(cur):
            bits.append(FALSE)
            continue
        low = restrict(cur, {v: False})
        high = restrict(cur, {v: True})
        low_ok = _simplify(_exists(low, range(v + 1, n + m)))
        bits.append(_simplify(Not(low_ok)))
        cur = _simplify(Or((And((low_ok, low)), And((Not(low_ok), high)))))
    return tuple(bits)


def _exists(expr: Expr, over: Iterable[int]) -> Expr:
    for v in sorted(variables(expr) & set(over)):
        expr = _simplify(Or((restrict(expr, {v: False}), restrict(expr, {v: True}))))
    return expr


def _simplify(expr: Expr) -> Expr:
    return restrict(expr, {})


@dataclass
class Encoding:
    """A CNF under construction: clauses, the variable pool, flip variables and the named literals."""

    problem: Problem
    pool: IDPool
    clauses: list[list[int]]
    flips: dict[Flip, int]
    true: int
    suff: int = 0
    valid: int = 0
    timestep: dict[int, int] = field(default_factory=dict)  # t -> literal "some flip at t"
    suff_without: dict[Flip, int] = field(default_factory=dict)  # p -> Suff with f_p forced to the base value
    compiled: Compiled | None = None  # the edge logic, for building Min1 copies later (one-hot states)
    log: LogStep | None = None  # the step over binary state codes (log states)
    main_states: dict[int, list[int]] = field(default_factory=dict)  # t -> the main run's state literals
    main_hits: list[int] = field(default_factory=list)  # t -> effect literal of the main run (false off-window)
    main_lits: dict[int, list[int]] = field(default_factory=dict)  # circuits: t -> the main run's literal per variable
    rank_order: tuple[Flip, ...] = ()  # the flip positions the rank copies count over, in rank order
    rank_at_least: list[list[int]] = field(default_factory=list)  # [j][k]: at least j of the first k positions flip
    rank_suff: list[int] = field(default_factory=list)  # [j - 1]: Suff of rank copy j

    # -- gates ----------------------------------------------------------------------------------------------------

    def and_(self, lits: Iterable[int]) -> int:
        """A literal equivalent to the conjunction of ``lits`` (constants folded, hash-consed)."""
        t = self.true
        keep = set()
        for lit in lits:
            if lit == -t:
                return -t
            if lit != t:
                keep.add(lit)
        if not keep:
            return t
        if len(keep) == 1:
            return keep.pop()
        for lit in keep:
            if -lit in keep:
                return -t
        key = ("and", tuple(sorted(keep)))
        g = self.pool.obj2id.get(key)
        if g is None:
            g = self.pool.id(key)
            self.clauses.extend([-g, lit] for lit in key[1])
            self.clauses.append([g, *(-lit for lit in key[1])])
        return g

    def or_(self, lits: Iterable[int]) -> int:
        """A literal equivalent to the disjunction of ``lits``."""
        return -self.and_(-lit for lit in lits)

    def named(self, name: tuple, lit: int) -> int:
        """A fresh variable called ``name``, equivalent to ``lit`` (for readable DIMACS comments)."""
        v = self.pool.id(name)
        self.clauses.extend(([-v, lit], [v, -lit]))
        return v

    def expr(self, e: Expr, sig: Callable[[int], int]) -> int:
        """Tseitin literal of ``e``, whose variable ``i`` is the literal ``sig(i)``."""
        if isinstance(e, Var):
            return sig(e.index)
        if isinstance(e, Const):
            return self.true if e.value else -self.true
        if isinstance(e, Not):
            return -self.expr(e.arg, sig)
        if isinstance(e, And):
            return self.and_(self.expr(a, sig) for a in e.args)
        if isinstance(e, Or):
            return self.or_(self.expr(a, sig) for a in e.args)
        raise TypeError(f"unresolved alias in {e!r}")

    # -- output -----------------------------------------------------------------------------------------------------

    def cnf(self, assert_lits: Sequence[int] = ()) -> CNF:
        """The clauses (plus a unit clause per literal in ``assert_lits``) as a pysat CNF."""
        return CNF(from_clauses=[*self.clauses, *([lit] for lit in assert_lits)])

    def write_dimacs(self, fp: TextIO, assert_lits: Sequence[int] = (), budget: int | None = None,
                     progress: Callable[[int, int], None] | None = None) -> None:
        """Write DIMACS with comments naming the flip variables and named literals (see docs/solvers.md).

        ``budget`` adds "at most ``budget`` timesteps" (sequential counter) before writing; ``progress`` is told
        ``(clauses written, clauses)`` as the clauses go out.
        """
        if budget is not None:
            add_timestep_budget(self, budget)
        p = self.problem
        names = p.system.inputs
        comments = [
            f"c gf01 unrolling: T={p.horizon} t*={p.t_star} mode={p.mode} window={p.window} "
            f"inputs={len(names)} "
            + (f"latches={p.system.num_latches}" if p.circuit else f"states={p.system.num_states}")
            + ("" if self.log is None else f" state_bits={self.log.bits}"),
            "c meaning: flip variable f[t][i] is true when input i at step t differs from the base trace",
        ]
        comments += [f"c flip {v} t={t} input={names[i]}" for (t, i), v in self.flips.items()]
        if self.log is not None:
            comments += [f"c state {v} t={t} bit={j}" for t, bits in sorted(self.main_states.items())
                         for j, v in enumerate(bits) if abs(v) != self.true]
        named = [(v, k) for k, v in self.pool.obj2id.items() if k[0] not in ("and", "or", "f", "fn")]
        comments += [f"c var {v} {' '.join(map(str, k))}" for v, k in sorted(named)]
        comments += [f"c asserted {lit}" for lit in assert_lits]
        clauses = [*self.clauses, *([lit] for lit in assert_lits)]
        fp.write("".join(f"{line}\n" for line in comments))
        fp.write(f"p cnf {self.pool.top} {len(clauses)}\n")
        chunk = 1 << 16  # written in chunks: one string per clause list would double the memory of a large CNF
        for start in range(0, len(clauses), chunk):
            fp.write("".join(f"{' '.join(map(str, c))} 0\n" for c in clauses[start : start + chunk]))
            if progress is not None:
                progress(min(start + chunk, len(clauses)), len(clauses))


def encode(problem: Problem, with_valid: bool = False, check: Callable[[], None] | None = None,
           states: str = "log", progress: Callable[[int, int], None] | None = None) -> Encoding:
    """The unrolling of ``problem`` up to t*: flip variables, Suff, timestep literals, and (optionally) Valid.

    ``check`` is called once per encoded step (a limits clock hook). ``states``: "log" (binary state codes where
    they apply, else one-hot) or "one-hot" (a table system's states one literal each); circuits ignore it.
    ``progress`` is told ``(steps encoded, steps to encode)``, the Min1 copies' steps included.
    """
    if states not in ("log", "one-hot"):
        raise ValueError(f"states must be 'log' or 'one-hot', not {states!r}")
    system = problem.system
    n = system.num_inputs
    steps = problem.t_star + 1
    if progress is not None:
        check = _counting(check, progress, steps + (n * steps * (steps + 1) // 2 if with_valid else 0))
    pool = IDPool()
    flips = {(t, i): pool.id(("f", t, i)) for t in range(steps) for i in range(n)}
    true = pool.id(("true",))
    enc = Encoding(problem, pool, [[true]], flips, true)
    if problem.circuit:
        init = [true if (system.initial >> k) & 1 else -true for k in range(system.num_latches)]
    else:
        enc.log = log_step(problem) if states == "log" else None
        if enc.log is not None:
            init = [true if (enc.log.initial >> j) & 1 else -true for j in range(enc.log.bits)]
        else:
            enc.compiled = compile_system(problem)
            init = [true if q == system.initial else -true for q in range(system.num_states)]
    enc.main_states[0] = init
    enc.main_hits = _run(enc, init, 0, None, check)
    enc.suff = enc.named(("suff",), enc.or_(enc.main_hits))
    for t in range(steps):
        enc.timestep[t] = enc.named(("ts", t), enc.or_(flips[(t, i)] for i in range(n)))
    if with_valid:
        terms = [min1_term(enc, p, check) for p in flips]
        enc.valid = enc.named(("valid",), enc.and_([enc.suff, *terms]))
    return enc


def _counting(check: Callable[[], None] | None, progress: Callable[[int, int], None],
              total: int) -> Callable[[], None]:
    """``check``, also telling ``progress`` how many of ``total`` steps were encoded (every 16th step and the last)."""
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if check is not None:
            check()
        if done % 16 == 0 or done == total:
            progress(done, total)

    return tick


def min1_term(enc: Encoding, p: Flip, check: Callable[[], None] | None = None) -> int:
    """The literal of ``f_p -> NOT Suff_p`` (Suff with input p at its base value), building p's copy once.

    The copy re-runs steps t0 .. t* from the main run's state literals at t0; the effect literals before t0 are the
    main run's.
    """
    if p not in enc.suff_without:
        t0 = p[0]
        hits = enc.main_hits[:t0] + _run(enc, enc.main_states[t0], t0, p, check)
        enc.suff_without[p] = enc.named(("suff", *p), enc.or_(hits))
    return enc.or_((-enc.flips[p], -enc.suff_without[p]))


def _run(enc: Encoding, start: list[int], t_from: int, fixed: Flip | None,
         check: Callable[[], None] | None, flipped: Callable[[Flip], int] | None = None,
         states: list[list[int]] | None = None) -> list[int]:
    """Effect literals at t_from .. t* of the run from one-hot state literals ``start`` at ``t_from``.

    ``fixed`` is a flip position read at its base value (a Min1 copy); ``flipped`` gives, per position, the literal
    meaning "this input differs from the base" (a rank copy; default the flip variable). The main run (neither)
    records its state literals in ``enc.main_states``; a copy appends its state literals per step to ``states``.
    """
    problem = enc.problem
    n, true = problem.system.num_inputs, enc.true
    window = set(problem.effect_steps)
    main = fixed is None and flipped is None
    state = start
    hits = []
    for t in range(t_from, problem.t_star + 1):
        if check is not None:
            check()
        if states is not None:
            states.append(state)
        xs = []
        for i in range(n):
            base = (problem.trace[t] >> i) & 1
            if (t, i) == fixed:
                xs.append(true if base else -true)
            else:
                f = enc.flips[(t, i)] if flipped is None else flipped((t, i))
                xs.append(-f if base else f)
        if enc.log is not None:
            sig = (*xs, *state)
            hits.append(_log_fn(enc, "hit", enc.log.hit, sig) if t in window else -true)
            if t < problem.t_star:  # the state after t* is never read
                state = [_log_fn(enc, j, fc, sig) for j, fc in enumerate(enc.log.next_bits)]
                if main:
                    enc.main_states[t + 1] = state
            continue
        if enc.compiled is None:
            state, ys, lits = _circuit_step(enc, state, xs, None if fixed is None else enc.main_lits[t])
            if main:
                enc.main_lits[t] = lits
        else:
            state, ys = _step(enc, enc.compiled, state, xs)
            _one_hot_hint(enc, state)
        hits.append(enc.expr(problem.effect, ys.__getitem__) if t in window else -true)
        if main:
            enc.main_states[t + 1] = state
    return hits


def rank_min1_term(enc: Encoding, j: int, order: Sequence[Flip], check: Callable[[], None] | None = None) -> int:
    """The literal of ``|C| >= j -> NOT Suff(copy j)``, building rank copy j (and the counter it reads) once.

    Rank copy j is the unrolling whose inputs are the edited inputs with the j-th flip of C, in ``order``, undone:
    position p_k reads ``f_k AND NOT sel_j(k)``, where ``sel_j(k) = f_k AND`` "exactly j - 1 of p_1 .. p_(k-1)
    flip" (a sequential counter over the flip variables, its level j built on level j - 1). Copies 1 .. K make
    Min1 exact for every C of at most K flips, whatever the number of flip positions. Positions outside ``order``
    read their flip variable in every copy (the caller keeps them off). A copy runs as the main run until its
    undone flip's step: where fewer than j flips come before step t, its state at t is the main run's (redundant
    clauses, for propagation).
    """
    if not order:
        return enc.true  # no position can flip: C is empty
    if not enc.rank_at_least:
        assert list(order) == sorted(order), "the order must be by step (the copies' prefix clauses count on it)"
        enc.rank_order = tuple(order)
        enc.rank_at_least.append([enc.true] * (len(order) + 1))
    assert tuple(order) == enc.rank_order, "rank copies are built over one order of the flip positions"
    flips = [enc.flips[p] for p in enc.rank_order]
    while len(enc.rank_suff) < j:
        r = len(enc.rank_suff) + 1
        below = enc.rank_at_least[r - 1]
        level = [-enc.true]
        for k, f in enumerate(flips):
            level.append(enc.or_((level[k], enc.and_((f, below[k])))))
        enc.rank_at_least.append(level)
        # Position k is undone in copy r when it flips with exactly r - 1 flips before it.
        undone = {p: enc.and_((f, enc.or_((-below[k], level[k]))))
                  for k, (p, f) in enumerate(zip(enc.rank_order, flips, strict=True))}
        states: list[list[int]] = []
        hits = _run(enc, enc.main_states[0], 0, None, check,
                    lambda p, undone=undone: undone.get(p, enc.flips[p]), states)  # type: ignore[misc]
        before = 0  # positions of the order at steps < t
        for t, copy_state in enumerate(states):
            while before < len(enc.rank_order) and enc.rank_order[before][0] < t:
                before += 1
            free = level[before]  # "at least r flips before step t": only then may the copy differ here
            if free == enc.true:
                continue
            for a, b in zip(copy_state, enc.main_states[t], strict=True):
                if a != b:
                    enc.clauses.extend(([free, -a, b], [free, a, -b]))
        enc.rank_suff.append(enc.named(("suff-rank", r), enc.or_(hits)))
    return enc.or_((-enc.rank_at_least[j][-1], -enc.rank_suff[j - 1]))


def _log_fn(enc: Encoding, tag: object, fc: FunctionClauses, sig: tuple[int, ...]) -> int:
    """The literal of one step function of the log encoding on the signal literals ``sig`` (inputs, code bits):
    a fresh variable with its clauses, or a constant when the constants among ``sig`` decide it. Hash-consed: the
    same function of the same literals is one variable."""
    true = enc.true
    if any(abs(lit) == true for lit in sig):
        on = _reduce(fc.on, sig, true)
        off = _reduce(fc.off, sig, true)
        # A cube that holds whatever the variables are (an empty body), or no cube left that can hold: constant.
        if any(not body for body in on) or not off:
            return true
        if any(not body for body in off) or not on:
            return -true
    else:
        on = [[sig[a - 1] if a > 0 else -sig[-a - 1] for a in body] for body in fc.on]
        off = [[sig[a - 1] if a > 0 else -sig[-a - 1] for a in body] for body in fc.off]
    key = ("fn", tag, sig)
    v = enc.pool.obj2id.get(key)
    if v is None:
        v = enc.pool.id(key)
        enc.clauses.extend([v, *body] for body in on)
        enc.clauses.extend([-v, *body] for body in off)
    return v


def _reduce(bodies: tuple[tuple[int, ...], ...], sig: tuple[int, ...], true: int) -> list[list[int]]:
    """The clause bodies on ``sig``, constants folded: a body with a true literal is dropped (its cube cannot
    hold), false literals are left out."""
    out = []
    for body in bodies:
        lits = [sig[a - 1] if a > 0 else -sig[-a - 1] for a in body]
        if true in lits:
            continue
        out.append([lit for lit in lits if lit != -true])
    return out


class Netlist:
    """Expressions over the inputs compiled once into one shared gate list, instantiated per step without hashing."""

    def __init__(self) -> None:
        self.nodes: list[tuple] = []
        self._index: dict[Expr, int] = {}

    def add(self, e: Expr) -> int:
        """The node index of ``e`` (structurally equal subexpressions share a node)."""
        k = self._index.get(e)
        if k is not None:
            return k
        node: tuple
        if isinstance(e, Var):
            node = ("var", e.index)
        elif isinstance(e, Const):
            node = ("const", e.value)
        elif isinstance(e, Not):
            node = ("not", self.add(e.arg))
        elif isinstance(e, And | Or):
            node = ("and" if isinstance(e, And) else "or", tuple(self.add(x) for x in e.args))
        else:
            raise TypeError(f"unresolved alias in {e!r}")
        self.nodes.append(node)
        self._index[e] = len(self.nodes) - 1
        return len(self.nodes) - 1

    def instantiate(self, enc: Encoding, xs: Sequence[int]) -> list[int]:
        """A literal per node, with input ``i`` read as the literal ``xs[i]``."""
        out: list[int] = []
        t = enc.true
        for node in self.nodes:
            kind, arg = node
            if kind == "var":
                out.append(xs[arg])
            elif kind == "const":
                out.append(t if arg else -t)
            elif kind == "not":
                out.append(-out[arg])
            elif kind == "and":
                out.append(enc.and_([out[k] for k in arg]))
            else:
                out.append(enc.or_([out[k] for k in arg]))
        return out


@dataclass(frozen=True)
class Compiled:
    """A system's edge logic as netlist nodes: per state, per edge, (enabled node, output bit nodes, dest)."""

    net: Netlist
    edges: tuple[tuple[tuple[int, tuple[int | None, ...], int], ...], ...]
    num_outputs: int


def compile_system(problem: Problem) -> Compiled:
    """Compile :func:`edge_logic` into one netlist (output bits that are constant false become None)."""
    net = Netlist()
    edges = []
    for logic in edge_logic(problem):
        edges.append(tuple(
            (net.add(e.enabled), tuple(None if b == FALSE else net.add(b) for b in e.outputs), e.dest) for e in logic
        ))
    return Compiled(net, tuple(edges), problem.system.num_outputs)


def _step(enc: Encoding, comp: Compiled, state: list[int], xs: list[int]) -> tuple[list[int], list[int]]:
    """One transition: next one-hot state literals and output literals.

    Edge k of state q fires when q is active, k is enabled and no earlier edge of q is (a prefix-OR chain per state,
    linear in the number of edges).
    """
    false = -enc.true
    vals = comp.net.instantiate(enc, xs)
    into: list[list[int]] = [[] for _ in range(len(state))]
    out_terms: list[list[int]] = [[] for _ in range(comp.num_outputs)]
    for q, s in enumerate(state):
        if s == false:
            continue
        earlier = false
        for en_node, bits, dest in comp.edges[q]:
            en = vals[en_node]
            fire = enc.and_((s, en, -earlier))
            if fire != false:
                into[dest].append(fire)
                for j, b in enumerate(bits):
                    if b is not None:
                        out_terms[j].append(enc.and_((fire, vals[b])))
            earlier = enc.or_((earlier, en))
            if earlier == enc.true:
                break
    return [enc.or_(ls) for ls in into], [enc.or_(ls) for ls in out_terms]


def _circuit_step(enc: Encoding, state: list[int], xs: list[int],
                  main: list[int] | None = None) -> tuple[list[int], list[int], list[int]]:
    """One step of a circuit: its AND gates instantiated on the input and latch literals (Tseitin, hash-consed, so
    gates that compute the same function of the same literals are one variable). Only the cone of influence of the
    effect's outputs is built (:meth:`aig.view.CircuitView.cone`); latches and outputs outside it are constant
    false, never read. Returns the next latch literals, the output literals and the literal of every variable.

    ``main``: the main run's literals at this step (a Min1 copy). Only gates with an input literal that differs from
    the main run's are visited (the rest would hash-cons to the main run's gates anyway): a copy's step costs its
    fanout from the fixed input and the latches that differ, not the whole cone."""
    view: CircuitView = enc.problem.system  # type: ignore[assignment]
    gates, latches, outs = _cone_tables(view, enc.problem)
    n = len(xs)
    if main is None:
        # Variables outside the cone of the effect's outputs are never read: they stay false.
        lits = [-enc.true] * (view.aig.max_var + 1)
        lits[1 : n + 1] = xs
        lits[n + 1 : n + 1 + len(state)] = state
        dirty = None
    else:
        lits = list(main)
        dirty = set()
        for v, lit in enumerate([*xs, *state], start=1):
            if lit != main[v]:
                lits[v] = lit
                dirty.add(v)
    memo = enc.pool.obj2id
    true = enc.true
    for lhs, v0, n0, v1, n1 in gates:
        if dirty is not None and v0 not in dirty and v1 not in dirty:
            continue
        a = -lits[v0] if n0 else lits[v0]
        b = -lits[v1] if n1 else lits[v1]
        # and_ for two literals, inlined (this loop is the unrolling's hot path).
        if a == -true or b == -true or a == -b:
            g = -true
        elif a in (true, b):
            g = b
        elif b == true:
            g = a
        else:
            key = ("and", (a, b) if a < b else (b, a))
            g = memo.get(key)
            if g is None:
                g = enc.pool.id(key)
                enc.clauses.extend(([-g, a], [-g, b], [g, -a, -b]))
        lits[lhs] = g
        if dirty is not None and g != main[lhs]:  # type: ignore[index]
            dirty.add(lhs)

    def lit(x: int) -> int:
        return -lits[x >> 1] if x & 1 else lits[x >> 1]

    nxt = [-true] * len(state)
    for k in latches:
        nxt[k] = lit(view.aig.latches[k].next)
    ys = [-true] * view.num_outputs
    for j in outs:
        ys[j] = lit(view.out_lits[j])
    return nxt, ys, lits


def _cone_tables(view: CircuitView, problem: Problem) -> tuple[list[tuple[int, int, bool, int, bool]], tuple[int, ...],
                                                                 list[int]]:
    """The gates (lhs variable, rhs0 variable, negated, rhs1 variable, negated), in canonical (topological) order,
    and the latches in the cone of influence of the effect's outputs, and those outputs."""
    outs = frozenset(variables(problem.effect))
    key = ("cnf-cone", outs)
    got = view.memo.get(key)
    if got is None:
        gate_ids, latches = view.cone(outs)
        ands = view.aig.ands
        gates = [(ands[k].lhs >> 1, ands[k].rhs0 >> 1, bool(ands[k].rhs0 & 1), ands[k].rhs1 >> 1,
                  bool(ands[k].rhs1 & 1)) for k in gate_ids]
        got = (gates, latches, sorted(outs))
        view.memo[key] = got
    return got


def _one_hot_hint(enc: Encoding, state: list[int]) -> None:
    """Redundant clauses "exactly one state literal holds" (implied by the circuit, but CDCL cannot see it).

    Measured on random 32-state tables (T=48, B_T=3): CaDiCaL went from 29 s to 0.07 s on the first Suff call.
    Pairwise at-most-one up to 8 states; beyond, a sequential counter (its auxiliary variables are unnamed).
    """
    lits = [lit for lit in state if abs(lit) != enc.true]
    if not lits or enc.true in state:
        return
    enc.clauses.append(lits)
    if len(lits) <= 8:
        enc.clauses.extend([-a, -b] for k, a in enumerate(lits) for b in lits[k + 1 :])
    else:
        enc.clauses.extend(CardEnc.atmost(lits=lits, bound=1, vpool=enc.pool, encoding=EncType.seqcounter).clauses)


def add_timestep_budget(enc: Encoding, budget: int) -> None:
    """Clauses for "at most ``budget`` timesteps carry a flip" (nothing when the budget cannot bind)."""
    lits = [enc.timestep[t] for t in sorted(enc.timestep)]
    if budget >= len(lits):
        return
    if budget <= 0:
        enc.clauses.extend([-lit] for lit in lits)
        return
    card = CardEnc.atmost(lits=lits, bound=budget, vpool=enc.pool, encoding=EncType.seqcounter)
    enc.clauses.extend(card.clauses)


__all__ = ["Compiled", "EdgeLogic", "Encoding", "Netlist", "add_timestep_budget", "compile_system", "edge_logic",
           "encode", "min1_term", "rank_min1_term"]
