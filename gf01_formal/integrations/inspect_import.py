"""``gf01 import inspect``: an inspect_ai eval log of the GF-01 task (:mod:`.inspect_task`) as our run records, so
``gf01 validate`` and the reports apply to runs played through inspect.

Each sample becomes one record. Its logged step log is replayed on a fresh episode by the one replay
(:func:`gf01_formal.runs.replay.replay_steps`, which ``gf01 validate`` and the browser use too: a log they would
refuse is refused here) and re-scored by the exact checks; where the log's scores
differ from the exact ones the sample counts as a disagreement (the record keeps the exact scores). The agent spec
is ``llm`` with ``harness: inspect_ai``, the inspect model name, the prompt template and the sampling settings of
the log, so its run ids differ from those of ``gf01 evaluate --agent llm``; the run's seed is the task's ``seed``
plus the epoch minus one. A sample that inspect ended with an error is a ``provider_error`` record when it failed
while the model was being asked (inspect had retried it as configured), else ``harness_error`` (no scores; neither
is final). The conversation becomes the
transcript side file ``transcripts/<sha256>.json``, as with the ``llm`` agent.

Usage: ``import_inspect_log("logs/x.eval").outcomes`` are the run outcomes, one per sample and epoch, ready for a
runs file (tests/test_inspect.py plays a real eval and imports its log).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from gf01_formal.agents.base import TRACKS, AgentSpec
from gf01_formal.agents.llm import TRANSCRIPT_SCHEMA, usage_summary
from gf01_formal.agents.llm_prompt import TEMPLATE_ID
from gf01_formal.artifacts import canonical_json
from gf01_formal.instances.io import load_set
from gf01_formal.play.protocol import Action
from gf01_formal.runs.record import AgentError, RunOutcome, Step, failed_record, record_base, step_timing
from gf01_formal.runs.recorder import EpisodeRecorder
from gf01_formal.runs.replay import replay_steps
from gf01_formal.scoring.certificates import GoldSet
from gf01_formal.scoring.scores import Scorer
from gf01_formal.scoring.values import SCORE_FIELDS
from hoa.errors import Gf01Error, quote

#: The sampling settings of a log that enter the agent spec (a whitelist: headers and bodies may carry secrets).
CONFIG_KEYS = ("temperature", "top_p", "top_k", "max_tokens", "seed", "frequency_penalty", "presence_penalty",
               "stop_seqs", "reasoning_effort", "reasoning_tokens")


@dataclass
class InspectImport:
    """The records of one log, and how many samples' logged scores differ from the exact ones."""

    outcomes: list[RunOutcome] = field(default_factory=list)
    disagreements: int = 0


#: Largest member of an .eval log (a zip) and largest log in all, uncompressed (bytes): inspect reads a log whole,
#: several times its size in objects, so a small zip that inflates to gigabytes is refused before it is opened. A
#: JSON log is read whole as one document (about 28 times its size in objects): it may be as large as one member.
MAX_LOG_MEMBER = 64 << 20
MAX_LOG_TOTAL = 512 << 20
MAX_JSON_LOG = MAX_LOG_MEMBER
#: Bytes read at a time while a member's real inflated size is measured.
_CHUNK = 1 << 16


def check_log_size(path: str | os.PathLike[str]) -> None:
    """Refuse (Gf01Error) a log that would not be read in bounded memory: a JSON log, a zip member or a whole log
    past the limits above, by the sizes the zip's directory declares and then by the sizes its members really
    inflate to (a directory may lie: each member is inflated once, in bounded memory, and counted)."""
    import zipfile

    shown = quote(os.fspath(path), 200, bare=True)
    if not zipfile.is_zipfile(path):
        if os.path.getsize(path) > MAX_JSON_LOG:
            raise Gf01Error(f"larger than the {MAX_JSON_LOG >> 20} MiB a JSON log may have (an .eval log keeps each "
                            "sample in its own member)", file=shown)
        return
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
    except (zipfile.BadZipFile, OSError) as ex:
        raise Gf01Error(f"not an inspect eval log: {quote(str(ex), 160, bare=True)}", file=shown) from None
    for info in members:
        if info.file_size > MAX_LOG_MEMBER:
            raise Gf01Error(f"its member {quote(info.filename, 80)} holds {info.file_size >> 20} MiB uncompressed, "
                            f"past the {MAX_LOG_MEMBER >> 20} MiB a member may have", file=shown)
    total = sum(info.file_size for info in members)
    if total > MAX_LOG_TOTAL:
        raise Gf01Error(f"its members hold {total >> 20} MiB uncompressed, past the {MAX_LOG_TOTAL >> 20} MiB a log "
                        "may have", file=shown)
    with open(path, "rb") as fh:
        for info in members:
            real = _inflated_size(fh, info, info.file_size)
            if real is None:
                raise Gf01Error(f"its member {quote(info.filename, 80)} inflates to more than the {info.file_size} "
                                "bytes its directory declares (a zip bomb?)", file=shown)


