"""``gf01 caps derive``: the optional diagnostic's caps frozen from pilot runs by the dual-threshold rule (spec §9;
DEC-019..023), and caps files read back (:func:`load_caps`). The caps themselves and the diagnostic metered under
them are the scorer's (:mod:`gf01_formal.scoring.caps`), the metering the solver floor's (:mod:`solvers.metering`).

Derivation (:func:`derive`), the dual-threshold rule with p = 0.90, k = 3 (DEC-022/023), per resource r:

1. the sample is every scored pilot run whose diagnostic was metered (exact or infeasible); an infeasible run is
   right-censored, and counts as larger than every exact one (conservative: it can only raise the quantile);
2. q_p(r) is the order statistic x_(m) with m = ceil(p n) of the n sampled values sorted ascending (an observed
   value, no interpolation; computed exactly, p as the fraction 9/10);
3. cap(r) = k * max(q_p(r), floor(r)), rounded up to the resource's unit; the floors keep a cap above measurement
   noise: 1 conflict, 1 node, 0.05 s, 8 MiB;
4. a resource no pilot run measured has no cap (null, with the reason); if q_p(r) falls on a censored run (more
   than a tenth of the sample infeasible), nothing can be derived and the command says so.

A diagnostic is then infeasible when it needs more than k times what 90 % of the pilot's diagnostics needed, on any
resource: the two thresholds are p (how much of the pilot must fit) and k (the headroom above it).

>>> cap_of([1.0, 2.0, 3.0], 0, floor=0.05)["cap"]
9.0
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from typing import Any

from gf01_formal.report.load import Runs
from gf01_formal.runs.record import RunRecord
from gf01_formal.scoring.caps import BACKENDS, SAMPLE_TARGET, CapSet
from hoa.errors import Gf01Error

CAPS_SCHEMA = "gf01-formal.caps.v1"
P = Fraction(9, 10)
K = 3
#: The smallest value a cap is derived from, per resource (see the module docstring).
FLOORS: dict[str, float] = {"seconds": 0.05, "memory_kib": 8192, "conflicts": 1, "nodes": 1}
UNITS = {"seconds": "s", "memory_kib": "KiB", "conflicts": "conflicts", "nodes": "BDD nodes"}
PLATFORM, ALGORITHMIC = ("seconds", "memory_kib"), ("conflicts", "nodes")


# -- caps files ---------------------------------------------------------------------------------------------------


def cap_of(values: list[float], censored: int, *, floor: float, integer: bool = False) -> dict[str, Any]:
    """The dual-threshold cap of one resource from its exact values and its number of censored (infeasible) runs."""
    n = len(values) + censored
    out: dict[str, Any] = {"cap": None, "quantile": None, "observed": len(values), "censored": censored,
                           "order_statistic": None, "floor": floor}
    if n == 0:
        return {**out, "note": "no pilot run measured it"}
    m = math.ceil(P * n)
    out["order_statistic"] = m
    ordered = sorted(values) + [math.inf] * censored
    q = ordered[m - 1]
    if math.isinf(q):
        return {**out, "note": f"the order statistic x_({m}) of {n} is an infeasible run: more than "
                               f"{float(1 - P):.0%} of the pilot diagnostics were infeasible"}
    out["quantile"] = q
    raw = K * max(q, floor)
    out["cap"] = math.ceil(raw) if integer else math.ceil(round(raw, 9) * 1000) / 1000
    return out


def _check_metering(r: RunRecord) -> None:
    """Refuse (Gf01Error naming the run and field) a metered record whose timing fields have the wrong types: the
    timing is the record's unchecked part (machine-dependent), so a hand-edited or foreign file shows here first."""
    from hoa.errors import quote

    t = r.timing

    def bad(name: str, value: Any, what: str) -> Gf01Error:
        return Gf01Error(f"run {r.run_id}: timing {name} is {quote(value, 60)}, not {what}", field=name)

    spent = t.get("diagnostic_spent")
    if not isinstance(spent, dict):
        raise bad("diagnostic_spent", spent, "an object")
    if not isinstance(spent.get("backend"), str):
        raise bad("backend", spent.get("backend"), "a backend name")
    for name, value in (("diagnostic_ms", t.get("diagnostic_ms")),
                        ("diagnostic_peak_kib", t.get("diagnostic_peak_kib")),
                        ("conflicts", spent.get("conflicts")), ("nodes", spent.get("nodes"))):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise bad(name, value, "a number >= 0")


