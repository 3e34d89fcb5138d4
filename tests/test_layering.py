"""The import graph of the five packages, read with ast from the files (nothing is imported): no module imports a
higher layer (hoa <- aig <- encoders <- solvers <- gf01_formal; the statement in docs/architecture.md), ``aig``
takes from ``hoa`` only what it is said to, playing reaches no report, and no two modules import each other,
directly or through others, counting the imports made inside functions too (a lazy import hides a circle from
Python, not from a reader)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The layers, lowest first: a module imports only its own layer and the layers below it. hoa/ and aig/ are the
#: ground floor together, with hoa/ below aig/ (aig uses three modules of hoa, hoa nothing of aig).
LAYERS = ("hoa", "aig", "encoders", "solvers", "gf01_formal")
#: What aig/ may take from hoa/ (docs/architecture.md, docs/aiger.md, aig/__init__.py say the same).
AIG_USES_OF_HOA = {"hoa.errors", "hoa.files", "hoa.mealy"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in LAYERS for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``path`` imports anywhere in its text. ``from pkg import sub`` counts as an import of the
    submodule ``pkg.sub`` alone when every name imported is a submodule (Python runs ``pkg/__init__`` either way,
    but that is the package's choice, not this module's dependency)."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in known]
            targets.update(subs)
            if len(subs) < len(node.names):
                targets.add(module)
    out = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


@functools.cache  # parsed once per process: every test here only reads it
def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle() -> None:
    assert _cycles(_graph()) == []


def test_no_layer_imports_a_higher_one() -> None:
    rank = {pkg: i for i, pkg in enumerate(LAYERS)}
    upward = [
        f"{mod} -> {dep}"
        for mod, deps in sorted(_graph().items())
        for dep in sorted(deps)
        if rank[dep.split(".")[0]] > rank[mod.split(".")[0]]
    ]
    assert upward == []


def test_aig_takes_from_hoa_only_what_it_is_said_to() -> None:
    used = {dep for mod, deps in _graph().items() if mod.split(".")[0] == "aig" for dep in deps
            if dep.split(".")[0] == "hoa"}
    assert used <= AIG_USES_OF_HOA, sorted(used - AIG_USES_OF_HOA)
    assert used, "aig/ is no longer read: the test would pass on nothing"


def test_every_package_is_scanned() -> None:
    # A package left out of LAYERS would be neither ranked nor checked (aig/ once was): every top-level package of
    # the project's code is in it.
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert packages <= set(LAYERS), sorted(packages - set(LAYERS))


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in graph[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


@pytest.mark.parametrize("player", ["gf01_formal.campaign.shards", "gf01_formal.runs.runner"])
def test_playing_reaches_no_report(player: str) -> None:
    # issue 30: a worker that plays runs (play_batch, play_run) needs nothing of the reports; the diagnostic's caps
    # are the scorer's, their metering the solver floor's.
    reached = _reach(_graph(), player)
    assert sorted(m for m in reached if m.startswith("gf01_formal.report")) == []
    assert "gf01_formal.scoring.caps" in reached  # the reader sees the play path: the test is not vacuous


def _package(module: str) -> str:
    """The unit of gf01_formal/'s layout a module belongs to: its subpackage, or itself when it lies loose."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_two_parts_of_gf01_formal_use_each_other() -> None:
    # Modules without a circle can still tie two subpackages together (instances/a -> scoring/b, scoring/c ->
    # instances/d): then neither is a floor of its own. The subpackages and loose modules must form layers too.
    packages: dict[str, set[str]] = {}
    for mod, deps in _graph().items():
        if mod.startswith("gf01_formal."):
            here = _package(mod)
            packages.setdefault(here, set()).update(
                _package(d) for d in deps if d.startswith("gf01_formal.") and _package(d) != here)
    assert _cycles(packages) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    # The graph tests above pass on an empty answer: this one shows the finder is not blind.
    assert _cycles(graph) == expected


def test_the_import_reader_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    known = {"pkg": tmp_path / "__init__.py", "pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py"}
    (tmp_path / "a.py").write_text("def f():\n    from . import b\n    from pkg.b import thing\n")
    assert _imports("pkg.a", tmp_path / "a.py", known) == {"pkg.b"}
