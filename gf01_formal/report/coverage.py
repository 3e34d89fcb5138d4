"""The baseline panels of DEC-056 and manifest coverage: which (split, mode, track, agent) slices have every instance.

A split manifest (ours, ``gf01-formal.split_manifest.v1``, or the peer's ``gf01.split_manifest.v1``) says which
instances each (split, mode) slice expects. A run covers its instance when it is final (completed or agent_error):
a harness or provider error leaves the instance missing, to be played again. Coverage is computed for every agent
seen in the runs and for every agent of the required panel, on the agent's own track; the panel is covered when
each of its agents, on the track DEC-056 and docs/runs.md give it, misses no instance of any slice.

>>> _panel("core")
(('random', 'greedy', 'oracle'), {'random': 'EVAL-CB', 'greedy': 'EVAL-CB', 'oracle': 'EVAL-OC'})
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from gf01_formal.artifacts import read_json, sha256_hex
from gf01_formal.report.load import SCORED
from gf01_formal.runs.record import RunRecord
from hoa.errors import Gf01Error, quote

POLICY = "gf01.baseline_panel_policy.v1"
#: Missing instance ids listed per slice in human output (the JSON lists all of them).
SHOWN = 5


def _panel(panel: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """The agents of ``panel`` and the track each plays on (docs/runs.md, "Tracks and access"), from
    :mod:`gf01_formal.agents`, where the panel is defined once. Imported here, only when a panel is asked for: a
    report of runs alone loads no agent."""
    from gf01_formal.agents import PANEL_TRACK, PANELS

    return PANELS[panel], {n: PANEL_TRACK[n] for n in PANELS[panel]}


@dataclass(frozen=True)
class Manifest:
    """The expected instances of a split manifest: instance id -> (split, mode), and the manifest's digest."""

    entries: dict[str, tuple[str, str]]
    digest: str
    schema_version: str


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read a split manifest (ours or the peer's); every entry needs instance_id, split_id and mode."""
    from gf01_formal.instances.splits import MANIFEST_SCHEMA, PEER_MANIFEST_SCHEMA, SplitManifest

    name = quote(os.fspath(path), 200, bare=True)
    data = read_json(path)
    if not isinstance(data, dict):
        raise Gf01Error("a split manifest is a JSON object", file=name)
    version = data.get("schema_version")
    if version == MANIFEST_SCHEMA:
        from gf01_formal.instances.model import validate_model

        man = validate_model(SplitManifest, data, file=name)
        rows = [e.model_dump() for e in man.instances]
    elif version == PEER_MANIFEST_SCHEMA:
        rows = data.get("instances")
        if not isinstance(rows, list):
            raise Gf01Error("expected a list", file=name, field="instances")
    else:
        raise Gf01Error(f"unknown schema_version {quote(version, 60)}; expected {MANIFEST_SCHEMA} or "
                        f"{PEER_MANIFEST_SCHEMA}", file=name, field="schema_version")
    entries: dict[str, tuple[str, str]] = {}
    for k, row in enumerate(rows):
        fields = [row.get(f) if isinstance(row, dict) else None for f in ("instance_id", "split_id", "mode")]
        if not all(isinstance(v, str) and v for v in fields):
            raise Gf01Error("each entry needs instance_id, split_id and mode (strings)", file=name,
                            field=f"instances[{k}]")
        iid, split, mode = fields
        if iid in entries:
            raise Gf01Error(f"instance {iid} is listed twice", file=name, field=f"instances[{k}]")
        entries[iid] = (split, mode)
    if not entries:
        raise Gf01Error("the manifest lists no instances", file=name, field="instances")
    return Manifest(entries=entries, digest=sha256_hex(data), schema_version=str(version))


def base_label(spec: dict[str, Any], name: str) -> str:
    """What a report calls an agent: its ``--agent-name`` when given; a model by its model name (``llm:M``); an
    external program by its file name (``cmd:agent.py``, never its path); a built-in by its name."""
    params = spec.get("params") if isinstance(spec.get("params"), dict) else {}
    if isinstance(params.get("label"), str):
        return str(params["label"])
    if name == "llm" and isinstance(params.get("model"), str):
        return f"llm:{params['model']}"
    if name == "cmd" and isinstance(params.get("cmd"), str):
        import shlex

        try:
            words = shlex.split(params["cmd"])
        except ValueError:
            words = []
        # The program: the first script (agent.py), else the last path (an interpreter's comes first), else the
        # command's first word; URLs are arguments, not programs.
        words = [w for w in words if "://" not in w]
        scripts = [w for w in words if w.endswith((".py", ".js", ".sh", ".rb", ".pl", ".jar"))]
        paths = [w for w in words if "/" in w]
        program = (scripts[:1] or paths[-1:] or words[:1] or [""])[0].rsplit("/", 1)[-1]
        if program:
            return f"cmd:{program}"
    return name


def agent_label(records: list[RunRecord]) -> dict[tuple[str, str], str]:
    """(agent_name, agent_hash) -> the label reports use (:func:`base_label`), with #hash8 when one label covers
    several agents. One agent on several tracks keeps one label: the hash told apart is the spec's without its
    track."""
    from gf01_formal.artifacts import spec_digest

    ident: dict[tuple[str, str], tuple[str, str]] = {}
    for r in records:
        if (r.agent_name, r.agent_hash) not in ident:
            trackless = spec_digest({k: v for k, v in r.agent_spec.items() if k != "track"})
            ident[(r.agent_name, r.agent_hash)] = (base_label(r.agent_spec, r.agent_name), trackless)
    kinds: dict[str, set[str]] = defaultdict(set)
    first: dict[str, str] = {}  # trackless identity -> the least of its spec hashes (the suffix it is shown with)
    for (_, agent_hash), (label, trackless) in ident.items():
        kinds[label].add(trackless)
        first[trackless] = min(first.get(trackless, agent_hash), agent_hash)
    return {key: label if len(kinds[label]) == 1 else f"{label}#{first[trackless][:8]}"
            for key, (label, trackless) in ident.items()}


def coverage(records: list[RunRecord], manifest: Manifest, panel: str | None) -> dict[str, Any]:
    """Coverage per (split, mode, track, agent): expected, observed, missing (with the ids); the panel's verdict.

    ``records`` are all the report's records (any status); ``panel`` is ``full``, ``core`` or None (no verdict).
    """
    labels = agent_label(records)
    slices: dict[tuple[str, str], set[str]] = defaultdict(set)
    for iid, key in manifest.entries.items():
        slices[key].add(iid)
    agents: set[tuple[str, str]] = {(labels[(r.agent_name, r.agent_hash)], r.eval_track) for r in records}
    names, track_of = _panel(panel) if panel else ((), {})
    for name in names:
        if not any(label.split("#")[0] == name and track == track_of[name] for label, track in agents):
            agents.add((name, track_of[name]))
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    unexpected: dict[tuple[str, str], set[str]] = defaultdict(set)
    mismatched: list[str] = []
    for r in records:
        agent = (labels[(r.agent_name, r.agent_hash)], r.eval_track)
        iid = r.instance_id
        if iid not in manifest.entries:
            unexpected[agent].add(iid)
            continue
        split, mode = manifest.entries[iid]
        if r.split_id is not None and r.split_id != split:
            mismatched.append(r.run_id)
        if r.status in SCORED:
            seen[agent].add(iid)
    rows = []
    for (split, mode), expected in sorted(slices.items()):
        for label, track in sorted(agents):
            observed = seen[(label, track)] & expected
            missing = sorted(expected - observed)
            rows.append({"split_id": split, "mode": mode, "eval_track": track, "agent": label,
                         "expected": len(expected), "observed": len(observed), "missing": len(missing),
                         "missing_ids": missing})
    out: dict[str, Any] = {
        "manifest_digest": manifest.digest,
        "manifest_schema_version": manifest.schema_version,
        "slices": rows,
        "unexpected": [{"agent": a, "eval_track": t, "instances": sorted(ids)}
                       for (a, t), ids in sorted(unexpected.items())],
        "split_mismatch_runs": sorted(mismatched),
        "panel": None,
    }
    if panel:
        out["panel"] = panel_verdict(rows, panel)
    return out


def panel_verdict(rows: list[dict[str, Any]], panel: str) -> dict[str, Any]:
    """Whether every agent of ``panel`` covers every slice on its own track; what is missing otherwise."""
    problems = []
    names, track_of = _panel(panel)
    for name in names:
        mine = [r for r in rows if r["agent"].split("#")[0] == name and r["eval_track"] == track_of[name]]
        by_slice: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for r in mine:
            by_slice[(r["split_id"], r["mode"])].append(r)
        for (split, mode), cands in sorted(by_slice.items()):
            best = min(cands, key=lambda r: (r["missing"], r["agent"]))
            if best["missing"]:
                problems.append({"agent": name, "eval_track": track_of[name], "split_id": split, "mode": mode,
                                 "missing": best["missing"], "expected": best["expected"],
                                 "missing_ids": best["missing_ids"]})
    return {"policy": POLICY, "level": panel, "required": list(names), "tracks": track_of, "complete": not problems,
            "incomplete": problems}


def describe_missing(problems: list[dict[str, Any]]) -> str:
    """One line naming what a panel misses: agent, track, slice, count and the first ids."""
    parts = []
    for p in problems[:SHOWN]:
        ids = ", ".join(p["missing_ids"][:3]) + (", ..." if p["missing"] > 3 else "")
        parts.append(f"{p['agent']} ({p['eval_track']}) misses {p['missing']}/{p['expected']} of "
                     f"{p['split_id']}/{p['mode']} [{ids}]")
    more = f"; and {len(problems) - SHOWN} more slices" if len(problems) > SHOWN else ""
    return "; ".join(parts) + more
