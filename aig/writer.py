"""AIGER writers: the canonical ASCII text (what instances carry and hash) and the binary format.

Canonical form: variables renumbered as the binary format numbers them (inputs ``1..I``, latches ``I+1..I+L``, AND
gates ``I+L+1..M`` in a topological order: depth-first, children before parents, gates visited in file order), so
``M = I + L + A``, each gate has ``lhs > rhs0 >= rhs1``, and an ``.aag`` file and its ``.aig`` conversion give the same
text; latch resets written always (``0``, ``1`` or the latch's literal); the header's trailing zero counts of
``B C J F`` left out; the symbol table sorted by kind (i, l, o, b, c, j, f) and position; comments dropped (they
carry no behaviour). ``parse(canonical(a))`` is a circuit whose canonical text is ``canonical(a)`` again.

>>> from aig.parser import parse
>>> canonical(parse(b"aag 3 1 0 1 1\\n2\\n6\\n6 3 2\\n"))
'aag 2 1 0 1 1\\n2\\n4\\n4 3 2\\n'
"""

from __future__ import annotations

import numpy as np

from aig.model import Aig, And, Latch


def renumber(aig: Aig) -> Aig:
    """The same circuit in canonical numbering (module docstring); comments dropped."""
    n_i, n_l = len(aig.inputs), len(aig.latches)
    # Sized by the largest variable used, not by M (which may be far larger than what the circuit uses).
    used = [0, *aig.inputs, *(x.lit for x in aig.latches), *(g.lhs for g in aig.ands)]
    top = max(used) >> 1
    new_var = np.zeros(top + 1, dtype=np.int64)
    new_var[np.array(aig.inputs, dtype=np.int64) >> 1] = np.arange(1, n_i + 1)
    new_var[np.array([x.lit for x in aig.latches], dtype=np.int64) >> 1] = np.arange(n_i + 1, n_i + n_l + 1)
    gates = np.array([(g.lhs, g.rhs0, g.rhs1) for g in aig.ands], dtype=np.int64).reshape(-1, 3)
    order = _topological(gates, top)
    gates = gates[order]
    base = n_i + n_l
    new_var[gates[:, 0] >> 1] = np.arange(base + 1, base + len(order) + 1)

    def lits(xs: object) -> np.ndarray:
        a = np.asarray(xs, dtype=np.int64)
        return 2 * new_var[a >> 1] + (a & 1)

    mapped = lits(gates)
    hi, lo = np.maximum(mapped[:, 1], mapped[:, 2]), np.minimum(mapped[:, 1], mapped[:, 2])
    ands = tuple(And(*g) for g in zip(mapped[:, 0].tolist(), hi.tolist(), lo.tolist(), strict=True))
    latch_lits = lits([x.lit for x in aig.latches]).tolist()
    latch_next = lits([x.next for x in aig.latches]).tolist()
    latches = tuple(
        Latch(lit, nxt, x.reset if x.initialised else lit)
        for lit, nxt, x in zip(latch_lits, latch_next, aig.latches, strict=True)
    )
    return Aig(
        base + len(order),
        tuple(range(2, 2 * n_i + 1, 2)),
        latches,
        tuple(lits(aig.outputs).tolist()),
        ands,
        tuple(lits(aig.bad).tolist()),
        tuple(lits(aig.constraints).tolist()),
        tuple(tuple(lits(j).tolist()) for j in aig.justice),
        tuple(lits(aig.fairness).tolist()),
        aig.symbols,
        (),
    )


def _topological(gates: np.ndarray, max_var: int) -> np.ndarray:
    """Gate indices in canonical order: depth-first, children before parents, roots in file order.

    When every gate's inputs are inputs, latches or earlier gates (the usual case), that is the file order itself.
    """
    k = len(gates)
    where = np.full(max_var + 1, k, dtype=np.int64)  # gate index of each variable; k for non-gates
    where[gates[:, 0] >> 1] = np.arange(k)
    kids = where[gates[:, 1:] >> 1]
    if bool(((kids == k) | (kids < np.arange(k)[:, None])).all()):
        return np.arange(k)
    order: list[int] = []
    done = np.zeros(k, dtype=bool)
    kid_list = kids.tolist()
    for root in range(k):
        if done[root]:
            continue
        stack = [(root, False)]
        while stack:
            g, expanded = stack.pop()
            if done[g]:
                continue
            if expanded:
                done[g] = True
                order.append(g)
                continue
            stack.append((g, True))
            # Pushed in reverse so that rhs0's cone is numbered before rhs1's.
            for kid in (kid_list[g][1], kid_list[g][0]):
                if kid < k and not done[kid]:
                    stack.append((kid, False))
    return np.array(order, dtype=np.int64)


def _header(kind: str, aig: Aig) -> str:
    nums = list(aig.header)
    while len(nums) > 5 and nums[-1] == 0:
        nums.pop()
    return " ".join([kind, *map(str, nums)])


def _tail_lines(aig: Aig) -> list[str]:
    lines = [str(x) for x in aig.outputs]
    lines += [str(x) for x in aig.bad]
    lines += [str(x) for x in aig.constraints]
    lines += [str(len(j)) for j in aig.justice]
    lines += [str(x) for j in aig.justice for x in j]
    lines += [str(x) for x in aig.fairness]
    return lines


def _symbol_lines(aig: Aig) -> list[str]:
    return [f"{kind}{pos} {name}" for (kind, pos), name in aig.symbols]


def canonical(aig: Aig) -> str:
    """The canonical ASCII AIGER text of ``aig`` (module docstring)."""
    c = renumber(aig)
    lines = [_header("aag", c)]
    lines += [str(x) for x in c.inputs]
    lines += [f"{latch.lit} {latch.next} {latch.reset}" for latch in c.latches]
    lines += _tail_lines(c)
    lines += [f"{g.lhs} {g.rhs0} {g.rhs1}" for g in c.ands]
    lines += _symbol_lines(c)
    return "\n".join(lines) + "\n"


def binary(aig: Aig) -> bytes:
    """The binary AIGER (``aig``) bytes of ``aig`` in canonical numbering, with its comments."""
    c = renumber(aig)
    head = [_header("aig", c)]
    head += [f"{latch.next} {latch.reset}" if latch.reset else str(latch.next) for latch in c.latches]
    head += _tail_lines(c)
    out = bytearray(("\n".join(head) + "\n").encode())
    for g in c.ands:
        for delta in (g.lhs - g.rhs0, g.rhs0 - g.rhs1):
            while delta >= 0x80:
                out.append((delta & 0x7F) | 0x80)
                delta >>= 7
            out.append(delta)
    tail = _symbol_lines(c)
    if aig.comments:
        tail += ["c", *aig.comments]
    if tail:
        out += ("\n".join(tail) + "\n").encode()
    return bytes(out)


__all__ = ["binary", "canonical", "renumber"]
