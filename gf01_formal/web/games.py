"""The server side of GF-01-R1: human episodes over a bundle, each committed step saved before it is acknowledged,
each finished episode scored exactly and appended to the runs file as a run record (renderer_track ``visual``,
renderer_profile_id ``GF-01-R1``). No web framework here: :mod:`.app` is the HTTP skin over :class:`Games`.

What a browser may learn (docs/agent-protocol.md): before an episode ends, its goal panel and its canonical observations
(:meth:`Games.state`); after it, the scores, the best-match gold and the oracle's optimum. A, tau and M(I) stay here.

Saving and resuming. With a runs file, every event (an episode begun, a step committed, a run recorded) is one
fsync'd line of the journal ``<runs file>.d/web-journal.jsonl``, written before the browser hears of it; the file is
the owner's only, as it holds the episodes' tokens. Opening the journal again replays it through the pure episode
engine, which gives back every episode at the step it had reached; an episode that ended but whose record was not
written yet is scored and recorded then. Without a runs file, episodes live in memory and nothing is recorded.

Threads: the HTTP layer calls in from worker threads. Each episode has a lock (its steps, its scoring and its state
are serial), each instance has one (its scorer is built once and used by one thread at a time), and one lock guards
the tables and the journal; they are taken in that order only.

>>> games = Games.open("instance.json", runs_out="runs.jsonl")
>>> token = games.start_free(instance.instance_id).token
>>> games.step(token, {"action": {"t": 0, "set": {"r0": 1}}})["done"]
False
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from encoders.problem import Problem
from gf01_formal.agents.adaptation import Adaptation
from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import canonical_json
from gf01_formal.instances.io import InstanceSet, load_set
from gf01_formal.instances.model import Bundle, Instance
from gf01_formal.play.episode import Episode
from gf01_formal.play.protocol import Action, GoalPanel, Observation
from gf01_formal.runs.record import FINAL_STATUSES, RunOutcome, RunRecord, record_base, run_id, upgrade_record
from gf01_formal.runs.recorder import EpisodeRecorder
from gf01_formal.runs.replay import replay, score_faults
from gf01_formal.runs.scoring_limit import SERVE_SCORING_SECONDS, reason, run_limits, score_within
from gf01_formal.runs.store import RunsFile, cut_torn_tail, latest, read_lines
from gf01_formal.scoring.certificates import GoldSet, certificate_to_json
from gf01_formal.scoring.scores import Scorer
from gf01_formal.scoring.values import GOLD_FIELDS, SCORE_FIELDS, Scores
from gf01_formal.web.pilot import ID_PATTERN, Pilot, completion_code, is_issued, load_key, load_pilot
from hoa.errors import Gf01Error, quote
from solvers.limits import Unknown

RENDERER_TRACK = "visual"
RENDERER_PROFILE = "GF-01-R1"
HUMAN = "human"
#: An episode's token: 24 random bytes from :mod:`secrets`, URL-safe base64 (32 characters).
TOKEN = re.compile(r"[A-Za-z0-9_-]{32}")
PARTICIPANT = re.compile(ID_PATTERN)
#: A response time above a day is not one.
MAX_RESPONSE_MS = 86_400_000.0
#: Free-play episodes one client address may begin (docs/browser.md: what free play reveals).
FREE_EPISODES_PER_CLIENT = 200
#: What the page shows of a record.
RECORD_FIELDS = ("status", "error", "run_id", "certificate", *SCORE_FIELDS, "refusals")
#: What a pilot's end screen withholds until the participant has finished every instance: the best-match gold, the
#: oracle's optimum and the figures measured against the gold (its page shows none of them; docs/browser.md).
WITHHELD = (*GOLD_FIELDS, "oracle")


class RequestError(Exception):
    """A request the server refuses, with its HTTP status and a message for the person who sent it; nothing changed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Served:
    """One instance of the bundle as served: its checked problem, and (built on first use) its scorer and oracle."""

    instance: Instance
    problem: Problem
    lock: threading.Lock = field(default_factory=threading.Lock)
    _scorers: dict[str, Scorer] = field(default_factory=dict)
    _oracle: dict[str, Any] | None = None
    _oracle_done: bool = False

    def scorer(self, gold_set: GoldSet = "M") -> Scorer:
        """The instance's scorer ranking its best match in ``gold_set`` (hold ``lock``)."""
        if gold_set not in self._scorers:
            self._scorers[gold_set] = Scorer(self.problem, gold_set_name=gold_set)
        return self._scorers[gold_set]

    @property
    def oracle_known(self) -> bool:
        """Whether :meth:`oracle` has its answer (it may have run out of time so far)."""
        return self._oracle_done

    def oracle(self, seconds: float) -> dict[str, Any] | None:
        """The oracle's optimum within B_T (certificate, Eff_t, Eff_a), or None when no valid certificate exists or
        none was found within ``seconds`` (then asked again on the next call; hold ``lock``)."""
        if not self._oracle_done:
            from solvers import api
            from solvers.limits import Unknown

            try:
                res = api.oracle(self.problem, self.problem.budget_t, limits=run_limits(seconds))
            except Unknown:
                return None
            if res is not None:
                self._oracle = {"certificate": certificate_to_json(res.certificate, self.problem.system.inputs),
                                "eff_t": res.eff_t, "eff_a": res.eff_a}
            self._oracle_done = True
        return self._oracle


