"""Playing one run: an agent, built from what its track grants, plays one episode; the result is scored exactly and
recorded as a :class:`~gf01_formal.runs.record.RunRecord`, with its side files (the tool log) by content hash.

The harness keeps the agent honest: a fault of the agent (:class:`~gf01_formal.agents.base.AgentFault`) is logged on
its step, which proceeds with no edit; a fatal one (crash, timeout) ends the agent's part and the rest of the episode
has no edits. A failure of ours (an exception anywhere else) gives a ``harness_error`` record with no scores.

>>> spec = AgentSpec("random", "EVAL-CB")                                                  # doctest: +SKIP
>>> play_run(instance, problem, spec, seed=0, scorer=Scorer(problem)).record.score_c      # doctest: +SKIP
0
"""

from __future__ import annotations

import hashlib
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from encoders.problem import Problem
from gf01_formal.agents.base import Access, Agent, AgentFault, AgentSpec, ProviderError
from gf01_formal.artifacts import sha256_hex
from gf01_formal.instances.model import Instance
from gf01_formal.instances.splits import difficulty_band
from gf01_formal.play.episode import Episode
from gf01_formal.play.protocol import PROTOCOL, RENDERER_PROFILE, Action, End, Observation, Start
from gf01_formal.runs.record import RunRecord, run_id
from gf01_formal.scoring.certificates import certificate_to_json
from gf01_formal.scoring.scores import Scorer
from hoa.errors import Gf01Error
from solvers.limits import Limits, Unknown

#: Protocol violations (not JSON, a malformed action) an agent may make in one episode before its run is an
#: agent_error; each such step still proceeds with no edit.
MAX_VIOLATIONS = 3


def benchmark_version() -> str:
    """This toolkit's version (the run records' ``benchmark_version``)."""
    try:
        return version("gf01-formal")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True)
class RunOutcome:
    """A finished run: its record, and its side files (path relative to the runs' side directory -> text)."""

    record: RunRecord
    side_files: dict[str, str] = field(default_factory=dict)


def episode_seed(instance_id: str, seed: int) -> int:
    """The agent's seed for one instance: different per instance, the same on every rerun (no global state)."""
    return int(sha256_hex([instance_id, seed])[:16], 16)


def play_run(
    instance: Instance,
    problem: Problem,
    spec: AgentSpec,
    *,
    seed: int,
    scorer: Scorer,
    bundle_hash: str | None = None,
    build: Callable[[AgentSpec, Access], Agent] | None = None,
    subset_min: bool = False,
    diagnostic_limits: Limits | None = None,
    renderer_track: str = "json",
    renderer_profile_id: str = RENDERER_PROFILE,
) -> RunOutcome:
    """Play ``instance`` with the agent of ``spec`` and score it (module docstring). ``build`` makes the agent
    (default: :func:`gf01_formal.agents.build`)."""
    if build is None:
        from gf01_formal.agents import build
    from gf01_formal.agents.planner import Planner

    iid = instance.instance_id
    access = Access(
        seed=episode_seed(iid, seed),
        planner=Planner(problem) if spec.track == "EVAL-TA" else None,
        problem=problem if spec.track == "EVAL-OC" else None,
    )
    base = record_base(instance, spec, seed, bundle_hash=bundle_hash, renderer_track=renderer_track,
                       renderer_profile_id=renderer_profile_id)
    episode = Episode(problem, iid)
    steps: list[dict[str, Any]] = []
    latencies: list[float] = []
    agent: Agent | None = None
    stopping = False
    try:
        agent = build(spec, access)
        status, error = _play(agent, episode, steps, latencies,
                              tools=None if spec.track == "EVAL-CB" else [spec.tool_allowlist_id])
        result = scorer.score(episode.certificate, subset_min=subset_min, diagnostic_limits=diagnostic_limits)
        agent.end(End(result={k: v for k, v in result.items() if k != "timing"}))
    except ProviderError as ex:  # the model provider failed past its retries: not the agent's fault
        return RunOutcome(failed_record(base, str(ex), steps, status="provider_error", usage=_usage(agent),
                                        agent_meta=dict(getattr(agent, "meta", {}) or {}),
                                        timing=step_timing(latencies)), _side_files(agent))
    except Unknown as ex:
        return RunOutcome(failed_record(base, f"scoring ran out of its limits: {ex}", steps,
                                        timing=step_timing(latencies)))
    except Gf01Error:  # a user error (e.g. an agent command that cannot start): stop, do not record it
        raise
    except Exception as ex:  # a fault of ours or of a built-in agent: never scored as the agent's
        return RunOutcome(failed_record(base, f"{type(ex).__name__}: {ex} ({_where(ex)})", steps,
                                        timing=step_timing(latencies)))
    except BaseException:  # Ctrl-C (KeyboardInterrupt) or an exit: the harness is stopping
        stopping = True
        raise
    finally:
        if agent is not None:
            # Stopping, an agent that can end at once does (the optional hook abort of agents.base): the polite
            # end waits on the agent, and a stop must not.
            abort = getattr(agent, "abort", None) if stopping else None
            (abort if abort is not None else agent.close)()
    tool_log = _tool_log(agent, access)
    side = _side_files(agent)
    if tool_log:
        side[f"tool-logs/{_sha256(tool_log)}.jsonl"] = tool_log
    record = finished_record(base, episode, result, steps=steps, status=status, error=error,
                             tool_log_hash=_sha256(tool_log) if tool_log else "",
                             agent_meta=dict(getattr(agent, "meta", {}) or {}), usage=_usage(agent),
                             timing=step_timing(latencies))
    return RunOutcome(record, side)


