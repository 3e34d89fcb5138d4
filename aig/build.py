"""Building circuits in code: a hash-consed AND-gate builder, and the project's own circuit families.

The families are small, named, parameterised designs of the kinds hardware and synthesis benchmarks are made of, for
tests, examples and the benchmark (bench/aiger.py):

- ``counter(bits)``: an up-counter with enable ``en`` and synchronous reset ``rst``; output ``wrap`` when it is at
  its maximum and enabled;
- ``shift_register(length)``: ``d`` shifted in each step; output ``q`` the last stage;
- ``arbiter(clients)``: a round-robin arbiter, requests ``r0..``, grants ``g0..`` (one-hot, the token's owner first);
- ``fifo(depth, width)``: a FIFO with ``push``, ``pop`` and ``d0..`` data; outputs ``empty``, ``full``, ``q0..``, and a
  bad-state property ``overflow`` (a push while full and not popping).

>>> from aig.writer import canonical
>>> canonical(shift_register(2)).splitlines()[0]
'aag 3 1 2 1 0'
"""

from __future__ import annotations

from aig.model import Aig, And, Latch


class Builder:
    """An AIG under construction: inputs and latches first, then AND gates, constants folded, structurally hashed.

    >>> b = Builder()
    >>> x, y = b.input("x"), b.input("y")
    >>> b.output("o", b.xor(x, y))
    >>> b.aig().header[:5]
    (5, 2, 0, 1, 3)
    """

    def __init__(self) -> None:
        self.inputs: list[str] = []
        self.latch_names: list[str] = []
        self.latch_next: list[int] = []
        self.latch_reset: list[int] = []
        self.gates: list[tuple[int, int]] = []
        self.memo: dict[tuple[int, int], int] = {}
        self.outputs: list[tuple[str, int]] = []
        self.bad: list[tuple[str, int]] = []
        self._frozen = False

    # Literals are built before the gates are numbered: a signal is ("i", k), ("l", k) or ("g", k) encoded as an
    # integer tag, resolved to AIGER literals in aig().
    def _lit(self, kind: int, k: int) -> int:
        return ((k << 2 | kind) << 1) + 2  # never 0 or 1

    def input(self, name: str) -> int:
        """A new input called ``name``."""
        self.inputs.append(name)
        return self._lit(0, len(self.inputs) - 1)

    def latch(self, name: str, reset: int = 0) -> int:
        """A new latch called ``name`` (its next state is set later with :meth:`set_next`)."""
        self.latch_names.append(name)
        self.latch_next.append(0)
        self.latch_reset.append(reset)
        return self._lit(1, len(self.latch_names) - 1)

    def set_next(self, latch: int, nxt: int) -> None:
        self.latch_next[((latch - 2) >> 1) >> 2] = nxt

    def and_(self, a: int, b: int) -> int:
        if a == 0 or b == 0 or a == b ^ 1:
            return 0
        if a == 1 or a == b:
            return b
        if b == 1:
            return a
        key = (max(a, b), min(a, b))
        got = self.memo.get(key)
        if got is None:
            self.gates.append(key)
            got = self._lit(2, len(self.gates) - 1)
            self.memo[key] = got
        return got

    def or_(self, a: int, b: int) -> int:
        return self.and_(a ^ 1, b ^ 1) ^ 1

    def xor(self, a: int, b: int) -> int:
        return self.or_(self.and_(a, b ^ 1), self.and_(a ^ 1, b))

    def mux(self, s: int, a: int, b: int) -> int:
        """``a`` when ``s``, else ``b``."""
        return self.or_(self.and_(s, a), self.and_(s ^ 1, b))

    def all(self, lits: list[int]) -> int:
        acc = 1
        for x in lits:
            acc = self.and_(acc, x)
        return acc

    def any(self, lits: list[int]) -> int:
        return self.all([x ^ 1 for x in lits]) ^ 1

    def output(self, name: str, lit: int) -> None:
        self.outputs.append((name, lit))

    def bad_state(self, name: str, lit: int) -> None:
        self.bad.append((name, lit))

    def aig(self) -> Aig:
        """The circuit, numbered inputs, latches, gates (gates in creation order, which is topological)."""
        n_i, n_l = len(self.inputs), len(self.latch_names)
        base = (1, 1 + n_i, 1 + n_i + n_l)  # first variable of inputs, latches, gates

        def lit(x: int) -> int:
            if x < 2:
                return x
            neg = x & 1
            tag = (x - 2 - neg) >> 1
            kind, k = tag & 3, tag >> 2
            var = base[kind] + k
            return 2 * var + neg

        ands = tuple(And(2 * (base[2] + k), lit(a), lit(b)) for k, (a, b) in enumerate(self.gates))
        latches = tuple(Latch(2 * (base[1] + k), lit(self.latch_next[k]), self.latch_reset[k]) for k in range(n_l))
        symbols = [(("i", k), n) for k, n in enumerate(self.inputs)]
        symbols += [(("l", k), n) for k, n in enumerate(self.latch_names)]
        symbols += [(("o", k), n) for k, (n, _) in enumerate(self.outputs)]
        symbols += [(("b", k), n) for k, (n, _) in enumerate(self.bad)]
        return Aig(n_i + n_l + len(ands), tuple(2 * (1 + k) for k in range(n_i)), latches,
                   tuple(lit(x) for _, x in self.outputs), ands, bad=tuple(lit(x) for _, x in self.bad),
                   symbols=tuple(symbols))