def _inflated_size(fh: Any, info: Any, declared: int) -> int | None:
    """The bytes ``info``'s member inflates to, read from the open zip ``fh``; None as soon as that passes
    ``declared`` (nothing past it is kept, so memory stays one chunk whatever the member holds)."""
    import struct
    import zipfile
    import zlib

    fh.seek(info.header_offset)
    head = fh.read(30)
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        return 0  # not a member we can measure; zipfile itself refuses it when the log is read
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    fh.seek(info.header_offset + 30 + name_len + extra_len)
    if info.compress_type == zipfile.ZIP_STORED:
        return info.compress_size if info.compress_size <= declared else None
    if info.compress_type != zipfile.ZIP_DEFLATED:
        return 0  # another method: inspect writes deflate; zipfile refuses what it cannot read
    inflater = zlib.decompressobj(-15)
    size = 0
    while not inflater.eof:
        chunk = inflater.unconsumed_tail or fh.read(_CHUNK)
        if not chunk:
            break
        try:
            size += len(inflater.decompress(chunk, _CHUNK))
        except zlib.error:
            return size  # a corrupt stream: zipfile refuses it when the log is read
        if size > declared:
            return None
    return size


def refuse_what_is_no_log(path: str | os.PathLike[str]) -> None:
    """Refuse (Gf01Error) a file that is neither a zip (an .eval log) nor a JSON object with an ``eval`` object (a
    JSON log), before inspect-ai is imported: its import is about 3 s of CPU, for a command that ends on a bad file.
    A JSON log (the older format, at most :data:`MAX_JSON_LOG` bytes) is so parsed twice, here and by inspect: the
    first parse is freed before the second, and the import's replay of every sample costs far more."""
    import json
    import zipfile

    if zipfile.is_zipfile(path):
        return  # inspect reads the zip and says what is wrong in it
    shown = quote(os.fspath(path), 200, bare=True)
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read())
    except RecursionError:
        raise Gf01Error("not an inspect eval log: JSON nested too deeply", file=shown) from None
    except ValueError as ex:  # not JSON, not UTF-8, an integer past Python's digit limit
        raise Gf01Error(f"not an inspect eval log: {quote(str(ex), 160, bare=True)}", file=shown) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        raise Gf01Error("not an inspect eval log: not a JSON object with an eval object", file=shown)


