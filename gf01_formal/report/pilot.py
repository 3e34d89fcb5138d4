"""``gf01 pilot-analyze``: the post-pilot calibration audit of the normal-mode window (DEC-014c/d, DEC-058).

Normative part (the DEC-014d constants, locked: N = 240, Delta_Q1,Q4 = 0.12, M_Q4 floor 0.10, shortcut goal 0.40,
shortcut certified 0.05). The *scope* is the reference agent's scored runs (default ``greedy`` on EVAL-CB, the
heuristic DEC-056 puts in the panel to stress shortcuts) in normal mode (the window exists only there), on held-out
instances (splits other than public_dev and public_val) when there are any, else on all (``held_out_fallback``).

- Complexity quartiles: the scope's distinct instances ranked by z(I) (the DEC-058 composite stored in the bundle),
  ties broken by instance id; quartile q holds ranks [(q-1)n/4, qn/4). M_Qq is the Score_C rate of the scope's runs
  on quartile q (with its Wilson interval, for reading; the triggers compare the rates themselves, exactly).
- Discrimination trigger: M_Q1 - M_Q4 < 0.12 or M_Q4 < 0.10 (evaluable when every quartile has an instance).
- Shortcut trigger: goal rate > 0.40 and certified rate < 0.05 over the scope (evaluable with one run).
- Sample target: the scope's distinct instances against N = 240 (DEC-014c's fixed-sample checkpoint).
- Recommendation: ``recalibrate_normal_window`` when a trigger fires, else ``keep_coefficients``; the reason names
  the numbers, and ``provisional`` says the decision is not yet the checkpoint's: the sample is below N (whether or
  not a trigger fired), or no trigger fired and one could not be evaluated.

Audit part (non-normative, DEC-058): for every agent slice (agent, track, mode) and every knob (and z itself):
known/unknown counts, constant-knob detection, rank quartiles of the knob's normalised value with Score_C and goal
rates, and Spearman's rho between the knob and Score_C over runs. They never change the recommendation.

>>> from gf01_formal.agents.base import AgentSpec
>>> from gf01_formal.campaign.evaluate import evaluate
>>> from gf01_formal.report.load import load_runs
>>> _ = evaluate("bundle.json", [AgentSpec("oracle", "EVAL-OC")], "runs.jsonl")
>>> analysis = analyze(load_runs(["runs.jsonl"]), bundle)
>>> analysis["recommendation"]["decision"]
'keep_coefficients'
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Any

from gf01_formal.instances.model import Bundle, Instance
from gf01_formal.report import stats
from gf01_formal.report.coverage import agent_label
from gf01_formal.report.load import Runs
from gf01_formal.runs.record import RunRecord
from hoa.errors import Gf01Error

ANALYSIS_SCHEMA = "gf01-formal.pilot_analysis.v1"
#: DEC-014d, locked.
SAMPLE_TARGET = 240
DELTA_Q1_Q4 = Fraction(12, 100)
Q4_FLOOR = Fraction(10, 100)
SHORTCUT_GOAL = Fraction(40, 100)
SHORTCUT_CERTIFIED = Fraction(5, 100)
KNOBS = ("states", "inputs", "outputs", "transitions", "horizon", "effect_depth", "oracle_eff_t", "gold_count")
PUBLIC = ("public_dev", "public_val")


def _instances(runs: Runs, bundle: Bundle) -> dict[str, Instance]:
    """The bundle's instances by id; every scored run must name one of them with the same content hash."""
    by_id = {i.instance_id: i for i in bundle.instances}
    for r in runs.scored():
        inst = by_id.get(r.instance_id)
        if inst is None:
            raise Gf01Error(f"run {r.run_id}: instance {r.instance_id} is not in the bundle", field="--bundle")
        if inst.content_hash != r.instance_hash:
            raise Gf01Error(f"run {r.run_id}: instance {r.instance_id} differs from the bundle's (content "
                            "hash)", field="--bundle")
    return by_id


def _rate(rs: list[RunRecord], field: str) -> dict[str, Any]:
    return stats.wilson(sum(1 for r in rs if getattr(r, field)), len(rs))


def _quartile_rows(rs: list[RunRecord], value: dict[str, float]) -> list[dict[str, Any]]:
    """Rank quartiles of the instances of ``rs`` by ``value`` (instance id -> number), with rates per quartile."""
    quart = stats.quartiles([(v, i) for i, v in value.items()])
    rows = []
    for q in range(1, 5):
        ids = sorted(i for i, k in quart.items() if k == q)
        inq = [r for r in rs if quart.get(r.instance_id) == q]
        vals = [value[i] for i in ids]
        rows.append({"quartile": q, "instances": len(ids), "runs": len(inq),
                     "range": [stats.rnd(min(vals)), stats.rnd(max(vals))] if vals else None,
                     "score_c": _rate(inq, "score_c"), "goal": _rate(inq, "goal")})
    return rows