def step_timing(latencies: list[float]) -> dict[str, Any]:
    """A record's ``timing`` from the latencies (ms) of the steps the agent played, in order."""
    return {"step_ms": list(latencies), "total_ms": round(sum(latencies), 3)}


def record_base(
    instance: Instance,
    spec: AgentSpec,
    seed: int,
    *,
    bundle_hash: str | None = None,
    renderer_track: str = "json",
    renderer_profile_id: str = RENDERER_PROFILE,
    protocol: str = PROTOCOL,
) -> dict[str, Any]:
    """The record fields fixed before play: the run id, the instance, the agent and track, renderer and versions."""
    iid = instance.instance_id
    return {
        "run_id": run_id(iid, instance.content_hash, spec.digest, seed),
        "instance_id": iid,
        "instance_hash": instance.content_hash,
        "bundle_hash": bundle_hash,
        "split_id": instance.split_id,
        "mode": instance.mode,
        "t_star": instance.t_star,
        "window_size": instance.window,
        "budget_timestep": instance.budget_t,
        "budget_atoms": instance.budget_a,
        "difficulty_slice": difficulty_band(instance),
        "complexity_z": None if instance.complexity is None else instance.complexity.z,
        "generator_version": instance.meta.generator_version,
        "agent_name": spec.name,
        "agent_spec": spec.to_json(),
        "agent_hash": spec.digest,
        "agent_access": spec.access,
        "seed": seed,
        "eval_track": spec.track,
        "tool_allowlist_id": spec.tool_allowlist_id,
        **spec.adaptation_fields(),
        "renderer_track": renderer_track,
        "renderer_profile_id": renderer_profile_id,
        "protocol": protocol,
        "benchmark_version": benchmark_version(),
    }


def finished_record(
    base: dict[str, Any],
    episode: Episode,
    result: dict[str, Any],
    *,
    steps: list[dict[str, Any]],
    status: str = "completed",
    error: str | None = None,
    tool_log_hash: str = "",
    agent_meta: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
    timing: dict[str, Any] | None = None,
) -> RunRecord:
    """The record of a finished episode scored as ``result`` (:meth:`Scorer.score`); ``steps`` is its step log
    (each :meth:`StepLog.to_json` entry with an ``agent_error`` key); ``timing`` joins the diagnostic's."""
    scores = dict(result)
    merged = {**(timing or {}), **scores.pop("timing", {})}
    return RunRecord(
        **base,
        status=status,
        error=error,
        tool_log_hash=tool_log_hash,
        agent_meta=agent_meta or {},
        certificate=certificate_to_json(episode.certificate, episode.problem.system.inputs),
        **scores,
        steps=steps,
        refusals=episode.refusals,
        agent_errors=sum(1 for s in steps if s.get("agent_error") is not None),
        usage=usage,
        timing=merged,
    )


