"""``gf01 import aiger`` end to end: a circuit becomes an instance that every command plays and scores unchanged."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from aig.build import fifo
from aig.writer import binary, canonical
from gf01_formal.cli import main
from gf01_formal.instances.sources import open_instance

ROOT = Path(__file__).resolve().parent.parent
# A 3-entry FIFO filled by three pushes, then idle: overflow at t* = 5 needs one more push there.
TRACE = "push&!pop&d0;push&!pop&!d0;push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0;!push&!pop&!d0"


def run(capsys, *argv: str) -> str:  # type: ignore[no-untyped-def]
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def test_import_play_and_score_a_circuit(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "fifo.aag").write_text(canonical(fifo(3)) + "c\nmade by a test\n")
    (tmp_path / "fifo.aig").write_bytes(binary(fifo(3)))
    ids = []
    for name in ("fifo.aag", "fifo.aig"):
        out = run(capsys, "import", "aiger", str(tmp_path / name), "--trace", TRACE, "--effect", "overflow",
                  "--observe", "v1", "-o", str(tmp_path / f"{name}.json"), "--json")
        ids.append(json.loads(out)["instance_id"])
    assert ids[0] == ids[1]  # the instance carries the canonical text: ASCII, binary and comments alike
    inst, problem = open_instance(tmp_path / "fifo.aag.json")
    assert inst.system.kind == "aiger" and inst.system.aiger == canonical(fifo(3))
    assert inst.system.outputs == ["empty", "full", "q0", "overflow", "v1"] and problem.circuit
    assert inst.certification is not None and inst.certification.oracle_certificate == [[5, "push", 1]]
    path = str(tmp_path / "fifo.aag.json")
    assert json.loads(run(capsys, "oracle", path, "--json"))["certificate"] == [[5, "push", 1]]
    assert "1 valid certificate" in run(capsys, "enumerate", path)
    (tmp_path / "c.json").write_text('[[5, "push", 1]]')
    assert json.loads(run(capsys, "verify", path, str(tmp_path / "c.json"), "--json"))["valid"] is True
    # A circuit is also an INSTANCE argument, with the instance options (as an HOA file is).
    direct = run(capsys, "oracle", str(tmp_path / "fifo.aig"), "--trace", TRACE, "--effect", "overflow", "--json")
    assert json.loads(direct)["certificate"] == [[5, "push", 1]]
    assert main(["oracle", str(tmp_path / "fifo.aig")]) == 2
    assert "an AIGER circuit needs the instance options" in capsys.readouterr().err
    run(capsys, "cnf", path, str(tmp_path / "f.cnf"))
    assert "latches=6" in (tmp_path / "f.cnf").read_text()
    # The whole panel and an external agent play it; the runs validate as official and report.
    runs = str(tmp_path / "runs.jsonl")
    run(capsys, "evaluate", path, "-o", runs, *(x for a in ("random", "greedy", "search", "tool", "oracle")
                                                for x in ("--agent", a)),
        "--agent-cmd", f"{sys.executable} {ROOT / 'examples' / 'agent_example.py'}")
    records = [json.loads(line) for line in Path(runs).read_text().splitlines()]
    assert len(records) == 6
    assert {r["agent_name"]: r["valid"] for r in records if r["agent_name"] in ("tool", "oracle")} \
        == {"tool": True, "oracle": True}
    assert "ok" in run(capsys, "validate", runs, "--bundle", path, "--official")
    run(capsys, "report", runs, "--bundle", path, "-o", str(tmp_path / "report.json"))


def test_outputs_named_like_syntcomp_symbols_are_quoted_in_effects(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``err<0>``, ``a.b[3]``: a bare name is refused in one line, a quoted one is read from the command line, the
    instance file and a bundle, and the stored effect text reads back to the same effect."""
    import dataclasses

    from gf01_formal.instances.io import save_artifact
    from gf01_formal.instances.model import make_bundle

    circuit = fifo(3)
    renamed = {"overflow": "err<0>", "empty": "a.b[3]"}
    circuit = dataclasses.replace(circuit, symbols=tuple((k, renamed.get(n, n)) for k, n in circuit.symbols))
    (tmp_path / "f.aag").write_text(canonical(circuit))
    path = str(tmp_path / "f.aag")
    assert main(["import", "aiger", path, "--trace", TRACE, "--effect", "err<0>", "-o", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "goes in double quotes" in err
    assert main(["oracle", path, "--trace", TRACE, "--effect", '"err<0>', "--json"]) == 2
    assert "unterminated quoted name" in capsys.readouterr().err
    inst_path = tmp_path / "i.json"
    run(capsys, "import", "aiger", path, "--trace", TRACE, "--effect", '"err<0>" & !"a.b[3]"', "-o", str(inst_path))
    inst, _ = open_instance(inst_path)
    assert inst.effect == '"err<0>" & !"a.b[3]"'
    assert json.loads(run(capsys, "oracle", str(inst_path), "--json"))["certificate"] == [[5, "push", 1]]
    save_artifact(tmp_path / "b.json", make_bundle([inst], generator_version="test", provenance="test"))
    got = run(capsys, "oracle", str(tmp_path / "b.json"), "--id", inst.instance_id, "--json")
    assert json.loads(got)["certificate"] == [[5, "push", 1]]
    direct = run(capsys, "oracle", path, "--trace", TRACE, "--effect", '"err<0>"', "--json")
    assert json.loads(direct)["certificate"] == [[5, "push", 1]]
