"""Playing one run: an agent, built from what its track grants, plays one episode; the result is scored exactly and
recorded as a :class:`~gf01_formal.runs.record.RunRecord`, with its side files (the tool log) by content hash.

The harness keeps the agent honest: a fault of the agent (:class:`~gf01_formal.agents.base.AgentFault`) is logged on
its step, which proceeds with no edit; a fatal one (its kind says so: crash, timeout, tool_denied,
``record.FATAL_KINDS``) ends the agent's part and the rest of the episode has no edits. A fault raised by the agent's
``start`` is logged on step 0 the same way. A failure of ours (an exception anywhere else) gives a ``harness_error``
record with no scores.

>>> from gf01_formal.scoring.scores import Scorer
>>> spec = AgentSpec("oracle", "EVAL-OC")
>>> play_run(instance, problem, spec, seed=0, scorer=Scorer(problem)).record.score_c
1
"""

from __future__ import annotations

import hashlib
import time
import traceback
from collections.abc import Callable
from typing import Any

from encoders.problem import Problem
from gf01_formal.agents.base import Access, Agent, AgentFault, AgentSpec, ProviderError
from gf01_formal.artifacts import sha256_hex
from gf01_formal.instances.model import Instance
from gf01_formal.play.protocol import RENDERER_PROFILE, Action, End, Observation, Start
from gf01_formal.runs.record import AgentError, RunOutcome, Status, record_base, step_timing
from gf01_formal.runs.recorder import MAX_VIOLATIONS, EpisodeRecorder
from gf01_formal.runs.scoring_limit import SCORING_SECONDS, reason, score_within
from gf01_formal.scoring.caps import CapSet, run_diagnostic
from gf01_formal.scoring.scores import Scorer, diagnose
from gf01_formal.scoring.values import NOT_RUN, Result
from hoa.errors import Gf01Error
from solvers.limits import Limits, Unknown

__all__ = ["MAX_VIOLATIONS", "RunOutcome", "episode_seed", "play_run"]


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
    caps: CapSet | None = None,
    renderer_track: str = "json",
    renderer_profile_id: str = RENDERER_PROFILE,
    scoring_seconds: float = SCORING_SECONDS,
    scoring_memory: float | None = None,
) -> RunOutcome:
    """Play ``instance`` with the agent of ``spec`` and score it (module docstring). ``build`` makes the agent
    (default: :func:`gf01_formal.agents.build`).

    The SubsetMin diagnostic runs metered under a campaign's ``caps`` (:func:`gf01_formal.scoring.caps.
    run_diagnostic`: what it spent goes into the record's ``timing``), or else with ``subset_min`` under
    ``diagnostic_limits`` (``gf01 evaluate``); neither: ``not-run``. The scores are computed within
    ``scoring_seconds`` (all queries together) and ``scoring_memory`` MiB per query (:mod:`gf01_formal.runs.
    scoring_limit`): past them the run is ``harness_error``, which a rerun plays again."""
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
    recorder = EpisodeRecorder(problem, iid)
    latencies: list[float] = []
    agent: Agent | None = None
    stopping = False
    try:
        agent = build(spec, access)
        status, error = _play(agent, recorder, latencies,
                              tools=None if spec.track == "EVAL-CB" else [spec.tool_allowlist_id])
        scores = score_within(scorer, recorder.certificate, seconds=scoring_seconds, memory=scoring_memory)
        diagnostic, timing = NOT_RUN, step_timing(latencies)
        if caps is not None:
            # In the record's order (by time, input name, value): the order the metered solver sees.
            names = problem.system.inputs
            atoms = sorted(recorder.certificate, key=lambda a: (a[0], names[a[1]], a[2]))
            diagnostic, metered = run_diagnostic(problem, atoms, caps)
            timing.update(metered)
        elif subset_min:
            diagnostic, ms = diagnose(problem, recorder.certificate, limits=diagnostic_limits)
            timing["diagnostic_ms"] = ms
        agent.end(End(result=Result.of(scores, diagnostic)))
    except ProviderError as ex:  # the model provider failed past its retries: not the agent's fault
        return RunOutcome(recorder.fail(base, str(ex), status="provider_error", usage=_usage(agent),
                                        agent_meta=_meta(agent),
                                        sandbox=None if agent is None else agent.sandbox,
                                        timing=step_timing(latencies)), _side_files(agent))
    except Unknown as ex:  # only scoring runs under limits here (the diagnostic records its own as infeasible)
        return RunOutcome(recorder.fail(base, reason(ex, seconds=scoring_seconds, memory=scoring_memory),
                                        usage=_usage(agent), agent_meta=_meta(agent),
                                        sandbox=None if agent is None else agent.sandbox,
                                        timing=step_timing(latencies)), _side_files(agent))
    except Gf01Error:  # a user error (e.g. an agent command that cannot start): stop, do not record it
        raise
    except Exception as ex:  # a fault of ours or of a built-in agent: never scored as the agent's
        return RunOutcome(recorder.fail(base, f"{type(ex).__name__}: {ex} ({_where(ex)})",
                                        timing=step_timing(latencies)))
    except BaseException:  # Ctrl-C (KeyboardInterrupt) or an exit: the harness is stopping
        stopping = True
        raise
    finally:
        if agent is not None:
            # Stopping, the agent ends at once (the hook abort of agents.base): the polite end waits on the agent,
            # and a stop must not.
            (agent.abort if stopping else agent.close)()
    tool_log = _tool_log(agent, access)
    side = _side_files(agent)
    if tool_log:
        side[f"tool-logs/{_sha256(tool_log)}.jsonl"] = tool_log
    record = recorder.finish(base, scores, diagnostic=diagnostic, status=status, error=error,
                             tool_log_hash=_sha256(tool_log) if tool_log else "",
                             agent_meta=_meta(agent), usage=_usage(agent), timing=timing,
                             sandbox=None if agent is None else agent.sandbox)
    return RunOutcome(record, side)


