"""gf01 campaign: the same final artifacts from a campaign played in process, from a real dask.distributed cluster
(two worker processes on loopback), from a campaign whose Dask or local pool's worker is killed midway, and from a
driver on the local pool stopped by Ctrl-C and by SIGKILL and run again. Artifacts: report.json|md|html,
analysis.json, the knob plots, validation.json, campaign.json, and the runs sorted by run id with ``timing`` (the
machine-dependent field) removed.

The campaigns play a subset of the core panel (random, oracle) to keep the suite fast; the campaign names what it
leaves out (greedy)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from bundles import CAMPAIGN
from pages import drawn_once
from waits import CEILING

from gf01_formal.campaign.run import run_campaign
from gf01_formal.cli import main

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ["random", "oracle"]


@pytest.fixture(scope="module", autouse=True)
def pages() -> Iterator[dict[str, int]]:
    """The report's HTML page and the knob plots drawn once in this module's process (tests/pages.py): the
    campaigns played here (the reference, the Dask and the local pool's) make the same report, and their artifacts are
    compared byte for byte; the driver stopped and run again draws its own in its process, so the drawings are still
    compared across processes."""
    with drawn_once() as counts:
        yield counts


@pytest.fixture(scope="module")
def bundle(generated_bundle: Callable[..., Path]) -> Path:
    return generated_bundle(31, 12, CAMPAIGN)


@pytest.fixture(scope="module")
def reference(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The uninterrupted campaign, played in this process (one job: no pool). Every other campaign here plays on
    another executor - the local pool of 2 worker processes (a worker killed; the driver stopped, killed and run
    again) or the Dask cluster - and must give its artifacts: the executors agree with each other and with the
    plain in-process play (a pool's two worker interpreters less to start for the reference)."""
    out = tmp_path_factory.mktemp("reference") / "camp"
    summary = run_campaign(bundle, out, panel="core", agents=AGENTS, jobs=1, batch=1)
    assert summary.missing_from_panel == ["greedy"] and summary.violations == 0
    return out


def artifacts(directory: Path) -> dict[str, bytes]:
    """The final artifacts, byte for byte (the runs sorted by run id, timing removed; side files by name)."""
    out = {name: (directory / name).read_bytes() for name in ("campaign.json", "validation.json", "report.json",
                                                              "report.md", "report.html", "analysis.json")}
    out.update({f"plots/{p.name}": p.read_bytes() for p in sorted((directory / "plots").iterdir())})
    rows = [json.loads(line) for line in (directory / "runs.jsonl").read_text().splitlines()]
    out["runs"] = json.dumps(sorted(({k: v for k, v in r.items() if k != "timing"} for r in rows),
                                    key=lambda r: r["run_id"]), sort_keys=True).encode()
    side = directory / "runs.jsonl.d"
    out["side"] = "\n".join(sorted(str(p.relative_to(side)) for p in side.rglob("*") if p.is_file())).encode()
    return out


def lines(path: Path) -> int:
    return len(path.read_bytes().split(b"\n")) - 1 if path.exists() else 0


def test_dask_cluster_gives_the_local_artifacts_even_when_a_worker_dies(bundle: Path, reference: Path,
                                                                        tmp_path: Path) -> None:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        address = "dask://" + cluster.scheduler_address.removeprefix("tcp://")
        # One campaign on the cluster, a worker killed in it: its artifacts equal the local pool's, so they say both
        # that the Dask executor gives the local artifacts and that a death midway changes nothing (a campaign on
        # the cluster without the kill, run first before, asked the first half again).
        pids = client.run(os.getpid)  # worker address -> pid
        killed: list[tuple[int, int]] = []

        def kill_a_busy_worker(done: int, total: int) -> None:
            if done == 0 or killed:
                return
            busy = [w for w, keys in client.processing().items() if keys and w in pids]
            if busy:
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append((done, total))

        run_campaign(bundle, tmp_path / "killed", panel="core", agents=AGENTS, executor=address, batch=1,
                     progress=kill_a_busy_worker)
        assert killed and killed[0][0] < killed[0][1]  # a worker died midway, with a task in hand
        assert set(client.run(os.getpid).values()) != set(pids.values())  # its nanny started another
    assert artifacts(tmp_path / "killed") == artifacts(reference)


def test_local_worker_killed_midway_is_replaced(bundle: Path, reference: Path, tmp_path: Path) -> None:
    pools: list[list[int]] = []
    killed: list[int] = []

    def kill_one(done: int, total: int) -> None:
        if done and not killed and done < total:
            os.kill(pools[0][0], signal.SIGKILL)
            killed.append(done)
            time.sleep(1.0)  # the pool notices: the driver's next submission meets a broken pool

    run_campaign(bundle, tmp_path / "camp", panel="core", agents=AGENTS, jobs=2, batch=1, progress=kill_one,
                 on_pool=pools.append)
    assert killed and len(pools) >= 2  # the broken pool was replaced and its unfinished tasks played again
    assert artifacts(tmp_path / "camp") == artifacts(reference)


def test_driver_interrupted_then_killed_resumes_to_the_same_artifacts(bundle: Path, reference: Path,
                                                                      tmp_path: Path) -> None:
    out = tmp_path / "camp"
    runs = out / "runs.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "gf01_formal", "campaign", str(bundle), "--panel", "core", "--agents",
            "random,oracle", "--jobs", "2", "--batch", "1", "-o", str(out)]
    total = 2 * len(json.loads(bundle.read_text())["instances"])

    def start_and_wait_for(more_than: int) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 90
        while lines(runs) <= more_than and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.005)
        return proc

    proc = start_and_wait_for(0)
    proc.send_signal(signal.SIGINT)  # Ctrl-C: exit 130, workers gone, records intact
    proc.wait(timeout=CEILING)
    assert proc.returncode == 130
    assert b"interrupted" in proc.stderr.read()
    after_ctrl_c = lines(runs)
    assert 0 < after_ctrl_c < total, (after_ctrl_c, total)

    proc = start_and_wait_for(after_ctrl_c)
    proc.send_signal(signal.SIGKILL)  # kill -9 of the driver: its workers die with it
    proc.wait(timeout=10)
    killed_at = lines(runs)
    assert after_ctrl_c < killed_at < total and not (out / "report.json").exists(), (after_ctrl_c, killed_at, total)

    # What a kill -9 in the middle of a side-file write leaves: the rerun sweeps it away.
    (out / "runs.jsonl.d" / "tool-logs").mkdir(parents=True, exist_ok=True)
    (out / "runs.jsonl.d" / "tool-logs" / ".0123.jsonl.x1y2.tmp").write_text("{")
    done = subprocess.run([*args, "--json"], env=env, capture_output=True, timeout=180)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["played"] + summary["skipped"] == total and summary["skipped"] >= killed_at - 1, summary
    assert artifacts(out) == artifacts(reference)


