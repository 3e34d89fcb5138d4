"""The CLI shell: usage errors and user errors are one message and a non-zero exit, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gf01_formal.cli import main


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["verify"], "Missing argument"),
        (["import", "hoa"], "Missing argument"),
        (["generate", "--count", "x"], "Invalid value"),
        (["no-such-command"], "No such command"),
        (["oracle", "x.json", "--backend", "bogus"], "'--backend': 'bogus' is not one of 'explicit'"),
    ],
)
def test_usage_errors_exit_2_with_a_message(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and "Value error" not in err


def test_user_error_is_one_line(tmp_path, capsys):
    # In this process: the same one line from the installed entry point is tests/test_bad_input.py's
    # test_bad_input_in_a_real_process.
    missing = tmp_path / "nope.json"
    assert main(["oracle", str(missing)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gf01: error: ") and "nope.json" in lines[0]


def test_help_lists_every_command_group(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for cmd in ("verify", "enumerate", "oracle", "generate", "split", "split-policy-check", "hoa", "import"):
        assert cmd in out


def test_backend_option_names_every_backend():
    """--backend's choices (a Literal, so that help lists them without importing the solvers) are solvers.api's."""
    from typing import get_args

    from gf01_formal.cli.common import BackendName
    from solvers.api import BACKENDS

    assert set(get_args(BackendName)) == set(BACKENDS)


@pytest.mark.parametrize("argv", [["--help"], ["verify", "--help"], ["hoa", "check", "--help"], ["--version"]])
def test_help_and_version_from_the_one_command_tree(argv, capsys):
    """The parser builds only the command named (or the whole tree for help): both give the same help text."""
    import typer

    from gf01_formal.cli import app

    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("gf01-formal ") if argv == ["--version"] else out.startswith("Usage: gf01 ")
    if argv[0] == "verify":  # the same text as the whole tree's own help for the command
        command = typer.main.get_command(app)
        with command.make_context("gf01", ["verify"], resilient_parsing=True) as ctx:
            sub = command.get_command(ctx, "verify")
            with sub.make_context("verify", [], parent=ctx, resilient_parsing=True) as sub_ctx:
                assert out == sub.get_help(sub_ctx) + "\n"


def _commands() -> dict:
    """Every command of the CLI as typed ("hoa check", "verify", ...) -> its click command."""
    import typer

    from gf01_formal.cli import app

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from walk(sub, (*path, name))
            return
        yield " ".join(path), cmd

    return dict(walk(typer.main.get_command(app), ()))


def test_docs_cli_md_lists_every_command_and_option():
    """docs/cli.md names every command of the tree and every option each one takes."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    commands = _commands()
    for path, cmd in commands.items():
        assert f"`gf01 {path} " in doc or f"`gf01 {path}`" in doc, path
        for param in cmd.params:
            for opt in param.opts + param.secondary_opts:
                if opt.startswith("-"):
                    assert f"`{opt}" in doc or f"{opt} " in doc or f"/{opt}" in doc, (path, opt)


def test_readme_command_table_matches_the_cli():
    """Every command is in the README's table, and every option the table shows is one the command takes."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    commands = _commands()
    rows = [line for line in readme.splitlines() if line.startswith("| `gf01 ")]
    seen = set()
    for row in rows:
        usage = row.split("`")[1].removeprefix("gf01 ")
        path = next(p for p in sorted(commands, key=len, reverse=True) if usage == p or usage.startswith(p + " "))
        seen.add(path)
        known = {o for param in commands[path].params for o in param.opts + param.secondary_opts}
        for opt in re.findall(r"(?<![\w-])--?[a-z][a-z-]*", usage):
            assert opt in known, (path, opt)
    assert seen == set(commands)


# -- command modules loaded on demand (issue 30) -----------------------------------------------------------------

_MODULES_OF = ("import sys, runpy; sys.argv = ['gf01', *sys.argv[1:]]; from gf01_formal.cli import main; main(); "
               "print('MODULES', ' '.join(sorted(sys.modules)))")


def _modules_after(*argv: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``gf01 ARGV`` (stdout's last line)."""
    out = subprocess.run([sys.executable, "-c", _MODULES_OF, *argv], capture_output=True, text=True, check=True,
                         timeout=300).stdout
    last = out.splitlines()[-1]
    assert last.startswith("MODULES ")
    return set(last.split()[1:])


def _playing_or_solving(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in ("solvers", "encoders")
                  or m.startswith(("gf01_formal.agents", "gf01_formal.play.episode", "gf01_formal.play.gym_env",
                                   "gf01_formal.runs.runner", "gf01_formal.campaign")))


def test_gf01_report_loads_no_agent_engine_or_solver(tmp_path, monkeypatch, capsys) -> None:
    """`gf01 report` (a report of a small runs file) imports only its own command module: no agent, no episode
    engine, no solver (the CLI used to import every command module, the agents' among them). The run records embed
    the protocol's message types (gf01_formal.play.protocol), not the engine. (`gf01 report --help` parses with the
    same one-command tree and runs nothing more: the report's own process answers for it.)

    And `gf01 --help`, which registers every command, `gf01 play` among them, whose players subclass Agent, loads
    neither the protocol's pydantic models nor pydantic: the agents' base imported the models for its hooks'
    annotations, about 0.25 s of the 0.7 s of CPU of every `gf01 --help` (docs/performance.md, "Test suite", sixth
    pass).

    The evaluation that makes the runs writes its stderr to no terminal (capsys): its progress bar is off, and rich,
    which would draw it, is not imported (an import of it fails here): about 0.08 s of CPU of every `gf01
    evaluate|generate|campaign` process a script or a test starts (eighth pass)."""
    from pathlib import Path

    bundle = Path(__file__).resolve().parent.parent / "gf01_formal" / "examples" / "arbiter_priority.json"
    runs = tmp_path / "runs.jsonl"
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "rich.console", None)
        m.setitem(sys.modules, "rich.progress", None)
        assert main(["evaluate", str(bundle), "--agent", "random", "--jobs", "1", "-o", str(runs)]) == 0
    loaded = _modules_after("report", str(runs), "-o", str(tmp_path / "report.md"))
    assert _playing_or_solving(loaded) == []
    assert "gf01_formal.cli.report" in loaded and "gf01_formal.cli.play" not in loaded
    # Reading runs for a report (its loader, the runs file, the record model) is what loaded them, as a library
    # user's import of the same modules would (tests/test_runs_spine.py asked that in an interpreter of its own).
    assert {"gf01_formal.report.load", "gf01_formal.runs.store", "gf01_formal.runs.record"} <= loaded
    assert (tmp_path / "report.md").read_text().startswith("#")
    loaded = _modules_after("--help")
    assert "gf01_formal.cli.play" in loaded and "gf01_formal.agents.base" in loaded
    assert "gf01_formal.play.protocol" not in loaded and "pydantic" not in loaded


def test_the_command_table_names_every_command_of_its_modules() -> None:
    """root.COMMANDS (what a command line loads) agrees with what the modules register: each name's modules alone
    register it, and the whole tree has exactly the table's names."""
    import typer

    from gf01_formal.cli import root

    whole = typer.main.get_command(root.tree())
    assert sorted(whole.commands) == sorted(root.COMMANDS)  # type: ignore[attr-defined]
    for name in root.COMMANDS:
        one = typer.main.get_command(root.tree(name))
        assert list(one.commands) == [name]  # type: ignore[attr-defined]
