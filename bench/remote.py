"""Remote evaluation benchmark (issue 32's targets; docs/performance.md, "Remote evaluation").

One command: ``python bench/remote.py`` (``--agents 1,10,50``: concurrent participants, each count a round;
``--think 0,0.2,1``: seconds each participant's agent takes per step, each value a round with each count;
``--count N``: generator slots, default 30; ``--instances N``: the private instances each participant plays, default
all; ``--no-kill``: skip the kill -9 round). A sealed split is made in a temporary directory (generation is not
timed), a real ``gf01 eval serve`` runs on loopback, and participants are real processes of this checkout playing
through the wire (the library's relay, :func:`gf01_formal.remote.client.play_remote_run`, with the built-in
``random`` agent, whose moves cost nothing: what is measured is the transport and the server). One participant
first plays every instance once (not measured), so that every instance's scorer is built, as on a server that has
run a while.

1. Per-step overhead: the round trip of each line (send the action, receive the next observation) measured in the
   participant, p50 and p90, minus the same step played locally (the agent and the episode engine in one process:
   ``Episode.step``). Target: p50 within 20 ms of local. The think time is not in the round trip: it is spent
   before the line is sent.
2. The server's CPU per line: user+sys of the server process (``/proc/PID/stat``) over the round, divided by its
   lines, every run's open, scoring, signing and recording included. It holds on a loaded machine, where the walls
   and round trips do not.
3. Every run recorded once, no error: the runs file's run ids are unique, every status completed.
4. kill -9 of the server mid-campaign: 10 participants with a slow agent (0.05 s a step), the server killed when a
   third of the runs are recorded and started again on the same port; the participants replay the episodes they were
   in. Checked: every run recorded once, none lost.

Printed: wall, the server's CPU a line, CPU of the whole bench (user+sys of the server and the participants, from
getrusage) and the server's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SMALL = {"families": [{"kind": "random_mealy", "states": [4, 6], "inputs": [2, 3]}], "horizon": [8, 12]}
SPLIT_KEY = "b5aaad9b5f47a063fca3b83cc36fe3f51403eefc09d86ad493fce599a23c9ee8\n"


def gf01(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "gf01_formal", *args], check=True, capture_output=True, text=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})


def make_split(d: Path, count: int) -> tuple[Path, list[str]]:
    (d / "split.key").write_text(SPLIT_KEY)
    os.chmod(d / "split.key", 0o600)
    gf01("key", "new", "--kind", "signing", "-o", str(d / "sign.key"))
    (d / "cfg.json").write_text(json.dumps(SMALL))
    gf01("generate", "--seed", "11", "--count", str(count), "--cfg", str(d / "cfg.json"), "--key-file",
         str(d / "split.key"), "-o", str(d / "all.json"))
    gf01("split", str(d / "all.json"), "-o", str(d / "splits.json"), "--manifest", str(d / "manifest.json"),
         "--key-file", str(d / "split.key"))
    manifest = json.loads((d / "manifest.json").read_text())
    private = [e["instance_id"] for e in manifest["instances"] if e["split_id"] == "private_eval"]
    gf01("bundle", "subset", str(d / "splits.json"), "--ids", ",".join(private), "-o", str(d / "private.json"))
    return d / "private.json", private


class Server:
    def __init__(self, d: Path, port: int = 0) -> None:
        args = [sys.executable, "-m", "gf01_formal", "eval", "serve", "--bundle", str(d / "private.json"),
                "--manifest", str(d / "manifest.json"), "--runs-out", str(d / "runs.jsonl"), "--tokens",
                str(d / "tokens.json"), "--sign-key", str(d / "sign.key"), "--port", str(port),
                "--step-timeout", "300"]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = re.search(r"http://\S+?/(?=\s|$)", line)
        assert found, line
        self.url = found.group(0).rstrip("/")
        self.port = int(self.url.rsplit(":", 1)[1])

    def cpu(self) -> float:
        """User+sys seconds the server process has spent so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, sig: int = signal.SIGINT) -> None:
        self.proc.send_signal(sig)
        self.proc.wait(60)


def participant(job: tuple[str, str, list[str], int, float]) -> dict:
    """One participant process: plays its instances one after another; returns the line round trips (ms)."""
    url, token, ids, seed, delay = job
    from gf01_formal.agents.base import AgentSpec
    from gf01_formal.remote import client

    rtts: list[float] = []

    class Timed(client.Connection):
        def post(self, path, body):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return super().post(path, body)
            finally:
                if "/lines" in path:
                    rtts.append((time.perf_counter() - start) * 1000)

    if delay:
        original = client._play_object

        def slow(channel, messages, agent):  # type: ignore[no-untyped-def]
            act = agent.act
            agent.act = lambda obs: (time.sleep(delay), act(obs))[1]
            return original(channel, messages, agent)

        client._play_object = slow
    conn = Timed(url, token, retry_seconds=300)
    receipts, errors = [], []
    for iid in ids:
        out = client.play_remote_run(conn, AgentSpec("random", "EVAL-CB"), seed, iid)
        (receipts if out.receipt else errors).append(out.receipt or out.error)
    conn.close()
    return {"rtts": rtts, "receipts": receipts, "errors": errors}


