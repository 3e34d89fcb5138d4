"""HOA v1 writer: an :class:`hoa.model.Automaton` as canonical HOA text, such that ``parse(write(a)) == [a]``.

Canonical layout: ``HOA:``, ``name:``, ``tool:``, ``States:``, ``Start:`` (one per conjunction), ``AP:``,
``controllable-AP:``, ``Alias:``, ``Acceptance:``, ``acc-name:``, ``properties:`` (one line), then unknown headers in
their original order; the body lists states in model order, one ``State:`` line and then one edge per line. Labels
and acceptance conditions are minimally parenthesised; no comments, single spaces.
"""

from __future__ import annotations

from hoa.label import to_text
from hoa.lexer import encode_string
from hoa.model import AccConst, AccExpr, AccOr, AccSet, Automaton


def acceptance_text(cond: AccExpr) -> str:
    """An acceptance condition in HOA syntax (``Inf(0) & (Fin(1) | Inf(!2))``), minimally parenthesised."""

    def go(c: AccExpr, parent: int) -> str:
        if isinstance(c, AccSet):
            return f"{c.kind}({'!' if c.negated else ''}{c.index})"
        if isinstance(c, AccConst):
            return "t" if c.value else "f"
        prec = 1 if isinstance(c, AccOr) else 2
        sep = " | " if isinstance(c, AccOr) else " & "
        text = sep.join(go(a, prec) for a in c.args)
        return f"({text})" if prec < parent else text

    return go(cond, 0)


def _acc_sig(sets: tuple[int, ...] | None) -> str:
    return "" if sets is None else " {" + " ".join(map(str, sets)) + "}"


def write(aut: Automaton) -> str:
    """The canonical HOA text of ``aut`` (ending with ``--END--`` and a newline)."""
    out = [f"HOA: {aut.version}"]
    if aut.name is not None:
        out.append(f"name: {encode_string(aut.name)}")
    if aut.tool is not None:
        out.append("tool: " + " ".join(encode_string(t) for t in aut.tool))
    if aut.states_declared is not None:
        out.append(f"States: {aut.states_declared}")
    out.extend("Start: " + "&".join(map(str, conj)) for conj in aut.start)
    out.append(" ".join([f"AP: {len(aut.aps)}", *(encode_string(a) for a in aut.aps)]))
    if aut.controllable_ap is not None:
        out.append(" ".join(["controllable-AP:", *map(str, aut.controllable_ap)]))
    out.extend(f"Alias: @{name} {to_text(expr)}" for name, expr in aut.aliases)
    out.append(f"Acceptance: {aut.acc_sets} {acceptance_text(aut.acceptance)}")
    if aut.acc_name is not None:
        out.append(" ".join(["acc-name:", aut.acc_name[0], *map(str, aut.acc_name[1])]))
    if aut.properties:
        out.append(" ".join(["properties:", *aut.properties]))
    out.extend(" ".join([f"{name}:", *values]) for name, values in aut.headers)
    out.append("--BODY--")
    for st in aut.states:
        head = "State:"
        if st.label is not None:
            head += f" [{to_text(st.label)}]"
        head += f" {st.index}"
        if st.name is not None:
            head += " " + encode_string(st.name)
        out.append(head + _acc_sig(st.acc))
        for e in st.edges:
            dest = "&".join(map(str, e.dests))
            label = "" if e.label is None else f"[{to_text(e.label)}] "
            out.append(label + dest + _acc_sig(e.acc))
    out.append("--END--")
    return "\n".join(out) + "\n"


__all__ = ["acceptance_text", "write"]
