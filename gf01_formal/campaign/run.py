"""``gf01 campaign``: a DEC-056 panel over every instance of a bundle, then validation, report and pilot analysis.

A campaign directory holds (docs/campaigns.md):

=====================  ============================================================================================
``campaign.json``      what the campaign plays: bundle hash, agents, seed, diagnostic caps (no executor, no paths)
``runs.jsonl``         the run records, appended as results arrive (+ ``runs.jsonl.d/`` side files)
``validation.json``    :func:`gf01_formal.runs.validate.validate` of the runs against the bundle
``report.json|md|html`` :mod:`gf01_formal.report.build` and :mod:`~gf01_formal.report.render`
``analysis.json``      :mod:`gf01_formal.report.pilot`, with ``plots/`` (Score_C against each knob)
=====================  ============================================================================================

The runs are played by the driver that ``gf01 evaluate`` uses too (:mod:`gf01_formal.campaign.driver`), so a
campaign is as resumable: a rerun after a crash, kill -9 or Ctrl-C of the driver or of a worker plays exactly the
missing runs, and the final artifacts, made from the runs sorted by run id, are the same bytes as an uninterrupted
campaign's (``timing`` aside, which no artifact but the runs file holds).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gf01_formal.agents import PANELS
from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import pretty_json, read_json, write_json_atomic, write_text_atomic
from gf01_formal.campaign import executors
from gf01_formal.campaign.driver import drive
from gf01_formal.campaign.shards import Plan
from gf01_formal.runs.scoring_limit import SCORING_SECONDS
from gf01_formal.runs.store import RunsFile
from hoa.errors import Gf01Error

if TYPE_CHECKING:
    from gf01_formal.agents.adaptation import Adaptation
    from gf01_formal.scoring.scores import AnswerBook

CAMPAIGN_SCHEMA = "gf01-formal.campaign.v1"
#: Instances per task by default: a task is then a fraction of a second to seconds of work, far above Dask's
#: overhead of about 1 ms per task, and small enough that a killed worker loses little.
DEFAULT_BATCH = 4
ARTIFACTS = ("campaign.json", "runs.jsonl", "validation.json", "report.json", "report.md", "report.html",
             "analysis.json")


@dataclass
class CampaignSummary:
    """What a campaign invocation did."""

    directory: str
    panel: str
    agents: list[str]
    missing_from_panel: list[str]
    played: int = 0
    skipped: int = 0
    repaired_bytes: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    violations: int = 0
    recommendation: str | None = None
    triggers: list[str] = field(default_factory=list)  # the pilot analysis's fired triggers, one sentence each
    pilot_notes: list[str] = field(default_factory=list)  # what it could not assess

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON (sorted keys)."""
        return {"dir": self.directory, "panel": self.panel, "agents": self.agents,
                "panel_complete": not self.missing_from_panel, "missing_from_panel": self.missing_from_panel,
                "played": self.played, "skipped": self.skipped, "repaired_bytes": self.repaired_bytes,
                "statuses": dict(sorted(self.statuses.items())), "violations": self.violations,
                "recommendation": self.recommendation, "triggers": self.triggers,
                "pilot_notes": self.pilot_notes}


def panel_specs(panel: str, agents: Sequence[str] | None) -> tuple[list[AgentSpec], list[str]]:
    """The agent specs a campaign plays, and the agents of ``panel`` it leaves out.

    Without ``agents``, the whole panel, each on its DEC-056 track; an agent the registry does not have yet is an
    error naming it (a campaign never silently plays part of its panel). With ``agents``, those (built-ins that
    take no params, on their own tracks), and the panel agents missing are reported: such a campaign's report is
    not official. ``llm`` and ``cmd`` are refused: they need a model or a command, which a campaign has no option
    for; ``gf01 evaluate`` plays them.
    """
    from gf01_formal.agents import BUILTIN

    if panel not in PANELS:
        raise Gf01Error(f"unknown panel {panel!r} (full or core)", field="--panel")
    names = list(agents) if agents else list(PANELS[panel])
    # The agents a campaign can build from a name alone: those that take no params (not llm, not cmd).
    playable = sorted(n for n, b in BUILTIN.items() if not b.params)
    needs_params = [n for n in names if n in BUILTIN and BUILTIN[n].params]
    if needs_params:
        raise Gf01Error(f"{', '.join(needs_params)}: campaigns play the baseline panel's built-in agents "
                        f"({', '.join(playable)}); play a language model with 'gf01 evaluate BUNDLE --agent llm "
                        "--model M ...' and an external program with 'gf01 evaluate BUNDLE --agent-cmd CMD'",
                        field="--agents")
    unknown = [n for n in names if n not in BUILTIN]
    if unknown:
        hint = "" if agents else "; name the agents to play with --agents"
        raise Gf01Error(f"agent(s) {', '.join(unknown)} not in this installation (built in: "
                        f"{', '.join(playable)}){hint}", field="--agents")
    if len(set(names)) != len(names):
        raise Gf01Error("an agent is named twice", field="--agents")
    # Each on its factory's track, which for the panel's agents is their DEC-056 track (agents.PANEL_TRACK).
    specs = [AgentSpec(n, BUILTIN[n].track) for n in names]
    return specs, [n for n in PANELS[panel] if n not in names]