def derive(runs: Runs) -> dict[str, Any]:
    """caps.json from the metered pilot runs in ``runs`` (module docstring)."""
    sample = [r for r in runs.scored() if r.diagnostic_status in ("exact", "infeasible")
              and r.timing.get("diagnostic_spent") is not None]
    for r in sample:
        _check_metering(r)
    if not sample:
        raise Gf01Error("no run records a metered diagnostic: play the pilot with 'gf01 campaign --subset-min'")
    backends = sorted({r.timing["diagnostic_spent"].get("backend") for r in sample})
    if len(backends) != 1 or backends[0] not in BACKENDS:
        raise Gf01Error(f"the pilot's diagnostics ran on {', '.join(map(str, backends))}: derive caps from runs of "
                        "one backend (sat or bdd)")
    backend = backends[0]
    exact = [r for r in sample if r.diagnostic_status == "exact"]
    censored = len(sample) - len(exact)

    def values(res: str) -> list[float]:
        out: list[float] = []
        for r in exact:
            t = r.timing
            v = {"seconds": None if t.get("diagnostic_ms") is None else t["diagnostic_ms"] / 1000,
                 "memory_kib": t.get("diagnostic_peak_kib"),
                 "conflicts": t["diagnostic_spent"].get("conflicts"),
                 "nodes": t["diagnostic_spent"].get("nodes")}[res]
            if v is not None:
                out.append(float(v))
        return out

    applies = {"conflicts": backend == "sat", "nodes": backend == "bdd"}
    caps: dict[str, dict[str, Any]] = {}
    for res in (*PLATFORM, *ALGORITHMIC):
        if res in applies and not applies[res]:
            caps[res] = {"cap": None, "note": f"does not apply to the {backend} backend"}
            continue
        vals = values(res)
        if not vals and res == "memory_kib":
            caps[res] = {"cap": None, "note": "peak memory was not measurable on the pilot's platform"}
            continue
        caps[res] = cap_of(vals, censored, floor=FLOORS[res], integer=res != "seconds")
        caps[res]["unit"] = UNITS[res]
    from gf01_formal.artifacts import sha256_hex

    instances = len({r.instance_id for r in sample})
    return {
        "schema_version": CAPS_SCHEMA,
        "decisions": ["DEC-019", "DEC-020", "DEC-021", "DEC-022", "DEC-023"],
        "diagnostic": "subset_min",
        "backend": backend,
        "rule": {"p": float(P), "k": K, "quantile": "order statistic x_(ceil(p n)), infeasible runs counted as +inf",
                 "cap": "k * max(quantile, floor), rounded up", "floors": dict(FLOORS)},
        "platform": {r: caps[r] for r in PLATFORM},
        "algorithmic": {r: caps[r] for r in ALGORITHMIC},
        "sample": {"runs": len(sample), "exact": len(exact), "infeasible": censored, "instances": instances,
                   "checkpoint": {"target": SAMPLE_TARGET, "reached": instances >= SAMPLE_TARGET}},
        "provisional": instances < SAMPLE_TARGET,
        "inputs_digest": sha256_hex(sorted([r.run_id, r.diagnostic_status, r.timing] for r in sample)),
    }


def load_caps(path: str | os.PathLike[str]) -> CapSet:
    """The caps of a caps.json file (as :func:`derive` writes it)."""
    from gf01_formal.artifacts import read_json
    from hoa.errors import quote

    name = quote(os.fspath(path), 200, bare=True)
    data = read_json(path)
    if isinstance(data, dict) and data.get("schema_version") == "gf01-formal.campaign.v1":
        # A campaign's record of the caps it ran under (campaign.json "diagnostic"): what a release ships.
        diag = data.get("diagnostic")
        if not isinstance(diag, dict):
            raise Gf01Error("this campaign ran no capped diagnostic", file=name, field="diagnostic")
        try:
            return CapSet(**diag)
        except TypeError:
            raise Gf01Error("the campaign's diagnostic caps are malformed", file=name, field="diagnostic") from None
    if not isinstance(data, dict) or data.get("schema_version") != CAPS_SCHEMA:
        raise Gf01Error(f"not a caps file (schema_version {CAPS_SCHEMA} expected)", file=name, field="schema_version")
    try:
        backend = data["backend"]
        entries = {**data["platform"], **data["algorithmic"]}
        values = {r: entries[r]["cap"] for r in (*PLATFORM, *ALGORITHMIC)}
    except (KeyError, TypeError):
        raise Gf01Error("a caps file needs backend, platform and algorithmic caps", file=name) from None
    if backend not in BACKENDS:
        raise Gf01Error(f"unknown backend {backend!r}", file=name, field="backend")
    for r, v in values.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v <= 0):
            raise Gf01Error(f"the {r} cap must be a positive number or null", file=name, field=r)
    return CapSet(backend=backend, seconds=None if values["seconds"] is None else float(values["seconds"]),
                  memory_kib=None if values["memory_kib"] is None else int(values["memory_kib"]),
                  conflicts=None if values["conflicts"] is None else int(values["conflicts"]),
                  nodes=None if values["nodes"] is None else int(values["nodes"]), **_provisional(data))


def _provisional(data: dict[str, Any]) -> dict[str, Any]:
    """Whether a caps file is provisional: its own flag, or (files written before the flag) its checkpoint."""
    sample = data.get("sample") if isinstance(data.get("sample"), dict) else {}
    reached = (sample.get("checkpoint") or {}).get("reached") if isinstance(sample.get("checkpoint"), dict) else None
    flag = data.get("provisional", reached is not True)
    instances = sample.get("instances") if isinstance(sample.get("instances"), int) else None
    return {"provisional": flag is True, "sample_instances": instances}