def failed_record(
    base: dict[str, Any], error: str, steps: list[dict[str, Any]], *, status: str = "harness_error",
    usage: dict[str, Any] | None = None, agent_meta: dict[str, Any] | None = None,
    timing: dict[str, Any] | None = None,
) -> RunRecord:
    """The record of a run that could not finish for a reason not the agent's (no scores: never held against it).
    ``timing``: the latencies measured before it stopped (:func:`step_timing`), since a failed run took time too
    (a provider's retries and waits above all)."""
    empty = dict.fromkeys(("certificate", "suff", "min1", "valid", "goal", "eff_t", "eff_a", "score_c", "kappa",
                           "ap_precision", "ap_recall", "ap_f1", "ts_precision", "ts_recall", "ts_f1",
                           "best_match_gold", "subset_min"))
    return RunRecord(**base, status=status, error=error, tool_log_hash="", **empty, diagnostic_status="not-run",
                     steps=steps, refusals=0, agent_errors=0, usage=usage, agent_meta=agent_meta or {},
                     timing=timing or {})


def _usage(agent: Agent | None) -> dict[str, Any] | None:
    return getattr(agent, "usage", None)


def _side_files(agent: Agent | None) -> dict[str, str]:
    """Side files the agent produced (e.g. an LLM transcript), by path relative to the runs' side directory."""
    return dict(getattr(agent, "side_files", {}) or {})


def _play(
    agent: Agent, episode: Episode, steps: list[dict[str, Any]], latencies: list[float], *,
    tools: list[str] | None = None,
) -> tuple[str, str | None]:
    """Play the episode to its end; returns the run's status and error (agent errors are not exceptions here).
    ``tools``: what the start message says the track allows (None on EVAL-CB: the message has no ``tools``)."""
    inputs = episode.problem.system.inputs
    dead: AgentFault | None = None
    start_fault: AgentFault | None = None
    try:
        agent.start(Start(instance_id=episode.instance_id, goal=episode.reset(), tools=tools))
    except AgentFault as ex:  # the agent failed before its first action: the whole episode has no edits
        dead = start_fault = AgentFault(ex.kind, ex.message, fatal=True)
    observation: Observation | None = None
    violations = 0
    while not episode.done:
        fault: AgentFault | None = start_fault if episode.t == 0 else None
        action = Action()
        if dead is None:
            start = time.perf_counter()
            try:
                action = agent.act(observation)
            except AgentFault as ex:
                fault = ex
                violations += not ex.fatal
                dead = ex if ex.fatal else None
            finally:
                # Also when act() raised past us (a provider that failed for good, a bug): the failed record then
                # carries the time the last step took up to its failure, retries and waits included.
                latencies.append(round((time.perf_counter() - start) * 1000, 3))
        observation = episode.step(action.set, commit=action.commit, at=action.t)
        entry = episode.log[-1].to_json(inputs)
        entry["agent_error"] = None if fault is None else {"kind": fault.kind, "message": fault.message}
        steps.append(entry)
    observe = getattr(agent, "observe", None)  # the optional hook of agents.base: the last observation (done)
    if observe is not None and dead is None and observation is not None:
        observe(observation)
    if dead is not None:
        return "agent_error", f"{dead.kind}: {dead.message}"
    if violations > MAX_VIOLATIONS:
        return "agent_error", f"{violations} protocol violations (more than {MAX_VIOLATIONS})"
    return "completed", None


def _tool_log(agent: Agent | None, access: Access) -> str:
    """The run's tool log as canonical JSON Lines: the planner's (EVAL-TA) or the agent's own (EVAL-OC)."""
    if access.planner is not None:
        return access.planner.log_text()
    entries = getattr(agent, "tool_log", None)
    if not entries:
        return ""
    from gf01_formal.artifacts import canonical_json

    return "".join(canonical_json(e) + "\n" for e in entries)


def _where(ex: BaseException) -> str:
    frames = traceback.extract_tb(ex.__traceback__)
    return f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else "?"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
