"""Play benchmark: episodes per second of each baseline, and the full panel with exact scoring against the peer.

One command: ``python bench/play.py`` (``--quick``: fewer instances). Bundles are generated from a fixed seed (the
generation is not timed): random structured Mealy machines (random_mealy).

1. Episodes per second of each baseline of the registry at T = 16 and T = 64 (3 inputs, 4-8 states), one process:
   ``play`` is the episode alone (the agent and the engine), ``scored`` adds the exact scoring (Suff, Min1, Valid
   and the best match against M_B(I), the gold set built once per instance and shared by the panel).
2. The full panel (DEC-056: random, greedy, search, tool, oracle; whichever the registry has) with exact scoring on
   100 instances of the peer's default sizes (T 6-12, 3 inputs, 3-6 states, 2 outputs), ``gf01 evaluate --jobs 2``
   as a user runs it (a whole process, imports included), against the peer's 834 s for the same work
   (target: at least 50x, i.e. under 17 s on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gf01_formal.agents import BUILTIN  # noqa: E402
from gf01_formal.agents.base import AgentSpec  # noqa: E402
from gf01_formal.instances.generator import GenConfig, generate  # noqa: E402
from gf01_formal.instances.io import instance_problem, save_artifact  # noqa: E402
from gf01_formal.runs.runner import play_run  # noqa: E402
from gf01_formal.scoring.scores import Scorer  # noqa: E402

PANEL = ("random", "greedy", "search", "tool", "oracle")
PEER_SECONDS = 834.0
PEER_SIZES = {"families": [{"kind": "random_mealy", "states": [3, 6], "inputs": [3, 3], "outputs": [2, 2]}],
              "horizon": [6, 12]}


def bundle_at(horizon: int, count: int, seed: int) -> list:
    """Certified instances of T = ``horizon``, 3 inputs, 4-8 states."""
    cfg = GenConfig.model_validate({"families": [{"kind": "random_mealy", "states": [4, 8], "inputs": [3, 3]}],
                                    "horizon": [horizon, horizon], "targets": {"max_greedy_fraction": None}})
    return list(generate(seed, count, cfg, jobs=2).instances)


def episodes_per_second(instances: list, name: str) -> tuple[float, float]:
    """(episodes/s without scoring, episodes/s with exact scoring) of one agent, in this process."""
    spec = AgentSpec(name, BUILTIN[name].track)
    problems = [(inst, instance_problem(inst)) for inst in instances]
    scorers = [Scorer(p) for _, p in problems]
    for s in scorers:  # the gold sets are built once per instance, outside the timed region (shared by the panel)
        s.gold_set()

    start = time.perf_counter()
    for inst, p in problems:
        _play_only(inst, p, spec)
    play = time.perf_counter() - start
    start = time.perf_counter()
    for (inst, p), s in zip(problems, scorers, strict=True):
        play_run(inst, p, spec, seed=0, scorer=s)
    scored = time.perf_counter() - start
    return len(problems) / play, len(problems) / scored


def _play_only(inst, problem, spec) -> None:
    """One episode without scoring: the agent and the engine only."""
    from gf01_formal.agents import build
    from gf01_formal.agents.base import Access
    from gf01_formal.agents.planner import Planner
    from gf01_formal.play.episode import Episode
    from gf01_formal.play.protocol import Start
    from gf01_formal.runs.runner import episode_seed

    access = Access(seed=episode_seed(inst.instance_id, 0),
                    planner=Planner(problem) if spec.track == "EVAL-TA" else None,
                    problem=problem if spec.track == "EVAL-OC" else None)
    agent = build(spec, access)
    ep = Episode(problem, inst.instance_id)
    agent.start(Start(instance_id=inst.instance_id, goal=ep.reset()))
    obs = None
    while not ep.done:
        action = agent.act(obs)
        obs = ep.step(action.set, commit=action.commit, at=action.t)
    agent.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer instances")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    panel = [n for n in PANEL if n in BUILTIN]
    print(f"# Play benchmark (seed {args.seed}; python {platform.python_version()}; panel {', '.join(panel)})\n")
    print("## Episodes per second, one process\n")
    print("| T | agent | instances | play ep/s | play + exact scoring ep/s |")
    print("|---:|---|---:|---:|---:|")
    count = 10 if args.quick else 30
    for horizon in (16, 64):
        instances = bundle_at(horizon, count, args.seed)
        for name in panel:
            play, scored = episodes_per_second(instances, name)
            print(f"| {horizon} | {name} | {len(instances)} | {play:.0f} | {scored:.1f} |")
    n = 30 if args.quick else 100
    print(f"\n## Full panel on {n} instances of the peer's default sizes (gf01 evaluate --jobs 2, whole process)\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bundle.json"
        bundle = generate(args.seed, n, GenConfig.model_validate(PEER_SIZES), jobs=2)
        save_artifact(path, bundle)
        cmd = [sys.executable, "-m", "gf01_formal", "evaluate", str(path), "-o", str(Path(tmp) / "runs.jsonl"),
               "--jobs", "2", "--json", *[a for name in panel for a in ("--agent", name)]]
        start = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT),
                                                                                   "PATH": "/usr/bin:/bin"})
        seconds = time.perf_counter() - start
    summary = json.loads(out.stdout)
    runs = summary["played"]
    per_instance_peer = PEER_SECONDS / 100
    peer = per_instance_peer * len(bundle.instances) * len(panel) / 5
    print("| instances | agents | runs | seconds | runs/s | peer (scaled) | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {len(bundle.instances)} | {len(panel)} | {runs} | {seconds:.2f} | {runs / seconds:.1f} | {peer:.0f} s "
          f"| {peer / seconds:.0f}x |")
    print("\nScore_C per agent: " + ", ".join(f"{a} {v['certified']}/{v['runs']}"
                                             for a, v in summary["score_c"].items()))


if __name__ == "__main__":
    main()