def _usage(agent: Agent | None) -> dict[str, Any] | None:
    return None if agent is None else agent.usage


def _meta(agent: Agent | None) -> dict[str, Any]:
    return {} if agent is None else dict(agent.meta)


def _side_files(agent: Agent | None) -> dict[str, str]:
    """Side files the agent produced (e.g. an LLM transcript), by path relative to the runs' side directory."""
    return {} if agent is None else dict(agent.side_files)


def _play(agent: Agent, recorder: EpisodeRecorder, latencies: list[float], *,
          tools: list[str] | None = None) -> tuple[Status, str | None]:
    """Play the episode to its end; returns the run's status and error (agent errors are not exceptions here).
    ``tools``: what the start message says the track allows (None on EVAL-CB: the message has no ``tools``)."""
    start_fault: AgentError | None = None
    try:
        agent.start(Start(instance_id=recorder.episode.instance_id, goal=recorder.start(), tools=tools))
    except AgentFault as ex:  # the agent failed before its first action: logged on step 0, which has no action
        start_fault = AgentError(kind=ex.kind, message=ex.message)
    observation: Observation | None = None
    while not recorder.done:
        # The fault's kind says whether it is fatal (AgentError.fatal, the one definition the replay reads too).
        fault: AgentError | None = start_fault if recorder.episode.t == 0 else None
        action = Action()
        if recorder.dead is None and fault is None:
            start = time.perf_counter()
            try:
                action = agent.act(observation)
            except AgentFault as ex:
                fault = AgentError(kind=ex.kind, message=ex.message)
            finally:
                # Also when act() raised past us (a provider that failed for good, a bug): the failed record then
                # carries the time the last step took up to its failure, retries and waits included.
                latencies.append(round((time.perf_counter() - start) * 1000, 3))
        observation = recorder.step(action, fault)
    if recorder.dead is None and observation is not None:
        agent.observe(observation)  # the last observation (done)
    return recorder.status()


def _tool_log(agent: Agent | None, access: Access) -> str:
    """The run's tool log as canonical JSON Lines: the planner's (EVAL-TA) or the agent's own (EVAL-OC)."""
    if access.planner is not None:
        return access.planner.log_text()
    entries = None if agent is None else agent.tool_log
    if not entries:
        return ""
    from gf01_formal.artifacts import canonical_json

    return "".join(canonical_json(e) + "\n" for e in entries)


def _where(ex: BaseException) -> str:
    frames = traceback.extract_tb(ex.__traceback__)
    return f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else "?"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
