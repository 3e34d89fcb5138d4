"""The install's extras: the table of gf01_formal/extras.py agrees with pyproject.toml, and a command whose extra is
missing says in one line which extra to install (exit 2)."""

from __future__ import annotations

import tomllib
from importlib.util import find_spec
from pathlib import Path

import pytest

from gf01_formal import extras
from gf01_formal.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "gf01_formal" / "examples"
#: The distribution that provides each module of the extras' table.
DISTRIBUTION = {"openai": "openai", "statsmodels": "statsmodels", "scipy": "scipy", "matplotlib": "matplotlib",
                "distributed": "dask", "starlette": "starlette", "uvicorn": "uvicorn", "gymnasium": "gymnasium",
                "inspect_ai": "inspect-ai", "pyganak": "pyganak"}
CORE = {"python-sat", "dd", "numpy", "pydantic", "typer", "rich", "cryptography"}


def _name(requirement: str) -> str:
    for stop in "<>=[ ;":
        requirement = requirement.split(stop)[0]
    return requirement


def test_the_extras_table_agrees_with_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert {_name(r) for r in project["dependencies"]} == CORE
    optional = project["optional-dependencies"]
    for extra, modules in extras.EXTRAS.items():
        assert {DISTRIBUTION[m] for m in modules} <= {_name(r) for r in optional[extra]}, extra
    assert set(extras.EXTRAS) <= set(optional) and {"all", "dev"} <= set(optional)
    assert optional["all"] == [f"gf01-formal[{','.join(extras.EXTRAS)}]"]
    assert "gf01-formal[all]" in optional["dev"]


def _without(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``names`` look not installed to the extras check."""
    monkeypatch.setattr(extras, "find_spec", lambda name: None if name in names else find_spec(name))


@pytest.mark.parametrize(("argv", "absent", "extra"), [
    (["report", str(EXAMPLES / "arbiter_priority.json")], "statsmodels", "report"),
    (["pilot-analyze", "runs.jsonl", "--bundle", "b.json"], "matplotlib", "report"),
    (["release", "check", "rel"], "scipy", "report"),
    (["campaign", "b.json", "-o", "out"], "scipy", "report"),
    (["campaign", "b.json", "-o", "out", "--executor", "dask://127.0.0.1:1"], "distributed", "cluster"),
    (["serve", "--bundle", "b.json"], "uvicorn", "web"),
    (["evaluate", str(EXAMPLES / "arbiter_priority.json"), "--agent", "llm", "--model", "m", "-o", "r.jsonl"],
     "openai", "llm"),
    (["import", "inspect", "log.eval", "-o", "r.jsonl"], "inspect_ai", "inspect"),
])
def test_a_missing_extra_is_one_line_naming_it(argv: list[str], absent: str, extra: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.chdir(tmp_path)
    _without(monkeypatch, absent)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("gf01: error: ")
    assert f"pip install 'gf01-formal[{extra}]'" in err and absent in err
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_the_core_commands_need_no_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    _without(monkeypatch, *(m for modules in extras.EXTRAS.values() for m in modules))
    assert main(["verify", str(EXAMPLES / "arbiter_priority.json"), str(EXAMPLES / "arbiter_priority_cert.json"),
                 "--json"]) == 0
    assert '"suff": true' in capsys.readouterr().out
