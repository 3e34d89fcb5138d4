"""The optional extras of the install (``pip install 'gf01-formal[report]'``): which modules each one brings, and
the one check a command makes before its heavy imports.

The core install (HOA, encoders, solvers, instances, certificates, play, the built-in agents, run records, the CLI)
needs none of them. A command that needs an extra calls :func:`require` first, so that a missing extra is one line
naming the extra to install (exit 2), not a traceback from deep inside the command. The table must agree with
``[project.optional-dependencies]`` in pyproject.toml (tests/test_extras.py checks it).
"""

from __future__ import annotations

from importlib.util import find_spec

from hoa.errors import Gf01Error

#: Each extra and the top-level modules it installs that the commands import.
EXTRAS: dict[str, tuple[str, ...]] = {
    "llm": ("openai",),
    "report": ("statsmodels", "scipy", "matplotlib"),
    "cluster": ("distributed",),
    "web": ("starlette", "uvicorn"),
    "gym": ("gymnasium",),
    "inspect": ("inspect_ai",),
    "count": ("pyganak",),
}


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (found without importing them: cheap)."""
    return [name for name in EXTRAS[extra] if find_spec(name) is None]


def require(extra: str, what: str) -> None:
    """Raise Gf01Error naming ``extra`` when one of its modules is not installed; ``what`` names the command."""
    absent = missing(extra)
    if absent:
        raise Gf01Error(f"{what} needs the '{extra}' extra ({', '.join(absent)} not installed): "
                        f"pip install 'gf01-formal[{extra}]'")
