"""``gf01 report``: run records grouped by every reporting dimension of spec §7.4 plus mode and agent, each number
with its 95 % interval and method, rankings and paired comparisons inside a stratum, and manifest coverage.

Nothing is pooled that must not be (DEC-001): a group fixes every §7.4 dimension (family, track, renderer, profile,
protocol, scored commit, the four adaptation fields, difficulty slice, split), the mode (hard and normal are
different objectives) and the agent (name and spec hash). A *stratum* is a group without the agent: agents are
ranked and compared only inside one, so only agents of the same track ever meet.

The headline comes first (``headline``): per track (every key field but the difficulty slice), each agent's runs,
Score_C and goal rates, mean Eff_t and Eff_a of its certified runs, and for language models the tokens their
records report (unknown where the endpoint did not say) and their cost when a price is given.

Per group: runs by status (all of them, scored or not), n scored runs (completed and agent_error), distinct
instances, Score_C rate and goal rate (Wilson), median Eff_t given goal and given certified, mean AP/TS precision,
recall and F1 (bootstrap over instances), the mean kappa vector, and the diagnostic statuses; a group of fewer than
:data:`FEW_INSTANCES` instances is flagged (``few_instances``). Per stratum: the
lexicographic kappa ranking (exact: means compared as fractions; ``tied`` where a rank is shared, ``all_tied`` when
every agent shares one) and, for every pair of agents, the difference of Score_C and goal rates on the instances
both played, with its interval, McNemar's exact test and the number of discordant instances.

The agents legend (``agents``) says who each label is: per agent, its name, spec hash, tracks and the parameters of
its spec (the model, the endpoint's host, the temperature, the prompt template...), with what its runs reported
about the model and prompt; a parameter named as a secret is withheld and a URL is cut to its host, so no key and no
credential in a URL reaches a report.

The figures' data are part of the report (``figures``): Score_C by complexity quartile of z(I) per agent, and the
Eff_t distributions, per (split, mode) panel; the renderers (:mod:`.render`) draw from the report alone, so a
report file reproduces its figures. The report holds no timing, path or clock: the same runs give the same bytes.

>>> from gf01_formal.agents.base import AgentSpec
>>> from gf01_formal.campaign.evaluate import evaluate
>>> from gf01_formal.report.load import load_runs
>>> _ = evaluate("bundle.json", [AgentSpec("oracle", "EVAL-OC")], "runs.jsonl")
>>> report = build_report(load_runs(["runs.jsonl"]))
>>> sorted(report)[:3]
['agents', 'coverage', 'dimensions']
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, get_args
from urllib.parse import urlsplit

from gf01_formal.artifacts import canonical_json
from gf01_formal.report import stats
from gf01_formal.report.coverage import Manifest, agent_label, coverage, describe_missing
from gf01_formal.report.load import SCORED, Runs
from gf01_formal.runs.record import RUN_SCHEMA, RunRecord, Status
from gf01_formal.scoring.values import PRF_FIELDS
from hoa.errors import Gf01Error

REPORT_SCHEMA = "gf01-formal.report.v1"
#: Spec §7.4, in its order.
DIMENSIONS = ("family_id", "eval_track", "renderer_track", "renderer_profile_id", "play_protocol",
              "scored_commit_episode", "adaptation_condition", "adaptation_budget_tokens", "adaptation_data_scope",
              "adaptation_protocol_id", "difficulty_slice", "split_id")
#: Grouped on as well: hard and normal mode are different objectives (spec §4.2).
EXTRA = ("mode",)
KEY_FIELDS = DIMENSIONS + EXTRA
#: A figure fixes these; its panels are (split, mode), its x axis the complexity quartile that replaces the slice.
FIGURE_KEY = tuple(f for f in DIMENSIONS if f not in ("difficulty_slice", "split_id"))
STATUSES: tuple[str, ...] = get_args(Status)
PRF = PRF_FIELDS
#: The headline fixes every key field but the difficulty slice: one row per agent and track (never pooled across
#: tracks, modes, splits, renderers or adaptation conditions), its slices together.
HEADLINE_KEY = tuple(f for f in KEY_FIELDS if f != "difficulty_slice")
#: A group with fewer distinct instances than this is flagged: its interval spans most of [0, 1] and says little.
FEW_INSTANCES = 5


def _key(rec: RunRecord, fields: Sequence[str]) -> tuple[Any, ...]:
    return tuple(getattr(rec, f) for f in fields)


def _order(key: tuple[Any, ...]) -> str:
    """A total, deterministic order on keys that may hold None, bools and ints (their canonical JSON)."""
    return canonical_json(list(key))


def methods() -> dict[str, Any]:
    """The methods a report names, once, at its top."""
    return {
        "confidence": stats.CONFIDENCE,
        "ids": dict(stats.METHODS),
        "rates": stats.WILSON,
        "means_and_medians": stats.BOOTSTRAP,
        "paired_differences": "mean over the instances both agents played of the per-instance difference "
                              f"(interval: {stats.BOOTSTRAP})",
        "paired_test": stats.MCNEMAR,
        "ranking": "lexicographic on the mean kappa vector (M, G, -Eff_t, -Eff_a), compared exactly as fractions; "
                   "equal vectors share a rank",
        "quartiles": "rank quartiles of z(I) over the distinct instances of a (split, mode) panel, ties broken by "
                     "instance_id",
        "scored_statuses": list(SCORED),
        "unscored_statuses": [s for s in STATUSES if s not in SCORED],
        "status_policy": "every run is counted under its status; completed and agent_error runs are scored as "
                         "played; harness_error and provider_error runs are never scored (not the agent's failure)",
    }


def software() -> dict[str, str]:
    """Versions of what computes the numbers (a report is byte-reproducible on the same versions)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("gf01-formal", "numpy", "scipy", "statsmodels", "matplotlib"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _group_stats(runs: list[RunRecord]) -> dict[str, Any]:
    scored = [r for r in runs if r.status in SCORED]
    inst = [r.instance_id for r in scored]
    statuses = Counter(r.status for r in runs)
    goal = [r for r in scored if r.goal]
    cert = [r for r in scored if r.valid]
    n = len(scored)
    out: dict[str, Any] = {
        "runs": {"total": len(runs), **{s: statuses[s] for s in STATUSES}},
        "n": n,
        "instances": len(set(inst)),
        "score_c": stats.wilson(sum(int(r.score_c) for r in scored), n),
        "goal": stats.wilson(len(goal), n),
        "eff_t_given_goal": stats.clustered_median([r.eff_t for r in goal], [r.instance_id for r in goal]),
        "eff_t_given_certified": stats.clustered_median([r.eff_t for r in cert],
                                                        [r.instance_id for r in cert]),
        **{m: stats.clustered_mean([getattr(r, m) for r in scored], inst) for m in PRF},
        "kappa_mean": None,
        "diagnostic": dict(sorted(Counter(r.diagnostic_status for r in scored).items())),
        "subset_min_true": sum(1 for r in scored if r.subset_min is True),
    }
    if n:
        out["kappa_mean"] = [stats.rnd(float(c)) for c in _kappa_mean(scored)]
    out["few_instances"] = out["instances"] < FEW_INSTANCES
    return out


def _tokens(runs: list[RunRecord], price: tuple[float, float] | None) -> dict[str, Any] | None:
    """Tokens the runs' records report (every run, scored or not: a failed run spent tokens too), None when no run
    reports usage (not a language model). A run whose endpoint did not say is counted as unknown, never as 0; the
    cost (``price``: per million input and output tokens) is of the known tokens."""
    with_usage = [r.usage for r in runs if isinstance(r.usage, dict) and "input_tokens" in r.usage]
    if not with_usage:
        return None
    known = [u for u in with_usage if isinstance(u.get("input_tokens"), int)
             and isinstance(u.get("output_tokens"), int)]
    tin, tout = sum(u["input_tokens"] for u in known), sum(u["output_tokens"] for u in known)
    out: dict[str, Any] = {"runs": len(with_usage), "unknown_runs": len(with_usage) - len(known), "input": tin,
                           "output": tout, "per_run": stats.rnd((tin + tout) / len(known)) if known else None,
                           "cost": None}
    if price is not None:
        out["cost"] = stats.rnd((tin * price[0] + tout * price[1]) / 1e6)
    return out


def _headline(records: list[RunRecord], labels: dict[tuple[str, str], str],
              price: tuple[float, float] | None) -> list[dict[str, Any]]:
    """Per :data:`HEADLINE_KEY`: each agent's runs, Score_C and goal rates (Wilson), mean Eff_t and Eff_a of its
    certified runs (bootstrap over instances), and the tokens of language models (with their cost given a price)."""
    rows: dict[tuple[Any, ...], dict[str, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        rows[_key(r, HEADLINE_KEY)][labels[(r.agent_name, r.agent_hash)]].append(r)
    out = []
    for key in sorted(rows, key=_order):
        agents = []
        for a in sorted(rows[key]):
            rs = rows[key][a]
            scored = [r for r in rs if r.status in SCORED]
            cert = [r for r in scored if r.valid]
            n = len(scored)
            agents.append({
                "agent": a, "runs": len(rs), "n": n, "instances": len({r.instance_id for r in scored}),
                "score_c": stats.wilson(sum(int(r.score_c) for r in scored), n),
                "goal": stats.wilson(sum(1 for r in scored if r.goal), n),
                "eff_t_given_certified": stats.clustered_mean([r.eff_t for r in cert], [r.instance_id for r in cert]),
                "eff_a_given_certified": stats.clustered_mean([r.eff_a for r in cert], [r.instance_id for r in cert]),
                "tokens": _tokens(rs, price),
            })
        out.append({"key": dict(zip(HEADLINE_KEY, key, strict=True)),
                    "slices": sorted({r.difficulty_slice for rs in rows[key].values() for r in rs}, key=str),
                    "agents": agents})
    return out


def _kappa_mean(scored: list[RunRecord]) -> tuple[Fraction, ...]:
    """The mean kappa vector (M, G, -Eff_t, -Eff_a), exactly."""
    n = len(scored)
    return tuple(Fraction(sum(r.kappa[k] for r in scored), n) for k in range(4))


def _stratum(key: tuple[Any, ...], members: dict[str, list[RunRecord]]) -> dict[str, Any]:
    """Ranking and paired comparisons of the agents of one stratum (label -> their runs)."""
    scored = {a: [r for r in rs if r.status in SCORED] for a, rs in members.items()}
    vectors = {a: _kappa_mean(rs) for a, rs in scored.items() if rs}
    order = sorted(vectors, key=lambda a: (tuple(-c for c in vectors[a]), a))
    ranking = []
    for pos, a in enumerate(order):
        rank = pos + 1 if pos == 0 or vectors[order[pos - 1]] != vectors[a] else ranking[-1]["rank"]
        ranking.append({"rank": rank, "agent": a, "n": len(scored[a]),
                        "kappa_mean": [stats.rnd(float(c)) for c in vectors[a]]})
    ranks = Counter(r["rank"] for r in ranking)
    for r in ranking:
        r["tied"] = ranks[r["rank"]] > 1
    paired = []
    for a, b in itertools.combinations(sorted(scored), 2):
        sa, sb = _by_instance(scored[a], "score_c"), _by_instance(scored[b], "score_c")
        ga, gb = _by_instance(scored[a], "goal"), _by_instance(scored[b], "goal")
        # Instances where the two agents' Score_C differ: without one, no test can tell them apart.
        discordant = sum(1 for i in set(sa) & set(sb) if sum(sa[i]) / len(sa[i]) != sum(sb[i]) / len(sb[i]))
        paired.append({"a": a, "b": b, "score_c": stats.paired_difference(sa, sb),
                       "goal": stats.paired_difference(ga, gb), "score_c_test": stats.mcnemar_exact(sa, sb),
                       "discordant": discordant})
    return {"key": dict(zip(KEY_FIELDS, key, strict=True)), "agents": sorted(members), "ranking": ranking,
            "all_tied": len(ranking) > 1 and len(ranks) == 1, "paired": paired}


def _by_instance(runs: list[RunRecord], field: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        out[r.instance_id].append(float(getattr(r, field)))
    return out


def _figures(records: list[RunRecord], labels: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    """Per figure key, per (split, mode) panel: Score_C by z(I) quartile per agent, and Eff_t distributions."""
    scored = [r for r in records if r.status in SCORED]
    figs: dict[tuple[Any, ...], dict[tuple[Any, Any], list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in scored:
        figs[_key(r, FIGURE_KEY)][(r.split_id, r.mode)].append(r)
    out = []
    for fkey in sorted(figs, key=_order):
        panels = []
        for split, mode in sorted(figs[fkey], key=_order):
            runs = figs[fkey][(split, mode)]
            zs = {r.instance_id: r.complexity_z for r in runs if r.complexity_z is not None}
            quart = stats.quartiles([(z, i) for i, z in zs.items()]) if zs else {}
            ranges = {q: [stats.rnd(min(zs[i] for i in quart if quart[i] == q)),
                          stats.rnd(max(zs[i] for i in quart if quart[i] == q))]
                      for q in sorted(set(quart.values()))}
            by_agent: dict[str, list[RunRecord]] = defaultdict(list)
            for r in runs:
                by_agent[labels[(r.agent_name, r.agent_hash)]].append(r)
            agents = []
            for a in sorted(by_agent):
                rs = by_agent[a]
                quarts = []
                for q in sorted(ranges):
                    inq = [r for r in rs if quart.get(r.instance_id) == q]
                    quarts.append({"quartile": q, "z_range": ranges[q],
                                   "score_c": stats.wilson(sum(int(r.score_c) for r in inq), len(inq))})
                agents.append({"agent": a, "eval_track": rs[0].eval_track, "quartiles": quarts,
                               "no_z": sum(1 for r in rs if r.complexity_z is None),
                               "eff_t_given_certified": _hist(r.eff_t for r in rs if r.valid),
                               "eff_t_given_goal": _hist(r.eff_t for r in rs if r.goal)})
            panels.append({"split_id": split, "mode": mode, "instances": len({r.instance_id for r in runs}),
                           "agents": agents})
        out.append({"key": dict(zip(FIGURE_KEY, fkey, strict=True)), "panels": panels})
    return out


#: ``agent_meta`` fields the agents legend shows: what names the model and the prompt an agent actually used (the
#: model the endpoint reports, the prompt template and its hash, the API and client). Per-run fields (a transcript
#: hash, a model seed, usage) describe a run, not the agent, and an external agent's meta is free-form, so no other
#: field is shown.
LEGEND_META = ("model_reported", "prompt_template", "prompt_sha256", "api", "client")
#: A parameter whose name says it holds a secret: its value is withheld. A name ending in ``_env`` names the
#: environment variable that holds a secret (``api_key_env``), which is not itself a secret and is shown.
SECRET_NAME = re.compile(r"(^|_)(api_?key|key|secret|password|passwd|token|auth|authorization|credentials?|cookie)"
                         r"($|_)", re.IGNORECASE)
WITHHELD = "<withheld>"
#: A URL anywhere in a string (a base URL, or an endpoint inside an external agent's command line).
URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def _url_host(url: str) -> str:
    """The host (and port) of ``url``: never its user, password, path or query, which may carry a credential."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a malformed port: show no port rather than fail the report
        port = None
    host = parts.hostname or "?"
    host = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
    return f"{host}:{port}" if port is not None else host


def _public(key: str, value: Any) -> tuple[str, Any]:
    """One spec parameter as the legend shows it: secret-named values withheld, URLs cut to their host (a whole-URL
    value's key gets ``_host`` appended, so ``base_url`` shows as ``base_url_host``), containers cleaned throughout.
    """
    if SECRET_NAME.search(key) and not key.lower().endswith("_env"):
        return key, WITHHELD
    if isinstance(value, str):
        if URL.fullmatch(value.strip()):
            return (key if key.endswith("_host") else f"{key}_host"), _url_host(value.strip())
        return key, URL.sub(lambda m: _url_host(m.group(0)), value)
    if isinstance(value, dict):
        cleaned = {}
        for k in sorted(value, key=str):
            name, v = _public(str(k), value[k])
            if name != str(k) and name in value:  # both base_url and base_url_host given: keep the names apart
                name = str(k)
            cleaned[name] = v
        return key, dict(sorted(cleaned.items()))
    if isinstance(value, list):
        return key, [_public(key, v)[1] for v in value]
    return key, value


def _pathless(params: dict[str, Any]) -> dict[str, Any]:
    """An external program's command with every path cut to its file name: a report never shows where the program
    lay on the machine that ran it (its content hash, ``program_sha256``, says which program it was)."""
    cmd = params.get("cmd")
    if not isinstance(cmd, str):
        return params
    import shlex

    try:
        words = shlex.split(cmd)
    except ValueError:
        return {**params, "cmd": "(withheld)"}
    return {**params, "cmd": " ".join(w.rsplit("/", 1)[-1] if "/" in w and "://" not in w else w for w in words)}


def _agents(records: list[RunRecord], labels: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    """The agents legend: per label (sorted), the agent's name, hash, tracks, runs, its spec's parameters as
    :func:`_public` shows them, and the :data:`LEGEND_META` values its runs reported (each a sorted list)."""
    runs: dict[str, list[RunRecord]] = defaultdict(list)
    for r in records:
        runs[labels[(r.agent_name, r.agent_hash)]].append(r)
    out = []
    for label in sorted(runs):
        rs = runs[label]  # one (name, spec hash) per label, hence one spec; records come sorted by run id
        meta = {}
        for field in LEGEND_META:
            # Distinct values in canonical-JSON order: the same list whatever order the runs were played in.
            values = {canonical_json(_public(field, meta_of[field])[1]) for r in rs
                      if (meta_of := r.agent_meta or {}).get(field) is not None}
            if values:
                meta[field] = [json.loads(v) for v in sorted(values)]
        out.append({"agent": label, "agent_name": rs[0].agent_name, "agent_hash": rs[0].agent_hash,
                    "eval_tracks": sorted({r.eval_track for r in rs}), "runs": len(rs),
                    "params": _public("params", _pathless(rs[0].agent_spec.get("params", {})))[1],
                    "reported": meta})
    return out


def _hist(values: Any) -> list[list[int]]:
    c = Counter(int(v) for v in values)
    return [[v, c[v]] for v in sorted(c)]


def build_report(runs: Runs, *, manifest: Manifest | None = None, panel: str | None = None,
                 price: tuple[float, float] | None = None, caps: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report of ``runs`` (module docstring); with ``manifest``, its coverage (and ``panel``'s verdict); with
    ``price`` (per million input and output tokens), the headline's cost of language models' tokens; with ``caps``
    (CapSet.report_section), the diagnostic caps the runs ran under, provisional or frozen."""
    records = runs.records
    labels = agent_label(records)
    groups: dict[tuple[Any, ...], dict[str, list[RunRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        groups[_key(r, KEY_FIELDS)][labels[(r.agent_name, r.agent_hash)]].append(r)
    group_rows, strata = [], []
    for key in sorted(groups, key=_order):
        members = groups[key]
        for a in sorted(members):
            rs = members[a]
            group_rows.append({"key": dict(zip(KEY_FIELDS, key, strict=True)), "agent": a,
                               "agent_name": rs[0].agent_name, "agent_hash": rs[0].agent_hash,
                               **_group_stats(rs)})
        strata.append(_stratum(key, members))
    statuses = Counter(r.status for r in records)
    return {
        "schema_version": REPORT_SCHEMA,
        "run_schema_version": RUN_SCHEMA,
        "methods": methods(),
        "software": software(),
        "dimensions": list(DIMENSIONS),
        "grouped_on": [*KEY_FIELDS, "agent"],
        "inputs": {"runs": len(records), "scored": sum(statuses[s] for s in SCORED),
                   "statuses": {s: statuses[s] for s in STATUSES}, "instances": len({r.instance_id
                                                                                      for r in records}),
                   "digest": runs.digest},
        "versions": {f: sorted({getattr(r, f) for r in records}) for f in ("benchmark_version", "harness_version",
                                                                  "checker_version")},
        # Where the AP/TS best match of the scored runs was ranked: M (M(I), section 7.3) or MB (the option).
        "gold_sets": dict(sorted(Counter(r.gold_set for r in records if r.status in SCORED).items())),
        "agents": _agents(records, labels),
        "price_per_mtok": None if price is None else [stats.rnd(price[0]), stats.rnd(price[1])],
        "headline": _headline(records, labels, price),
        "groups": group_rows,
        "strata": strata,
        "figures": _figures(records, labels),
        "coverage": None if manifest is None else coverage(records, manifest, panel),
        **({} if caps is None else {"caps": caps}),
    }


def official_inputs(manifest: object | None, bundle: object | None) -> None:
    """``--official``'s own inputs given (Gf01Error naming the option otherwise): the command asks before it builds
    the report, which takes seconds."""
    if manifest is None:
        raise Gf01Error("--official needs the split manifest (--manifest) to check coverage", field="--manifest")
    if bundle is None:
        raise Gf01Error("--official re-verifies every run: give the bundle (--bundle)", field="--bundle")


def official_checks(report: dict[str, Any], paths: Sequence[str | os.PathLike[str]], *, bundle: str | None,
                    manifest: Manifest | None, panel: str, key: str | os.PathLike[str] | None = None) -> None:
    """``--official``: refuse (Gf01Error naming what is wrong) runs failing validation, runs outside the manifest or
    in another split, and incomplete coverage of the required panel. ``key``: the evaluator's public key file; every
    record must carry its signature and match it, as ``gf01 validate --key`` checks (the same validation: an
    unsigned, re-signed or altered record is a ``signature`` violation).

    A gate, not content: a report that passes is the same bytes as the report made without ``--official`` (so a
    release package can reproduce it without the private instances the re-verification needs)."""
    from gf01_formal.runs.validate import check_runs

    official_inputs(manifest, bundle)
    assert manifest is not None and bundle is not None
    violations = check_runs(paths, bundle=bundle, official=True, key=key).violations
    if violations:
        shown = "; ".join(str(v) for v in violations[:3])
        more = f" (and {len(violations) - 3} more)" if len(violations) > 3 else ""
        raise Gf01Error(f"{len(violations)} run(s) fail validation: {shown}{more}")
    cov = report["coverage"]
    assert cov is not None and cov["panel"] is not None
    if cov["unexpected"]:
        first = cov["unexpected"][0]
        raise Gf01Error(f"runs on instances outside the manifest: {first['agent']} on {first['instances'][0]} "
                        f"({sum(len(u['instances']) for u in cov['unexpected'])} instance(s) in all)")
    if cov["split_mismatch_runs"]:
        raise Gf01Error(f"{len(cov['split_mismatch_runs'])} run(s) carry a split_id other than the manifest's, e.g. "
                        f"{cov['split_mismatch_runs'][0]}")
    verdict = cov["panel"]
    if not verdict["complete"]:
        raise Gf01Error(f"the {panel} panel ({', '.join(verdict['required'])}) is not covered: "
                        + describe_missing(verdict["incomplete"]))
