"""gf01 release check / package: the split policy, rotation against a previous release (leaks and novelty), that
the report is the report of the runs, coverage of the required panel on every (split, mode) slice, the release
layout; and a package whose rerun.sh reproduces every table and figure of the report from the package alone."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pages import drawn_once

from gf01_formal.agents import PANEL_TRACK, PANELS
from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import pretty_json, read_json, write_json_atomic
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.instances.generator import GenConfig, generate
from gf01_formal.instances.splits import split_bundle, write_release
from gf01_formal.report.release import check, failed_names, package
from hoa.errors import Gf01Error

ROOT = Path(__file__).resolve().parent.parent
KEY = b"a test split key, not the public one"
SMALL = {"families": [{"kind": "random_mealy", "states": [3, 6], "inputs": [2, 3], "outputs": [1, 2]}],
         "horizon": [6, 10]}


def make_report(d: Path, *formats: str) -> None:
    """The release's report, as ``gf01 report`` writes it, in the given formats (all three by default)."""
    outs = [a for f in formats or ("json", "md", "html") for a in ("-o", str(d / f"report.{f}"))]
    assert main(["report", str(d / "runs.jsonl"), "--manifest", str(d / "split_manifest.json"),
                 *outs]) == 0


@pytest.fixture(scope="module", autouse=True)
def pages() -> Iterator[dict[str, int]]:
    """Each report's HTML page drawn once in this module (tests/pages.py): the holder's page of ``release`` is
    asked again by the package's holder check and by the edited-page check, and compared there with the file."""
    with drawn_once() as counts:
        yield counts


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The key holder's release directory: split files (a sealed split: keyed generation and split), the runs of
    the full panel on every instance, and their report in its three formats."""
    d = tmp_path_factory.mktemp("release") / "rel"
    bundle, manifest = split_bundle(generate(51, 10, GenConfig.model_validate(SMALL), key=KEY), KEY)
    write_release(d, bundle, manifest)
    from gf01_formal.instances.io import save_artifact

    save_artifact(d.parent / "bundle.json", bundle)  # the full bundle stays outside the release
    evaluate(d.parent / "bundle.json", [AgentSpec(n, PANEL_TRACK[n]) for n in PANELS["full"]], d / "runs.jsonl")
    make_report(d)
    return d


def copy_release(release: Path, to: Path, *formats: str) -> Path:
    """A copy of ``release`` holding only the report files of ``formats`` (``json``, ``md``, ``html``).

    A check computes the report again and compares each report file present with it; drawing the HTML page's figures
    is nearly all of a check's time, so the tests whose subject is not the HTML page leave it out (a check then
    reports it ``absent``, and compares the rest)."""
    shutil.copytree(release, to)
    for f in {"json", "md", "html"} - set(formats):
        (to / f"report.{f}").unlink()
    return to


@pytest.fixture(scope="module")
def no_greedy(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release without greedy's runs (and with their own report, JSON and Markdown): the full panel is not
    covered."""
    d = copy_release(release, tmp_path_factory.mktemp("no-greedy") / "rel", "json", "md")
    rows = [line for line in (d / "runs.jsonl").read_text().splitlines() if json.loads(line)["agent_name"] != "greedy"]
    (d / "runs.jsonl").write_text("\n".join(rows) + "\n")
    make_report(d, "json", "md")
    return d