@dataclass
class Game:
    """One human episode: its recorder (engine and step log), what it has sent (observations), and how long each
    step took."""

    token: str
    served: Served
    participant_id: str
    pilot_id: str | None
    index: int
    consent_sha256: str | None
    recorder: EpisodeRecorder
    goal: GoalPanel
    issued: str | None = None  # a pilot participant's signature (web/pilot.py): the record carries it
    platform_id: str | None = None  # the recruiting platform's id of the participant, when the link bound one
    observations: list[Observation] = field(default_factory=list)
    response_ms: list[float | None] = field(default_factory=list)
    server_ms: list[float | None] = field(default_factory=list)
    shown_at: float | None = None
    record: RunRecord | None = None
    next_token: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    adaptation: Adaptation | None = None  # DEC-055, as gf01 serve declares it

    @property
    def engine(self) -> Episode:
        """The episode engine."""
        return self.recorder.episode

    @property
    def spec(self) -> AgentSpec:
        """The agent spec of a human player (its hash, with the instance, makes the run id)."""
        return AgentSpec(HUMAN, "EVAL-CB", {"participant_id": self.participant_id}).adapted(self.adaptation)

    @property
    def meta(self) -> dict[str, Any]:
        """What the record says about the player (``agent_meta``)."""
        meta = {"participant_id": self.participant_id, "pilot_id": self.pilot_id,
                "consent_sha256": self.consent_sha256, "session": "free" if self.pilot_id is None else "pilot"}
        if self.issued is not None:
            meta["issued"] = self.issued
        if self.platform_id is not None:
            meta["platform_id"] = self.platform_id
        return meta

    @property
    def run_id(self) -> str:
        """The id this episode's run record gets."""
        inst = self.served.instance
        return run_id(inst.instance_id, inst.content_hash, self.spec.digest, 0)


