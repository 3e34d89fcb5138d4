"""GF-01 as an inspect_ai task: each instance of a bundle is a sample, played turn by turn through inspect's model
API by a solver that drives our episode engine, and scored by our exact checks.

    inspect eval gf01_formal/integrations/inspect_task.py -T bundle=bundle.json --model openai-api/local/m
    gf01 import inspect logs/<log>.eval -o runs.jsonl      # then gf01 validate, reports

The model sees exactly what our ``llm`` agent's model sees: the same prompt template (:mod:`gf01_formal.agents.
llm_prompt`), rendered from canonical-json-v1 messages only, one conversation per episode, one action per step, one
re-ask after a reply with no usable action, the same agent-error rules as :mod:`gf01_formal.runs.runner` (both drive
the one :class:`~gf01_formal.runs.recorder.EpisodeRecorder`). The episode's step log, actions, per-call token counts
and the certificate are kept in the sample's store (key ``gf01``), so the converter (:mod:`.inspect_import`) can
rebuild our run records from the log. The scorer reports Score_C, goal, Eff_t, Eff_a and the AP/TS F1 against the
DEC-025 best match (each with its mean over samples and the mean's standard error); the full exact result is the
score's metadata.

Task arguments (``-T``): ``bundle`` (a bundle or instance file), ``seed`` (the runs' seed, 0 by default: epoch e
plays seed + e - 1, and each instance asks the model for the same seed our ``llm`` agent would), ``prompt`` (the
template id), ``track`` (EVAL-CB by default; EVAL-TA offers local-planner-v1 and EVAL-OC oracle-exact-search-v1 as
an inspect tool the model may call during its turn, every call in the run's tool log), and DEC-055's
``adaptation_condition``, ``adaptation_budget_tokens``, ``adaptation_data_scope``, ``adaptation_protocol_id``
(no_adaptation, 0, none, none by default; checked when the task is made), and ``limit`` (play only the bundle's
first N instances: a smoke test; ``gf01 bundle subset`` makes a bundle of chosen ones). A relative ``bundle`` is
read from the directory the command was started in (:func:`invocation_path`). Transient provider errors are retried
by inspect itself (``--max-retries``, ``--timeout``).

Requires ``pip install -e '.[inspect]'``.
"""

from __future__ import annotations

import os
import time
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver

from encoders.problem import Problem
from gf01_formal.agents.base import TRACKS, AgentFault
from gf01_formal.agents.llm_prompt import TEMPLATE_ID, Dialogue, Message, load_template
from gf01_formal.instances.io import InstanceSet, load_set
from gf01_formal.play.episode import Episode
from gf01_formal.play.protocol import Action, Observation, Start
from gf01_formal.runs.record import AgentError
from gf01_formal.runs.recorder import EpisodeRecorder
from gf01_formal.runs.runner import episode_seed
from gf01_formal.scoring.certificates import parse_certificate
from gf01_formal.scoring.scores import Scorer
from gf01_formal.scoring.values import NOT_RUN, Result
from hoa.errors import Gf01Error

#: The sample store key holding the played episode.
STORE_KEY = "gf01"
#: What the scorer reports per sample (each with its mean over samples and that mean's standard error).
SCORE_KEYS = ("score_c", "goal", "eff_t", "eff_a", "ap_f1", "ts_f1")


@task
def gf01(bundle: str, seed: int = 0, prompt: str = TEMPLATE_ID, adaptation_condition: str = "no_adaptation",
         adaptation_budget_tokens: int = 0, adaptation_data_scope: str = "none",
         adaptation_protocol_id: str = "none", track: str = "EVAL-CB", limit: int | None = None) -> Task:
    """The GF-01 task over the instances of ``bundle`` (module docstring); ``limit``: its first ``limit`` only."""
    from gf01_formal.agents.adaptation import declare

    if track not in TRACKS:
        raise Gf01Error(f"unknown track {track!r} (one of {', '.join(TRACKS)})", field="track")
    # DEC-055, checked before any sample is played; the importer reads the declaration from the task's arguments.
    adaptation = declare(adaptation_condition, int(adaptation_budget_tokens), adaptation_data_scope,
                         adaptation_protocol_id)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise Gf01Error(f"{limit!r} is not a positive number of instances", field="limit")
    bundle = invocation_path(bundle)
    template = load_template(prompt)
    loaded = _bundle(bundle)
    samples = []
    for inst in loaded.instances[:limit]:
        goal = Episode(_problem(bundle, inst.instance_id), inst.instance_id).goal
        samples.append(Sample(id=inst.instance_id, input=template.start(Start(instance_id=inst.instance_id,
                                                                                goal=goal)),
                              target="", metadata={"instance_id": inst.instance_id,
                                                   "instance_hash": inst.content_hash}))
    return Task(dataset=MemoryDataset(samples, name=str(bundle)), solver=gf01_player(bundle, seed, prompt, track),
                scorer=gf01_scorer(bundle), version=template.id,
                metadata={"benchmark": "GF-01", "prompt_template": template.id, "prompt_sha256": template.sha256,
                          "bundle_path": bundle,
                          "bundle_hash": loaded.bundle_hash,
                          "adaptation": adaptation.to_json(), "track": track})