def _campaign_json(plan: Plan, bundle_hash: str | None, panel: str) -> dict[str, Any]:
    return {"schema_version": CAMPAIGN_SCHEMA, "bundle_instances_hash": bundle_hash, "panel": panel,
            "agents": [s.to_json() for s in plan.specs], "seed": plan.seed, "diagnostic": plan.caps,
            "gold_set": plan.gold_set}


def _check_same(directory: Path, spec: dict[str, Any]) -> None:
    path = directory / "campaign.json"
    if not path.exists():
        return
    old = read_json(path)
    if not isinstance(old, dict):
        raise Gf01Error("not a campaign file", file=str(path))
    diff = sorted(k for k in spec if old.get(k) != spec[k])
    if diff:
        raise Gf01Error(f"the directory holds another campaign (it differs in {', '.join(diff)}); use another -o",
                        file=str(path))


def run_campaign(
    bundle_path: str | os.PathLike[str],
    directory: str | os.PathLike[str],
    *,
    panel: str = "full",
    agents: Sequence[str] | None = None,
    executor: str = "local",
    jobs: int | None = None,
    seed: int = 0,
    caps: dict[str, Any] | None = None,
    gold_set: str = "M",
    memory: float | None = None,
    scoring_seconds: float = SCORING_SECONDS,
    batch: int = DEFAULT_BATCH,
    manifest: str | os.PathLike[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    adaptation: Adaptation | None = None,
    on_pool: Callable[[list[int]], None] | None = None,
    sign_key: str | os.PathLike[str] | None = None,
    limit: int | None = None,
) -> CampaignSummary:
    """Play, validate, report and analyse (module docstring). ``caps`` (:meth:`CapSet.to_json`) turns the
    SubsetMin diagnostic on, metered under those caps; ``jobs`` defaults to every core (local executor);
    ``gold_set`` is where the best match ranks its gold (M: M(I), the specification's; MB: M_B(I)); ``memory``
    (MiB) limits each query that scores a run (past it the run is recorded ``harness_error``; not part of
    campaign.json: a resource, not a setting of what is measured), and ``scoring_seconds`` one run's scoring as a
    whole (runs/scoring_limit.py; not in campaign.json either); ``sign_key``: the evaluator's Ed25519 private key
    file, each record signed with it (runs/signing.py). ``limit``: only the bundle's first ``limit`` instances (a
    smoke test; campaign.json records it, so the directory is not resumed as a whole campaign)."""
    from gf01_formal.instances.io import load_set

    kind, address = executors.parse_executor(executor)
    if kind == "dask" and jobs is not None:
        raise Gf01Error("--jobs sets the local pool; a Dask cluster has the workers it has", field="--jobs")
    if batch < 1:
        raise Gf01Error("a task holds at least one instance", field="--batch")
    signer = None
    if sign_key is not None:  # read before anything is made: a bad key file stops the command at once
        from gf01_formal.runs.signing import load_signer

        signer = load_signer(sign_key)
    out = Path(directory)
    if out.is_symlink():  # followed, never replaced: a dangling link names the directory to make
        out = Path(os.path.realpath(out))
    if out.exists() and not out.is_dir():
        raise Gf01Error("is not a directory", file=str(out))
    specs, missing = panel_specs(panel, agents)
    specs = [s.adapted(adaptation) for s in specs]
    loaded = load_set(bundle_path)
    if loaded.bundle_hash is None:
        raise Gf01Error("a campaign plays a bundle (gf01 generate, gf01 import); this is one instance",
                        file=str(bundle_path))
    instances = list(loaded.instances) if limit is None else list(loaded.instances[:limit])
    bundle_hash = loaded.bundle_hash
    man = None
    if manifest is not None:
        from gf01_formal.report.coverage import load_manifest

        man = load_manifest(manifest)
    plan = Plan(instances=instances, specs=specs, seed=seed, bundle_hash=bundle_hash, caps=caps, gold_set=gold_set,
                memory=memory, scoring_seconds=scoring_seconds)
    spec = _campaign_json(plan, bundle_hash, panel)
    if limit is not None:
        spec["limit"] = limit
    _check_same(out, spec)
    out.mkdir(parents=True, exist_ok=True)
    # the lock before anything is written: one campaign per directory
    store = RunsFile(out / "runs.jsonl", signer=signer)
    try:
        store.check_gold_set(gold_set)
        write_json_atomic(out / "campaign.json", spec)
        return _play(store, out, bundle_path, plan, man, panel, specs, missing, kind, address, jobs, batch, on_pool,
                     progress)
    finally:  # the lock is held through the reports: they are made from the whole file
        store.close()



def _play(store: RunsFile, out: Path, bundle_path: str | os.PathLike[str], plan: Plan, man: Any, panel: str,
          specs: list[AgentSpec], missing: list[str], kind: str, address: str | None, jobs: int | None, batch: int,
          on_pool: Callable[..., Any] | None, progress: Callable[[int, int], None] | None) -> CampaignSummary:
    """The runs not yet in ``store`` played and appended (:func:`gf01_formal.campaign.driver.drive`), then
    :func:`finish`."""
    answers: AnswerBook = {}
    tally = drive(plan, store, executor=kind, jobs=jobs if jobs is not None else (os.cpu_count() or 1),
                  address=address, batch=batch, progress=progress, on_pool=on_pool, answers=answers)
    summary = CampaignSummary(str(out), panel, [s.name for s in specs], missing, played=tally.played,
                              skipped=tally.skipped, repaired_bytes=tally.repaired_bytes, statuses=tally.statuses)
    finish(out, bundle_path, man, panel, summary, plan.caps, answers)
    return summary


def finish(out: Path, bundle_path: str | os.PathLike[str], manifest: Any, panel: str,
           summary: CampaignSummary, caps: dict[str, Any] | None = None, answers: AnswerBook | None = None) -> None:
    """The final artifacts, made from the whole runs file (the same bytes however the runs were played). The report
    names the diagnostic caps when the runs ran under any (``caps``: CapSet.to_json). Validation reuses the best
    matches this campaign's scorers computed (``answers``): it re-scores every record, and a record whose scores
    differ from what was computed for its certificate still fails."""
    from gf01_formal.instances.io import load_bundle
    from gf01_formal.report.build import build_report
    from gf01_formal.report.load import load_runs
    from gf01_formal.report.pilot import analyze, knob_plots, pilot_notes
    from gf01_formal.report.render import html_page, markdown
    from gf01_formal.runs.validate import validate
    from gf01_formal.scoring.caps import CapSet

    runs_path = out / "runs.jsonl"
    violations = validate([runs_path], bundle=str(bundle_path), answers=answers)
    summary.violations = len(violations)
    write_json_atomic(out / "validation.json", {"ok": not violations, "violations": [str(v) for v in violations]})
    runs = load_runs([runs_path])
    capset = None if caps is None else CapSet(**caps)
    report = build_report(runs, manifest=manifest, panel=panel if manifest is not None else None,
                          caps=capset.report_section() if capset is not None and capset.capped() else None)
    write_text_atomic(out / "report.json", pretty_json(report))
    write_text_atomic(out / "report.md", markdown(report))
    write_text_atomic(out / "report.html", html_page(report))
    art = load_bundle(bundle_path)
    analysis = analyze(runs, art)
    write_json_atomic(out / "analysis.json", analysis)
    for name, svg in sorted(knob_plots(analysis).items()):
        write_text_atomic(out / "plots" / name, svg)
    summary.recommendation = analysis["recommendation"]["decision"]
    summary.triggers = [t["sentence"] for t in analysis["triggers"]]
    summary.pilot_notes = pilot_notes(analysis)