class Journal:
    """The append-only journal of a server's episodes (module docstring): one fsync'd JSON line per event."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.repaired = cut_torn_tail(path)

    def append(self, event: dict[str, Any]) -> None:
        """Write ``event`` as one line and make it durable before returning."""
        self.append_lines([canonical_json(event) + "\n"])

    def append_lines(self, lines: list[str]) -> None:
        """Write whole lines (each ending in a newline) and make them durable before returning."""
        line = "".join(lines).encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as ex:
            raise Gf01Error(f"cannot save: {ex.strerror or ex}", file=str(self.path)) from None


class Games:
    """Every episode a server holds, over one bundle (module docstring)."""

    def __init__(
        self,
        artifact: Bundle | Instance | InstanceSet,
        *,
        file: str | None = None,
        runs_out: str | os.PathLike[str] | None = None,
        pilot: Pilot | None = None,
        pilot_key: bytes | None = None,
        adaptation: Adaptation | None = None,
        scoring_seconds: float = SERVE_SCORING_SECONDS,
    ) -> None:
        self.adaptation = adaptation
        self.scoring_seconds = scoring_seconds  # the time limit of scoring one episode (runs/scoring_limit.py)
        loaded = InstanceSet.of(artifact, file)
        self.bundle_hash = loaded.bundle_hash
        self.served = {i.instance_id: Served(i, loaded.problem(i)) for i in loaded.instances}
        self.pilot = pilot
        self.pilot_key = pilot_key
        if pilot is not None and pilot_key is None:
            raise Gf01Error("a pilot needs its key (gf01 pilot issue makes it with the participants' links)")
        self.free_started: dict[str, int] = {}  # free play: episodes begun, per client address
        self.games: dict[str, Game] = {}
        self.sessions: dict[tuple[str, str], list[Game]] = {}  # (pilot, participant) -> episodes, in order
        self._lock = threading.Lock()
        self.runs = RunsFile(runs_out) if runs_out is not None else None
        self.journal = Journal(self.runs.side_dir / "web-journal.jsonl") if self.runs is not None else None
        if self.journal is not None:
            self._restore()

    @classmethod
    def open(cls, bundle: str | os.PathLike[str], *, runs_out: str | os.PathLike[str] | None = None,
             pilot: str | os.PathLike[str] | None = None, adaptation: Adaptation | None = None,
             scoring_seconds: float = SERVE_SCORING_SECONDS) -> Games:
        """The games of a bundle (or one instance file), with a pilot file and a runs file when given."""
        name = quote(os.fspath(bundle), 200, bare=True)
        art = load_set(bundle)
        ids = art.ids
        if pilot is None:
            return cls(art, file=name, runs_out=runs_out, adaptation=adaptation, scoring_seconds=scoring_seconds)
        return cls(art, file=name, runs_out=runs_out, pilot=load_pilot(pilot, ids), pilot_key=load_key(pilot),
                   adaptation=adaptation, scoring_seconds=scoring_seconds)

    # -- what a browser may see -------------------------------------------------------------------------------

    def instances(self) -> list[dict[str, Any]]:
        """Free play: the instances one may pick, by what their goal panels say (403 while a pilot runs)."""
        if self.pilot is not None:
            raise RequestError(403, "this server runs a pilot: participants start at /pilot")
        out = []
        for iid, s in self.served.items():
            p = s.problem
            out.append({"instance_id": iid, "horizon": p.horizon, "mode": p.mode, "t_star": p.t_star,
                        "inputs": p.system.num_inputs, "outputs": len(p.system.outputs), "budget_t": p.budget_t})
        return out

    def pilot_info(self) -> dict[str, Any]:
        """The consent page's content (404 without a pilot)."""
        if self.pilot is None:
            raise RequestError(404, "this server runs no pilot")
        p = self.pilot
        return {"pilot_id": p.pilot_id, "title": p.title, "consent": p.consent, "consent_label": p.consent_label,
                "instances": len(p.instances)}

    def state(self, token: str) -> dict[str, Any]:
        """An episode as its page shows it: the goal panel and the observations so far; after the end, the result."""
        game = self._game(token)
        with game.lock:
            engine = game.engine
            if not engine.done:
                game.shown_at = time.monotonic()
            elif game.record is None or game.record.status not in FINAL_STATUSES:
                self._finish(game)  # its recording or its scoring failed before: try again
            out: dict[str, Any] = {
                "instance_id": game.served.instance.instance_id,
                "goal": game.goal.model_dump(mode="json"),
                "observations": [o.model_dump(mode="json") for o in game.observations],
                "t": engine.t,
                "done": engine.done,
                "recording": self.runs is not None,
                "pilot": self._pilot_state(game),
                "result": None,
            }
            if engine.done:
                out["result"] = self._result(game)
            return out

    # -- what a browser may do --------------------------------------------------------------------------------

    def start_free(self, instance_id: Any, participant_id: Any = None, client: str | None = None) -> Game:
        """Free play: a new episode of one instance (participant optional: an anonymous id is drawn). A client
        (by address) begins at most ``FREE_EPISODES_PER_CLIENT`` episodes, whatever ids it names: each holds an
        engine and, ended, shows a gold, so they are not handed out without bound."""
        if self.pilot is not None:
            raise RequestError(403, "this server runs a pilot: participants start at /pilot")
        served = self.served.get(instance_id) if isinstance(instance_id, str) else None
        if served is None:
            raise RequestError(404, f"no instance {quote(instance_id, 60)} in this bundle")
        if participant_id is None:
            participant_id = f"anon-{secrets.token_hex(6)}"
        pid = _participant(participant_id)
        with self._lock:
            if client is not None:
                if self.free_started.get(client, 0) >= FREE_EPISODES_PER_CLIENT:
                    raise RequestError(429, f"this address has begun {FREE_EPISODES_PER_CLIENT} episodes, the most "
                                            "a server gives one client; restart the server for more")
                self.free_started[client] = self.free_started.get(client, 0) + 1
            self._check_unplayed(pid, [served.instance.instance_id])
            return self._begin(served, pid, index=0, pilot_id=None, consent_sha256=None)

    def start_pilot(self, participant_id: Any, consent: Any, sig: Any = None, platform_id: Any = None) -> Game:
        """A pilot participant's first episode, once they accepted the consent text: only an issued participant
        (``sig``, from the link the experimenter sent: web/pilot.py), optionally bound to a platform's id."""
        if self.pilot is None:
            raise RequestError(404, "this server runs no pilot")
        if consent is not True:
            raise RequestError(422, "consent: taking part needs your consent (tick the box)")
        pid = _participant(participant_id)
        assert self.pilot_key is not None
        if not is_issued(self.pilot_key, self.pilot.pilot_id, pid, sig):
            raise RequestError(403, f"participant {pid} has no invitation to this study: open the link the "
                                    "experimenter sent you (it carries your id and its signature)")
        platform = None if platform_id in (None, "") else _participant(platform_id, "platform_id")
        with self._lock:
            current = self._current(pid)
            if current is not None:  # the signed link is the participant's key: it resumes in any browser
                return current
            self._check_unplayed(pid, self.pilot.instances)
            game = self._begin(self.served[self.pilot.instances[0]], pid, index=0, pilot_id=self.pilot.pilot_id,
                               consent_sha256=self.pilot.consent_sha256, issued=sig, platform_id=platform)
            return game

    def resume_pilot(self, participant_id: Any, sig: Any) -> Game:
        """The episode an issued participant who has started is at (the first unfinished one, or the last when all
        are finished); 404 when they have not started. The signed link is enough: it resumes in any browser."""
        if self.pilot is None:
            raise RequestError(404, "this server runs no pilot")
        pid = _participant(participant_id)
        assert self.pilot_key is not None
        if not is_issued(self.pilot_key, self.pilot.pilot_id, pid, sig):
            raise RequestError(403, f"participant {pid} has no invitation to this study: open the link the "
                                    "experimenter sent you (it carries your id and its signature)")
        with self._lock:
            current = self._current(pid)
        if current is None:
            raise RequestError(404, f"participant {pid} has not started yet")
        return current

    def _current(self, pid: str) -> Game | None:
        """The episode participant ``pid`` of the running pilot is at, or None before they start (hold ``_lock``)."""
        assert self.pilot is not None
        session = self.sessions.get((self.pilot.pilot_id, pid))
        if not session:
            return None
        return next((g for g in session if g.record is None), session[-1])

    def step(self, token: str, body: Any) -> dict[str, Any]:
        """Commit one step: ``body`` is ``{"action": {"t", "set", "commit"}, "response_ms"}``. Returns the step's
        observation; the episode's last step also scores and records the run."""
        game = self._game(token)
        action, response_ms = parse_step(body)
        with game.lock:
            engine = game.engine
            if engine.done:
                raise RequestError(409, "the episode has ended: no step can be committed")
            void = engine.judge(action.set)
            if void is not None:  # the episode would void it; a person gets to send the step again instead
                raise RequestError(422, f"action.set: {void}")
            if action.t != engine.t:
                when = "is already committed" if action.t < engine.t else "is not reached"  # type: ignore[operator]
                raise RequestError(409, f"step {action.t} {when}: the current step is {engine.t}")
            server_ms = None if game.shown_at is None else round((time.monotonic() - game.shown_at) * 1000, 3)
            event = {"event": "step", "token": game.token, "t": engine.t, "set": action.set, "commit": action.commit,
                     "response_ms": response_ms, "server_ms": server_ms}
            with self._lock:
                self._write(event)
            obs = self._apply(game, action, response_ms, server_ms)
            if engine.done:
                self._finish(game)
            else:
                game.shown_at = time.monotonic()
            return {"observation": obs.model_dump(mode="json"), "done": obs.done}

    def replay(self, data: Any) -> dict[str, Any]:
        """A run record (either renderer) played again on its instance: the goal panel, the observations of every
        step and the record's scores. Refused while a pilot runs: a replay of a made-up record would be a
        counterfactual simulator and would show golds of M(I) to participants."""
        self.check_replay()
        if not isinstance(data, dict) or not isinstance(data.get("record"), dict):
            raise RequestError(422, 'send {"record": <one run record>}')
        try:
            rec = RunRecord.model_validate(upgrade_record(data["record"]))
        except ValidationError as ex:
            err = ex.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "record"
            raise RequestError(422, f"not a run record: {where}: {err['msg']}") from None
        served = self.served.get(rec.instance_id)
        if served is None:
            raise RequestError(404, f"the record's instance {quote(rec.instance_id, 60)} is not in the bundle served")
        if served.instance.content_hash != rec.instance_hash:
            raise RequestError(422, f"the record was played on another version of {rec.instance_id} (its "
                                    "instance_hash differs from the bundle's)")
        replayed = replay(rec, served.problem)
        if replayed.faults:
            raise RequestError(422, f"the record does not replay as recorded: {replayed.faults[0]}")
        reconstructed = replayed.reconstructed
        if rec.status in FINAL_STATUSES and rec.certificate is not None and not rec.certificate_errors:
            # The page shows the record's scores: they must be the exact ones of its certificate.
            with served.lock:
                wrong = score_faults(rec, served.scorer(rec.gold_set or "M").score(replayed.certificate))
            if wrong:
                raise RequestError(422, f"the record's scores are not those of its certificate ({wrong[0]})")
        summary = {k: getattr(rec, k) for k in RECORD_FIELDS}
        summary.update(agent_name=rec.agent_name, eval_track=rec.eval_track, renderer_track=rec.renderer_track,
                       renderer_profile_id=rec.renderer_profile_id, participant_id=rec.agent_meta.get("participant_id"),
                       reconstructed=reconstructed)
        return {"instance_id": rec.instance_id, "goal": replayed.goal.model_dump(mode="json"),
                "observations": [o.model_dump(mode="json") for o in replayed.observations], "record": summary}

    def check_replay(self) -> None:
        """Refuse replays (403) while a pilot runs (:meth:`replay` says why)."""
        if self.pilot is not None:
            raise RequestError(403, "replay is off while a pilot runs (it would let participants try actions out); "
                                    "replay records with a server started without --pilot")

    # -- inside ----------------------------------------------------------------------------------------------

    def _game(self, token: Any) -> Game:
        game = self.games.get(token) if isinstance(token, str) and TOKEN.fullmatch(token) else None
        if game is None:
            raise RequestError(404, "no episode has this token (check the link)")
        return game

    def _check_unplayed(self, pid: str, instance_ids: list[str]) -> None:
        """Refuse a second run of one participant on one instance (its run id would repeat; hold ``_lock``)."""
        for iid in instance_ids:
            served = self.served[iid]
            spec = AgentSpec(HUMAN, "EVAL-CB", {"participant_id": pid}).adapted(self.adaptation)
            rid = run_id(iid, served.instance.content_hash, spec.digest, 0)
            if (self.runs is not None and self.runs.done(rid)) or any(g.run_id == rid for g in self.games.values()):
                raise RequestError(409, f"participant {pid} has already played instance {iid}")

    def _begin(self, served: Served, pid: str, *, index: int, pilot_id: str | None, consent_sha256: str | None,
               token: str | None = None, journal: bool = True, issued: str | None = None,
               platform_id: str | None = None) -> Game:
        """A new episode (hold ``_lock``): journaled, then registered."""
        token = token or secrets.token_urlsafe(24)
        recorder = EpisodeRecorder(served.problem, served.instance.instance_id)
        game = Game(token, served, pid, pilot_id, index, consent_sha256, recorder, recorder.start(), issued=issued,
                    platform_id=platform_id, adaptation=self.adaptation)
        if journal:
            event = {"event": "episode", "token": token, "instance_id": served.instance.instance_id,
                     "instance_hash": served.instance.content_hash, "participant_id": pid, "pilot_id": pilot_id,
                     "index": index, "consent_sha256": consent_sha256}
            if issued is not None:
                event.update(issued=issued, platform_id=platform_id)
            self._write(event)
        self.games[token] = game
        if pilot_id is not None:
            self.sessions.setdefault((pilot_id, pid), []).append(game)
        return game

    def _write(self, event: dict[str, Any]) -> None:
        """Journal ``event`` (hold ``_lock``); a failure is a 503 and nothing is committed."""
        if self.journal is None:
            return
        try:
            self.journal.append(event)
        except Gf01Error as ex:
            raise RequestError(503, f"the server could not save ({ex}); nothing was committed, try again") from None

    @staticmethod
    def _apply(game: Game, action: Action, response_ms: float | None, server_ms: float | None) -> Observation:
        obs = game.recorder.step(action)
        game.observations.append(obs)
        game.response_ms.append(response_ms)
        game.server_ms.append(server_ms)
        return obs

    def _finish(self, game: Game) -> None:
        """Score the ended episode and record it (hold ``game.lock``); in a pilot, open the next episode."""
        scores: Scores | None = None
        error = ""
        with game.served.lock:
            try:
                scores = score_within(game.served.scorer(), game.recorder.certificate, seconds=self.scoring_seconds)
            except Unknown as ex:  # past the limit: the record says so, and the next load of the page tries again
                error = reason(ex, seconds=self.scoring_seconds)
            except Exception as ex:  # our failure: keep the participant's steps in a record that says so
                error = f"scoring failed: {type(ex).__name__}: {ex}"
        known = [ms for ms in game.response_ms if ms is not None]
        timing = {"step_ms": game.response_ms, "server_step_ms": game.server_ms,
                  "total_ms": round(sum(known), 3)}
        base = record_base(game.served.instance, game.spec, 0, bundle_hash=self.bundle_hash,
                           renderer_track=RENDERER_TRACK, renderer_profile_id=RENDERER_PROFILE)
        if scores is None:
            record = game.recorder.fail(base, error, agent_meta=game.meta, timing=timing)
        else:
            status, error_of_steps = game.recorder.status()  # more than 3 void actions: agent_error, as anywhere
            record = game.recorder.finish(base, scores, agent_meta=game.meta, timing=timing, status=status,
                                          error=error_of_steps)
        with self._lock:
            if self.runs is not None:
                if not self.runs.done(record.run_id):
                    try:
                        self.runs.append(RunOutcome(record))
                    except Gf01Error as ex:  # the steps are saved: the record is written on the next try
                        raise RequestError(503, f"the server could not save the result ({ex}); reload to "
                                                "retry") from None
                self._write({"event": "recorded", "token": game.token, "run_id": record.run_id,
                             "status": record.status})
            game.record = record
            self._open_next(game)

    def _open_next(self, game: Game) -> None:
        """In a pilot, the episode after ``game`` (hold ``_lock``)."""
        pilot = self.pilot
        if pilot is None or game.pilot_id != pilot.pilot_id:
            return
        session = self.sessions.get((pilot.pilot_id, game.participant_id), [])
        if game.index + 1 < len(session):
            game.next_token = session[game.index + 1].token
        elif game.index + 1 < len(pilot.instances):
            nxt = self._begin(self.served[pilot.instances[game.index + 1]], game.participant_id,
                              index=game.index + 1, pilot_id=pilot.pilot_id, consent_sha256=game.consent_sha256,
                              issued=game.issued, platform_id=game.platform_id)
            game.next_token = nxt.token

    def _pilot_state(self, game: Game) -> dict[str, Any] | None:
        pilot = self.pilot
        if game.pilot_id is None or pilot is None or game.pilot_id != pilot.pilot_id:
            return None
        complete = self._pilot_complete(game)
        assert self.pilot_key is not None
        return {"pilot_id": pilot.pilot_id, "title": pilot.title, "participant_id": game.participant_id,
                "index": game.index, "total": len(pilot.instances),
                "next": None if game.next_token is None else f"/play/{game.next_token}",
                "completion_code": completion_code(self.pilot_key, pilot, game.participant_id) if complete else None}

    def _pilot_complete(self, game: Game) -> bool:
        """Whether the pilot participant of ``game`` has finished every instance."""
        pilot = self.pilot
        assert pilot is not None
        session = self.sessions.get((pilot.pilot_id, game.participant_id), [])
        return len(session) == len(pilot.instances) and all(g.record is not None for g in session)

    def _result(self, game: Game) -> dict[str, Any] | None:
        """The end screen's content. Under a pilot, the best-match gold and the oracle's optimum (members of M(I))
        wait until the participant has finished every instance: shown earlier, an id that commits at once would
        learn each instance's answer before playing it under another id."""
        rec = game.record
        if rec is None:
            return None
        out = {k: getattr(rec, k) for k in RECORD_FIELDS}
        out["recorded"] = self.runs is not None
        if game.pilot_id is not None and not self._pilot_complete(game):
            # Not only the gold: every figure measured against it (one edit played alone, its AP precision told
            # whether it lies in a valid certificate, its recall that certificate's size; red-team round 9).
            out.update(dict.fromkeys(WITHHELD, None))
            out["withheld"] = "the answers are shown when you have finished every episode of the study"
            return out
        with game.served.lock:
            out["oracle"] = game.served.oracle(self.scoring_seconds)
            out["oracle_unknown"] = not game.served.oracle_known
        return out

    def _restore(self) -> None:
        """Replay the journal (module docstring); then record what ended unrecorded and open what comes next."""
        assert self.journal is not None and self.runs is not None
        records = latest(self.runs.path)
        name = quote(str(self.journal.path), 200, bare=True)
        if self.journal.path.exists():
            for number, ev in read_lines(self.journal.path):
                try:
                    self._replay_event(ev, records)
                except (KeyError, TypeError, ValueError, RequestError) as ex:
                    raise Gf01Error(f"the journal does not replay on this bundle: {ex}", file=name,
                                    line=number) from None
        for game in list(self.games.values()):
            if game.engine.done and game.record is None:
                with game.lock:
                    self._finish(game)
            elif game.record is not None:
                with self._lock:
                    self._open_next(game)

    def _replay_event(self, ev: dict[str, Any], records: Mapping[str, dict[str, Any]]) -> None:
        kind = ev["event"]
        if kind == "episode":
            served = self.served.get(ev["instance_id"])
            if served is None or served.instance.content_hash != ev["instance_hash"]:
                raise ValueError(f"instance {ev['instance_id']} is not in the bundle (or differs from it)")
            pilot_id = ev["pilot_id"]
            if self.pilot is not None and pilot_id == self.pilot.pilot_id:
                order = self.pilot.instances
                if ev["index"] >= len(order) or order[ev["index"]] != ev["instance_id"]:
                    raise ValueError(f"episode {ev['index']} of participant {ev['participant_id']} does not follow "
                                     "the pilot's order of instances")
            self._begin(served, ev["participant_id"], index=ev["index"], pilot_id=pilot_id,
                        consent_sha256=ev["consent_sha256"], token=ev["token"], journal=False,
                        issued=ev.get("issued"), platform_id=ev.get("platform_id"))
        elif kind == "step":
            game = self.games[ev["token"]]
            action = Action(set=ev["set"], commit=ev["commit"], t=ev["t"])
            self._apply(game, action, ev["response_ms"], ev["server_ms"])
        elif kind == "recorded":
            # A record that is missing, or not final (scoring failed), is made again after the journal is read.
            game = self.games[ev["token"]]
            rec = records.get(ev["run_id"])
            final = rec is not None and rec.get("status") in FINAL_STATUSES
            game.record = RunRecord.model_validate(upgrade_record(rec)) if final else None
        elif kind == "reset":  # gf01 pilot reset: the participant starts the pilot afresh
            for game in self.sessions.pop((ev["pilot_id"], ev["participant_id"]), []):
                self.games.pop(game.token, None)
        else:
            raise ValueError(f"unknown event {kind!r}")


