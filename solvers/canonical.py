"""Canonical forms of certificates at the solver level: atom order, timesteps, flips, and the enumeration order.

A certificate is a tuple of atoms ``(t, i, v)`` (input index ``i``). Its canonical form sorts atoms by
``(t, input name, v)``, the order of the canonical JSON (docs/semantics.md); canonical enumeration order compares
``(|TS(C)|, |C|, atoms)`` (issue 3).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from encoders.problem import Atom, Flip, Problem


def canonical(problem: Problem, atoms: Iterable[Atom]) -> tuple[Atom, ...]:
    """``atoms`` sorted by (t, input name, v), duplicates removed."""
    names = problem.system.inputs
    return tuple(sorted(set(atoms), key=lambda a: (a[0], names[a[1]], a[2])))


def timesteps(atoms: Iterable[Atom]) -> frozenset[int]:
    """TS(C): the distinct timesteps a certificate touches."""
    return frozenset(a[0] for a in atoms)


def order_key(problem: Problem, atoms: Iterable[Atom]) -> tuple:
    """The canonical enumeration key: (|TS|, |C|, atoms as (t, input name, v))."""
    c = canonical(problem, atoms)
    names = problem.system.inputs
    return (len(timesteps(c)), len(c), tuple((t, names[i], v) for t, i, v in c))


def flips_to_atoms(problem: Problem, flips: Iterable[Flip]) -> tuple[Atom, ...]:
    """The certificate that flips exactly ``flips``: each atom sets the opposite of the base value."""
    return canonical(problem, ((t, i, 1 - ((problem.trace[t] >> i) & 1)) for t, i in flips))


def effective_flips(problem: Problem, atoms: Iterable[Atom]) -> frozenset[Flip]:
    """The flips an atom set really makes (atoms that restate the base value change nothing)."""
    return frozenset((t, i) for t, i, v in atoms if ((problem.trace[t] >> i) & 1) != v)


def certificate_to_json(atoms: Iterable[Atom], inputs: Sequence[str]) -> list[list[Any]]:
    """The JSON form of atoms ``[[t, "input", v], ...]``, sorted by (t, input name, v).

    >>> certificate_to_json([(3, 1, 0), (1, 0, 1)], ["req", "ack"])
    [[1, 'req', 1], [3, 'ack', 0]]
    """
    return sorted([t, inputs[i], v] for t, i, v in atoms)


def certificate_json(problem: Problem, atoms: Iterable[Atom]) -> str:
    """A certificate's canonical JSON: ``[[t, input_name, v], ...]`` sorted by (t, name, v), compact separators."""
    return json.dumps(certificate_to_json(atoms, problem.system.inputs), separators=(",", ":"))


def certificate_digest(problem: Problem, atoms: Iterable[Atom]) -> str:
    """sha256 hex digest of :func:`certificate_json`: the last tie-break of the best match (docs/semantics.md)."""
    return hashlib.sha256(certificate_json(problem, atoms).encode()).hexdigest()