def test_the_panel_is_taken_whole_or_named(bundle: Path, reference: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from gf01_formal.agents import BUILTIN

    for name in ("search", "tool"):  # an installation without two of the full panel's agents
        monkeypatch.delitem(BUILTIN, name)
    assert main(["campaign", str(bundle), "--panel", "full", "-o", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not in this installation" in err
    assert all(name in err.split("(built in")[0] for name in ("search", "tool"))
    monkeypatch.undo()
    assert main(["campaign", str(bundle), "--agents", "random,nobody", "-o", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "nobody" in err and "(built in: greedy, oracle, random, search, tool)" in err, err
    # A language model and an external program need options a campaign does not have: gf01 evaluate plays them.
    for name in ("llm", "cmd"):
        assert main(["campaign", str(bundle), "--agents", f"random,{name}", "-o", str(tmp_path / "c")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--agents: {name}: campaigns play the baseline panel's built-in agents " \
            "(greedy, oracle, random, search, tool)" in err, err
        assert "gf01 evaluate BUNDLE --agent llm --model M" in err and "--agent-cmd CMD" in err
    # A directory holding another campaign is refused rather than mixed.
    assert main(["campaign", str(bundle), "--panel", "core", "--agents", "random", "--seed", "1", "--jobs", "1",
                 "-o", str(reference)]) == 2
    assert "another campaign" in capsys.readouterr().err
    assert main(["campaign", str(bundle), "--agents", "random", "--executor", "dask://nowhere", "-o",
                 str(tmp_path / "c")]) == 2
    assert "dask://HOST:PORT" in capsys.readouterr().err
    assert main(["campaign", str(bundle), "--agents", "random", "--executor", "dask://127.0.0.1:8786", "--jobs", "2",
                 "-o", str(tmp_path / "c")]) == 2
    assert "--jobs" in capsys.readouterr().err
    assert main(["campaign", str(tmp_path / "missing.json"), "--agents", "random", "-o", str(tmp_path / "c")]) == 2
    assert "missing.json" in capsys.readouterr().err
    one = ROOT / "gf01_formal" / "examples" / "arbiter_priority.json"  # an instance, not a bundle
    assert main(["campaign", str(one), "--agents", "random", "-o", str(tmp_path / "c")]) == 2
    assert "plays a bundle" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["campaign", str(bundle), "--agents", "random", "-o", str(tmp_path / "file")]) == 2
    assert capsys.readouterr().err.startswith("gf01: error: ")
    assert not (tmp_path / "c").exists()
