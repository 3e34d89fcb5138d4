"""Import of the peer implementation's instance bundles (``gf01.instance_bundle.v1``) as our instances.

Peer instances keep their ``instance_id`` (``meta.id_scheme = "imported"``); their explicit tables become
``System(kind="table")`` with ``next[q][x]``, ``out[q][x]`` bit-packed in ``input_aps`` / ``output_aps`` order
(the peer's input key ``"in0=b|in1=b|in2=b"`` lists the inputs in ``input_aps`` order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gf01_formal.artifacts import read_json
from gf01_formal.instances.io import instance_problem
from gf01_formal.instances.model import Bundle, Instance, Meta, System, TableSystem, make_bundle, make_instance
from gf01_formal.instances.traces import effect_text, parse_effect, trace_from_json, trace_to_json
from hoa.errors import Gf01Error, quote
from solvers.limits import Limits

PEER_BUNDLE_SCHEMA = "gf01.instance_bundle.v1"
IMPORTER_VERSION = "gf01-formal.importers.v1"
#: Peer per-instance fields kept verbatim in ``meta.source_fields`` (the rest become our own fields).
_PEER_KEPT = ("complexity", "identifiability", "renderer_track", "seed", "split_id")
_PEER_BUNDLE_KEPT = (
    "benchmark_version",
    "checker_version",
    "config_hash",
    "family_id",
    "generator_version",
    "git_commit",
    "harness_version",
    "instances_hash",
    "schema_version",
    "seed_start",
    "split_id",
)


def _need(obj: Any, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise Gf01Error("missing field", field=f"{where}.{key}" if where else key)
    val = obj[key]
    if not isinstance(val, kind) or (isinstance(val, bool) and kind is int):
        raise Gf01Error(f"expected {getattr(kind, '__name__', kind)}, got {type(val).__name__}",
                        field=f"{where}.{key}" if where else key)
    return val


def _names(obj: Any, key: str, where: str) -> list[str]:
    """A list of names: every item a string (a state or AP that is an object cannot key a table; the mutation fuzzer
    found ``"states": [..., {"x": 1}]`` ending in an internal error)."""
    names = _need(obj, key, where, list)
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise Gf01Error(f"expected str, got {type(name).__name__}", field=f"{where}.{key}[{i}]")
    return names


def peer_table(automaton: dict[str, Any], where: str) -> System:
    """Our table System from a peer ``automaton`` object (states, initial_state, input_aps, output_aps, transitions)."""
    inputs = _names(automaton, "input_aps", where)
    outputs = _names(automaton, "output_aps", where)
    states = _names(automaton, "states", where)
    initial = _need(automaton, "initial_state", where, str)
    trans = _need(automaton, "transitions", where, dict)
    if initial not in states:
        raise Gf01Error(f"initial state {quote(initial)} is not a state", field=f"{where}.initial_state")
    index = {s: q for q, s in enumerate(states)}
    n = len(inputs)
    nxt: list[list[int]] = []
    out: list[list[int]] = []
    for s in states:
        rows = _need(trans, s, f"{where}.transitions", dict)
        nrow, orow = [], []
        for x in range(1 << n):
            key = "|".join(f"{a}={(x >> i) & 1}" for i, a in enumerate(inputs))
            cell = _need(rows, key, f"{where}.transitions.{s}", dict)
            dest = _need(cell, "next_state", f"{where}.transitions.{s}.{key}", str)
            if dest not in index:
                raise Gf01Error(f"unknown state {quote(dest)}", field=f"{where}.transitions.{s}.{key}.next_state")
            ovals = _need(cell, "output", f"{where}.transitions.{s}.{key}", dict)
            y = 0
            for j, o in enumerate(outputs):
                bit = _need(ovals, o, f"{where}.transitions.{s}.{key}.output", int)
                if bit not in (0, 1):
                    raise Gf01Error(f"output bit {quote(bit)}", field=f"{where}.transitions.{s}.{key}.output.{o}")
                y |= bit << j
            nrow.append(index[dest])
            orow.append(y)
        extra = sorted(set(rows) - {"|".join(f"{a}={(x >> i) & 1}" for i, a in enumerate(inputs))
                                    for x in range(1 << n)})
        if extra:
            raise Gf01Error(f"unknown input key {quote(extra[0])}", field=f"{where}.transitions.{s}")
        nxt.append(nrow)
        out.append(orow)
    return System(
        kind="table",
        inputs=list(inputs),
        outputs=list(outputs),
        table=TableSystem(states=list(states), initial=index[initial], next=nxt, out=out),
    )


def peer_instance(rec: dict[str, Any], where: str, source: str | None, *, measure: bool = True,
                  count_limits: Limits | None = None) -> Instance:
    """One of our instances from a peer instance record (its ``instance_id`` is kept).

    With ``measure`` the complexity knobs (our scales) and the certification are computed by the exact solvers;
    the peer's own window is kept as the instance's window (it is part of the task).
    """
    system = peer_table(_need(rec, "automaton", where, dict), f"{where}.automaton")
    trace = trace_from_json(_need(rec, "base_trace", where, list), system.inputs, field=f"{where}.base_trace")
    effect_ap = _need(rec, "effect_ap", where, str)
    effect = effect_text(parse_effect(effect_ap, system.outputs, field=f"{where}.effect_ap"), system.outputs)
    mode = _need(rec, "mode", where, str)
    inst = make_instance(
        system=system,
        base_trace=trace_to_json(trace, system.inputs),
        effect=effect,
        t_star=_need(rec, "t_star", where, int),
        mode=mode,
        window=_need(rec, "window_size", where, int),
        budget_t=_need(rec, "budget_timestep", where, int),
        budget_a=_need(rec, "budget_atoms", where, int),
        split_id=rec.get("split_id") if rec.get("split_id") in ("public_dev", "public_val", "private_eval") else None,
        meta=Meta(
            generator_version=IMPORTER_VERSION,
            provenance="import:peer",
            id_scheme="imported",
            seed=rec.get("seed") if isinstance(rec.get("seed"), int) else None,
            family="peer-random-table",
            source=source,
            source_fields={k: rec[k] for k in _PEER_KEPT if k in rec},
        ),
        instance_id=_need(rec, "instance_id", where, str),
    )
    problem = instance_problem(inst, file=source)
    if not measure:
        return inst
    from gf01_formal.instances.measure import measure as run_measure

    found = run_measure(problem, window=inst.window, count_limits=count_limits)
    return inst.model_copy(update={"complexity": found.complexity, "certification": found.certification})


def import_peer_bundle(path: str | Path, *, measure: bool = True, count_limits: Limits | None = None) -> Bundle:
    """Our bundle from the peer's ``gf01.instance_bundle.v1`` file, keeping its instance ids and its fields.

    ``count_limits`` bounds each instance's measurement counts (past it |M_B(I)| is recorded as unknown).
    """
    data = read_json(path)
    src = str(path)
    try:
        if not isinstance(data, dict) or data.get("schema_version") != PEER_BUNDLE_SCHEMA:
            got = data.get("schema_version") if isinstance(data, dict) else type(data).__name__
            raise Gf01Error(f"expected {PEER_BUNDLE_SCHEMA}, got {quote(got, 60)}", field="schema_version")
        recs = _need(data, "instances", "", list)
        instances = [peer_instance(r, f"instances[{k}]", src, measure=measure, count_limits=count_limits)
                     for k, r in enumerate(recs)]
    except Gf01Error as ex:
        raise Gf01Error(ex.message, file=src, field=ex.field) from ex
    ids = [i.instance_id for i in instances]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise Gf01Error(f"instance id {quote(dup[0], 60)} occurs more than once", file=src, field="instances")
    return make_bundle(
        instances,
        generator_version=IMPORTER_VERSION,
        provenance=f"import:peer {Path(path).name}",
        source_fields={k: data[k] for k in _PEER_BUNDLE_KEPT if k in data},
    )