@solver
def gf01_player(bundle: str, seed: int = 0, prompt: str = TEMPLATE_ID, track: str = "EVAL-CB") -> Any:
    """Plays the sample's instance: one chat per episode through the active model, one action per step; on EVAL-TA
    and EVAL-OC the track's tool is offered as an inspect tool and the model's calls are answered in the turn."""
    template = load_template(prompt)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        iid = state.metadata["instance_id"]
        recorder = EpisodeRecorder(_problem(bundle, iid), iid)
        tools = _track_tools(track, _problem(bundle, iid))
        offered = [] if tools is None else [_tool_info(tools)]
        episode = recorder.episode
        dialogue = Dialogue(template, Start(instance_id=iid, goal=recorder.start()))
        run_seed = seed + state.epoch - 1
        model = get_model()
        config = GenerateConfig(seed=episode_seed(iid, run_seed) % (1 << 31))  # as our llm agent asks
        played: dict[str, Any] = {"prompt_template": template.id, "prompt_sha256": template.sha256,
                                  "run_seed": run_seed, "model_seed": config.seed, "steps": [], "actions": [],
                                  "calls": [], "usage": [], "step_ms": [], "model_reported": None,
                                  "certificate": [], "status": "playing", "error": None, "pending": None,
                                  "base_url_host": _host(getattr(model.api, "base_url", None))}
        state.store.set(STORE_KEY, played)
        observation: Observation | None = None
        dead: AgentError | None = None  # a fatal fault (a denied tool): the rest of the episode has no edits
        while not recorder.done:
            if dead is not None:
                observation = recorder.step(Action())
                played["steps"].append(recorder.steps[-1].model_dump(mode="json"))
                played["actions"].append(Action().model_dump(mode="json"))
                continue
            usage = {"t": episode.t, "calls": 0, "retries": 0, "input_tokens": 0, "output_tokens": 0}
            played["usage"].append(usage)
            fault: AgentError | None = None
            action = Action()
            start = time.perf_counter()
            turn = dialogue.turn(observation)
            try:
                kind, messages = next(turn)
                while True:
                    # Marked while the model is asked: an error that ends the sample now is the provider's.
                    played["pending"] = {"t": episode.t, "kind": kind}
                    # Counted before the answer, as the llm agent counts: `calls` is requests made, replied or not.
                    usage["calls"] += 1
                    state.store.set(STORE_KEY, played)
                    # Never inspect's reply cache (its CLI may turn it on): a cached reply would replay an
                    # earlier episode's model as a new run, and its key (endpoint, model, conversation) is
                    # shared by another server that comes to listen on the same address.
                    output = await model.generate(_chat(messages), tools=offered, config=config, cache=False)
                    played["pending"] = None
                    state.output = output
                    call = {"t": episode.t, "kind": kind, "sent": len(messages), "reply": len(messages), "errors": [],
                            "finish_reason": output.stop_reason, "input_tokens": None, "output_tokens": None}
                    if output.usage is not None:
                        call["input_tokens"] = output.usage.input_tokens
                        call["output_tokens"] = output.usage.output_tokens
                        usage["input_tokens"] += output.usage.input_tokens
                        usage["output_tokens"] += output.usage.output_tokens
                    played["calls"].append(call)
                    played["model_reported"] = output.model or None
                    if output.message.tool_calls:
                        # Answered here, appended to the conversation, and the model asked again (kind "tool").
                        _answer_tools(tools, output, messages)
                        if tools is not None:
                            played["tool_log"] = tools.log_text()
                        kind = "tool"
                        continue
                    kind, messages = turn.send(output.completion)
            except StopIteration as stop:
                action = stop.value
            except AgentFault as ex:
                fault = AgentError(kind=ex.kind, message=ex.message)
                dead = fault if ex.fatal else None
            finally:
                state.messages = _chat(dialogue.messages)  # the conversation so far, for the viewer and the log
                # Also when the model's error ends the sample here: the imported record then has this step's time.
                played["step_ms"].append(round((time.perf_counter() - start) * 1000, 3))
                state.store.set(STORE_KEY, played)
            observation = recorder.step(action, fault)
            played["steps"].append(recorder.steps[-1].model_dump(mode="json"))
            played["actions"].append(action.model_dump(mode="json"))
            played["certificate"] = observation.certificate
            state.store.set(STORE_KEY, played)
        played["status"], played["error"] = recorder.status()
        state.store.set(STORE_KEY, played)
        return state

    return solve


