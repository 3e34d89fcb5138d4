"""The aiger_dir family: certified instances generated from a directory of user AIGER circuits, deterministic in the
seed (same bytes for any number of jobs), with the file named, and a bad circuit refused with its name."""

from __future__ import annotations

import pytest

from aig.build import arbiter, counter, fifo
from aig.writer import binary, canonical
from gf01_formal.instances.generator import generate, load_config
from gf01_formal.instances.io import instance_problem
from gf01_formal.instances.model import dumps
from hoa.errors import Gf01Error


def test_aiger_dir_family(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a_fifo.aig").write_bytes(binary(fifo(3)))
    (tmp_path / "b_arbiter.aag").write_text(canonical(arbiter(3)))
    (tmp_path / "c_counter.aag").write_text(canonical(counter(3)))
    (tmp_path / "notes.txt").write_text("ignored")
    cfg = load_config({"families": [{"kind": "aiger_dir", "path": str(tmp_path)}], "horizon": [6, 8]})
    b = generate(5, 4, cfg)
    assert b.instances, [s.reasons for s in b.skipped]
    for inst in b.instances:
        assert inst.system.kind == "aiger" and inst.meta.family == "aiger_dir"
        assert inst.meta.family_params["file"] in {"a_fifo.aig", "b_arbiter.aag", "c_counter.aag"}
        assert len(inst.meta.family_params["sha256"]) == 64
        assert inst.certification is not None and inst.certification.oracle_eff_t is not None
        instance_problem(inst)
    again = generate(5, 4, cfg, jobs=2)
    assert dumps(again) == dumps(b)  # DEC-024: same seed, same bytes, any number of jobs


def test_aiger_dir_refuses_bad_circuits_and_empty_directories(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Gf01Error, match=r"no \.aag or \.aig files"):
        load_config({"families": [{"kind": "aiger_dir", "path": str(tmp_path)}]})
    (tmp_path / "bad.aag").write_text("aag 1 0 1 1 0\n2 2 2\n2\n")  # an uninitialised latch
    cfg = load_config({"families": [{"kind": "aiger_dir", "path": str(tmp_path)}], "max_attempts": 1})
    with pytest.raises(Gf01Error) as ei:
        generate(1, 1, cfg)
    assert ei.value.file is not None and ei.value.file.endswith("bad.aag") and "no reset value" in ei.value.message
