"""The state of an evaluation server (``gf01 eval serve``, docs/remote.md; its HTTP skin is :mod:`.server`). It
holds the instances, plays every episode on its side (``runs.runner.play_run`` with a
:class:`~gf01_formal.remote.episodes.RelayAgent`), writes and signs the run records (one writer: the runs file's
lock), and hands each finished run's receipt to its team.

Routes (bodies and answers: :mod:`.protocol`; every request but the leaderboard's names its team by
``Authorization: Bearer <token>``):

====================================  ===========================================================================
``POST /v1/runs``                      a submission's runs: ``{"agent", "seed"}`` -> every instance, its run id,
                                       whether it is recorded
``POST /v1/episodes``                  open an instance's episode ``{"agent", "seed", "instance_id"}`` -> the start
                                       message (or, for a recorded run, its receipt); an episode of the same run
                                       still open ends as the agent's crash when its agent sent lines (recorded:
                                       the receipt answers), else is given up and played again from its start
``POST /v1/episodes/{id}/lines``       one agent line ``{"seq", "line"}`` (or ``{"seq", "fault"}``) -> the messages
                                       until the server waits again, and at the end the receipt
``GET /v1/leaderboard``, ``/leaderboard``  the leaderboard (:mod:`.leaderboard`), JSON and page; no token
====================================  ===========================================================================

Refusals: 401 no or unknown token, 403 revoked (or EVAL-OC for a team not issued with it), 429 over a quota
(episodes a day, open at once), 404 an episode this team does not have open (the server restarted: open the
instance again), 409 a line out of order, 413 a body past its limit, 422 a body that is not the request, each with
``{"error": one line}``.

Kill -9 and restart: the runs file keeps every finished run once (one fsync'd line each; a torn last line is cut);
an episode open at the kill has no record, and its relay opens it again and replays it from its start. Quotas
survive: each open is a line of the server's journal (``<runs>.d/remote-journal.jsonl``).
"""

from __future__ import annotations

import datetime
import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gf01_formal.agents.base import TRACKS, AgentSpec
from gf01_formal.instances.io import load_set
from gf01_formal.instances.model import Instance
from gf01_formal.remote.episodes import Abandoned, Answer, LiveEpisode, RelayAgent
from gf01_formal.remote.protocol import WIRE, LineRequest, OpenRequest, Submission
from gf01_formal.remote.receipts import Commitments, Receipt, make_receipt
from gf01_formal.remote.tokens import Refused, Team, TokenStore
from gf01_formal.runs.record import FINAL_STATUSES, RunOutcome, run_id
from gf01_formal.runs.store import RunsFile, latest
from hoa.errors import Gf01Error, quote

if TYPE_CHECKING:
    from gf01_formal.runs.signing import Signer
    from gf01_formal.scoring.scores import Scorer

#: Seconds a request waits for the episode to answer (a tool call or the final scoring may take a while).
ANSWER_CEILING = 600.0
DEFAULT_STEP_TIMEOUT = 30.0
#: Finished episodes kept (oldest dropped first) so that a retry of their last line is answered the same; a retry of
#: one dropped gets 404, and the relay's open of the instance then returns the run's receipt.
KEEP_FINISHED = 4096
#: Params a relay may not declare: the server sets them.
SERVER_PARAMS = ("team",)


class RequestFailed(Exception):
    """A request refused: the HTTP status and one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _LockedScorer:
    """An instance's scorer shared by every episode of it (the gold set is built once), one score at a time. The
    limits a run's scoring sets (``runs.scoring_limit.score_within``) are that run's thread's: they reach the scorer
    with its score, never another episode's."""

    def __init__(self, scorer: Scorer) -> None:
        self._scorer = scorer
        self._lock = threading.Lock()
        self._local = threading.local()

    @property
    def limits(self) -> Any:
        return getattr(self._local, "limits", None)

    @limits.setter
    def limits(self, value: Any) -> None:
        self._local.limits = value

    def score(self, certificate: Any) -> Any:
        with self._lock:
            self._scorer.limits = self.limits
            return self._scorer.score(certificate)


@dataclass(frozen=True)
class Served:
    """One instance the server holds: the instance, its checked problem, and its commitment in the manifest."""

    instance: Instance
    commitment: str


def utc_day() -> str:
    """Today (UTC): what the episodes-a-day quota counts by (the clock enters no output)."""
    return datetime.datetime.now(datetime.UTC).date().isoformat()


