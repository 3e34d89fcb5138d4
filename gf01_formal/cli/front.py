"""The front door: ``gf01 verify INSTANCE CERT [options]``, the small query people and scripts run one at a time,
answered without typer and pydantic (whose imports and set-up cost it more than the query itself).

:func:`verify` reads the command line by hand and answers only the plain form: INSTANCE an instance file or a bundle,
CERT a certificate file, and the options ``--json``, ``--subset-min``, ``--best-match``, ``--gold-set M|MB``,
``--backend NAME``, ``--id ID``, ``--seconds S`` and ``--memory MIB``, each given at most once, spelled in full, with
a plain decimal number for S and MIB. For anything else (``--help``, ``--certs``, the HOA/AIGER instance options, an
``--opt=value`` form, an unknown or repeated option, a value out of range) and for every error it meets (a missing
or malformed file, an instance the pydantic-free reader declines, a bad instance), it returns None before printing
anything, and the typer command answers instead: help, usage errors and error messages are the typer command's own.
What it prints is made by the same functions as the typer command's (:mod:`gf01_formal.cli.verify`);
``tests/test_front_door.py`` runs both paths over the examples, a bundle and bad inputs and compares stdout, stderr
and the exit status byte for byte.
"""

from __future__ import annotations

import re
from typing import Any

from gf01_formal.cli.plain import DEFAULT_MEMORY, MAX_MEMORY, MAX_SECONDS, Deadline, emit

#: The flags of the plain form and the options that take a value, by their keyword in :func:`_parse`'s result.
FLAGS = {"--json": "json_out", "--subset-min": "subset_min", "--best-match": "best_match"}
VALUED = {"--gold-set": "gold_set", "--backend": "backend", "--id": "instance_id", "--seconds": "seconds",
          "--memory": "memory"}
GOLD_SETS = ("M", "MB")
#: A number as the front door takes it; any other spelling (1e3, inf, 0x10, 1_000) is left to the typer command.
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def verify(args: list[str]) -> int | None:
    """The exit status of ``gf01 verify`` run with ``args`` (the whole command line after ``gf01``), or None when the
    front door does not answer it (nothing printed): then the typer command must. May raise what the typer command
    would let through to :func:`gf01_formal.cli.main` (Unknown past ``--seconds``/``--memory``, a closed pipe)."""
    if not args or args[0] != "verify":
        return None
    given = _parse(args[1:])
    if given is None:
        return None
    from solvers.limits import Unknown

    try:
        from gf01_formal.cli.verify import certificate_report, undecided
        from gf01_formal.instances.plain import open_plain

        deadline = Deadline(given["seconds"], given["memory"])
        with deadline.guard("loading the instance"):
            problem = open_plain(given["instance"], given["instance_id"])
        if problem is None:
            return None
        record, human = certificate_report(problem, given["cert"], subset_min=given["subset_min"],
                                           best_match=given["best_match"], gold_set=given["gold_set"],
                                           backend=given["backend"], deadline=deadline)
    except Unknown:
        raise  # the answer itself ('unknown'), printed by gf01_formal.cli.main as for the typer command
    except Exception:  # an error of the input: the typer command reports it in its own words
        return None
    emit(record, given["json_out"], human)
    if undecided(record):
        from gf01_formal.cli.exits import EXIT_UNKNOWN

        return EXIT_UNKNOWN
    return 0


def _parse(argv: list[str]) -> dict[str, Any] | None:
    """The arguments of the plain form of ``verify`` (INSTANCE, CERT and the options), or None for any other."""
    given: dict[str, Any] = {"json_out": False, "subset_min": False, "best_match": False, "gold_set": "M",
                             "backend": None, "instance_id": None, "seconds": None, "memory": DEFAULT_MEMORY}
    seen: set[str] = set()
    positional: list[str] = []
    k = 0
    while k < len(argv):
        arg = argv[k]
        k += 1
        if arg in FLAGS or arg in VALUED:
            if arg in seen:
                return None
            seen.add(arg)
            if arg in FLAGS:
                given[FLAGS[arg]] = True
                continue
            if k == len(argv) or argv[k].startswith("-"):
                return None
            given[VALUED[arg]] = argv[k]
            k += 1
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
    if len(positional) != 2 or given["gold_set"] not in GOLD_SETS:
        return None
    given["instance"], given["cert"] = positional
    if given["backend"] is not None:
        from solvers.api import BACKENDS

        if given["backend"] not in BACKENDS:
            return None
    for name, low, high in (("seconds", 0.0, MAX_SECONDS), ("memory", 1.0, MAX_MEMORY)):
        value = given[name]
        if isinstance(value, str):
            if not _DECIMAL.fullmatch(value) or not low <= float(value) <= high:
                return None
            given[name] = float(value)
    return given
