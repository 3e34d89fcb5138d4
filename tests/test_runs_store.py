"""Runs files: `evaluate -o` appends to a runs file or a new file only; anything else is refused and left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus import corpus_path, needs_corpus

from gf01_formal.cli import main
from gf01_formal.runs.store import RunsFile

PEER = corpus_path("peer")


@pytest.fixture(scope="module")
def bundle(tiny_bundle: Path) -> Path:
    return tiny_bundle


def evaluate(bundle: Path, out: Path) -> int:
    return main(["evaluate", str(bundle), "--agent", "random", "-o", str(out)])


@pytest.mark.parametrize("text", [
    "compact",  # an artifact written without a final newline: all of it would look like a torn line
    "pretty",
    '{"a": 1}\n',
    "hello",
    pytest.param("peer", marks=needs_corpus),
])
def test_a_file_that_is_not_a_runs_file_is_refused_and_left_alone(bundle: Path, tmp_path: Path, text: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.jsonl"
    if text == "compact":
        text = json.dumps(json.loads(bundle.read_text()), separators=(",", ":"))
    elif text == "pretty":
        text = bundle.read_text()
    elif text == "peer":
        text = (PEER / "runs_v1_valid.jsonl").read_text()
    out.write_text(text)
    assert evaluate(bundle, out) == 2
    err = capsys.readouterr().err
    assert "not a runs file" in err and str(out) in err and err.count("\n") == 1
    assert out.read_text() == text and not Path(f"{out}.d").exists()


def test_a_torn_first_record_is_cut_and_the_runs_played(bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    assert evaluate(bundle, out) == 0
    whole = out.read_text().splitlines(keepends=True)
    out.write_text(whole[0][:40])  # a crash during the very first append
    assert RunsFile(out).repaired == 40 and out.read_text() == ""
    assert evaluate(bundle, out) == 0 and len(out.read_text().splitlines()) == len(whole)


@needs_corpus
def test_importing_peer_rows_none_of_which_can_be_rescored_writes_nothing(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    ours = tmp_path / "peer.json"
    assert main(["import", "peer", str(PEER / "instance_bundle_v1.json"), "-o", str(ours)]) == 0
    out = tmp_path / "legacy.jsonl"
    # The corpus's legacy rows carry no certificate: nothing to re-score, so no (empty, invalid) runs file either.
    assert main(["import", "runs", str(PEER / "runs_pre_v1_legacy.jsonl"), "--bundle", str(ours), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no row could be imported (4 skipped)" in err and "no certificate" in err and err.count("\n") == 1
    assert not out.exists()
