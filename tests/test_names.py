"""Agents' names (issue 31): ``--agent-name`` for an external program and for a model; one program keeps one name on
every track; reports name a model by its model and a program by its file, never by a local path; run ids hash the
program's content and arguments, not where it lies."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from gf01_formal.agents.base import AgentSpec, program_sha256, spec_digest
from gf01_formal.cli import main
from gf01_formal.report.coverage import base_label

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent_example.py"


def run_ids(path: Path) -> list[str]:
    return [json.loads(x)["run_id"] for x in path.read_text().splitlines()]


def evaluate(bundle: Path, program: Path, out: Path, *extra: str) -> None:
    assert main(["evaluate", str(bundle), "--agent-cmd", f"{sys.executable} {program} --quiet", "--sandbox", "none",
                 "-o", str(out), *extra]) == 0


@pytest.fixture
def programs(tmp_path: Path) -> tuple[Path, Path]:
    """The example agent, twice: the same file in two places."""
    out = []
    for where in ("here", "there/deeper"):
        (tmp_path / where).mkdir(parents=True)
        out.append(Path(shutil.copy(EXAMPLE, tmp_path / where / "agent.py")))
    return out[0], out[1]


def test_a_moved_program_keeps_its_run_ids_and_a_changed_one_gets_new_ones(
        tiny_bundle: Path, tmp_path: Path, programs: tuple[Path, Path]) -> None:
    here, there = programs
    evaluate(tiny_bundle, here, tmp_path / "a.jsonl")
    evaluate(tiny_bundle, there, tmp_path / "b.jsonl")
    assert run_ids(tmp_path / "a.jsonl") == run_ids(tmp_path / "b.jsonl")
    # the record still says which command ran; its hash is checked as the identity it was made from
    rec = json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])
    assert str(there) in rec["agent_spec"]["params"]["cmd"]
    assert rec["agent_hash"] == spec_digest(rec["agent_spec"])
    assert main(["validate", str(tmp_path / "b.jsonl"), "--bundle", str(tiny_bundle)]) == 0
    there.write_text(there.read_text() + "\n# changed\n")
    evaluate(tiny_bundle, there, tmp_path / "c.jsonl")
    assert set(run_ids(tmp_path / "c.jsonl")).isdisjoint(run_ids(tmp_path / "a.jsonl"))
    # other arguments are another agent too
    assert main(["evaluate", str(tiny_bundle), "--agent-cmd", f"{sys.executable} {here}", "--sandbox", "none", "-o",
                 str(tmp_path / "d.jsonl")]) == 0
    assert set(run_ids(tmp_path / "d.jsonl")).isdisjoint(run_ids(tmp_path / "a.jsonl"))


def test_one_program_keeps_one_name_on_every_track_and_no_path_reaches_the_report(
        tiny_bundle: Path, tmp_path: Path, programs: tuple[Path, Path]) -> None:
    here, _ = programs
    runs = tmp_path / "runs.jsonl"
    for track in ("EVAL-CB", "EVAL-TA", "EVAL-OC"):
        evaluate(tiny_bundle, here, runs, "--track", track, "--agent-name", "my-agent")
    assert main(["report", str(runs), "-o", str(tmp_path / "report.md"), "-o", str(tmp_path / "report.json")]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    (agent,) = report["agents"]
    assert agent["agent"] == "my-agent" and agent["eval_tracks"] == ["EVAL-CB", "EVAL-OC", "EVAL-TA"]
    for text in ((tmp_path / "report.md").read_text(), (tmp_path / "report.json").read_text()):
        assert str(tmp_path) not in text and "agent.py" in text
    # without a name, the program's file name (never its directory)
    unnamed = tmp_path / "unnamed.jsonl"
    for track in ("EVAL-CB", "EVAL-TA"):
        evaluate(tiny_bundle, here, unnamed, "--track", track)
    assert main(["report", str(unnamed), "-o", str(tmp_path / "u.json")]) == 0
    assert [a["agent"] for a in json.loads((tmp_path / "u.json").read_text())["agents"]] == ["cmd:agent.py"]


def test_reports_name_a_model_by_its_model_or_the_name_given() -> None:
    from gf01_formal.agents.llm import LLMConfig

    plain = LLMConfig.from_params({"model": "qwen2.5-7b", "base_url": "http://127.0.0.1:8000/v1"}).params()
    named = LLMConfig.from_params({"model": "qwen2.5-7b", "base_url": "http://127.0.0.1:8000/v1",
                                   "label": "qwen-local"}).params()
    assert "label" not in plain  # earlier run ids stay
    assert base_label({"params": plain}, "llm") == "llm:qwen2.5-7b"
    assert base_label({"params": named}, "llm") == "qwen-local"
    assert AgentSpec("llm", "EVAL-CB", named).label == "qwen-local"
    assert base_label({"params": {}}, "random") == "random"


@pytest.mark.parametrize(("args", "needle"), [
    (["--agent", "random", "--agent-name", "x"], "--agent-name"),
    (["--agent-cmd", "python3 a.py", "--agent-name", "../x"], "--agent-name"),
])
def test_a_bad_agent_name_is_one_line(tiny_bundle: Path, tmp_path: Path, capsys: Any, args: list[str],
                                      needle: str) -> None:
    assert main(["evaluate", str(tiny_bundle), *args, "-o", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and needle in err


def test_the_program_hash_covers_every_file_the_command_names(tmp_path: Path) -> None:
    a = tmp_path / "a.py"
    a.write_text("print(1)\n")
    assert program_sha256("python3 -c 'print(1)'") is None
    first = program_sha256(f"python3 {a}")
    assert first is not None
    moved = tmp_path / "sub"
    moved.mkdir()
    assert program_sha256(f"python3 {shutil.copy(a, moved / 'a.py')}") == first
    a.write_text("print(2)\n")
    assert program_sha256(f"python3 {a}") != first
