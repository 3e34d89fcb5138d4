"""One test suite for agents, run against every agent the registry builds by tests/test_agent_suites.py, in the manner
of tests/backend_common.py: what the harness asks of any agent, whatever its policy.

An agent subclasses the base class (its hooks have defaults there), plays every episode to its end without a fault,
names only inputs of the goal with the values 0 and 1, is deterministic for its seed, and records the access its
track grants, no more.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from gf01_formal import agents
from gf01_formal.agents.base import ACCESS_OF_TRACK, Access, Agent, AgentSpec
from gf01_formal.instances.io import load_set
from gf01_formal.runs.runner import play_run
from gf01_formal.scoring.scores import Scorer

ROOT = Path(__file__).resolve().parent.parent
# -S: the example imports only the standard library; site's work (the editable install's finder, .pth files) is about
# half of a bare interpreter's start-up, 0.045 of 0.1 s of CPU per agent process (docs/performance.md, eighth pass).
EXAMPLE = shlex.join([sys.executable, "-S", str(ROOT / "examples" / "agent_example.py")])


def play(spec: AgentSpec, bundle: Path, seed: int = 0) -> list[Any]:
    """The records of ``spec`` on the first three instances of ``bundle``."""
    loaded = load_set(bundle)
    out = []
    for inst in loaded.instances[:3]:
        problem = loaded.problem(inst)
        out.append(play_run(inst, problem, spec, seed=seed, scorer=Scorer(problem)).record)
    return out


class Common:
    """The agents' tests, on the ``spec`` fixture of the module that runs them (one agent spec per param)."""

    def test_is_an_agent_of_the_base_class(self, spec: AgentSpec, small_bundle: Path) -> None:
        built: list[Agent] = []

        def build(spec: AgentSpec, access: Access) -> Agent:
            built.append(agents.build(spec, access))
            return built[-1]

        loaded = load_set(small_bundle)
        inst = loaded.instances[0]
        play_run(inst, loaded.problem(inst), spec, seed=0, scorer=Scorer(loaded.problem(inst)), build=build)
        assert built and isinstance(built[0], Agent)

    def test_plays_every_episode_to_its_end_without_a_fault(self, spec: AgentSpec, small_bundle: Path) -> None:
        for rec in play(spec, small_bundle):
            assert rec.status == "completed" and rec.agent_errors == 0, rec.error
            assert rec.steps and rec.steps[-1].t == len(rec.steps) - 1  # one entry per step, in order
            assert rec.steps[-1].commit or rec.steps[-1].t >= rec.t_star  # ended by a commit, or played past t*
            assert all(r.reason not in ("unknown_input", "bad_value", "bad_action")
                       for s in rec.steps for r in s.refused)

    def test_is_deterministic_for_its_seed(self, spec: AgentSpec, small_bundle: Path) -> None:
        one, two = play(spec, small_bundle, seed=3), play(spec, small_bundle, seed=3)
        assert [r.to_json() | {"timing": None, "agent_meta": None} for r in one] == \
            [r.to_json() | {"timing": None, "agent_meta": None} for r in two]

    def test_records_the_access_of_its_track_no_more(self, spec: AgentSpec, small_bundle: Path) -> None:
        for rec in play(spec, small_bundle):
            assert rec.agent_access == ACCESS_OF_TRACK[rec.eval_track]
            assert bool(rec.tool_log_hash) == (rec.eval_track != "EVAL-CB")
