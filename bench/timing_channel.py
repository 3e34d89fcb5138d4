"""Timing side channel of the agent protocol: does the time an agent waits for its observation depend on hidden data?

One command: ``python bench/timing_channel.py [--instances N] [--variants K]``. A real program in the real bubblewrap
sandbox (``gf01 evaluate --agent-cmd``, as an evaluation runs it) plays every instance of a generated bundle K times (K
agent commands, so K runs per instance). At each step it plays the action its plan names (in even runs the instance's
oracle certificate, in odd runs a random atom at about half of the steps: the plan is a file its command names, so that
the classes below have hundreds of members each) and measures, with ``perf_counter_ns`` inside the sandbox, the time
from writing its action to reading the observation that answers it; it appends ``instance t input value ns`` to its
``--agent-output`` (``- -1`` for a step without an edit). An edited step's latency is taken relative to the median of
its run's steps without an edit (the load of a shared machine drifts between runs, and the labels differ between runs).
Afterwards each edited step is labelled with what the agent cannot see:

- ``noop``: the atom sets the value the base trace has anyway (tau is hidden, DEC-005);
- ``oracle``: the atom is in the instance's oracle certificate (a member of M(I));
- ``needed``: removing the atom from the run's final certificate changes whether the effect is achieved (its outcome at
  t*, which lies in the future when the atom is played).

For each label it prints the two classes' sizes, median relative latencies and the AUC of latency as a predictor of the
label (0.5: none; the Mann-Whitney U over n1 * n2, with its standard error under no difference). A leak is an AUC whose
distance from 0.5 is many standard errors, repeatably. The machine is shared, so latencies are inflated and noisy; the
figures go to docs/agent-protocol.md ("Timing").

``--remote RUNS``: the remote server's lines instead (:func:`remote`), label ``noop`` only; figures in docs/remote.md.

``--browser EPISODES``: the browser's API instead (:func:`browser`), label ``noop`` only (the others need the agent's
certificate, which a random player's refused atoms make moot); figures in docs/browser.md ("Security").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gf01_formal.instances.generator import GenConfig, generate  # noqa: E402
from gf01_formal.instances.io import instance_problem, load_bundle, save_artifact  # noqa: E402
from gf01_formal.play.episode import Episode  # noqa: E402

CFG = {"families": [{"kind": "random_mealy", "states": [4, 8], "inputs": [3, 3]}], "horizon": [12, 20]}

AGENT = r'''
import json, os, sys, time
plans = json.load(open(sys.argv[1]))
variant = sys.argv[2]
out = os.fdopen(int(os.environ["GF01_OUTPUT_FD"]), "w")
plan, iid, sent, last = {}, None, None, None
for line in sys.stdin:
    now = time.perf_counter_ns()
    m = json.loads(line)
    if m["type"] == "start":
        iid = m["instance_id"]
        plan = plans[iid][variant]
        t = 0
    elif m["type"] == "observation":
        if last is not None:
            out.write(f"{iid} {last[0]} {last[1]} {last[2]} {now - sent}\n")
            last = None
        if m["done"]:
            continue
        t = m["t"] + 1
    else:
        break
    atom = plan.get(str(t))
    action = {"t": t, "set": {atom[0]: atom[1]} if atom else {}}
    text = json.dumps(action) + "\n"
    sent = time.perf_counter_ns()
    sys.stdout.write(text)
    sys.stdout.flush()
    last = (t, atom[0], atom[1]) if atom else (t, "-", -1)
out.flush()
'''


def plans_for(bundle: Path, variants: int) -> dict[str, dict[str, dict[str, list]]]:
    """Per instance and variant, the atom to play at each step (or none): the oracle's atoms in even variants,
    random atoms at about half of the steps in odd ones (a seeded generator per instance and variant)."""
    out: dict[str, dict[str, dict[str, list]]] = {}
    for inst in load_bundle(bundle).instances:
        problem = instance_problem(inst)
        names = problem.system.inputs
        oracle = {t: (a, v) for t, a, v in (inst.certification.oracle_certificate or [])}
        out[inst.instance_id] = {}
        for k in range(variants):
            rng = random.Random(int(hashlib.sha256(f"{inst.instance_id}/{k}".encode()).hexdigest()[:16], 16))
            plan: dict[str, list] = {}
            for t in range(problem.horizon):
                if k % 2 == 0:  # the oracle's certificate alone (within B_T: every atom is committed)
                    if t in oracle:
                        plan[str(t)] = list(oracle[t])
                elif rng.random() < 0.5:
                    plan[str(t)] = [rng.choice(names), rng.randint(0, 1)]
            out[inst.instance_id][str(k)] = plan
    return out


def achieved(problem, atoms: dict[int, dict[str, int]]) -> bool:
    ep = Episode(problem)
    ep.reset()
    obs = None
    for t in range(problem.horizon):
        obs = ep.step(atoms.get(t, {}))
    return bool(obs and obs.effect_status.achieved)


def auc(pos: list[float], neg: list[float]) -> tuple[float, float]:
    """P(latency of a positive > latency of a negative) (ties count half), and its standard error under H0."""
    allv = sorted([(v, 1) for v in pos] + [(v, 0) for v in neg])
    i = 0
    rank_sum = 0.0
    while i < len(allv):
        j = i
        while j < len(allv) and allv[j][0] == allv[i][0]:
            j += 1
        r = (i + j + 1) / 2
        rank_sum += r * sum(1 for k in range(i, j) if allv[k][1] == 1)
        i = j
    n1, n0 = len(pos), len(neg)
    u = rank_sum - n1 * (n1 + 1) / 2
    se = math.sqrt((n1 + n0 + 1) / (12 * n1 * n0))
    return u / (n1 * n0), se


def browser(bundle: Path, work: Path, seed: int, episodes: int) -> None:
    """The browser's API: a real ``gf01 serve`` in free play, recording (each step journaled and fsync'd); the time
    of each ``POST /api/episodes/{token}/steps`` as its client sees it, for a random atom that sets the value the
    base trace already has (``noop``) or flips it. Every step but an episode's last (which also scores) counts."""
    import re

    import httpx

    insts = load_bundle(bundle).instances
    proc = subprocess.Popen([sys.executable, "-m", "gf01_formal", "serve", "--bundle", str(bundle), "--port", "0",
                             "--runs-out", str(work / f"web-{seed}.jsonl")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    found = re.search(r"http://\S+?/(?=\s|$)", proc.stdout.readline())
    assert found is not None
    rng = random.Random(seed)
    samples: list[tuple[float, dict[str, bool]]] = []
    try:
        with httpx.Client(base_url=found.group(0)) as client:
            for k in range(episodes):
                inst = insts[k % len(insts)]
                problem = instance_problem(inst)
                names = problem.system.inputs
                token = client.post("/api/episodes", json={"instance_id": inst.instance_id}).json()["token"]
                for t in range(problem.horizon):
                    name, value = rng.choice(names), rng.randint(0, 1)
                    start = time.perf_counter_ns()
                    r = client.post(f"/api/episodes/{token}/steps",
                                    json={"action": {"t": t, "set": {name: value}, "commit": False}, "response_ms": 1})
                    ns = time.perf_counter_ns() - start
                    assert r.status_code == 200, r.text
                    if t < problem.horizon - 1:
                        noop = (problem.trace[t] >> names.index(name)) & 1 == value
                        samples.append((ns / 1000, {"noop": noop}))
    finally:
        proc.terminate()
        proc.wait()
    print(f"browser: {len(samples)} steps timed over {episodes} episodes, seed {seed}")
    report(samples, ("noop",))


def remote(seed: int, runs: int) -> None:
    """The remote server (docs/remote.md): a sealed split and a real ``gf01 eval serve`` on loopback
    (bench/remote.py's), the built-in ``random`` agent playing through the library's relay; each line's round trip
    (send the action, receive the next observation) timed in the participant, labelled ``noop`` when the action's
    every atom sets the value the private instance's base trace already has (an action without an atom is left
    out). ``runs`` seeds, each playing every private instance once."""
    sys.path.insert(0, str(ROOT / "bench"))
    from remote import Server, make_split  # bench/remote.py

    from gf01_formal.agents.base import AgentSpec
    from gf01_formal.remote import client
    from gf01_formal.remote.tokens import TokenStore

    samples: list[tuple[float, dict[str, bool]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        bundle, ids = make_split(d, 30)
        token = TokenStore(d / "tokens.json").issue("timing", concurrent=4, episodes_per_day=10_000_000)
        problems = {i.instance_id: instance_problem(i) for i in load_bundle(bundle).instances}
        server = Server(d)
        timed: list[tuple[str, float]] = []

        class Timed(client.Connection):
            def post(self, path, body):  # type: ignore[no-untyped-def]
                start = time.perf_counter_ns()
                try:
                    return super().post(path, body)
                finally:
                    if "/lines" in path and isinstance(body, dict) and "line" in body:
                        timed.append((body["line"], (time.perf_counter_ns() - start) / 1000))

        try:
            conn = Timed(server.url, token, retry_seconds=300)
            for k in range(runs):
                for iid in ids:
                    timed.clear()
                    client.play_remote_run(conn, AgentSpec("random", "EVAL-CB"), seed * 1000 + k, iid)
                    problem = problems[iid]
                    names = problem.system.inputs
                    # one line a step (the random agent calls no tool); the last line's answer includes the scoring
                    for t, (line, us) in enumerate(timed[:-1]):
                        atoms = json.loads(line).get("set") or {}
                        if not atoms:
                            continue
                        noop = all((problem.trace[t] >> names.index(a)) & 1 == v for a, v in atoms.items())
                        samples.append((us, {"noop": noop}))
            conn.close()
        finally:
            server.stop()
    print(f"remote: {len(samples)} lines timed over {runs} x {len(ids)} runs, seed {seed}")
    report(samples, ("noop",))


def report(samples: list[tuple[float, dict[str, bool]]], labels: tuple[str, ...]) -> None:
    for label in labels:
        pos = [v for v, lab in samples if lab[label]]
        neg = [v for v, lab in samples if not lab[label]]
        if len(pos) < 2 or len(neg) < 2:
            print(f"{label}: too few samples ({len(pos)} / {len(neg)})")
            continue
        a, se = auc(pos, neg)
        print(f"{label:7s} yes n={len(pos):5d} median {statistics.median(pos):+8.1f} us | no n={len(neg):5d} "
              f"median {statistics.median(neg):+8.1f} us | AUC {a:.3f} +- {se:.3f} ({(a - 0.5) / se:+.1f} se)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=30)
    ap.add_argument("--variants", type=int, default=6)
    ap.add_argument("--seed", type=int, default=9)
    ap.add_argument("--browser", type=int, default=0, metavar="EPISODES",
                    help="time the browser's API instead, over this many free-play episodes (at most 200)")
    ap.add_argument("--remote", type=int, default=0, metavar="RUNS",
                    help="time the remote server's lines instead, over this many runs of each private instance")
    args = ap.parse_args()
    if args.remote:
        remote(args.seed, args.remote)
        return
    work = Path(tempfile.mkdtemp(prefix="gf01-timing-"))
    work.chmod(0o755)
    bundle = work / "bundle.json"
    save_artifact(bundle, generate(args.seed, args.instances, GenConfig.model_validate(CFG)))
    if args.browser:
        browser(bundle, work, args.seed, args.browser)
        return
    pkg = work / "pkg"
    pkg.mkdir(mode=0o755)
    (pkg / "agent.py").write_text(AGENT)
    (pkg / "plans.json").write_text(json.dumps(plans_for(bundle, args.variants)))
    for p in pkg.iterdir():
        p.chmod(0o644)
    out = work / "latencies.txt"
    wall = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for k in range(args.variants):  # one evaluation per variant (one --agent-cmd each), into one runs file
        subprocess.run([sys.executable, "-m", "gf01_formal", "evaluate", str(bundle), "-o", str(work / "runs.jsonl"),
                        "--agent-output", str(out), "--jobs", "1", "--agent-cmd",
                        f"{sys.executable} {pkg / 'agent.py'} {pkg / 'plans.json'} {k}"], check=True,
                       capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter() - wall
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    insts = {i.instance_id: i for i in load_bundle(bundle).instances}
    problems = {iid: instance_problem(i) for iid, i in insts.items()}
    rows = [line.split() for line in out.read_text().splitlines()]
    by_run: dict[tuple[str, int], list[tuple[int, str, int, int]]] = {}
    # rows come run by run (one episode after another); a new run starts where t does not grow
    run = 0
    prev: tuple[str, int] | None = None
    for iid, t, name, value, ns in rows:
        if prev is not None and (prev[0] != iid or int(t) <= prev[1]):
            run += 1
        prev = (iid, int(t))
        by_run.setdefault((iid, run), []).append((int(t), name, int(value), int(ns)))
    samples: list[tuple[float, dict[str, bool]]] = []
    for (iid, _), steps in by_run.items():
        problem, inst = problems[iid], insts[iid]
        names = problem.system.inputs
        oracle = {(t, a, v) for t, a, v in (inst.certification.oracle_certificate or [])}
        budget = problem.horizon if problem.budget_t is None else problem.budget_t
        played = [s for s in steps if s[1] != "-"]
        kept = {}
        used: set[int] = set()
        for t, name, value, _ in played:  # what the engine committed: the first B_T steps with edits
            if t in used or len(used) < budget:
                used.add(t)
                kept.setdefault(t, {})[name] = value
        full = achieved(problem, kept)
        # the run's own reference: the median latency of its steps without an edit (the machine's load drifts from
        # one run to the next; the labels below differ between runs, so raw latencies would compare the load)
        ref = statistics.median([ns for _, name, _, ns in steps if name == "-"] or [0])
        for t, name, value, ns in played:
            if t not in kept or name not in kept[t]:
                continue
            base = (problem.trace[t] >> names.index(name)) & 1
            without = {k: dict(v) for k, v in kept.items()}
            del without[t][name]
            samples.append(((ns - ref) / 1000, {"noop": base == value, "oracle": (t, name, value) in oracle,
                                        "needed": achieved(problem, without) != full}))
    print(f"{len(rows)} steps measured, {len(samples)} committed; {args.instances} instances x "
          f"{args.variants} runs, seed {args.seed}; wall {wall:.1f} s, CPU of the evaluation {cpu:.1f} s "
          f"(machine shared with other work)")
    report(samples, ("noop", "oracle", "needed"))


if __name__ == "__main__":
    main()