class EvalServer:
    """The state of an evaluation server (module docstring)."""

    def __init__(self, bundle: str | os.PathLike[str], manifest: str | os.PathLike[str],
                 runs_out: str | os.PathLike[str], tokens: str | os.PathLike[str], signer: Signer, *,
                 step_timeout: float = DEFAULT_STEP_TIMEOUT) -> None:
        from gf01_formal.artifacts import read_json, sha256_hex
        from gf01_formal.instances.model import validate_model
        from gf01_formal.instances.splits import SplitManifest
        from gf01_formal.web.games import Journal

        self.step_timeout = step_timeout
        self.signer = signer
        loaded = load_set(bundle)
        self.loaded = loaded
        man_name = quote(os.fspath(manifest), 200, bare=True)
        man_data = read_json(manifest)
        man: SplitManifest = validate_model(SplitManifest, man_data, file=man_name)
        entries = {e.instance_id: e for e in man.instances}
        self.served: dict[str, Served] = {}
        for inst in loaded.instances:
            loaded.problem(inst)  # checked before the server starts, as gf01 evaluate checks before playing
            entry = entries.get(inst.instance_id)
            if entry is None:
                raise Gf01Error(f"instance {inst.instance_id} of the bundle is not in the split manifest",
                                file=man_name, field="instances")
            commitment = entry.commitment or entry.content_hash
            if entry.content_hash is not None and entry.content_hash != inst.content_hash:
                raise Gf01Error(f"instance {inst.instance_id}: the manifest lists another content hash",
                                file=man_name, field="instances")
            self.served[inst.instance_id] = Served(inst, str(commitment))
        self.commitments = Commitments(manifest_sha256=sha256_hex(man_data), key_commitment=man.key_commitment,
                                       private_bundle_commitment=man.private_bundle_commitment)
        self.tokens = TokenStore(tokens)
        self.runs = RunsFile(runs_out, signer=signer)  # it chains each record to the line before it and signs it
        self.runs_path = Path(runs_out)
        self.records: dict[str, dict[str, Any]] = {rid: rec for rid, rec in latest(runs_out).items()
                                                   if rec.get("status") in FINAL_STATUSES}
        self.journal = Journal(self.runs.side_dir / "remote-journal.jsonl")
        self._lock = threading.Lock()
        self._scorers: dict[str, _LockedScorer] = {}
        self.live: dict[str, LiveEpisode] = {}  # episode id -> episode (finished ones kept: a retry's answer)
        self._open_of_run: dict[str, LiveEpisode] = {}
        self.opens: dict[tuple[str, str], int] = {}  # (team, day) -> episodes opened
        self.restarts: dict[str, int] = {}  # run id -> opens so far
        self._restore()

    def _restore(self) -> None:
        from gf01_formal.runs.store import read_lines

        path = self.journal.path
        if not path.exists():
            return
        for _, ev in read_lines(path):
            if ev.get("event") == "open":
                key = (str(ev.get("team")), str(ev.get("day")))
                self.opens[key] = self.opens.get(key, 0) + 1
                rid = str(ev.get("run_id"))
                self.restarts[rid] = self.restarts.get(rid, 0) + 1

    def close(self) -> None:
        """Give up the open episodes (nothing of them is recorded) and let the runs file go."""
        with self._lock:
            for live in self.live.values():
                live.abandon()
        for live in list(self.live.values()):
            if live.thread is not None:
                live.thread.join(10)
        self.runs.close()

    # -- who asks --------------------------------------------------------------------------------------------------

    def team(self, authorization: str | None) -> Team:
        """The team of a request's ``Authorization`` header (:class:`Refused` otherwise)."""
        token = None
        if authorization and authorization.lower().startswith("bearer "):
            token = authorization[7:].strip()
        return self.tokens.check(token)

    # -- the submission --------------------------------------------------------------------------------------------

    def spec(self, team: Team, submission: Submission) -> AgentSpec:
        """The agent spec the server records for ``team``'s declared agent: the declared one (built-in name,
        track, params, adaptation) with the team and the leaderboard's label ``team/agent`` among its params."""
        from gf01_formal.agents import BUILTIN
        from gf01_formal.report.coverage import base_label

        data = submission.agent
        name, track, params = data.get("name"), data.get("track"), data.get("params", {})
        if not isinstance(name, str) or name not in BUILTIN:
            raise RequestFailed(422, f"agent.name: {quote(name, 40)} is no agent (known: {', '.join(sorted(BUILTIN))})")
        if track not in TRACKS or not BUILTIN[name].plays(str(track)):
            raise RequestFailed(422, f"agent.track: agent {name} does not play on {quote(track, 40)}")
        if not isinstance(params, dict):
            raise RequestFailed(422, "agent.params: an object")
        if track == "EVAL-OC" and not team.oracle:
            # Its tool answers optimal certificates of the sealed instances: only a team issued with --oracle.
            raise Refused(403, f"team {team.name} may not play EVAL-OC on this server (its tool answers the sealed "
                          "instances; the operator issues tokens with --oracle)")
        unknown = sorted(set(params) - set(BUILTIN[name].params) | set(params) & set(SERVER_PARAMS))
        if unknown or set(data) - {"name", "track", "params", "adaptation"}:
            what = unknown[0] if unknown else sorted(set(data) - {"name", "track", "params", "adaptation"})[0]
            raise RequestFailed(422, f"agent: {quote(what, 40)} is not declared here")
        label = f"{team.name}/{base_label(data, name)}"
        try:
            declared = AgentSpec.from_json({**data, "params": {**params, "team": team.name, "label": label}})
        except (Gf01Error, ValueError, TypeError, KeyError) as ex:
            raise RequestFailed(422, f"agent.adaptation: {quote(str(ex), 200, bare=True)}") from None
        return declared

    def _served(self, instance_id: str) -> Served:
        served = self.served.get(instance_id)
        if served is None:
            raise RequestFailed(404, f"no instance {quote(instance_id, 80)} on this server")
        return served

    def _run_id(self, served: Served, spec: AgentSpec, seed: int) -> str:
        inst = served.instance
        return run_id(inst.instance_id, inst.content_hash, spec.digest, seed)

    def plan(self, team: Team, submission: Submission) -> dict[str, Any]:
        """Every instance of the split with the submission's run id and whether it is recorded (bundle order)."""
        spec = self.spec(team, submission)
        rows = []
        for iid, served in self.served.items():
            rid = self._run_id(served, spec, submission.seed)
            rows.append({"instance_id": iid, "run_id": rid, "done": rid in self.records})
        return {"wire": WIRE, "agent": spec.label, "runs": rows}

    def open(self, team: Team, request: OpenRequest) -> dict[str, Any]:
        """Open (or reopen from its start) the episode of one instance; a recorded run's receipt instead."""
        spec = self.spec(team, request)
        served = self._served(request.instance_id)
        rid = self._run_id(served, spec, request.seed)
        with self._lock:
            before = self._open_of_run.get(rid)
            ended = before is not None and rid not in self.records and before.reopen()
        if ended and before is not None:  # its agent played lines: recorded as its crash, answered with the receipt
            before.wait_finished(ANSWER_CEILING)
        with self._lock:
            if rid in self.records:
                return {"run_id": rid, "done": True, "messages": [], "receipt": self._receipt_of(rid)}
            before = self._open_of_run.get(rid)
            if before is not None and before.finished:
                before = None
            open_now = sum(1 for ep in self._open_of_run.values() if ep.team == team.name and not ep.finished
                           and ep is not before)
            if open_now >= team.concurrent:
                raise Refused(429, f"team {team.name} has {open_now} episodes open, its limit ({team.concurrent})")
            day = utc_day()
            if self.opens.get((team.name, day), 0) >= team.episodes_per_day:
                raise Refused(429, f"team {team.name} opened its {team.episodes_per_day} episodes of {day} (UTC); "
                              "the quota renews at midnight UTC")
            if before is not None:
                before.abandon()  # played again from its start: the old one records nothing
            try:
                self.journal.append({"event": "open", "team": team.name, "day": day, "run_id": rid})
            except Gf01Error as ex:
                raise RequestFailed(503, f"the server could not save ({ex}); nothing was opened, try again") from None
            self.opens[(team.name, day)] = self.opens.get((team.name, day), 0) + 1
            restarts = self.restarts.get(rid, 0)
            self.restarts[rid] = restarts + 1
            live = LiveEpisode(secrets.token_hex(16), team.name, rid, self.step_timeout)
            self._prune()
            self.live[live.episode_id] = live
            self._open_of_run[rid] = live
        live.thread = threading.Thread(target=self._play, args=(live, served, spec, request.seed, restarts),
                                       name=f"episode-{live.episode_id[:8]}", daemon=True)
        live.thread.start()
        return {"run_id": rid, "episode": live.episode_id, **self._answer(live, live.opened(ANSWER_CEILING))}

    def _prune(self) -> None:
        """Forget the oldest finished episodes past :data:`KEEP_FINISHED` (hold ``_lock``)."""
        finished = [eid for eid, ep in self.live.items() if ep.finished]  # insertion order: the oldest first
        for eid in finished[:max(0, len(finished) - KEEP_FINISHED)]:
            ep = self.live.pop(eid)
            if self._open_of_run.get(ep.run_id) is ep:
                del self._open_of_run[ep.run_id]

    async def line(self, team: Team, episode_id: str, request: LineRequest) -> dict[str, Any]:
        """Apply one line of an open episode (once) and answer it (on the server's event loop: nothing here blocks
        but the wait for the episode's answer, which awaits)."""
        from gf01_formal.remote.episodes import Conflict

        live = self.live.get(episode_id)
        if live is None or live.team != team.name:
            raise RequestFailed(404, "no episode of this team has this id (the server restarted, or it was opened "
                                "again): open the instance again")
        try:
            answer = await live.submit(request, ANSWER_CEILING)
        except Conflict as ex:
            raise RequestFailed(409, str(ex)) from None
        return {"run_id": live.run_id, "episode": episode_id, **self._answer(live, answer)}

    @staticmethod
    def _answer(live: LiveEpisode, answer: Answer) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": answer.seq, "messages": answer.messages, "done": answer.done}
        if answer.late:
            out["late"] = True
        if answer.done:
            out.update(live.extra)
        return out

    # -- playing and recording -------------------------------------------------------------------------------------

    def _scorer(self, served: Served) -> _LockedScorer:
        from gf01_formal.scoring.scores import Scorer

        with self._lock:
            iid = served.instance.instance_id
            if iid not in self._scorers:
                self._scorers[iid] = _LockedScorer(Scorer(self.loaded.problem(served.instance)))
            return self._scorers[iid]

    def _play(self, live: LiveEpisode, served: Served, spec: AgentSpec, seed: int, restarts: int) -> None:
        from gf01_formal.runs.runner import play_run

        meta = {"relay": WIRE, "team": live.team, "restarts": restarts}
        claimed = spec.params.get("sandbox") if spec.name == "cmd" else None
        sandbox = claimed if isinstance(claimed, str) else None
        try:
            outcome = play_run(served.instance, self.loaded.problem(served.instance), spec, seed=seed,
                               scorer=self._scorer(served),  # type: ignore[arg-type]
                               bundle_hash=self.loaded.bundle_hash,
                               build=lambda s, access: RelayAgent(live, access, meta=meta, sandbox=sandbox))
            self._record(live, served, spec, outcome)
        except Abandoned:
            pass
        except Exception as ex:  # our failure: the relay hears it in one line; nothing is recorded
            live.extra = {"error": f"the server failed to play the episode: {type(ex).__name__}: {ex}"}
        finally:
            live.finish()

    def _record(self, live: LiveEpisode, served: Served, spec: AgentSpec, outcome: RunOutcome) -> None:
        with self._lock:
            if outcome.record.run_id in self.records:  # recorded by an episode that finished first: kept once
                live.extra = {"receipt": self._receipt_of(outcome.record.run_id)}
                return
            record = self.runs.append(outcome)  # signed there, chained to the line before it
            if record.status not in FINAL_STATUSES:
                live.extra = {"error": f"the run was not scored ({record.status}: {record.error}); open it again"}
                return
            self.records[record.run_id] = record.to_json()
            live.extra = {"receipt": self._receipt_of(record.run_id)}

    def _receipt_of(self, rid: str) -> dict[str, Any]:
        """The signed receipt of a recorded run (made again from its record: the same bytes each time)."""
        from gf01_formal.runs.record import RunRecord

        rec = RunRecord.model_validate(self.records[rid])
        params = rec.agent_spec.get("params", {})
        receipt: Receipt = make_receipt(rec, team=str(params.get("team")), agent=str(params.get("label")),
                                        instance_commitment=self.served[rec.instance_id].commitment
                                        if rec.instance_id in self.served else "",
                                        split=self.commitments, signer=self.signer)
        return receipt.model_dump(mode="json")