def _frac(rate: dict[str, Any]) -> Fraction:
    return Fraction(rate["k"], rate["n"])


def _knob_value(inst: Instance, knob: str) -> float | None:
    if inst.complexity is None:
        return None
    if knob == "z":
        return inst.complexity.z
    return getattr(inst.complexity, knob).norm


def _knob_stats(rs: list[RunRecord], insts: dict[str, Instance], knob: str) -> dict[str, Any]:
    value = {r.instance_id: v for r in rs if (v := _knob_value(insts[r.instance_id], knob)) is not None}
    known = [r for r in rs if r.instance_id in value]
    constant = len(set(value.values())) <= 1
    out: dict[str, Any] = {"knob": knob, "runs": len(rs), "known_runs": len(known),
                           "unknown_runs": len(rs) - len(known), "instances": len(value),
                           "distinct_values": len(set(value.values())), "constant": constant,
                           "range": [stats.rnd(min(value.values())), stats.rnd(max(value.values()))] if value
                           else None}
    if constant:
        out["quartiles"] = []
        out["all"] = {"score_c": _rate(known, "score_c"), "goal": _rate(known, "goal")}
        out["spearman_score_c"] = stats.spearman([], [])
        out["spearman_score_c"]["note"] = "constant knob: no quartiles and no rank correlation"
        return out
    out["quartiles"] = _quartile_rows(known, value)
    out["spearman_score_c"] = stats.spearman([value[r.instance_id] for r in known],
                                             [float(r.score_c) for r in known])
    return out


def analyze(runs: Runs, bundle: Bundle, *, agent: str = "greedy", track: str = "EVAL-CB",
            mode: str = "normal") -> dict[str, Any]:
    """The pilot analysis of ``runs`` played on ``bundle`` (module docstring)."""
    insts = _instances(runs, bundle)
    scored = runs.scored()
    ref = [r for r in scored if r.agent_name == agent and r.eval_track == track and r.mode == mode]
    held = [r for r in ref if r.split_id not in PUBLIC and r.split_id is not None]
    scope = held or ref
    z = {r.instance_id: insts[r.instance_id].complexity.z for r in scope  # type: ignore[union-attr]
         if insts[r.instance_id].complexity is not None}
    no_z = sorted({r.instance_id for r in scope} - set(z))
    in_z = [r for r in scope if r.instance_id in z]
    quarts = _quartile_rows(in_z, z) if z else []
    n_inst = len({r.instance_id for r in scope})
    where = f"{agent} on {track}, {mode} mode"

    discrimination: dict[str, Any] = {"evaluable": bool(quarts) and all(q["runs"] for q in quarts),
                                      "fired": False, "m_q1": None, "m_q4": None, "delta": None}
    if discrimination["evaluable"]:
        m1, m4 = _frac(quarts[0]["score_c"]), _frac(quarts[3]["score_c"])
        discrimination.update(m_q1=stats.rnd(float(m1)), m_q4=stats.rnd(float(m4)), delta=stats.rnd(float(m1 - m4)),
                              fired=bool(m1 - m4 < DELTA_Q1_Q4 or m4 < Q4_FLOOR),
                              delta_below_threshold=bool(m1 - m4 < DELTA_Q1_Q4), q4_below_floor=bool(m4 < Q4_FLOOR))
    else:
        discrimination["note"] = f"needs a scored run in each of the four quartiles ({len(z)} instances with z(I))"
    goal, cert = _rate(scope, "goal"), _rate(scope, "score_c")
    shortcut: dict[str, Any] = {"evaluable": bool(scope), "fired": False, "goal_rate": goal, "certified_rate": cert}
    if scope:
        shortcut["fired"] = bool(_frac(goal) > SHORTCUT_GOAL and _frac(cert) < SHORTCUT_CERTIFIED)
    else:
        shortcut["note"] = f"no scored run of {where}"
    sample = {"target": SAMPLE_TARGET, "instances": n_inst, "reached": n_inst >= SAMPLE_TARGET,
              "remaining": max(0, SAMPLE_TARGET - n_inst)}
    recommendation = _recommend(discrimination, shortcut, sample, where)

    labels = agent_label(runs.records)
    slices: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for r in scored:
        slices[(labels[(r.agent_name, r.agent_hash)], r.eval_track, r.mode)].append(r)
    audit = []
    for (label, tr, md), rs in sorted(slices.items()):
        audit.append({"agent": label, "eval_track": tr, "mode": md, "runs": len(rs),
                      "knobs": [_knob_stats(rs, insts, k) for k in (*KNOBS, "z")]})
    return {
        "schema_version": ANALYSIS_SCHEMA,
        "policy": {"decisions": ["DEC-014c", "DEC-014d", "DEC-058"], "complexity_policy": "gf01.complexity_policy.v1",
                   "thresholds": {"sample_target": SAMPLE_TARGET, "delta_q1_q4": float(DELTA_Q1_Q4),
                                  "q4_floor": float(Q4_FLOOR), "shortcut_goal": float(SHORTCUT_GOAL),
                                  "shortcut_certified": float(SHORTCUT_CERTIFIED)},
                   "methods": {k: stats.METHODS[k] for k in (stats.WILSON, stats.SPEARMAN)}},
        "inputs": {"runs_digest": runs.digest, "bundle_instances_hash": bundle.instances_hash,
                   "runs": len(runs.records), "scored": len(scored)},
        "scope": {"agent": agent, "eval_track": track, "mode": mode, "held_out_splits": "not public_dev/public_val",
                  "held_out_fallback": not held, "runs": len(scope), "instances": n_inst,
                  "instances_without_z": no_z},
        "quartiles": quarts,
        "discrimination": discrimination,
        "shortcut": shortcut,
        "sample": sample,
        "recommendation": recommendation,
        "audit": {"normative": False, "note": "per-knob diagnostics (DEC-058) never change the recommendation",
                  "slices": audit},
    }


