"""``gf01 pilot-analyze``: the post-pilot calibration audit of the normal-mode window (DEC-014c/d, DEC-058).

Normative part (the DEC-014d constants, locked: N = 240, Delta_Q1,Q4 = 0.12, M_Q4 floor 0.10, shortcut goal 0.40,
shortcut certified 0.05). The constants play two roles, each read on its own population (docs/reports.md):

- The *scope*: scored runs in normal mode (the window exists only there), on held-out instances (splits other than
  public_dev and public_val) when there are any, else on all (``held_out_fallback``).
- Shortcut check (DEC-014d's goal 0.40 / certified 0.05): the greedy baseline on EVAL-CB, the heuristic DEC-056 puts
  in the panel to stress shortcuts: it fires when greedy reaches the goal in more than 40 % of its runs while
  certifying fewer than 5 %.
- Discrimination check (Delta_Q1,Q4 = 0.12, M_Q4 floor 0.10): measured on the population the window is calibrated
  for: every non-baseline agent and the people in the scope (an agent not of the DEC-056 panel; people as one group,
  ``human``), one group per agent spec and track (two models behind ``llm`` are two groups), or only the group named
  by ``reference`` (``AGENT`` or ``AGENT#HASH``, a prefix of its agent_hash). Per group: its instances ranked by z(I)
  (ties by instance id), quartile q holding ranks [(q-1)n/4, qn/4); M_Qq its Score_C rate on quartile q; it fires
  when M_Q1 - M_Q4 < 0.12 or M_Q4 < 0.10 (evaluable when every quartile has a run). With no such group,
  discrimination is *not assessed*, and that alone never recommends recalibration.
- Checkpoint (DEC-014c's fixed-sample arm): fires when the scope's distinct instances reach N = 240.
- Recommendation: ``recalibrate_normal_window`` when any check fires (each fired trigger explained in one sentence in
  ``triggers``), else ``keep_coefficients``; ``provisional`` says the decision is not yet the checkpoint's: the
  sample is below N, or nothing fired and a check could not be assessed.

Audit part (non-normative, DEC-058): for every agent slice (agent, track, mode) and every knob (and z itself):
known/unknown counts, constant-knob detection, rank quartiles of the knob's normalised value with Score_C and goal
rates, and Spearman's rho between the knob and Score_C over runs. They never change the recommendation.

>>> analysis = analyze(load_runs(["runs.jsonl"]), load_bundle("bundle.json"))  # doctest: +SKIP
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Any

from gf01_formal.agents import PANEL_TRACK
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
#: The shortcut check's reference: the heuristic baseline of the DEC-056 panel.
SHORTCUT_AGENT, SHORTCUT_TRACK = "greedy", "EVAL-CB"
#: The agent name of people's runs (the web pilot's); their runs form one group of the discrimination population.
HUMAN = "human"


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


def _scope(scored: list[RunRecord], mode: str) -> tuple[list[RunRecord], bool]:
    """The scored runs of ``mode`` on held-out instances, or on all when none is held out (the fallback flag)."""
    in_mode = [r for r in scored if r.mode == mode]
    held = [r for r in in_mode if r.split_id not in PUBLIC and r.split_id is not None]
    return (held, False) if held else (in_mode, True)


def _groups(scope: list[RunRecord], reference: str | None) -> dict[tuple[str, str, str], list[RunRecord]]:
    """The discrimination population by (label, agent_name, eval_track): every non-baseline agent spec and the
    people, or the one group ``reference`` names (a Gf01Error when it names none, or several specs)."""
    groups: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    labels = agent_label(scope)
    if reference is None:
        for r in scope:
            if r.agent_name in PANEL_TRACK:
                continue
            key = HUMAN if r.agent_name == HUMAN else labels[(r.agent_name, r.agent_hash)]
            groups[(key, r.agent_name, r.eval_track)].append(r)
        return groups
    name, _, prefix = reference.partition("#")
    # A report's label first (llm:MODEL, an --agent-name), then an agent's name with a prefix of its hash.
    by_label = [r for r in scope if labels[(r.agent_name, r.agent_hash)] == reference]
    picked = by_label or [r for r in scope if r.agent_name == name and r.agent_hash.startswith(prefix)]
    specs = sorted({(r.agent_hash, r.eval_track) for r in picked})
    if not picked:
        known = sorted({labels[(r.agent_name, r.agent_hash)] for r in scope})
        raise Gf01Error(f"no scored {'normal-mode ' if scope else ''}run of {reference!r} in the scope (agents: "
                        f"{', '.join(known) or 'none'})", field="--reference")
    if len(specs) > 1:
        shown = ", ".join(f"{name}#{h[:8]} ({t})" for h, t in specs)
        raise Gf01Error(f"{reference!r} names {len(specs)} agent specs ({shown}): add #HASH", field="--reference")
    groups[(reference if prefix or by_label else name, picked[0].agent_name, picked[0].eval_track)] = picked
    return groups


def _discrimination(label: str, track: str, rs: list[RunRecord], insts: dict[str, Instance]) -> dict[str, Any]:
    """The discrimination check on one group's runs (module docstring)."""
    z = {r.instance_id: insts[r.instance_id].complexity.z for r in rs  # type: ignore[union-attr]
         if insts[r.instance_id].complexity is not None}
    in_z = [r for r in rs if r.instance_id in z]
    quarts = _quartile_rows(in_z, z) if z else []
    out: dict[str, Any] = {"agent": label, "eval_track": track, "runs": len(rs),
                           "instances": len({r.instance_id for r in rs}), "quartiles": quarts,
                           "evaluable": bool(quarts) and all(q["runs"] for q in quarts), "fired": False,
                           "m_q1": None, "m_q4": None, "delta": None}
    if not out["evaluable"]:
        out["note"] = f"needs a scored run in each of the four quartiles ({len(z)} instances with z(I))"
        return out
    m1, m4 = _frac(quarts[0]["score_c"]), _frac(quarts[3]["score_c"])
    out.update(m_q1=stats.rnd(float(m1)), m_q4=stats.rnd(float(m4)), delta=stats.rnd(float(m1 - m4)),
               fired=bool(m1 - m4 < DELTA_Q1_Q4 or m4 < Q4_FLOOR),
               delta_below_threshold=bool(m1 - m4 < DELTA_Q1_Q4), q4_below_floor=bool(m4 < Q4_FLOOR))
    return out