@pytest.fixture(scope="module")
def pkg(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release's public package, as ``gf01 release package`` makes it (a check of the release, the public
    artifacts and their check, the toolkit's wheel built from this checkout). Read-only: a test that runs its
    rerun.sh (which writes rerun/ inside it) or edits it works on a copy (:func:`copy_pkg`)."""
    from gf01_formal.report import render

    out = tmp_path_factory.mktemp("pkg") / "pkg"
    drawn: list[str] = []  # the reports whose HTML page package() drew, as their report.json text
    real = render.html_page

    def counted(report: dict) -> str:
        drawn.append(pretty_json(report))
        return real(report)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(render, "html_page", counted)
        result = package(release, out)
    write_json_atomic(out.parent / "result.json", result)  # what package() returned, beside it
    write_json_atomic(out.parent / "drawn.json", drawn)
    return out


@pytest.fixture
def pkg_wheel(pkg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """package() takes the toolkit's wheel of :func:`pkg` (the same tracked files, so the same bytes:
    test_rerun_says_what_to_install_when_the_toolkit_is_missing builds it twice and compares) instead of building it
    again, for the tests whose subject is not the wheel (a build is seconds of CPU)."""
    from gf01_formal.report import release as module

    (built,) = (pkg / "toolkit").glob("*.whl")

    def copy_wheel(src: Path, files: list[str], dest: Path, epoch: str) -> tuple[Path, None]:
        shutil.copyfile(built, dest / built.name)
        return dest / built.name, None

    monkeypatch.setattr(module, "build_wheel", copy_wheel)


def copy_pkg(pkg: Path, to: Path) -> Path:
    shutil.copytree(pkg, to)
    return to


def by_name(result: dict) -> dict[str, dict]:
    return {c["name"]: c for c in result["checks"]}


def test_coverage_of_the_real_panel_names_the_missing_baseline(no_greedy: Path) -> None:
    result = check(no_greedy, holder=True)
    checks = by_name(result)
    assert not result["ok"] and not checks["coverage"]["ok"]
    assert checks["split_policy"]["ok"] and checks["report"]["ok"] and checks["layout"]["ok"]
    assert checks["reproduction"]["ok"] and checks["rotation"]["skipped"]
    slices = {(p["split_id"], p["mode"]) for p in checks["coverage"]["incomplete"]}
    manifest = read_json(no_greedy / "split_manifest.json")
    assert slices == {(e["split_id"], e["mode"]) for e in manifest["instances"]}  # greedy misses every slice
    assert {p["agent"] for p in checks["coverage"]["incomplete"]} == {"greedy"}
    # What `gf01 release check` prints of it (the command line's one line on this release, which computes the
    # report again: test_package_refuses_a_failing_release_and_writes_nothing's `release package`).
    assert failed_names(result).startswith("coverage (") and "greedy (EVAL-CB) misses" in failed_names(result)


def test_a_covered_release_passes_and_rotation_is_checked(release: Path, tmp_path: Path) -> None:
    # Without its HTML page, whose figures a check would draw again: the pkg fixture's package() checks the whole
    # release first (the holder's page identical, or no package) and test_an_edited_or_stale_report_file_fails_the_check
    # compares an edited page.
    result = check(copy_release(release, tmp_path / "rel", "json", "md"), holder=True)
    assert result["ok"], result
    checks = by_name(result)
    assert checks["reproduction"]["files"] == {"report.json": "identical", "report.md": "identical",
                                               "report.html": "absent"}
    assert checks["coverage"]["covered_tracks"] and all(v == ["EVAL-CB", "EVAL-OC", "EVAL-TA"]
                                                        for v in checks["coverage"]["covered_tracks"].values())
    manifest = read_json(release / "split_manifest.json")
    public = [e for e in manifest["instances"] if e["split_id"] != "private_eval"]
    private = [e for e in manifest["instances"] if e["split_id"] == "private_eval"]
    tables = copy_release(release, tmp_path / "tables", "json")  # rotation reads the manifests only
    # The previous release had one of today's public instances in private_eval: a leak.
    leak = {**manifest, "instances": [{**public[0], "split_id": "private_eval"}]}
    write_json_atomic(tmp_path / "leak.json", leak)
    rot = by_name(check(tables, previous=tmp_path / "leak.json", holder=True))["rotation"]
    assert not rot["ok"] and rot["previous_private_now_public"] == [public[0]["content_hash"]]
    # The previous release published the same public instances: novelty 0 < 0.10.
    write_json_atomic(tmp_path / "same.json", {**manifest, "instances": public})
    rot = by_name(check(tables, previous=tmp_path / "same.json", holder=True))["rotation"]
    assert not rot["ok"] and rot["public_novelty"] == 0.0 and rot["previous_private_now_public"] == []
    # Previously all of today's instances were unseen except private ones still private: novelty 1.
    # Those private ones are listed by keyed commitment: matching them needs the key, and without it the check
    # fails saying so rather than passing unchecked.
    write_json_atomic(tmp_path / "old.json", {**manifest, "instances": private})
    rot = by_name(check(tables, previous=tmp_path / "old.json", holder=True))["rotation"]
    assert not rot["ok"] and "--key-file" in rot["error"]
    rot = by_name(check(tables, previous=tmp_path / "old.json", holder=True, key=KEY))["rotation"]
    assert rot["ok"] and rot["public_novelty"] == 1.0 and rot["identity"] == "content_hash"
    # A previous release that committed (under the key) to one of today's public instances as private: a leak.
    from gf01_formal.instances.splits import instance_commitment

    committed = {"instance_id": "gf01p-0000000000000000", "split_id": "private_eval", "mode": public[0]["mode"],
                 "stratum": public[0]["stratum"], "commitment": instance_commitment(KEY, public[0]["content_hash"])}
    write_json_atomic(tmp_path / "leak2.json", {**manifest, "instances": [*private, committed]})
    rot = by_name(check(tables, previous=tmp_path / "leak2.json", holder=True, key=KEY))["rotation"]
    assert not rot["ok"] and rot["previous_private_now_public"] == [public[0]["content_hash"]]


def test_the_release_gate_refuses_provisional_caps_unless_stated(release: Path, tmp_path: Path, pkg_wheel: None,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Caps derived before the DEC-021 checkpoint in the release: check and package refuse them unless the release
    states them (--allow-provisional-caps), and a package that states them says so in package.json."""
    from gf01_formal.report.caps import CAPS_SCHEMA

    d = copy_release(release, tmp_path / "rel", "json")
    write_json_atomic(d / "caps.json", {"schema_version": CAPS_SCHEMA, "backend": "sat", "provisional": True,
                                        "sample": {"instances": 3},
                                        "platform": {"seconds": {"cap": 2.0}, "memory_kib": {"cap": None}},
                                        "algorithmic": {"conflicts": {"cap": 1000}, "nodes": {"cap": None}}})
    # Each refusal and acceptance through the command line (the check's caps entry is what it prints; each check
    # computes the report again, so no check() beside them).
    capsys.readouterr()
    assert main(["release", "check", str(d), "--holder", "--json"]) == 2
    captured = capsys.readouterr()
    caps = by_name(json.loads(captured.out))["caps"]
    assert not caps["ok"] and "provisional caps in caps.json" in caps["error"]
    assert "caps (provisional caps in caps.json" in captured.err
    assert main(["release", "package", str(d), "-o", str(tmp_path / "pkg"), "--holder"]) == 2
    assert "caps (provisional caps in caps.json" in capsys.readouterr().err
    assert not (tmp_path / "pkg").exists()
    assert main(["release", "package", str(d), "-o", str(tmp_path / "pkg"), "--holder",
                 "--allow-provisional-caps"]) == 0
    stated = read_json(tmp_path / "pkg" / "package.json")["provisional_caps"]
    assert stated["stated"] is True and stated["where"]
    assert by_name(check(tmp_path / "pkg", holder=True))["caps"]["ok"]  # the package states them itself