#: Where ``gf01 pilot reset --force`` keeps the records it takes out of the runs file (nothing is deleted).
RESET_FILE = "pilot-reset.jsonl"


@dataclass(frozen=True)
class Reset:
    """What ``gf01 pilot reset`` did: the participant's episodes forgotten, its records moved aside (and where)."""

    episodes: int
    records: int
    aside: Path | None


def reset_participant(runs_out: str | os.PathLike[str], pilot: Pilot, participant_id: str, *,
                      force: bool = False) -> Reset:
    """Let participant ``participant_id`` (a test id, typically) start ``pilot`` afresh on the server recording to
    ``runs_out``: a ``reset`` event in the journal makes the server forget their episodes. Finished runs are real
    data: refused unless ``force``, which moves their records out of the runs file into ``<runs>.d/pilot-reset.jsonl``
    (kept, never deleted). Refused while a server writes the runs file (its lock)."""
    from gf01_formal.artifacts import write_text_atomic

    if not PARTICIPANT.fullmatch(participant_id):
        raise Gf01Error("1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
                        field="PARTICIPANT")
    if not Path(runs_out).is_file():
        raise Gf01Error("no such runs file (give the --runs-out of the pilot's server)",
                        file=quote(os.fspath(runs_out), 200, bare=True), field="--runs-out")
    with RunsFile(runs_out) as runs:
        journal = Journal(runs.side_dir / "web-journal.jsonl")
        episodes = 0
        if journal.path.exists():
            for _, ev in read_lines(journal.path):
                if ev.get("pilot_id") == pilot.pilot_id and ev.get("participant_id") == participant_id:
                    episodes = 0 if ev.get("event") == "reset" else episodes + (ev.get("event") == "episode")
        lines = runs.path.read_text(encoding="utf-8").splitlines(keepends=True) if runs.path.exists() else []

        def theirs(line: str) -> bool:
            try:
                rec = json.loads(line)
            except ValueError:
                return False
            meta = rec.get("agent_meta") if isinstance(rec, dict) else None
            return (rec.get("agent_name") == HUMAN and isinstance(meta, dict)
                    and meta.get("pilot_id") == pilot.pilot_id and meta.get("participant_id") == participant_id)

        moved = [line for line in lines if theirs(line)]
        name = quote(os.fspath(runs_out), 200, bare=True)
        if moved and not force:
            raise Gf01Error(f"participant {participant_id} has {len(moved)} recorded run"
                            f"{'s' if len(moved) != 1 else ''} of pilot {pilot.pilot_id} (real data): nothing reset; "
                            f"--force moves them to {runs.side_dir / RESET_FILE} and resets", file=name)
        if episodes == 0 and not moved:
            return Reset(0, 0, None)
        # The journal first: a reset cut short by a crash leaves records a second --force moves, never a participant
        # whose finished episodes would be scored again.
        journal.append({"event": "reset", "pilot_id": pilot.pilot_id, "participant_id": participant_id,
                        "records": len(moved), "forced": force})
        aside = None
        if moved:
            aside = runs.side_dir / RESET_FILE
            Journal(aside).append_lines(moved)
    if moved:
        # Rewritten once this command's own lock is let go: the write takes the lock of the file it replaces, so a
        # server started in between refuses it (and a second --force finishes the reset).
        write_text_atomic(runs.path, "".join(line for line in lines if not theirs(line)))
    return Reset(episodes, len(moved), aside)