def _recommend(disc: dict[str, Any], short: dict[str, Any], sample: dict[str, Any], where: str) -> dict[str, Any]:
    fired = []
    if disc["fired"]:
        parts = []
        if disc.get("delta_below_threshold"):
            parts.append(f"M_Q1 - M_Q4 = {disc['delta']:.3f} < {float(DELTA_Q1_Q4)}")
        if disc.get("q4_below_floor"):
            parts.append(f"M_Q4 = {disc['m_q4']:.3f} < {float(Q4_FLOOR)}")
        fired.append("discrimination trigger: " + " and ".join(parts))
    if short["fired"]:
        fired.append(f"shortcut trigger: goal rate {short['goal_rate']['rate']:.3f} > {float(SHORTCUT_GOAL)} with "
                     f"certified rate {short['certified_rate']['rate']:.3f} < {float(SHORTCUT_CERTIFIED)}")
    unevaluated = [name for name, t in (("discrimination", disc), ("shortcut", short)) if not t["evaluable"]]
    sample_text = (f"sample target reached ({sample['instances']} >= {sample['target']} instances)" if sample["reached"]
                   else f"sample {sample['instances']} of {sample['target']} instances")
    # A fired trigger decides without waiting for the checkpoint (DEC-014c's threshold-anomaly arm), but rates read
    # from fewer than N instances are still a small sample: the recommendation stays provisional until N. A trigger
    # that could not be evaluated cannot undo one that fired, so it makes only "keep" provisional.
    below_n = not sample["reached"]
    if fired:
        reason = "; ".join(fired) + f" ({where}; {sample_text})"
        if below_n:
            reason += f"; provisional until the sample reaches N = {sample['target']} instances"
        return {"decision": "recalibrate_normal_window", "reason": reason, "provisional": below_n}
    if unevaluated:
        reason = (f"no trigger fired; not evaluable: {', '.join(unevaluated)} ({where}; {sample_text}); the DEC-014b "
                  "coefficients stay until evidence can be read")
    else:
        reason = (f"no trigger fired: M_Q1 - M_Q4 = {disc['delta']:.3f} >= {float(DELTA_Q1_Q4)}, M_Q4 = "
                  f"{disc['m_q4']:.3f} >= {float(Q4_FLOOR)}, shortcut goal {short['goal_rate']['rate']:.3f} / "
                  f"certified {short['certified_rate']['rate']:.3f} ({where}; {sample_text})")
    return {"decision": "keep_coefficients", "reason": reason, "provisional": bool(unevaluated) or below_n}


def knob_plots(analysis: dict[str, Any]) -> dict[str, str]:
    """File name -> SVG: Score_C against each knob (and z), per agent slice."""
    from gf01_formal.report import plots

    out = {}
    for knob in (*KNOBS, "z"):
        data = []
        for sl in analysis["audit"]["slices"]:
            k = next(x for x in sl["knobs"] if x["knob"] == knob)
            data.append({"agent": f"{sl['agent']} ({sl['eval_track']})", "mode": sl["mode"],
                         "constant": k["constant"], "quartiles": k["quartiles"]})
        out[f"score_c-by-{knob}.svg"] = plots.knob_figure(knob, data)
    return out