def import_inspect_log(path: str | os.PathLike[str], *, bundle: str | None = None,
                       gold_set: GoldSet = "M") -> InspectImport:
    """The run records of the eval log ``path`` (module docstring); ``bundle`` defaults to the task's argument; the
    best match ranks its gold in ``gold_set`` (M(I) by default)."""
    from hoa.files import open_regular

    shown = quote(os.fspath(path), 200, bare=True)
    open_regular(path).close()  # missing, a directory, a FIFO (which would block), a device: one line naming it
    check_log_size(path)
    refuse_what_is_no_log(path)
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise Gf01Error("reading inspect logs needs inspect-ai: pip install -e '.[inspect]'", field="LOG") from None
    try:
        log = read_eval_log(os.fspath(path))
    except Exception as ex:  # inspect raises various types for a file that is not a log
        raise Gf01Error(f"not an inspect eval log: {quote(str(ex), 160, bare=True)}", file=shown) from None
    spec_of = log.eval
    if not (spec_of.task == "gf01" or spec_of.task.endswith("/gf01")):
        raise Gf01Error(f"the log is of task {spec_of.task!r}, not GF-01's task gf01", file=shown)
    args = spec_of.task_args or {}
    # The task records the bundle it read, made absolute (a relative argument is relative to where inspect ran).
    recorded = (spec_of.metadata or {}).get("bundle_path")
    bundle_path = bundle or (recorded if isinstance(recorded, str) and os.path.exists(recorded) else args.get("bundle"))
    if not isinstance(bundle_path, str) or not os.path.exists(bundle_path):
        raise Gf01Error(f"the bundle {quote(bundle_path, 200)} (the task's argument) is not here: give it with "
                        "--bundle", field="--bundle")
    loaded = load_set(bundle_path)
    instances = loaded.by_id
    bundle_hash = loaded.bundle_hash
    seed = int(args.get("seed", 0))
    prompt = str(args.get("prompt", TEMPLATE_ID))
    config = spec_of.model_generate_config.model_dump(exclude_none=True)
    from gf01_formal.agents.adaptation import declare

    try:
        adaptation = declare(args.get("adaptation_condition"), _int_arg(args.get("adaptation_budget_tokens")),
                             args.get("adaptation_data_scope"), args.get("adaptation_protocol_id"))
    except Gf01Error as ex:
        raise Gf01Error(f"the task's adaptation arguments: {ex}", file=shown) from None
    track = str(args.get("track", "EVAL-CB"))
    if track not in TRACKS:
        raise Gf01Error(f"the task's track {track!r} is not one of {', '.join(TRACKS)}", file=shown)
    spec = AgentSpec("llm", track, {"harness": "inspect_ai", "model": spec_of.model, "prompt": prompt,  # type: ignore
                                    "config": {k: config[k] for k in CONFIG_KEYS if k in config}}
                     ).adapted(adaptation)
    out = InspectImport()
    scorers: dict[str, Scorer] = {}
    for sample in log.samples or []:
        iid = str(sample.metadata.get("instance_id", sample.id))
        inst = instances.get(iid)
        if inst is None:
            raise Gf01Error(f"sample {iid!r} is not an instance of the bundle", file=shown)
        if sample.metadata.get("instance_hash") != inst.content_hash:
            raise Gf01Error(f"sample {iid!r} was played on another version of the instance", file=shown)
        base = record_base(inst, spec, seed + sample.epoch - 1, bundle_hash=bundle_hash)
        played = sample.store.get("gf01") or {}
        host = played.get("base_url_host") or _host(spec_of.model_base_url)
        calls = [dict(c) for c in played.get("calls", [])]
        _add_retries(calls, sample.events)
        usage = _usage(played, calls)
        transcript = canonical_json({
            "schema_version": TRANSCRIPT_SCHEMA, "instance_id": iid, "model": spec_of.model, "base_url_host": host,
            "prompt_template": played.get("prompt_template", prompt), "prompt_sha256": played.get("prompt_sha256"),
            "request": {k: config[k] for k in CONFIG_KEYS if k in config} | {"seed": played.get("model_seed")},
            "messages": [{"role": m.role, "content": m.text} for m in sample.messages], "calls": calls,
        }) + "\n"
        digest = hashlib.sha256(transcript.encode("utf-8")).hexdigest()
        side = {f"transcripts/{digest}.json": transcript}
        tool_log = played.get("tool_log") or _empty_tool_log(track)
        tool_hash = hashlib.sha256(tool_log.encode("utf-8")).hexdigest() if tool_log else ""
        if tool_log:
            side[f"tool-logs/{tool_hash}.jsonl"] = tool_log
        steps = _steps(played.get("steps", []), iid, shown)
        meta = {"harness": "inspect_ai", "inspect_version": (spec_of.packages or {}).get("inspect_ai"),
                "inspect_eval_id": spec_of.eval_id, "inspect_sample_uuid": sample.uuid, "model": spec_of.model,
                "model_reported": played.get("model_reported"), "base_url_host": host, "api": "chat.completions",
                "prompt_template": played.get("prompt_template", prompt), "prompt_sha256": played.get("prompt_sha256"),
                "model_seed": played.get("model_seed"), "transcript_sha256": digest,
                "transcript": f"transcripts/{digest}.json"}
        timing = step_timing([float(x) for x in played.get("step_ms", [])])
        unfinished = played.get("status") not in ("completed", "agent_error") and sample.limit is None
        if sample.error is not None or not played or unfinished:
            # The solver marks the store while it waits for the model: an error then is the provider's. The record
            # still points to the transcript written beside it and carries the latencies measured so far.
            status = "provider_error" if played.get("pending") else "harness_error"
            out.outcomes.append(RunOutcome(failed_record(base, f"inspect: {_last_line(sample.error)}", steps,
                                                         status=status, usage=usage, agent_meta=meta,
                                                         timing=timing), side))
            continue
        problem = loaded.problem(inst)
        recorder = EpisodeRecorder(problem, iid)
        recorder.start()
        status, error = played.get("status", "completed"), played.get("error")
        faults = replay_steps(steps, recorder, [], final=sample.limit is None)
        if faults:
            raise Gf01Error(f"sample {iid!r}: the logged steps do not replay on the instance ({faults[0]})",
                            file=shown)
        if sample.limit is not None and not recorder.done:
            # inspect ended the episode early: a fatal timeout on the next step (the replay derives the status from
            # it), and the rest has no edits, like a dead agent's
            recorder.step(Action(), AgentError(kind="timeout", message=f"inspect's {sample.limit.type} limit ended "
                                                                       f"the episode at step {recorder.episode.t}"))
            while not recorder.done:
                recorder.step(Action())
        if sample.limit is not None:
            status, error = recorder.status()
        scorer = scorers.setdefault(iid, Scorer(problem, gold_set_name=gold_set))
        result = scorer.score(recorder.certificate)
        logged = next(iter((sample.scores or {}).values()), None)
        if logged is None or any((logged.metadata or {}).get(k) != getattr(result, k) for k in SCORE_FIELDS):
            out.disagreements += 1
        record = recorder.finish(base, result, status=status, error=error, agent_meta=meta, usage=usage,
                                 timing=timing, tool_log_hash=tool_hash)
        out.outcomes.append(RunOutcome(record, side))
    return out


