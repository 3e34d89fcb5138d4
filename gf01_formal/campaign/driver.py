"""The driver of ``gf01 evaluate`` and ``gf01 campaign``: the runs a plan still lacks, played on an executor, each
record appended to the runs file as it arrives.

The runs file is append-only (one fsync'd line per record, written by the driver alone, a torn last line cut on
reopen), and the work is planned from the run ids that have no final record yet; so a rerun after a crash, kill -9
or Ctrl-C of the driver or of a worker plays exactly the missing runs. Nothing else is written here: a campaign's
validation, report and analysis come after (:mod:`gf01_formal.campaign.run`), ``evaluate`` has none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gf01_formal.campaign import executors
from gf01_formal.campaign.shards import Plan, tasks
from gf01_formal.runs.record import RunRecord
from gf01_formal.runs.store import RunsFile

if TYPE_CHECKING:
    from gf01_formal.scoring.scores import AnswerBook


@dataclass
class Tally:
    """What one drive did: runs played now, runs already final, the bytes of a torn last line cut, and the statuses
    and Score_C per agent of the runs played."""

    played: int = 0
    skipped: int = 0
    repaired_bytes: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    score_c: Counter[str] = field(default_factory=Counter)
    by_agent: Counter[str] = field(default_factory=Counter)
    #: Why the drive stopped before the end (the model's service failing run after run), or None.
    stopped: str | None = None
    #: Runs the drive did not play because it stopped (they have no record: the same command plays them).
    unplayed: int = 0

    def add(self, rec: RunRecord) -> None:
        """Count one record played."""
        self.played += 1
        self.statuses[rec.status] += 1
        self.by_agent[rec.agent_name] += 1
        self.score_c[rec.agent_name] += rec.score_c or 0

    def to_json(self) -> dict[str, Any]:
        """The tally as JSON (sorted keys), as ``gf01 evaluate`` prints it."""
        return {
            "played": self.played,
            "skipped": self.skipped,
            "repaired_bytes": self.repaired_bytes,
            "statuses": dict(sorted(self.statuses.items())),
            "score_c": {a: {"runs": self.by_agent[a], "certified": self.score_c[a]} for a in sorted(self.by_agent)},
            "stopped": self.stopped,
            "unplayed": self.unplayed,
        }


def drive(
    plan: Plan,
    store: RunsFile,
    *,
    executor: str = "local",
    jobs: int = 1,
    address: str | None = None,
    batch: int = 1,
    progress: Callable[[int, int], None] | None = None,
    on_record: Callable[[RunRecord], None] | None = None,
    on_pool: Callable[[list[int]], None] | None = None,
    answers: AnswerBook | None = None,
    max_provider_failures: int | None = None,
) -> Tally:
    """Play the runs of ``plan`` that ``store`` (an open runs file: its writer's lock held) has no final record of,
    ``batch`` instances a task, on ``executor`` (:data:`gf01_formal.campaign.executors.KINDS`), appending every record
    as it arrives.

    ``progress(done, total)`` is called before the first run and after each record (``done`` counts the runs
    skipped as already final), ``on_record(record)`` with each record written. A single task runs inline whatever
    the executor (except Dask, whose workers may be what the work needs).

    ``answers`` receives the best matches the scorers of this process and of its local workers computed, for the
    campaign's validation to reuse; a Dask worker's are not taken (validation re-scores what another machine scored).

    ``max_provider_failures``: after that many runs in a row ended ``provider_error`` (the model's service failing
    past its retries), the drive stops: the runs in flight and not yet begun get no record (``Tally.stopped`` says
    why, ``Tally.unplayed`` how many), so the same command, run again, plays them; none is the agent's failure.
    """
    tally = Tally(repaired_bytes=store.repaired)
    done_ids = store.final_ids()
    busy = 0
    for inst in plan.instances:
        missing = sum(1 for _, rid in plan.run_ids(inst) if rid not in done_ids)
        tally.skipped += len(plan.specs) - missing
        busy += missing > 0
    kind = executor if executor == "dask" or busy > batch else "inline"
    results = executors.run(tasks(plan, done_ids, batch), kind, jobs=jobs, address=address,
                            one_thread=plan.caps is not None, on_pool=on_pool)
    total = len(plan.instances) * len(plan.specs)
    count = tally.skipped
    if progress is not None:
        progress(count, total)
    streak = 0
    try:
        for result in results:
            if answers is not None and kind != "dask":
                for content, gold, cert, bm in result.answers:
                    answers.setdefault((content, gold), {})[cert] = bm
            for outcome in result.runs:
                store.append(outcome)
                tally.add(outcome.record)
                if on_record is not None:
                    on_record(outcome.record)
                count += 1
                if progress is not None:
                    progress(count, total)
                streak = streak + 1 if outcome.record.status == "provider_error" else 0
                if max_provider_failures is not None and streak >= max_provider_failures and tally.stopped is None:
                    tally.stopped = (f"{streak} runs in a row ended provider_error (the last: "
                                     f"{outcome.record.error}): the model's service is failing")
            if tally.stopped is not None:
                break
    finally:
        close = getattr(results, "close", None)
        if close is not None:  # a generator: its executor stops its threads or workers
            close()
    tally.unplayed = total - count
    return tally
