"""The front door of ``gf01 verify`` (gf01_formal/cli/front.py) against the typer command: the same stdout, stderr
and exit status for every form of verify, good and bad; the front door answering the plain forms itself (so that it
is not silently always handing over); and its pydantic-free reader (gf01_formal/instances/plain.py) accepting only
what the pydantic models accept, with the same values.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gf01_formal.artifacts import sha256_hex
from gf01_formal.cli import front, main
from gf01_formal.instances import model, plain
from gf01_formal.instances.io import load_set
from gf01_formal.instances.model import Instance, content_id, content_of, make_bundle
from gf01_formal.instances.spec import Task

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "gf01_formal" / "examples"
INSTANCE = str(EXAMPLES / "arbiter_priority.json")
CERT = str(EXAMPLES / "arbiter_priority_cert.json")
BUNDLE = str(EXAMPLES / "check_bundle.json")
HOA = str(EXAMPLES / "arbiter.hoa")
ARBITER_CERTS = [str(EXAMPLES / f"arbiter_cert_{k}.json") for k in ("valid", "not_min1", "malformed")]


def _run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str], *,
         door: bool) -> tuple[str, str, int, bool]:
    """(stdout, stderr, exit status, whether the front door answered) of ``gf01 ARGS``, with the front door or with
    the typer command alone."""
    answers: list[int | None] = []
    real = front.verify

    def spy(argv: list[str]) -> int | None:
        answers.append(real(argv) if door else None)
        return answers[-1]

    with monkeypatch.context() as m:
        m.setattr(front, "verify", spy)
        capsys.readouterr()
        status = main(args)
        out, err = capsys.readouterr()
    return out, err, status, bool(answers) and answers[-1] is not None


def _instance_with(**fields: Any) -> dict[str, Any]:
    """The example instance with ``fields`` changed, its hash and id recomputed (so that the field's check runs)."""
    data = json.loads(Path(INSTANCE).read_text())
    data.update(fields)
    digest = sha256_hex(content_of(data))
    return {**data, "content_hash": digest, "instance_id": content_id(digest)}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Inputs the cases name: a one-instance bundle, bad instance files and bad certificates."""
    root = tmp_path_factory.mktemp("front")
    contents: dict[str, bytes | str] = {
        "bundle1.json": model.dumps(make_bundle([load_set(INSTANCE).instances[0]], generator_version="test",  # type: ignore
                                                provenance="test")),
        "bad-json.json": '{"effect": ',
        "list.json": "[1, 2]",
        "empty.json": "",
        "binary.json": b"\x00\x01{",
        "non-utf8.json": '{"effect": "caf\xe9"}'.encode("latin-1"),
        "bom.json": "\ufeff" + Path(INSTANCE).read_text(),
        "hash-mismatch.json": json.dumps({**json.loads(Path(INSTANCE).read_text()), "t_star": 20}),
        "string-t-star.json": json.dumps(_instance_with(t_star="21")),
        "t-star-out.json": json.dumps(_instance_with(t_star=99)),
        "huge-t-star.json": json.dumps(_instance_with(t_star=10**30)),
        "float-window.json": json.dumps(_instance_with(window=2.0)),
        "extra-field.json": json.dumps({**json.loads(Path(INSTANCE).read_text()), "extra": 1}),
        "big-window.json": json.dumps(_instance_with(window=40)),
        "budget-a-low.json": json.dumps(_instance_with(budget_a=1)),
        "inf-norm.json": Path(INSTANCE).read_text().replace('"norm": 0.733333', '"norm": 1e999'),
        "cert-bad-json.json": "[[20, ",
        "cert-object.json": '{"t": 1}',
        "cert-empty-list.json": "[]",
        "cert-long.json": json.dumps([[t, "r0", 1] for t in range(30)]),
        "cert-float-time.json": '[[20.0, "r2", 1]]',
    }
    for name, text in contents.items():
        (root / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return {name: str(root / name) for name in contents} | {"missing": str(root / "missing.json"),
                                                             "dir": str(root)}


#: Forms the front door answers itself: (instance, cert, options).
ANSWERED: list[tuple[str, str, list[str]]] = [
    (INSTANCE, CERT, []),
    (INSTANCE, CERT, ["--json"]),
    (INSTANCE, CERT, ["--subset-min"]),
    (INSTANCE, CERT, ["--best-match"]),
    (INSTANCE, CERT, ["--best-match", "--gold-set", "MB", "--json"]),
    (INSTANCE, CERT, ["--best-match", "--gold-set", "M", "--subset-min"]),
    (INSTANCE, CERT, ["--backend", "sat", "--subset-min", "--json"]),
    (INSTANCE, CERT, ["--backend", "explicit", "--seconds", "100", "--memory", "2048.5"]),
    (INSTANCE, CERT, ["--id", "gf01f-d78bf434bfab905e"]),
    (INSTANCE, "{cert-bad-json.json}", []),  # bad JSON: an error, handed to the typer command (checked below)
    (INSTANCE, "{cert-object.json}", []),
    (INSTANCE, "{cert-empty-list.json}", ["--best-match"]),
    (INSTANCE, "{cert-long.json}", ["--json"]),
    (INSTANCE, "{cert-long.json}", []),
    (INSTANCE, "{cert-float-time.json}", []),
    ("{bundle1.json}", CERT, []),
    ("{bundle1.json}", CERT, ["--id", "gf01f-d78bf434bfab905e", "--json"]),
    *[(BUNDLE, c, ["--id", i, *flags]) for c in ARBITER_CERTS
      for i in ("gf01f-5df9d417bdf04708", "gf01f-ae4cbf17def1ee38", "gf01f-666b5c12e3152a28")
      for flags in ([], ["--json", "--best-match"])],
]
#: Forms the front door hands to the typer command (errors, help, other forms): whole argument lists.
HANDED: list[list[str]] = [
    ["verify", "{missing}", CERT],
    ["verify", INSTANCE, "{missing}"],
    ["verify", "{dir}", CERT],
    ["verify", INSTANCE, "{dir}"],
    ["verify", INSTANCE, "{cert-bad-json.json}"],
    ["verify", "{bad-json.json}", CERT],
    ["verify", "{list.json}", CERT],
    ["verify", "{empty.json}", CERT],
    ["verify", "{binary.json}", CERT],
    ["verify", "{non-utf8.json}", CERT],
    ["verify", "{bom.json}", CERT],
    ["verify", "{hash-mismatch.json}", CERT],
    ["verify", "{string-t-star.json}", CERT],
    ["verify", "{t-star-out.json}", CERT],
    ["verify", "{huge-t-star.json}", CERT],
    ["verify", "{float-window.json}", CERT],
    ["verify", "{extra-field.json}", CERT],
    ["verify", "{big-window.json}", CERT],
    ["verify", "{budget-a-low.json}", CERT],
    ["verify", "{inf-norm.json}", CERT],
    ["verify", BUNDLE, CERT],  # three instances, no --id
    ["verify", BUNDLE, CERT, "--id", "gf01f-nope"],
    ["verify", INSTANCE, CERT, "--id", "gf01f-nope"],
    ["verify", HOA, ARBITER_CERTS[0]],  # an HOA file without the instance options
    ["verify", HOA, ARBITER_CERTS[0], "--trace", "r0&!r1;!r0&!r1;!r0&!r1;!r0&r1", "--effect", "g1", "--json"],
    ["verify", INSTANCE, CERT, "--gold-set", "X"],
    ["verify", INSTANCE, CERT, "--backend", "nope"],
    ["verify", INSTANCE, CERT, "--seconds", "-1"],
    ["verify", INSTANCE, CERT, "--seconds", "1e3"],
    ["verify", INSTANCE, CERT, "--seconds", "inf"],
    ["verify", INSTANCE, CERT, "--memory", "0.5"],
    ["verify", INSTANCE, CERT, "--memory"],
    ["verify", INSTANCE, CERT, "--json", "--json"],
    ["verify", INSTANCE, CERT, "--json=1"],
    ["verify", INSTANCE, CERT, "--nope"],
    ["verify", INSTANCE, CERT, "extra"],
    ["verify", INSTANCE],
    ["verify"],
    ["verify", "--help"],
    ["verify", INSTANCE, CERT, "--help"],
    ["verify", INSTANCE, "--certs", "{cert-long.json}"],
    ["verify", INSTANCE, CERT, "--certs", "{cert-long.json}"],
    ["verify", "--", INSTANCE, CERT],
    ["verify", "-", CERT],
]


def _fill(arg: str, files: dict[str, str]) -> str:
    return files[arg[1:-1]] if arg.startswith("{") else arg


@pytest.mark.parametrize("case", range(len(ANSWERED)))
def test_the_front_door_answers_the_plain_form_as_the_typer_command(
        case: int, files: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    inst, cert, flags = ANSWERED[case]
    args = ["verify", _fill(inst, files), _fill(cert, files), *flags]
    # Options may come first too, as click allows.
    for argv in (args, ["verify", *flags, args[1], args[2]]):
        *door, answered = _run(capsys, monkeypatch, argv, door=True)
        *typer_only, _ = _run(capsys, monkeypatch, argv, door=False)
        assert door == typer_only
        # A certificate with bad JSON is an error: the typer command's to report.
        assert answered == ("cert-bad-json" not in cert)
        assert door[2] in (0, 2) and door[0 if door[2] == 0 else 1]


@pytest.mark.parametrize("case", range(len(HANDED)))
def test_every_other_form_is_the_typer_commands(
        case: int, files: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    argv = [_fill(a, files) for a in HANDED[case]]
    *door, answered = _run(capsys, monkeypatch, argv, door=True)
    *typer_only, _ = _run(capsys, monkeypatch, argv, door=False)
    assert door == typer_only
    assert not answered


def test_a_real_process_prints_the_same_both_ways(files: dict[str, str]) -> None:
    """As a user sees it (the console entry point, a real process): the front door, and the typer command with the
    front door shut, give the same bytes and status."""
    shut = ("import sys; from gf01_formal.cli import front; front.verify = lambda args: None; "
            "from gf01_formal.cli import run; run()")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The human form with the best match (the console's rendering, the one a process could print otherwise) and an
    # error; every other form is compared in this process above.
    for args in (["verify", INSTANCE, CERT, "--best-match"], ["verify", files["missing"], CERT]):
        door = subprocess.run([sys.executable, "-m", "gf01_formal", *args], capture_output=True, env=env, cwd=ROOT,
                              timeout=120)
        typer_only = subprocess.run([sys.executable, "-c", shut, *args], capture_output=True, env=env, cwd=ROOT,
                                    timeout=120)
        assert (door.stdout, door.stderr, door.returncode) == (typer_only.stdout, typer_only.stderr,
                                                              typer_only.returncode)


def test_the_front_door_imports_neither_typer_nor_pydantic() -> None:
    """Nor the LLM clients (openai, inspect_ai), which `verify` never needs."""
    code = ("import sys; from gf01_formal.cli import main; status = main(sys.argv[1:]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'pydantic', 'rich', "
            "'openai', 'inspect_ai')))")
    done = subprocess.run([sys.executable, "-c", code, "verify", INSTANCE, CERT, "--best-match"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


# -- the pydantic-free reader against the models ---------------------------------------------------------------------

MODELS = {name: getattr(model, name) for name in plain.SCHEMA}


@pytest.mark.parametrize("name", sorted(plain.SCHEMA))
def test_the_readers_schema_mirrors_the_model(name: str) -> None:
    """The same fields in the same order, the same required ones and the same defaults: a field added to a model
    without its mirror fails here."""
    fields = MODELS[name].model_fields
    mirror = plain.SCHEMA[name]
    assert [f for f, _, _ in mirror] == list(fields)
    for field, _, default in mirror:
        info = fields[field]
        assert info.is_required() == (default is plain.REQUIRED), field
        if default is plain.REQUIRED:
            continue
        if isinstance(default, type):
            assert info.default_factory is default, field
        else:
            assert info.default == default, field


def _pydantic_pick(data: Any, instance_id: str | None, tmp: Path) -> dict[str, Any] | None:
    """What the models pick (``load_set`` and ``InstanceSet.pick``, as ``open_instance`` does, before the semantic
    check), as JSON; None where they refuse."""
    path = tmp / "data.json"
    path.write_text(json.dumps(data))
    try:
        return load_set(path).pick(instance_id).model_dump(mode="json")
    except Exception:
        return None


#: Values a mutation puts in place of a field's value.
ODD_VALUES: list[Any] = [0, 1, -1, 2, 10**30, 0.5, 1.0, 2.0, 1e300, "", "x", "hard", "M", True, False, None, [], [0],
                         [[0, "r0", 1]], {}, {"r0": 1}, {"raw": 1, "norm": 0.5}]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside decoded JSON (the HOA text's lines are not entered: it is one string)."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for k, v in enumerate(value[:3]):
            out += _paths(v, (*prefix, k))
    return out


def _mutate(data: Any, rng: random.Random) -> Any:
    """``data`` with one value replaced, one key removed or one key added at a random place; the content hash and
    id of every instance recomputed where they can be, so that the mutation reaches the checks past them."""
    data = copy.deepcopy(data)
    path = rng.choice(_paths(data))
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    what = rng.random()
    if what < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif what < 0.25 and isinstance(parent, dict):
        parent[rng.choice(["extra", "note", "hoa", "aiger"])] = rng.choice(ODD_VALUES)
    else:
        parent[path[-1]] = rng.choice(ODD_VALUES)
    instances = data.get("instances", [data]) if isinstance(data, dict) else []
    for inst in instances if isinstance(instances, list) else []:
        try:
            digest = sha256_hex(content_of(inst))
        except Exception:  # a content field removed, or not hashable: left as it is
            continue
        inst["content_hash"] = digest
        if rng.random() < 0.9:
            inst["instance_id"] = content_id(digest)
    if isinstance(data, dict) and "instances_hash" in data and rng.random() < 0.9:
        with contextlib.suppress(Exception):  # an instance the models refuse: the bundle hash stays as it was
            data["instances_hash"] = sha256_hex([Instance.model_validate(i).model_dump(mode="json")
                                                 for i in data["instances"]])
    return data


@pytest.mark.parametrize("source", [INSTANCE, BUNDLE])
def test_the_reader_accepts_only_what_the_models_accept(source: str, tmp_path: Path) -> None:
    """Over seeded random mutations of an instance and a bundle: whatever the reader accepts, the models accept, and
    the values are the same (so the Problem and the hashes are). The unmutated files are accepted."""
    original = json.loads(Path(source).read_text())
    ids = [None, *[i["instance_id"] for i in original.get("instances", [original])]]
    for instance_id in ids:
        theirs = _pydantic_pick(original, instance_id, tmp_path)
        assert (plain.read_plain(original, instance_id) is None) == (theirs is None)
    rng = random.Random(23)
    accepted = declined_but_valid = 0
    for _ in range(400):
        data = _mutate(original, rng)
        instance_id = rng.choice(ids)
        mine = plain.read_plain(data, instance_id)
        theirs = _pydantic_pick(data, instance_id, tmp_path)
        if mine is not None:
            accepted += 1
            assert theirs == mine
        elif theirs is not None:
            declined_but_valid += 1
    # The mutations reach both sides: some are accepted, and the reader declines valid data rarely (floats given as
    # integers and the like, which it leaves to the models).
    assert accepted > 20
    assert declined_but_valid < accepted


@pytest.mark.parametrize("source", [INSTANCE, BUNDLE])
def test_both_readers_give_one_task_and_so_one_problem(source: str) -> None:
    """The reader and the models make the same hashable Task of every instance, and the Problem is built once for
    it: the fast reader's Problem is the very object the models' door gives."""
    loaded = load_set(source)
    data = json.loads(Path(source).read_text())
    for inst in loaded.instances:
        mine = plain.read_plain(data, inst.instance_id)
        assert mine is not None and Task.of_json(mine) == inst.task()
        assert plain.open_plain(source, inst.instance_id) is loaded.problem(inst)


BLAS_PROBE = """
import os, sys
from gf01_formal.cli import _single_threaded_blas
_single_threaded_blas()
print(len(os.listdir("/proc/self/task")), os.environ.get("OPENBLAS_NUM_THREADS"))
"""


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts threads in /proc (Linux)")
def test_the_console_script_loads_numpy_with_one_blas_thread_and_leaves_the_environment_alone() -> None:
    # OpenBLAS's idle worker threads spin after the import (90 ms of CPU on one small verify); the toolkit never
    # needs them. The setting must not leak into the programs it starts (an agent under evaluation), and a user's
    # own setting wins.
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", BLAS_PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "None"]
    out = subprocess.run([sys.executable, "-c", BLAS_PROBE], env={**env, "OPENBLAS_NUM_THREADS": "3"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.split()[1] == "3"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts threads in /proc (Linux)")
def test_a_pool_worker_loads_numpy_with_one_blas_thread_and_leaves_the_environment_alone(monkeypatch) -> None:
    """A spawn worker (every --jobs N > 1 evaluation, generation and campaign) loads the solvers, numpy behind them,
    under one OpenBLAS thread as the console script does (about 0.03 s of CPU a worker), and without the setting
    afterwards: no thread in the worker but Python's own (its main thread and the parent watch; OpenBLAS's would be
    more), and no OPENBLAS_NUM_THREADS for the programs it starts. (A user's own setting wins by the same test as
    the console script's, above.)"""
    import threading

    from gf01_formal.workers import pool

    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    with pool(1) as ex:
        threads = ex.submit(os.listdir, "/proc/self/task").result()
        python_threads = ex.submit(threading.active_count).result()
        setting = ex.submit(os.getenv, "OPENBLAS_NUM_THREADS").result()
    assert (len(threads), setting) == (python_threads, None)