def test_inconsistent_releases_fail_their_checks(release: Path, tmp_path: Path) -> None:
    bad = copy_release(release, tmp_path / "bad", "json")
    pub = read_json(bad / "public_dev.bundle.json")
    write_json_atomic(bad / "public_dev.bundle.json", {**pub, "instances": pub["instances"][1:]})
    rows = (bad / "runs.jsonl").read_text().splitlines()
    (bad / "runs.jsonl").write_text("\n".join(rows[1:]) + "\n")
    checks = by_name(check(bad, holder=True))
    assert not checks["layout"]["ok"] and "public_dev.bundle.json" in checks["layout"]["problems"][0]
    assert not checks["report"]["ok"] and not checks["coverage"]["ok"] and not checks["reproduction"]["ok"]
    man = read_json(bad / "split_manifest.json")
    write_json_atomic(bad / "split_manifest.json", {**man, "instances": [{**e, "split_id": "public_dev"}
                                                                         for e in man["instances"]]})
    assert not by_name(check(bad, holder=True))["split_policy"]["ok"]
    (bad / "report.json").unlink()
    with pytest.raises(Gf01Error, match=r"report\.json is missing"):
        check(bad, holder=True)


def test_package_holds_every_file_and_refuses_a_changed_one(pkg: Path, tmp_path: Path) -> None:
    out = pkg
    names = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert {"SHA256SUMS", "package.json", "RERUN.md", "rerun.sh", "artifacts/runs.jsonl", "artifacts/report.html",
            "artifacts/split_manifest.json", "artifacts/private_eval.hashes.json"} <= names
    assert not any(n.endswith("bundle.json") and "public" not in n for n in names)  # no private instance shipped
    assert read_json(out.parent / "result.json")["files"] == len(names)
    listed = [line.split("  ", 1)[1] for line in (out / "SHA256SUMS").read_text().splitlines()]
    assert sorted(listed) == sorted(names - {"SHA256SUMS"})
    # A changed artifact is caught before anything is recomputed. (What is reproduced from the package alone, and
    # how a difference is named, is the fresh-venv test's run.)
    moved = copy_pkg(out, tmp_path / "elsewhere" / "copy")
    (moved / "artifacts" / "report.md").write_text("edited\n")
    env = {**os.environ, "GF01_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["sh", str(moved / "rerun.sh")], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "sha256 mismatch: artifacts/report.md" in done.stderr
    assert not (moved / "rerun" / "report.json").exists()
    assert json.loads((out / "package.json").read_text())["checks"]["ok"]


def edit_report_md(pkg: Path) -> int:
    """Edit one table line of the package's artifacts/report.md by hand and make its SHA256SUMS line match (so the
    comparison, not the hashes, is what catches it); the index of the edited line."""
    md = pkg / "artifacts" / "report.md"
    lines = md.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("| random"))
    lines[at] = lines[at].replace("| random", "| rand0m", 1)
    md.write_text("".join(lines))
    sums = (pkg / "SHA256SUMS").read_text().splitlines(keepends=True)
    sums = [f"{hashlib.sha256(md.read_bytes()).hexdigest()}  artifacts/report.md\n"
            if line.endswith("  artifacts/report.md\n") else line for line in sums]
    (pkg / "SHA256SUMS").write_text("".join(sums))
    return at