@scorer(metrics={key: [mean(), stderr()] for key in SCORE_KEYS})
def gf01_scorer(bundle: str) -> Any:
    """Scores the episode's certificate by the exact checks (Score_C, goal, Eff_t, Eff_a, AP/TS F1)."""

    async def score(state: TaskState, target: Target) -> Score:
        import anyio

        iid = state.metadata["instance_id"]
        played = state.store.get(STORE_KEY) or {}
        problem = _problem(bundle, iid)
        cert = parse_certificate(played.get("certificate", []), problem.system.inputs, horizon=problem.horizon,
                                 budget_t=problem.budget_t)
        # The exact checks are CPU work: off the event loop, so other samples keep talking to the model.
        result = await anyio.to_thread.run_sync(_scorer(bundle, iid).score_submitted, cert)
        value = {key: float(getattr(result, key)) for key in SCORE_KEYS}
        metadata = {"certificate": played.get("certificate", []), **Result.of(result, NOT_RUN).to_json()}
        return Score(value=value, answer=str(played.get("certificate", [])),
                     explanation=f"suff={result.suff} min1={result.min1} valid={result.valid}",
                     metadata=metadata)

    return score


def _host(url: str | None) -> str | None:
    """The host (and port) of the model's base URL, never more (a URL may carry credentials)."""
    if not url:
        return None
    parts = urlsplit(str(url))
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname


def _chat(messages: list[Message]) -> list[ChatMessage]:
    from inspect_ai.model import ChatMessageTool
    from inspect_ai.tool import ToolCall

    out: list[ChatMessage] = []
    for m in messages:
        if m["role"] == "tool":
            out.append(ChatMessageTool(content=m["content"], tool_call_id=m["tool_call_id"], function=m["function"]))
        elif m["role"] == "assistant" and m.get("tool_calls"):
            calls = [ToolCall(id=c["id"], function=c["function"], arguments=c["arguments"])
                     for c in m["tool_calls"]]  # type: ignore[union-attr]
            out.append(ChatMessageAssistant(content=m["content"] or "", tool_calls=calls))
        else:
            kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
            out.append(kinds[m["role"]](content=m["content"]))
    return out


def _track_tools(track: str, problem: Problem) -> Any:
    """The track's tool for one episode (agents/tools.py), None on EVAL-CB."""
    from gf01_formal.agents.planner import Planner
    from gf01_formal.agents.tools import OracleSearch, TrackTools

    if track == "EVAL-TA":
        return TrackTools(planner=Planner(problem))
    if track == "EVAL-OC":
        return TrackTools(oracle=OracleSearch(problem))
    return None


def _tool_info(tools: Any) -> Any:
    """The track's tool as an inspect ToolInfo (the same function the llm agent offers)."""
    from inspect_ai.tool import ToolInfo, ToolParam, ToolParams

    atoms = ToolParam(type=["array", "null"], items={"type": "array"},
                      description='the edits as [[t, "input", 0 or 1], ...]')
    what = ("simulates the run with these edits: the outputs at every step, whether the effect holds, the queries "
            "left" if tools.planner is not None else
            "exact checks of a candidate certificate (suff, min1, valid); with atoms null, an optimal valid "
            "certificate")
    return ToolInfo(name=tools.allowed, description=f"{tools.allowed}: {what}",
                    parameters=ToolParams(properties={"atoms": atoms}, required=["atoms"]))


def _answer_tools(tools: Any, output: Any, messages: list[Message]) -> None:
    """Answer the tool calls of ``output`` into ``messages`` (the assistant's call, then one tool message each);
    AgentFault (fatal, ``tool_denied``) on EVAL-CB or for another track's tool."""
    from gf01_formal.artifacts import canonical_json

    calls = output.message.tool_calls
    if tools is None:
        raise AgentFault("tool_denied", f"asked for tool {calls[0].function!r}: EVAL-CB allows no tool", fatal=True)
    messages.append({"role": "assistant", "content": output.completion,  # type: ignore[dict-item]
                     "tool_calls": [{"id": c.id, "function": c.function, "arguments": c.arguments} for c in calls]})
    for c in calls:
        args = c.arguments if isinstance(c.arguments, dict) else {}
        result = tools.call(c.function, args.get("atoms"))
        messages.append({"role": "tool", "tool_call_id": c.id, "function": c.function,
                         "content": canonical_json(result)})


def invocation_path(path: str) -> str:
    """``path`` made absolute against the directory ``inspect eval`` was started in.

    inspect_ai loads and runs a task file with that file's directory as the working directory, so a relative
    ``-T bundle=b.json`` would otherwise be looked for next to this module. The shell's ``PWD`` still names the
    directory the command was typed in (``os.chdir`` leaves it alone); without it the working directory is used.
    """
    if os.path.isabs(path):
        return path
    start = os.environ.get("PWD") or ""
    if not os.path.isdir(start):
        start = os.getcwd()
    return os.path.normpath(os.path.join(start, path))


@lru_cache(maxsize=4)
def _bundle(path: str) -> InstanceSet:
    return load_set(path)


def _problem(path: str, instance_id: str) -> Problem:
    loaded = _bundle(path)
    return loaded.problem(loaded.by_id[instance_id])


@lru_cache(maxsize=4096)
def _scorer(path: str, instance_id: str) -> Scorer:
    """One scorer per instance (its gold set is built once and shared by the epochs)."""
    return Scorer(_problem(path, instance_id))
