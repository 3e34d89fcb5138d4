"""``gf01 evaluate``: every instance of a bundle (or of one instance file) played by every agent of a panel, each run
appended to a runs file as it finishes; a rerun (after a crash, kill -9 or Ctrl-C) plays exactly the runs that have
no final record.

An evaluation is a campaign without the report tail: the same plan and tasks (:mod:`gf01_formal.campaign.shards`,
one instance a task), the same driver and executors (:mod:`gf01_formal.campaign.driver`). Each instance is checked
once and its :class:`~gf01_formal.scoring.scores.Scorer` (the exact gold set) is shared by all agents' runs of it.
With ``jobs > 1`` instances are played in worker processes (:mod:`gf01_formal.workers`: they die with the parent,
and a worker that dies is replaced and its tasks played again), or in threads for agents that wait on I/O (an LLM
endpoint); the parent alone writes the runs file, so no record is torn or duplicated.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gf01_formal.agents.base import AgentSpec
from gf01_formal.campaign.driver import Tally, drive
from gf01_formal.campaign.shards import Plan
from gf01_formal.instances.io import load_set
from gf01_formal.runs.record import RunRecord
from gf01_formal.runs.scoring_limit import SCORING_SECONDS
from gf01_formal.runs.store import RunsFile
from gf01_formal.scoring.certificates import GoldSet


@dataclass(frozen=True)
class Settings:
    """What every run of an evaluation shares: the seed, the optional SubsetMin diagnostic with its time cap, the gold
    set and the limits of scoring a run (runs/scoring_limit.py)."""

    seed: int = 0
    subset_min: bool = False
    diagnostic_seconds: float | None = None
    gold_set: GoldSet = "M"  # where the best match ranks its gold: M(I) (section 7.3) or MB, M_B(I) (an option)
    memory: float | None = None  # MiB of resident memory of each query that scores a run (None: no limit)
    scoring_seconds: float = SCORING_SECONDS  # wall seconds of one run's scoring, all its queries together


#: What an evaluation did: the driver's tally.
Summary = Tally


def evaluate(
    source: str | os.PathLike[str],
    specs: Sequence[AgentSpec],
    out: str | os.PathLike[str],
    *,
    settings: Settings = Settings(),
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    threads: bool = False,
    on_record: Callable[[RunRecord], None] | None = None,
    executor: str | None = None,
    address: str | None = None,
    sign_key: str | os.PathLike[str] | None = None,
    max_provider_failures: int | None = None,
    limit: int | None = None,
) -> Summary:
    """Play every instance of ``source`` (a bundle or an instance file) with every agent of ``specs`` into ``out``.

    ``progress(done, total)`` is called as runs finish (``done`` counts the runs skipped as already final), and
    ``on_record(record)`` with each record written. ``threads``: with ``jobs > 1``, play in threads rather than
    worker processes (for agents that mostly wait on I/O, such as a model endpoint). ``executor`` names another
    executor (:data:`gf01_formal.campaign.executors.KINDS`; ``dask`` with the scheduler's ``address``).
    ``sign_key``: the evaluator's Ed25519 private key file; each record is signed with it (runs/signing.py).
    ``max_provider_failures``: stop after that many runs in a row ended ``provider_error`` (:func:`drive`).
    ``limit``: play only the first ``limit`` instances, in the bundle's order (a smoke test; the runs are the same
    runs a whole evaluation plays, so a later one without the limit skips them).

    >>> from gf01_formal.campaign.evaluate import evaluate
    >>> evaluate("bundle.json", [AgentSpec("random", "EVAL-CB")], "runs.jsonl").played
    3
    """
    signer = None
    if sign_key is not None:  # read before anything is played: a bad key file stops the command at once
        from gf01_formal.runs.signing import load_signer

        signer = load_signer(sign_key)
    loaded = load_set(source)
    instances = loaded.instances if limit is None else loaded.instances[:limit]
    # Every instance played is checked before the first run: a bad one found after runs were written would leave a
    # runs file that a fixed bundle cannot resume (its hash changes). The checked Problems stay in the one cache.
    for inst in instances:
        loaded.problem(inst)
    plan = Plan(instances=instances, specs=list(specs), seed=settings.seed, bundle_hash=loaded.bundle_hash,
                subset_min=settings.subset_min, diagnostic_seconds=settings.diagnostic_seconds, file=str(source),
                gold_set=settings.gold_set, memory=settings.memory, scoring_seconds=settings.scoring_seconds)
    kind = executor or ("threads" if threads else "local")
    with RunsFile(out, signer=signer) as store:
        store.check_gold_set(settings.gold_set)
        return drive(plan, store, executor=kind, jobs=jobs, address=address, batch=1, progress=progress,
                     on_record=on_record, max_provider_failures=max_provider_failures)