def counter(bits: int) -> Aig:
    """A ``bits``-bit up-counter: counts when ``en``, clears on ``rst``; ``wrap`` = at the maximum and enabled."""
    b = Builder()
    en, rst = b.input("en"), b.input("rst")
    cnt = [b.latch(f"c{k}") for k in range(bits)]
    carry = en
    for k, c in enumerate(cnt):
        b.set_next(c, b.and_(b.xor(c, carry), rst ^ 1))
        carry = b.and_(carry, c)
        del k
    b.output("wrap", b.and_(b.all(cnt), en))
    return b.aig()


def shift_register(length: int) -> Aig:
    """``length`` stages; ``d`` enters stage 0 each step; ``q`` is the last stage."""
    b = Builder()
    d = b.input("d")
    stages = [b.latch(f"s{k}") for k in range(length)]
    prev = d
    for s in stages:
        b.set_next(s, prev)
        prev = s
    b.output("q", stages[-1])
    return b.aig()


def arbiter(clients: int) -> Aig:
    """A round-robin arbiter: a one-hot token (reset at client 0) marks the first client to consider; the grant
    goes to the first requesting client from the token on (cyclically), and the token moves past a granted client."""
    b = Builder()
    req = [b.input(f"r{k}") for k in range(clients)]
    tok = [b.latch(f"t{k}", 1 if k == 0 else 0) for k in range(clients)]
    grants = []
    for k in range(clients):
        # Client k is granted if, for some start s with the token, k requests and no client from s to k-1 does.
        terms = []
        for s in range(clients):
            between = [(s + j) % clients for j in range((k - s) % clients)]
            terms.append(b.all([tok[s], req[k], *(req[c] ^ 1 for c in between)]))
        grants.append(b.any(terms))
    anyg = b.any(grants)
    for k in range(clients):
        # Next token: the client after the granted one; unchanged when nothing is granted.
        b.set_next(tok[k], b.mux(anyg, grants[(k - 1) % clients], tok[k]))
    for k, g in enumerate(grants):
        b.output(f"g{k}", g)
    return b.aig()


def fifo(depth: int, width: int = 1) -> Aig:
    """A FIFO of ``depth`` entries of ``width`` bits, as a shift register of valid slots (slot 0 the head).

    ``push`` with data ``d0..`` appends unless full; ``pop`` removes the head unless empty (a push and a pop together
    on a full FIFO both happen). Outputs ``empty``, ``full``, the head's data ``q0..``; bad-state ``overflow``: a
    push while full and not popping.
    """
    b = Builder()
    push, pop = b.input("push"), b.input("pop")
    data = [b.input(f"d{j}") for j in range(width)]
    valid = [b.latch(f"v{k}") for k in range(depth)]
    slots = [[b.latch(f"m{k}_{j}") for j in range(width)] for k in range(depth)]
    empty, full = valid[0] ^ 1, valid[-1]
    do_pop = b.and_(pop, empty ^ 1)
    do_push = b.and_(push, b.or_(full ^ 1, do_pop))
    for k in range(depth):
        # After the pop (shift down by one when popping), the push writes the first free slot.
        v_after = valid[k + 1] if k + 1 < depth else 0
        v_k = b.mux(do_pop, v_after, valid[k])
        prev_v = (b.mux(do_pop, valid[k], valid[k - 1]) if k > 0 else 1)
        write = b.all([do_push, v_k ^ 1, prev_v])
        b.set_next(valid[k], b.or_(v_k, write))
        for j in range(width):
            kept = b.mux(do_pop, slots[k + 1][j] if k + 1 < depth else 0, slots[k][j])
            b.set_next(slots[k][j], b.mux(write, data[j], kept))
    b.output("empty", empty)
    b.output("full", full)
    for j in range(width):
        b.output(f"q{j}", slots[0][j])
    b.bad_state("overflow", b.all([push, full, pop ^ 1]))
    return b.aig()


#: The families by name, each a function of one size parameter (bench/aiger.py, the docs).
FAMILIES = {"counter": counter, "shift_register": shift_register, "arbiter": arbiter, "fifo": fifo}

__all__ = ["FAMILIES", "Builder", "arbiter", "counter", "fifo", "shift_register"]