def analyze(runs: Runs, bundle: Bundle, *, reference: str | None = None, mode: str = "normal") -> dict[str, Any]:
    """The pilot analysis of ``runs`` played on ``bundle`` (module docstring); ``reference`` (``AGENT[#HASH]``)
    restricts the discrimination check to that agent spec."""
    insts = _instances(runs, bundle)
    scored = runs.scored()
    scope, fallback = _scope(scored, mode)
    n_inst = len({r.instance_id for r in scope})
    no_z = sorted({r.instance_id for r in scope if insts[r.instance_id].complexity is None})

    groups = [_discrimination(label, track, rs, insts) for (label, _, track), rs in sorted(_groups(scope, reference)
                                                                                          .items())]
    assessed = [g for g in groups if g["evaluable"]]
    discrimination: dict[str, Any] = {
        "population": "reference" if reference is not None else "non-baseline agents and people",
        "reference": reference, "groups": groups, "assessed": bool(assessed),
        "fired": any(g["fired"] for g in assessed)}
    if not groups:
        discrimination["note"] = (f"not assessed: no run of a non-baseline agent or person in {mode} mode (the "
                                  "baselines are not the population the window is calibrated for; name one with "
                                  "--reference AGENT[#HASH])")
    elif not assessed:
        discrimination["note"] = "not assessed: no group has a scored run in each of the four z(I) quartiles"

    greedy = [r for r in scope if r.agent_name == SHORTCUT_AGENT and r.eval_track == SHORTCUT_TRACK]
    goal, cert = _rate(greedy, "goal"), _rate(greedy, "score_c")
    shortcut: dict[str, Any] = {"agent": SHORTCUT_AGENT, "eval_track": SHORTCUT_TRACK, "evaluable": bool(greedy),
                                "fired": False, "runs": len(greedy), "goal_rate": goal, "certified_rate": cert}
    if greedy:
        shortcut["fired"] = bool(_frac(goal) > SHORTCUT_GOAL and _frac(cert) < SHORTCUT_CERTIFIED)
    else:
        shortcut["note"] = f"no scored run of {SHORTCUT_AGENT} on {SHORTCUT_TRACK} in {mode} mode"
    sample = {"target": SAMPLE_TARGET, "instances": n_inst, "reached": n_inst >= SAMPLE_TARGET,
              "remaining": max(0, SAMPLE_TARGET - n_inst)}
    triggers = _triggers(discrimination, shortcut, sample)
    recommendation = _recommend(triggers, discrimination, shortcut, sample)

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
        "scope": {"mode": mode, "held_out_splits": "not public_dev/public_val", "held_out_fallback": fallback,
                  "runs": len(scope), "instances": n_inst, "instances_without_z": no_z},
        "discrimination": discrimination,
        "shortcut": shortcut,
        "sample": sample,
        "triggers": triggers,
        "recommendation": recommendation,
        "audit": {"normative": False, "note": "per-knob diagnostics (DEC-058) never change the recommendation",
                  "slices": audit},
    }