def local_step_ms(bundle: Path) -> list[float]:
    """The local step: the random agent's act and the engine's step, in one process."""
    from gf01_formal.agents import build
    from gf01_formal.agents.base import Access, AgentSpec
    from gf01_formal.instances.io import load_set
    from gf01_formal.play.episode import Episode
    from gf01_formal.play.protocol import Start
    from gf01_formal.runs.runner import episode_seed

    loaded = load_set(bundle)
    out = []
    for inst in loaded.instances:
        agent = build(AgentSpec("random", "EVAL-CB"), Access(seed=episode_seed(inst.instance_id, 0)))
        ep = Episode(loaded.problem(inst), inst.instance_id)
        agent.start(Start(instance_id=inst.instance_id, goal=ep.reset()))
        obs = None
        while not ep.done:
            start = time.perf_counter()
            action = agent.act(obs)
            obs = ep.step(action.set, commit=action.commit, at=action.t)
            out.append((time.perf_counter() - start) * 1000)
    return out


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def campaign(url: str, token: str, ids: list[str], agents: int, seeds: range, delay: float = 0.0) -> tuple[dict, float]:
    jobs = [(url, token, ids, seed, delay) for seed in seeds][:agents]
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
        results = pool.map(participant, jobs)
    wall = time.perf_counter() - start
    merged = {"rtts": [x for r in results for x in r["rtts"]], "receipts": [x for r in results for x in r["receipts"]],
              "errors": [x for r in results for x in r["errors"]]}
    return merged, wall


def check_runs(runs: Path) -> tuple[int, int, dict]:
    lines = [json.loads(x) for x in runs.read_text().splitlines()]
    statuses: dict[str, int] = {}
    for r in lines:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return len(lines), len({r["run_id"] for r in lines}), statuses


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", default="1,10,50", help="participants at once, one round each (comma-separated)")
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--instances", type=int, default=0, help="instances each participant plays (0: every one)")
    ap.add_argument("--think", default="0", help="seconds each participant's agent takes per step, one round each "
                    "(comma-separated; 0: none, the transport alone; a model takes seconds)")
    ap.add_argument("--no-kill", action="store_true", help="skip the kill -9 round")
    opts = ap.parse_args()
    counts = [int(x) for x in opts.agents.split(",")]
    thinks = [float(x) for x in opts.think.split(",")]
    print(f"python {platform_line()}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        bundle, ids = make_split(d, opts.count)
        from gf01_formal.remote.tokens import TokenStore

        token = TokenStore(d / "tokens.json").issue("bench", concurrent=max(counts) + 10,
                                                    episodes_per_day=10_000_000)
        local = local_step_ms(bundle)
        print(f"{len(ids)} private instances; local step (act + Episode.step): p50 {pct(local, 50):.3f} ms, "
              f"p90 {pct(local, 90):.3f} ms")
        server = Server(d)
        campaign(server.url, token, ids, 1, range(999_999, 1_000_000))  # every scorer built: not measured
        played = ids[:opts.instances] if opts.instances else ids
        seed = 0
        for think in thinks:
            for agents in counts:
                before = server.cpu()
                res, wall = campaign(server.url, token, played, agents, range(seed, seed + agents), delay=think)
                seed += agents
                cpu = server.cpu() - before
                lines = len(res["rtts"])
                print(f"{agents:>3} participants, think {think:g} s a step: {len(res['receipts'])} runs, "
                      f"{len(res['errors'])} errors, wall {wall:.1f} s, load {os.getloadavg()[0]:.1f}; line round "
                      f"trip p50 {pct(res['rtts'], 50):.2f} ms, p90 {pct(res['rtts'], 90):.2f} ms ({lines} lines); "
                      f"overhead vs local p50 {pct(res['rtts'], 50) - pct(local, 50):.2f} ms, "
                      f"p90 {pct(res['rtts'], 90) - pct(local, 90):.2f} ms; server CPU {cpu:.2f} s, "
                      f"{1000 * cpu / max(lines, 1):.2f} ms a line", flush=True)
        server.stop()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        n, unique, statuses = check_runs(d / "runs.jsonl")
        cpu = usage.ru_utime + usage.ru_stime
        print(f"records {n}, unique run ids {unique}, statuses {statuses}; server + participants CPU {cpu:.1f} s, "
              f"peak RSS of the largest child {usage.ru_maxrss / 1024:.0f} MiB")
        if opts.no_kill:
            return
        # kill -9 of the server mid-campaign
        (d / "runs.jsonl").rename(d / "runs-before.jsonl")
        server = Server(d)
        port = server.port
        killer_done = {}

        def kill_when(third: int) -> None:
            runs = d / "runs.jsonl"
            while not runs.exists() or len(runs.read_text().splitlines()) < third:
                time.sleep(0.05)
            server.proc.kill()
            server.proc.wait()
            killer_done["at"] = len(runs.read_text().splitlines())
            killer_done["server"] = Server(d, port)

        import threading

        total = 10 * len(ids)
        t = threading.Thread(target=kill_when, args=(total // 3,), daemon=True)
        t.start()
        res, wall = campaign(server.url, token, ids, 10, range(5000, 5010), delay=0.05)
        t.join()
        killer_done["server"].stop()
        n, unique, statuses = check_runs(d / "runs.jsonl")
        print(f"kill -9 at {killer_done['at']} of {total} runs recorded: after the restart {n} records, "
              f"{unique} unique run ids, statuses {statuses}, {len(res['errors'])} errors, wall {wall:.1f} s")


def platform_line() -> str:
    import platform

    return f"{platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores"


if __name__ == "__main__":
    main()