def _run(script: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True, timeout=timeout)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without this test run's gf01-formal (no PYTHONPATH, no active virtual environment)."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "GF01_PYTHON", "RERUN_VENV", "RERUN_SYSTEM_SITE"}
    return {k: v for k, v in os.environ.items() if k not in drop} | extra


def test_a_public_package_draws_each_html_page_once(release: Path, pkg: Path) -> None:
    """package() drew the public report's HTML figures twice (once to write the page, once more in the public
    check comparing the page with the report computed again): now twice in all, the holder's page (its release
    check) and the public page, and the public check still finds the page identical."""
    drawn = read_json(pkg.parent / "drawn.json")
    assert drawn == [(release / "report.json").read_text(), (pkg / "artifacts" / "report.json").read_text()]
    assert by_name(read_json(pkg / "package.json")["checks"])["reproduction"]["files"]["report.html"] == "identical"


def test_rerun_says_what_to_install_when_the_toolkit_is_missing(pkg: Path, tmp_path: Path) -> None:
    """Issue 31: `sh rerun.sh` on a machine without gf01-formal failed with `No module named gf01_formal`. The
    package carries the exact toolkit (version, commit, a wheel built offline with its sha256, the pinned versions
    it ran with); each missing piece stops the script in one line saying what to install, before anything is
    computed; a wheel that is not the one the script names is refused."""
    from gf01_formal.report.release import toolkit

    out = copy_pkg(pkg, tmp_path / "pkg")  # rerun.sh writes rerun/install.log in it
    kit = json.loads((out / "package.json").read_text())["toolkit"]
    assert set(kit) == {"version", "python", "commit", "dirty", "wheel", "requirements", "why"}
    assert kit["commit"] and kit["why"] is None  # tests run from a git checkout, with setuptools>=77 (the extra)
    wheel = out / kit["wheel"]["path"]
    assert wheel.suffix == ".whl" and kit["wheel"]["sha256"] in (out / "SHA256SUMS").read_text()
    pins = (out / kit["requirements"]).read_text()
    assert "numpy==" in pins and "python-sat==1.9.dev17" in pins and "statsmodels==" in pins
    script = (out / "rerun.sh").read_text()
    assert kit["wheel"]["sha256"] in script
    # The wheel is the same bytes when built again from the same tree (SOURCE_DATE_EPOCH: the commit's time): the
    # package's own step (toolkit), without the release checks around it.
    again = tmp_path / "again"
    again.mkdir()
    assert toolkit(again) == kit
    assert (again / kit["wheel"]["path"]).read_bytes() == wheel.read_bytes()

    def one_line(env: dict[str, str], *says: str, status: int = 2, pkg: Path = out) -> None:
        done = _run(pkg / "rerun.sh", env)
        assert done.returncode == status, (done.stdout, done.stderr)
        (line,) = [x for x in done.stderr.strip().splitlines() if x.startswith("rerun.sh:") or "mismatch" in x]
        for s in says:
            assert s in line, line
        assert not (pkg / "rerun" / "report.json").exists()

    one_line(_clean_env(PYTHON=str(tmp_path / "no-such-python")), "install Python 3.11")
    bare = tmp_path / "bare-python"  # an interpreter without gf01-formal (no site-packages)
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    bare.chmod(0o755)
    one_line(_clean_env(GF01_PYTHON=str(bare)), "has no gf01-formal", "fresh virtual environment")
    # A Python without ensurepip (Debian's python3 without python3-venv): its stdlib module shadowed by one that
    # fails to import, as there.
    (tmp_path / "noensure" / "ensurepip").mkdir(parents=True)
    (tmp_path / "noensure" / "ensurepip" / "__init__.py").write_text("raise ImportError('no ensurepip')\n")
    noensure = tmp_path / "noensure-python"
    noensure.write_text(f"#!/bin/sh\nPYTHONPATH={tmp_path / 'noensure'} exec {sys.executable} \"$@\"\n")
    noensure.chmod(0o755)
    one_line(_clean_env(PYTHON=str(noensure)), "install python3-venv")
    # No package index: pip cannot install the pinned dependencies. The script's `$PY -m venv` makes the venv
    # without ensurepip's copy of pip (seconds of CPU; the fresh-venv test below runs the real one) and gives it
    # this interpreter's pip alone, by a .pth file: what pip then does offline is the same.
    import pip

    (tmp_path / "pip-only").mkdir()
    (tmp_path / "pip-only" / "pip").symlink_to(Path(pip.__file__).parent)
    quick = tmp_path / "quick-venv-python"
    quick.write_text(f"""#!/bin/sh
if [ "$1 $2" = "-m venv" ]; then
    shift 2
    {sys.executable} -m venv --without-pip "$@" || exit
    for venv; do :; done
    echo {tmp_path / 'pip-only'} >"$(echo "$venv"/lib/python3*/site-packages)/pip-only.pth"
    exit
fi
exec {sys.executable} "$@"
""")
    quick.chmod(0o755)
    one_line(_clean_env(PYTHON=str(quick), PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path / "empty")),
            "pip could not install", "RERUN_SYSTEM_SITE=1")
    assert "ERROR" in (out / "rerun" / "install.log").read_text()  # pip's own account of it
    # Another wheel under the same name, SHA256SUMS edited to match: the sha256 written into the script refuses it.
    swapped = tmp_path / "swapped"
    shutil.copytree(out, swapped)
    (swapped / kit["wheel"]["path"]).write_bytes(wheel.read_bytes() + b"\0")
    sums = (swapped / "SHA256SUMS").read_text().replace(
        kit["wheel"]["sha256"], hashlib.sha256((swapped / kit["wheel"]["path"]).read_bytes()).hexdigest())
    (swapped / "SHA256SUMS").write_text(sums)
    done = _run(swapped / "rerun.sh", _clean_env(GF01_PYTHON=sys.executable))
    assert done.returncode == 1 and "is not the wheel this script names" in done.stderr
    rerun = (out / "RERUN.md").read_text()
    assert f"0. The toolkit: `{kit['wheel']['path']}`" in rerun and kit["commit"] in rerun
    assert "artifacts/public_split_manifest.json" in rerun and "from `artifacts/runs.jsonl` and " \
        "`artifacts/split_manifest.json`" not in rerun  # the manifest rerun.sh uses (a public package's)


