"""One test suite for the executors of the orchestrator (gf01_formal.campaign.executors), run against each kind by
tests/test_executors.py, in the manner of tests/backend_common.py: a failure names its executor in the test id.

The reference is the inline executor: every other kind must hand back the same results for the same tasks (order
aside: they stream in completion order), each task's exactly once, and stop with the project's error when a task
fails with one.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from gf01_formal.agents.base import AgentSpec
from gf01_formal.campaign import executors
from gf01_formal.campaign.shards import Plan, Task, tasks
from gf01_formal.instances.io import load_bundle
from hoa.errors import Gf01Error

SPECS = [AgentSpec("random", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")]


def plan_of(bundle: Path, count: int = 4) -> Plan:
    loaded = load_bundle(bundle)
    return Plan(instances=loaded.instances[:count], specs=SPECS, seed=0, bundle_hash=loaded.instances_hash)


def records(results: list[Any]) -> list[str]:
    """The records of ``results`` as canonical JSON without timing, sorted (the executors' order may differ)."""
    return sorted(json.dumps({k: v for k, v in out.record.to_json().items() if k != "timing"}, sort_keys=True)
                  for result in results for out in result.runs)


def run(kind: str, todo: list[Task]) -> list[Any]:
    """The results of ``todo`` on the executor ``kind`` with two jobs."""
    return list(executors.run(todo, kind, jobs=2))


class Common:
    """The executors' tests, on the ``kind`` fixture of the module that runs them (one executor kind per param)."""

    def test_gives_the_inline_results(self, kind: str, small_bundle: Path) -> None:
        todo = list(tasks(plan_of(small_bundle), set(), 1))
        got = run(kind, todo)
        assert len(got) == len(todo)  # each task's result exactly once
        assert records(got) == records(list(executors.run_inline(todo)))

    def test_a_task_that_fails_stops_the_work_with_its_error(self, kind: str, small_bundle: Path) -> None:
        todo = list(tasks(plan_of(small_bundle), set(), 1))
        inst, specs = todo[1].items[0]
        broken = inst.model_copy(update={"t_star": 10**6})  # past the end of its trace
        todo[1] = dataclasses.replace(todo[1], items=((broken, specs),))
        with pytest.raises(Gf01Error, match="t\\* = 1000000 is outside"):
            run(kind, todo)

    def test_no_task_no_result(self, kind: str) -> None:
        assert run(kind, []) == []