def _triggers(disc: dict[str, Any], short: dict[str, Any], sample: dict[str, Any]) -> list[dict[str, str]]:
    """Every trigger that fired, each with the one sentence that explains it."""
    out = []
    for g in disc["groups"]:
        if not g["fired"]:
            continue
        parts = []
        if g["delta_below_threshold"]:
            parts.append(f"its certified rate falls by only {g['delta']:.3f} from the easiest z(I) quartile "
                         f"({g['m_q1']:.3f}) to the hardest ({g['m_q4']:.3f}), less than the {float(DELTA_Q1_Q4)} "
                         "the window must separate")
        if g["q4_below_floor"]:
            parts.append(f"it certifies {g['m_q4']:.3f} of the hardest quartile, below the floor "
                         f"{float(Q4_FLOOR)}")
        out.append({"trigger": "discrimination", "agent": g["agent"],
                    "sentence": f"Discrimination ({g['agent']} on {g['eval_track']}): " + " and ".join(parts) + "."})
    if short["fired"]:
        out.append({"trigger": "shortcut", "agent": short["agent"],
                    "sentence": f"Shortcut ({short['agent']} on {short['eval_track']}): the greedy baseline reaches "
                                f"the goal in {short['goal_rate']['rate']:.3f} of its runs (above "
                                f"{float(SHORTCUT_GOAL)}) while certifying only {short['certified_rate']['rate']:.3f}"
                                f" (below {float(SHORTCUT_CERTIFIED)}), so the window rewards effects without "
                                "causes."})
    if sample["reached"]:
        out.append({"trigger": "checkpoint", "agent": "",
                    "sentence": f"Checkpoint: the sample has reached {sample['instances']} instances (N = "
                                f"{sample['target']}), where DEC-014c schedules recalibration whatever the rates."})
    return out


def _recommend(triggers: list[dict[str, str]], disc: dict[str, Any], short: dict[str, Any],
               sample: dict[str, Any]) -> dict[str, Any]:
    sample_text = (f"sample target reached ({sample['instances']} >= {sample['target']} instances)" if sample["reached"]
                   else f"sample {sample['instances']} of {sample['target']} instances")
    unassessed = [name for name, ok in (("discrimination", disc["assessed"]), ("shortcut", short["evaluable"]))
                  if not ok]
    # A fired trigger decides without waiting for the checkpoint (DEC-014c's threshold-anomaly arm), but rates read
    # from fewer than N instances are still a small sample: the recommendation stays provisional until N. A check
    # that could not be assessed cannot undo one that fired, so it makes only "keep" provisional.
    below_n = not sample["reached"]
    if triggers:
        reason = " ".join(t["sentence"] for t in triggers) + f" ({sample_text}"
        reason += f"; provisional until the sample reaches N = {sample['target']} instances)" if below_n else ")"
        return {"decision": "recalibrate_normal_window", "reason": reason, "provisional": below_n}
    said = []
    assessed = [g for g in disc["groups"] if g["evaluable"]]
    if assessed:
        said.append("discrimination holds for " + ", ".join(
            f"{g['agent']} (M_Q1 - M_Q4 = {g['delta']:.3f} >= {float(DELTA_Q1_Q4)}, M_Q4 = {g['m_q4']:.3f} >= "
            f"{float(Q4_FLOOR)})" for g in assessed))
    if short["evaluable"]:
        said.append(f"no shortcut (greedy goal {short['goal_rate']['rate']:.3f} / certified "
                    f"{short['certified_rate']['rate']:.3f})")
    if unassessed:
        said.append(f"not assessed: {', '.join(unassessed)}")
    reason = f"no trigger fired: {'; '.join(said)} ({sample_text}); the DEC-014b coefficients stay"
    return {"decision": "keep_coefficients", "reason": reason, "provisional": bool(unassessed) or below_n}


def pilot_notes(analysis: dict[str, Any]) -> list[str]:
    """What the audit could not assess, one sentence each (the text output prints them beside the triggers)."""
    return [f"{name}: {analysis[name]['note']}" for name in ("discrimination", "shortcut")
            if analysis[name].get("note")]


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