def test_rerun_md_quotes_the_commands_rerun_sh_runs(pkg: Path) -> None:
    """RERUN.md matches the script: the report command, the pip install and every variable the script reads are
    the script's own, word for word."""
    out = pkg
    script, rerun = (out / "rerun.sh").read_text(), " ".join((out / "RERUN.md").read_text().split())
    (report,) = re.findall(r'"\$RUN" -m gf01_formal (report .*)', script)
    assert f"`python -m gf01_formal {report}`" in rerun
    assert "--private-results artifacts/private_eval.results.json" in report
    (pip,) = re.findall(r'"\$VENV/bin/python" -m (pip install -c .*?) >rerun/install.log', script)
    assert f"`python -m {pip}`" in rerun
    (nodeps,) = re.findall(r'-m (pip install --no-deps .*?) >rerun/install.log', script)
    assert f"`{nodeps}`" in rerun
    for var in sorted(set(re.findall(r"\$\{?([A-Z][A-Z0-9_]+)", script)) - {"PY", "RUN", "VENV", "TMPDIR"}):
        assert f"{var}" in rerun, var  # PYTHON, GF01_PYTHON, RERUN_VENV, RERUN_SYSTEM_SITE


def installed_here(to: Path) -> Path:
    """A directory of links to what this interpreter has installed (its site-packages, in the order it reads them),
    gf01-formal left out (its packages, its dist-info, the editable install's finder and every .pth file): the
    toolkit's dependencies at the versions the package pinned (they are the versions installed here), for a fresh
    environment to find already installed."""
    import site

    from packaging.utils import canonicalize_name

    ours = {"gf01_formal", "hoa", "aig", "encoders", "solvers", "__pycache__"}
    to.mkdir()
    projects: set[str] = set()
    for where in site.getsitepackages():
        for p in sorted(Path(where).iterdir()):
            name = p.name
            if name.endswith(".pth") or name.startswith("__editable__") or name.split("-")[0] in ours:
                continue
            if name.endswith((".dist-info", ".egg-info")):  # one metadata directory a project (the first found)
                project = canonicalize_name(name.split("-")[0])
                if project in projects:
                    continue
                projects.add(project)
            if not (to / name).is_symlink():
                (to / name).symlink_to(p)
    return to


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_rerun_installs_the_wheel_in_a_fresh_venv_and_reproduces_the_report(pkg: Path, tmp_path: Path) -> None:
    """Issue 31, done when: the package's rerun.sh reproduces its report on a machine that has only Python and the
    package. The package is copied under a fresh temporary directory (mktemp -d), and rerun.sh, given the base
    Python only (no PYTHONPATH, no active environment), makes a new virtual environment there without system site
    packages, runs its pip install of the package's wheel with the report's extra under the pinned versions, and
    reproduces report.json, report.md and report.html byte for byte with the wheel; a line of report.md edited by
    hand (its hash made to match) is named with its diff.

    The environment finds the dependencies already installed rather than downloading them: its `-m venv` is the
    base Python's own with ``--without-pip``, given by a .pth file this interpreter's pip and installed
    distributions, gf01-formal's left out (:func:`installed_here`), and pip runs without an index. pip still
    resolves the wheel's requirements under the package's pins against what it finds and installs the wheel; what
    no longer runs is the download from the package index (pip's resolution there was about 23 s of CPU, the
    environment's ensurepip 8 s and the dependencies' byte code compiled anew 8 s: some 50 s of the suite's CPU)."""
    where = Path(subprocess.run(["mktemp", "-d", f"{tmp_path}/rerun.XXXXXX"], capture_output=True, text=True,
                                check=True).stdout.strip())
    moved = where / "pkg"
    shutil.copytree(pkg, moved)
    base = getattr(sys, "_base_executable", sys.executable)
    deps = installed_here(tmp_path / "installed")
    python = tmp_path / "venv-python"
    python.write_text(f"""#!/bin/sh
if [ "$1 $2" = "-m venv" ]; then
    shift 2
    {base} -m venv --without-pip "$@" || exit
    for venv; do :; done
    echo {deps} >"$(echo "$venv"/lib/python3*/site-packages)/installed-here.pth"
    exit
fi
exec {base} "$@"
""")
    python.chmod(0o755)
    venv = where / "venv"
    (tmp_path / "no-index").mkdir()
    # One line of report.md edited by hand, SHA256SUMS made to match: the hashes pass, every file is computed again
    # from the package, and the comparison names the edited line with its diff. (One recomputation serves both what
    # is reproduced and what a difference says; the exit 0 of a clean rerun is
    # test_a_release_without_renderings_packages_and_reruns's.)
    at = edit_report_md(moved)
    done = _run(moved / "rerun.sh", _clean_env(PYTHON=str(python), RERUN_VENV=str(venv), PIP_NO_INDEX="1",
                                               PIP_FIND_LINKS=str(tmp_path / "no-index")), timeout=600)
    assert done.returncode == 1, (done.stdout[-2000:], done.stderr[-2000:])
    assert "every file matches" in done.stdout and "wheel: toolkit/gf01_formal-" in done.stdout
    assert "byte-identical" not in done.stdout
    assert f"rerun/report.md differs from artifacts/report.md at line(s) {at + 1}" in done.stderr
    assert "-| rand0m" in done.stderr and "+| random" in done.stderr
    assert "report.json differs" not in done.stderr and "report.html differs" not in done.stderr
    for f in ("report.json", "report.md", "report.html"):  # reproduced byte for byte from the package alone
        assert (moved / "rerun" / f).read_bytes() == (pkg / "artifacts" / f).read_bytes()
    # pip took every pinned dependency of the wheel's [report] extra as it found it and installed the wheel alone.
    log = (moved / "rerun" / "install.log").read_text()
    (installed,) = [line for line in log.splitlines() if line.startswith("Successfully installed")]
    version = read_json(pkg / "package.json")["toolkit"]["version"]
    assert installed == f"Successfully installed gf01-formal-{version}", log[-2000:]
    for name in ("numpy", "scipy", "statsmodels", "matplotlib"):
        assert f"Requirement already satisfied: {name}" in log, name
    # The report was made by the wheel in the new environment, not by this checkout (asked from elsewhere: the
    # current directory comes first on sys.path, and this test's is the checkout).
    where_from = subprocess.run([str(venv / "bin" / "python"), "-c", "import gf01_formal; print(gf01_formal.__file__)"],
                                env=_clean_env(), cwd=where, capture_output=True, text=True, check=True).stdout
    assert where_from.startswith(str(venv)) and "site-packages" in where_from
    cfg = (venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg


def test_the_package_report_has_the_private_eval_headline(release: Path, pkg: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 31: the package's report.md had headlines for public_dev and public_val only, the private_eval figures
    only in JSON. Now its first headline is private_eval's, from private_eval.results.json (rates with intervals per
    track, agent and mode, as the holder's full report has them), and nothing per instance of the sealed split."""
    from gf01_formal.report.render import headline_tables

    out = pkg
    arts = out / "artifacts"
    results = read_json(arts / "private_eval.results.json")
    full = read_json(release / "report.json")
    assert results["headline"] and results["headline"] == [h for h in full["headline"]
                                                           if h["key"]["split_id"] == "private_eval"]
    md = (arts / "report.md").read_text()
    tables = headline_tables({"headline": results["headline"], "price_per_mtok": None})
    assert {t[0] for t in tables} == {"Headline: EVAL-CB, split private_eval", "Headline: EVAL-TA, split private_eval",
                                      "Headline: EVAL-OC, split private_eval"}
    for title, _, rows, _ in tables:  # each row as the full report has it, before the public headline
        assert md.index(f"## {title}") < md.index("## Headline: EVAL-CB, split public_dev")
        for row in rows:
            assert "| " + " | ".join(row) + " |" in md
    # Nothing per instance of the sealed split: no private id, no commitment, no instance count beyond the rows'.
    man = read_json(release / "split_manifest.json")
    private = [e for e in man["instances"] if e["split_id"] == "private_eval"]
    assert private
    for text in ((arts / n).read_text() for n in ("report.md", "report.html", "report.json")):
        assert not any(e["instance_id"] in text or e["commitment"] in text for e in private)
    assert "gf01p-" not in md
    # The public check recomputes the report with the private section and finds it identical (package() ran it on
    # these very artifacts before writing them, and recorded it in package.json).
    assert by_name(read_json(out / "package.json")["checks"])["reproduction"]["files"] == dict.fromkeys(
        ("report.json", "report.md", "report.html"), "identical")
    # A results file made before it carried the headline: `gf01 report --private-results` says so in one line.
    old = {k: v for k, v in results.items() if k != "headline"}
    write_json_atomic(tmp_path / "old.json", old)
    capsys.readouterr()
    assert main(["report", str(arts / "runs.jsonl"), "--private-results", str(tmp_path / "old.json"), "-o",
                 str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no private_eval headline" in err and not (tmp_path / "r.md").exists()


def test_package_refuses_a_failing_release_and_writes_nothing(release: Path, no_greedy: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", "package", str(no_greedy), "-o", str(tmp_path / "pkg")]) == 2
    err = capsys.readouterr().err  # the failed check's one line (test_coverage_of_the_real_panel_...: the result)
    assert err.count("\n") == 1 and "coverage (" in err and "greedy (EVAL-CB) misses" in err, err
    assert not (tmp_path / "pkg").exists() and [p.name for p in tmp_path.iterdir()] == []
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    assert main(["release", "package", str(release), "-o", str(tmp_path / "full")]) == 2
    assert "not an empty directory" in capsys.readouterr().err
    assert main(["release", "check", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.startswith("gf01: error: ")


@pytest.mark.parametrize(("name", "how"), [("report.md", "appended"), ("report.html", "appended"),
                                           ("report.json", "number edited"), ("report.md", "stale")])
def test_an_edited_or_stale_report_file_fails_the_check(release: Path, no_greedy: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str], name: str,
                                                        how: str) -> None:
    # The other report files are compared too: the HTML page only where it is the edited one (it costs the most).
    formats = ("json", "md", "html") if name == "report.html" else ("json", "md")
    bad = copy_release(release, tmp_path / "bad", *formats)
    if how == "number edited":  # by hand: the records digest still matches, so the 'report' check passes
        data = read_json(bad / name)
        data["groups"][0]["score_c"]["rate"] = 0.999
        (bad / name).write_text(pretty_json(data))
    elif how == "stale":  # the rendering of an earlier report, of other runs
        shutil.copyfile(no_greedy / name, bad / name)
    else:
        (bad / name).write_bytes((bad / name).read_bytes() + b"\nA line added by hand.\n")
    # The edited page given as renderings of another report: a check must not take it for the report's own.
    other = {"report.json": "{}\n", name: (bad / name).read_text()}
    result = check(bad, holder=True, rendered=other)
    checks = by_name(result)
    assert not result["ok"] and checks["report"]["ok"] and checks["coverage"]["ok"]
    files = checks["reproduction"]["files"]
    assert files == {f: "differs" if f == name else "identical" if f.removeprefix("report.") in formats else "absent"
                     for f in ("report.json", "report.md", "report.html")}
    assert checks["reproduction"]["error"].startswith(f"{name} differs from the report computed again")
    assert "software versions" not in checks["reproduction"]["error"]
    # What `gf01 release check` prints of this result; the command line itself once (a check draws the page again).
    assert failed_names(result).startswith(f"reproduction ({name} differs")
    if (name, how) == ("report.md", "appended"):  # the audit's case: it used to pass the check and be packaged
        assert main(["release", "check", str(bad), "--holder"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"reproduction ({name} differs" in err
        assert main(["release", "package", str(bad), "-o", str(tmp_path / "pkg")]) == 2
        assert "reproduction (report.md differs" in capsys.readouterr().err and not (tmp_path / "pkg").exists()


def test_a_report_of_other_software_versions_says_so(release: Path, tmp_path: Path) -> None:
    bad = copy_release(release, tmp_path / "bad", "json", "md")
    data = read_json(bad / "report.json")
    data["software"]["numpy"] = "0.0.1"
    (bad / "report.json").write_text(pretty_json(data))
    rep = by_name(check(bad, holder=True))["reproduction"]
    assert not rep["ok"] and rep["files"]["report.json"] == "differs"
    assert "numpy 0.0.1" in rep["error"] and "byte-identity holds on the same versions" in rep["error"]


def test_a_release_without_renderings_packages_and_reruns(release: Path, tmp_path: Path, pkg_wheel: None) -> None:
    rel = copy_release(release, tmp_path / "rel", "json")
    rep = by_name(check(rel, holder=True))["reproduction"]
    assert rep["ok"] and rep["files"] == {"report.json": "identical", "report.md": "absent", "report.html": "absent"}
    package(rel, tmp_path / "pkg")
    env = {**os.environ, "GF01_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["sh", str(tmp_path / "pkg" / "rerun.sh")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "reproduced: report.json (tables) are byte-identical" in done.stdout
    assert sorted(p.name for p in (tmp_path / "pkg" / "rerun").iterdir()) == ["report.json"]
    # RERUN.md names only what the package holds: every artifacts/ file it mentions is there.
    rerun = (tmp_path / "pkg" / "RERUN.md").read_text()
    assert "report.md" not in rerun and "report.html" not in rerun and "Markdown" not in rerun
    for name in re.findall(r"artifacts/[\w./-]+\w", rerun):
        assert (tmp_path / "pkg" / name).exists(), name


def test_package_on_a_full_disk_is_a_user_error(release: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A file system that fills up half-way (a 64 KiB tmpfs): one line, exit 2 (not 70), nothing left behind."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                                                       capture_output=True, check=False).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root, or no mount namespace rights)")
    tables = copy_release(release, tmp_path / "tables", "json")  # the HTML page is not what fills the disk
    try:
        status = main(["release", "package", str(tables), "-o", str(mnt / "pkg")])
        err = capsys.readouterr().err
        assert status == 2, err
        assert err.count("\n") == 1 and err.startswith("gf01: error: ") and "No space left" in err, err
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_package_into_a_symlink_follows_it(release: Path, tmp_path: Path, pkg_wheel: None,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """-o a dangling symlink: the package is made where it points, and the link stays a link (not exit 70)."""
    link = tmp_path / "pkg"
    link.symlink_to(tmp_path / "made" / "pkg")
    tables = copy_release(release, tmp_path / "tables", "json")
    assert main(["release", "package", str(tables), "-o", str(link)]) == 0, capsys.readouterr()
    assert link.is_symlink() and (tmp_path / "made" / "pkg" / "SHA256SUMS").is_file()
