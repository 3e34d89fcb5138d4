"""Checking HOA files: the per-file record of ``gf01 hoa check`` (the automata read, and the first error).

``check_text(text, file)`` -> ``{"file", "ok", "automata": [{"states", "aps", "acc_sets", "acceptance", "start",
"controllable_ap", "edges"}], "error": {"line", "col", "message"} | null}``; ``automata`` lists those read before
an error. A text with no automaton at all is not valid HOA.
"""

from __future__ import annotations

from typing import Any

from hoa.errors import Gf01Error
from hoa.model import Automaton
from hoa.parser import iter_parse
from hoa.writer import acceptance_text

#: What an empty (or comment-only) file is told: it holds no automaton, so it is not valid HOA.
NO_AUTOMATON = "no automaton (an HOA file starts with 'HOA: v1')"


def automaton_summary(aut: Automaton) -> dict[str, Any]:
    """The per-automaton record of ``gf01 hoa check --json``."""
    # States: the declared count, or one more than the largest listed state, whichever is larger (states only
    # referenced by Start: or an edge and never listed do not count).
    states = max([aut.states_declared or 0, *(s.index + 1 for s in aut.states)])
    return {
        "states": states,
        "aps": len(aut.aps),
        "acc_sets": aut.acc_sets,
        "acceptance": acceptance_text(aut.acceptance),
        "start": [list(conj) for conj in aut.start],
        "controllable_ap": None if aut.controllable_ap is None else list(aut.controllable_ap),
        "edges": aut.num_edges,
    }


def check_text(text: str, path: str) -> dict[str, Any]:
    """The ``check --json`` record of one file's text: the automata read and the first error, if any."""
    automata: list[dict[str, Any]] = []
    error: dict[str, Any] | None = None
    try:
        for aut in iter_parse(text, path):
            automata.append(automaton_summary(aut))
    except Gf01Error as err:
        error = {"line": err.line, "col": err.col, "message": err.message}
    if error is None and not automata:
        error = {"line": 1, "col": 1, "message": NO_AUTOMATON}
    return {"file": path, "ok": error is None, "automata": automata, "error": error}