def _steps(logged: Any, iid: str, shown: str) -> list[Step]:
    """The sample's logged step log, typed; a log whose steps are not step entries is refused."""
    if not isinstance(logged, list):
        raise Gf01Error(f"sample {iid!r}: the logged steps are not a list", file=shown)
    try:
        return [Step.model_validate(s) for s in logged]
    except ValidationError as ex:
        err = ex.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "step"
        raise Gf01Error(f"sample {iid!r}: a logged step is not a step entry ({where}: {err['msg']})",
                        file=shown) from None


def _last_line(error: Any) -> str:
    """What ended a sample, in one short line (inspect's messages may hold the whole request)."""
    if error is None:
        return "the sample did not finish"
    # The traceback's last line names the exception that ended it; the message may be a repr of the request.
    lines = [x.strip() for x in f"{error.message}\n{error.traceback or ''}".splitlines() if x.strip()]
    return quote(lines[-1] if lines else "an error", 300, bare=True)


def _host(url: str | None) -> str | None:
    if not url:
        return None
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname


def _add_retries(calls: list[dict[str, Any]], events: list[Any]) -> None:
    """Each call's retries, from inspect's model events (one per call, in order), when they line up."""
    models = [e for e in events if getattr(e, "event", None) == "model"]
    if len(models) != len(calls):
        return
    for call, event in zip(calls, models, strict=True):
        call["retries"] = int(event.retries or 0)


def _usage(played: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Tokens, calls and retries per step and in total, in the form of the ``llm`` agent's usage."""
    steps = [dict(s) for s in played.get("usage", [])]
    by_step: dict[int, int] = {}
    for c in calls:
        by_step[c["t"]] = by_step.get(c["t"], 0) + int(c.get("retries", 0))
    for s in steps:
        s["retries"] = by_step.get(s["t"], 0)
    # Every call kept in the store got an answer: one without token counts leaves its step's tokens unknown.
    unreported = {c["t"] for c in calls if c.get("input_tokens") is None}
    return usage_summary(steps, unreported, reasks=sum(c.get("kind") == "reask" for c in calls))


def _int_arg(value: Any) -> int | None:
    """A task argument that is an integer (inspect keeps -T values as given); None when absent."""
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise Gf01Error(f"adaptation_budget_tokens {quote(value, 40)} is not an integer") from None


def _empty_tool_log(track: str) -> str:
    """The tool log of an episode that called no tool on a track with one (its header only); "" on EVAL-CB."""
    from gf01_formal.agents.planner import DEFAULT_MAX_QUERIES
    from gf01_formal.agents.tools import DEFAULT_ORACLE_QUERIES, ORACLE_ID
    from gf01_formal.artifacts import canonical_json

    if track == "EVAL-TA":
        return canonical_json({"max_queries": DEFAULT_MAX_QUERIES, "tool": "local-planner-v1"}) + "\n"
    if track == "EVAL-OC":
        return canonical_json({"max_queries": DEFAULT_ORACLE_QUERIES, "tool": ORACLE_ID}) + "\n"
    return ""