def parse_step(body: Any) -> tuple[Action, float | None]:
    """The action and response time of a step request; a RequestError (422) says what is wrong with its form (what
    it asks for is the episode's to judge: :meth:`Games.step`)."""
    if not isinstance(body, dict):
        raise RequestError(422, 'a step is a JSON object {"action": {"t": ..., "set": {...}}}')
    extra = sorted(set(body) - {"action", "response_ms"})
    if extra:
        raise RequestError(422, f"unknown field {quote(extra[0], 40)} (fields: action, response_ms)")
    action = body.get("action")
    if not isinstance(action, dict):
        raise RequestError(422, 'action: required, an object {"t": step, "set": {input: 0 or 1}, "commit": bool}')
    extra = sorted(set(action) - {"t", "set", "commit"})
    if extra:
        raise RequestError(422, f"action: unknown field {quote(extra[0], 40)} (fields: t, set, commit)")
    t = action.get("t")
    if not isinstance(t, int) or isinstance(t, bool):
        raise RequestError(422, "action.t: required, the step the action is for (an integer)")
    assignment = action.get("set", {})
    if not isinstance(assignment, dict):
        raise RequestError(422, "action.set: an object {input: 0 or 1}")
    commit = action.get("commit", False)
    if not isinstance(commit, bool):
        raise RequestError(422, "action.commit: true or false")
    ms = body.get("response_ms")
    if ms is not None and (isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms)
                           or not 0 <= ms <= MAX_RESPONSE_MS):
        raise RequestError(422, f"response_ms: milliseconds between 0 and {MAX_RESPONSE_MS:.0f}, or null")
    return Action(set=dict(assignment), commit=commit, t=t), None if ms is None else round(float(ms), 3)


def _participant(value: Any, name: str = "participant_id") -> str:
    if not isinstance(value, str) or not PARTICIPANT.fullmatch(value):
        raise RequestError(422, f"{name}: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter "
                                "or digit")
    return value
