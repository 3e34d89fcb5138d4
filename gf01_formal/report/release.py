"""``gf01 release check`` and ``gf01 release package``: the publication checks of a release directory, exact and
explained, and a package that reproduces every table and figure of the report from its own files.

A release directory (docs/reports.md) holds ``split_manifest.json`` (``gf01 split``), ``runs.jsonl`` (with its
``runs.jsonl.d/`` side files) and ``report.json`` (``gf01 report --manifest``), and may hold the renderings
``report.md`` / ``report.html``, the release layout of ``gf01 split --release`` (``public_dev.bundle.json``,
``public_val.bundle.json``, ``private_eval.hashes.json``), ``analysis.json``, ``caps.json``, ``campaign.json`` and
``validation.json``.

Checks, each reported with its numbers (all must pass):

- ``split_policy``: the manifest against DEC-054 (``gf01.split_policy.v1``: 0.20/0.20/0.60, tolerance 0.05).
- ``rotation`` (with a previous release): no instance of the previous private_eval split is in a public split now,
  and public novelty, the fraction of the current public instances that were not public before, is at least 0.10.
  Instances are identified by content hash when both manifests carry it (a re-labelled task is the same task),
  else by instance id. Without a previous release the check is skipped and says so.
- ``report``: report.json is a report of exactly these runs (its records digest) against exactly this manifest.
- ``reproduction``: report.json and the renderings present (report.md, report.html) are byte for byte the report
  computed again from runs.jsonl and split_manifest.json with the report's own panel, which is what the package's
  rerun.sh claims; so an edited or stale file, a number changed by hand included, fails here and not only in the
  rerun script. Byte-identity holds on the software versions the report lists: a mismatch says when they differ.
- ``coverage``: on every (split, mode) slice of the manifest, every agent of the required panel (DEC-056, full by
  default) has a final run on every instance, on its own track; so every required baseline and track is covered.
- ``layout``: the public bundles hold exactly the manifest's public instances (same content hashes), the private
  hash list exactly its private ones, when those files are present.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gf01_formal.artifacts import pretty_json, read_json
from hoa.errors import Gf01Error, quote

if TYPE_CHECKING:
    from collections.abc import Mapping

    from gf01_formal.report.coverage import Manifest
    from gf01_formal.report.load import Runs

PACKAGE_SCHEMA = "gf01-formal.release_package.v1"
MIN_NOVELTY = 0.10
PUBLIC = ("public_dev", "public_val")
REQUIRED = ("split_manifest.json", "runs.jsonl", "report.json")
OPTIONAL = ("report.md", "report.html", "public_dev.bundle.json", "public_val.bundle.json", "private_eval.hashes.json",
            "analysis.json", "caps.json", "campaign.json", "validation.json", "private_eval.results.json",
            "public_split_manifest.json")
#: The private_eval aggregates and commitments of a public package (docs/release.md).
PRIVATE_RESULTS = "private_eval.results.json"
#: The public rows of the split manifest: what a public package's report is against.
PUBLIC_MANIFEST = "public_split_manifest.json"
PRIVATE_RESULTS_SCHEMA = "gf01-formal.private_results.v1"
#: What a public package copies from the release as it is (analysis.json is left out: its per-instance knobs
#: describe the private instances; the runs and the report are rewritten to the public runs).
PUBLIC_COPIED = ("split_manifest.json", "public_dev.bundle.json", "public_val.bundle.json", "private_eval.hashes.json",
                 "caps.json", "campaign.json", "validation.json")


def _manifest_rows(path: Path) -> list[dict[str, Any]]:
    data = read_json(path)
    rows = data.get("instances") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise Gf01Error("a split manifest lists its instances", file=str(path), field="instances")
    return [r for r in rows if isinstance(r, dict)]


def _identity(rows: list[dict[str, Any]], by_hash: bool) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in rows:
        if by_hash and "content_hash" not in r:  # a committed private row: matched by commitment (rotation)
            continue
        out.setdefault(str(r.get("split_id")), set()).add(str(r.get("content_hash" if by_hash else "instance_id")))
    return out


def rotation(current: Path, previous: Path, key: bytes | None = None) -> dict[str, Any]:
    """The rotation check of the current manifest against the previous release's. A previous private instance
    listed by its keyed commitment only (manifests since issue 29) is matched by the commitment of each public
    content hash under ``key``, the previous release's split key; without it that part cannot be checked, and the
    check fails saying so."""
    from gf01_formal.instances.splits import instance_commitment

    cur, prev = _manifest_rows(current), _manifest_rows(previous)
    by_hash = all("content_hash" in r or "commitment" in r for r in cur + prev)
    c, p = _identity(cur, by_hash), _identity(prev, by_hash)
    cur_public = set().union(*(c.get(s, set()) for s in PUBLIC))
    prev_public = set().union(*(p.get(s, set()) for s in PUBLIC))
    leaked = set(cur_public & p.get("private_eval", set()))
    committed = {str(r["commitment"]) for r in prev if by_hash and r.get("split_id") == "private_eval"
                 and "content_hash" not in r and r.get("commitment")}
    out: dict[str, Any] = {}
    if committed and key is None:
        out["error"] = ("the previous release lists its private instances by keyed commitment: give its split key "
                        "(--key-file) to check that none of them is public now")
    elif committed and key is not None:
        leaked |= {h for h in cur_public if instance_commitment(key, h) in committed}
    novel = cur_public - prev_public
    novelty = len(novel) / len(cur_public) if cur_public else 0.0
    return {"name": "rotation", "ok": not leaked and novelty >= MIN_NOVELTY and "error" not in out,
            "identity": "content_hash" if by_hash else "instance_id",
            "previous_private_now_public": sorted(leaked), "public": len(cur_public), "novel_public": len(novel),
            "public_novelty": round(novelty, 6), "min_public_novelty": MIN_NOVELTY, **out}


def refuse_core(panel: str | None, what: str) -> None:
    """The one-line refusal of a panel other than full where official is claimed (DEC-056)."""
    if panel is not None and panel != "full":
        raise Gf01Error(f"{what} claims to be official, and DEC-056 requires the full panel (random, greedy, search, "
                        f"tool, oracle): --panel {panel} is for smoke checks that do not", field="--panel")


def release_root(directory: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(the directory holding the release's files, the directory to scan for leaks): a package's ``artifacts/`` and
    the whole package, or a release directory twice."""
    root = _release_dir(directory)
    if (root / "package.json").is_file() and (root / "artifacts").is_dir():
        return root / "artifacts", root
    return root, root


def check(directory: str | os.PathLike[str], *, previous: str | os.PathLike[str] | None = None,
          panel: str = "full", holder: bool = False, key: bytes | None = None,
          provisional_caps: bool = False, rendered: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every check of the module docstring on the release ``directory`` (a release directory or a package);
    ``ok`` when all pass. ``holder``: the key holder's own release, whose private runs are expected (no sealing
    check); otherwise the release is public and must not leak the private split (report/sealing.py). ``key``: the
    previous release's split key (rotation against its committed private instances). ``provisional_caps``: the
    release states that its diagnostic caps are provisional (a package records the statement). ``rendered``: the
    renderings of one report by file name (:func:`reproduction` reuses them for that report)."""
    from gf01_formal.instances.splits import policy_check
    from gf01_formal.report.coverage import coverage, load_manifest
    from gf01_formal.report.load import load_runs
    from gf01_formal.report.sealing import sealing

    refuse_core(panel, "a release check")
    root, scan_root = release_root(directory)
    for name in REQUIRED:
        if not (root / name).is_file():
            raise Gf01Error(f"a release holds {', '.join(REQUIRED)}; {name} is missing", file=str(root))
    checks: list[dict[str, Any]] = []
    man_path = root / "split_manifest.json"
    try:
        pol = policy_check(read_json(man_path), file=str(man_path))
        checks.append({"name": "split_policy", "ok": True, **pol})
    except Gf01Error as ex:
        checks.append({"name": "split_policy", "ok": False, "error": str(ex)})
    if previous is not None:
        prev = Path(previous)
        prev = prev / "split_manifest.json" if prev.is_dir() else prev
        checks.append(rotation(man_path, prev, key))
    else:
        checks.append({"name": "rotation", "ok": True, "skipped": True,
                       "note": "no previous release given (--previous): nothing to rotate against"})
    manifest = load_manifest(man_path)
    # A public package's report is against its public manifest (the public rows of split_manifest.json).
    rep_name = PUBLIC_MANIFEST if not holder and (root / PUBLIC_MANIFEST).is_file() else "split_manifest.json"
    rep_manifest = manifest if rep_name == "split_manifest.json" else public_manifest(root, manifest)
    runs = load_runs([root / "runs.jsonl"])
    report = read_json(root / "report.json")
    rep_cov = report.get("coverage") if isinstance(report, dict) else None
    rep_ok = (isinstance(report, dict) and report.get("inputs", {}).get("digest") == runs.digest
              and isinstance(rep_cov, dict) and rep_cov.get("manifest_digest") == rep_manifest.digest)
    checks.append({"name": "report", "ok": bool(rep_ok), "runs_digest": runs.digest,
                   "manifest_digest": rep_manifest.digest,
                   **({} if rep_ok else {"error": "report.json is not the report of these runs against this manifest "
                                                  "(make it with: gf01 report runs.jsonl --manifest "
                                                  f"{rep_name})"})})
    checks.append(reproduction(root, runs, rep_manifest, report, rep_name, rendered))
    cov = coverage(runs.records, manifest, panel)
    verdict = cov["panel"]
    rows, incomplete = cov["slices"], verdict["incomplete"]
    attested = root / PRIVATE_RESULTS
    if not holder and attested.is_file():
        # A public release holds no private runs: private_eval coverage is the holder's, attested with commitments.
        res = read_json(attested)
        rcov = res.get("coverage") if isinstance(res, dict) else None
        if not isinstance(rcov, dict) or rcov.get("panel") != panel:
            raise Gf01Error(f"{PRIVATE_RESULTS} holds no private_eval coverage of the {panel} panel",
                            file=str(attested))
        rows = [r for r in rows if r["split_id"] != "private_eval"] + list(rcov.get("slices") or [])
        incomplete = [p for p in incomplete if p["split_id"] != "private_eval"] + list(rcov.get("incomplete") or [])
    tracks: dict[str, list[str]] = {}
    for row in rows:
        if row["missing"] == 0 and row["expected"]:
            tracks.setdefault(f"{row['split_id']}/{row['mode']}", [])
            if row["eval_track"] not in tracks[f"{row['split_id']}/{row['mode']}"]:
                tracks[f"{row['split_id']}/{row['mode']}"].append(row["eval_track"])
    checks.append({"name": "coverage", "ok": not incomplete, "panel": panel, "required": verdict["required"],
                   "incomplete": incomplete, "covered_tracks": {k: sorted(v) for k, v in sorted(tracks.items())},
                   **({"private_eval": f"attested by {PRIVATE_RESULTS}"} if not holder and attested.is_file()
                      else {})})
    checks.append(_layout(root, man_path))
    checks.append(caps_gate(root, scan_root, report, provisional_caps))
    if holder:
        checks.append({"name": "sealing", "ok": True, "skipped": True,
                       "note": "the key holder's release (--holder): its private runs are expected"})
    else:
        checks.append(sealing(scan_root, man_path, (*REQUIRED, *OPTIONAL)))
    return {"ok": all(c["ok"] for c in checks), "checks": checks, "holder": holder}


#: The report's files in a release, in the order ``gf01 report -o`` writes them in the rerun script.
REPORT_FILES = ("report.json", "report.md", "report.html")


def report_panel(report: Any) -> str | None:
    """The panel a release's report was computed with (its coverage verdict's level), None when it names none."""
    from gf01_formal.agents import PANELS

    level = ((report.get("coverage") or {}).get("panel") or {}).get("level") if isinstance(report, dict) else None
    return level if level in PANELS else None


def caps_file(root: Path, report: Any) -> str | None:
    """The release file the report's diagnostic caps come from (campaign.json, else caps.json); None when the report
    names no caps."""
    if not (isinstance(report, dict) and report.get("caps")):
        return None
    return "campaign.json" if (root / "campaign.json").is_file() else "caps.json"


def caps_gate(root: Path, scan_root: Path, report: Any, stated: bool) -> dict[str, Any]:
    """The ``caps`` check: a release whose diagnostic caps are provisional (derived before the DEC-021 checkpoint:
    the report's caps section, campaign.json's diagnostic, caps.json) passes only when it states them, by
    ``--allow-provisional-caps`` or, in a package, by the statement package.json records."""
    from gf01_formal.report.caps import load_caps

    found: list[str] = []
    section = report.get("caps") if isinstance(report, dict) else None
    if isinstance(section, dict) and section.get("provisional"):
        found.append(f"report.json (from {section.get('sample_instances')} pilot instance(s))")
    for name in ("campaign.json", "caps.json"):
        if (root / name).is_file():
            try:
                caps = load_caps(root / name)
            except Gf01Error:  # a campaign without a capped diagnostic, or another file: no caps to gate
                continue
            if caps.provisional:
                found.append(f"{name} (from {caps.sample_instances} pilot instance(s))")
    pkg = scan_root / "package.json"
    if not stated and pkg.is_file():
        data = read_json(pkg)
        stated = isinstance(data, dict) and bool((data.get("provisional_caps") or {}).get("stated"))
    out: dict[str, Any] = {"name": "caps", "ok": not found or stated, "provisional": found}
    if found and stated:
        out["note"] = "provisional caps, stated by the release"
    elif found:
        out["error"] = (f"provisional caps in {', '.join(found)}: derived before the DEC-021 checkpoint; publish "
                        "them only stated (--allow-provisional-caps)")
    return out


def report_caps(root: Path, report: Any) -> dict[str, Any] | None:
    """The caps section to compute the report again with (what the report names, read from the release)."""
    from gf01_formal.report.caps import load_caps

    name = caps_file(root, report)
    return None if name is None else load_caps(root / name).report_section()


def private_section(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The private_eval headline a public package's report shows, from its ``private_eval.results.json``: the key
    holder's headline rows of the sealed split (aggregates only: rates with intervals per track, agent and mode;
    nothing per instance) and the commitments that attest them. None for a results file made before it carried the
    headline."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict) or data.get("schema_version") != PRIVATE_RESULTS_SCHEMA:
        raise Gf01Error(f"is not a package's private_eval results ({PRIVATE_RESULTS_SCHEMA})", file=str(path),
                        field="schema_version")
    if "headline" not in data:
        return None
    rows = data["headline"]
    if not isinstance(rows, list) or not all(
            isinstance(h, dict) and isinstance(h.get("key"), dict) and isinstance(h.get("agents"), list)
            and h["key"].get("split_id") == "private_eval" for h in rows):
        raise Gf01Error("holds private_eval headline rows (a key whose split_id is private_eval, and agents)",
                        file=str(path), field="headline")
    com = data.get("commitments") if isinstance(data.get("commitments"), dict) else {}
    inputs = data.get("inputs") if isinstance(data.get("inputs"), dict) else {}
    return {"source": PRIVATE_RESULTS, "headline": rows, "price_per_mtok": data.get("price_per_mtok"),
            "full_runs": inputs.get("runs"), "full_runs_digest": com.get("full_runs_digest"),
            "full_report_sha256": com.get("full_report_sha256")}


def with_private(report: dict[str, Any], section: dict[str, Any] | None) -> dict[str, Any]:
    """``report`` with the private_eval section (:func:`private_section`) its renderings show first; as it is when
    there is none."""
    return report if section is None else {**report, "private_eval": section}


def public_manifest(root: Path, manifest: Manifest) -> Manifest:
    """The public manifest of a public package, which must hold exactly the public rows of the split manifest."""
    from gf01_formal.report.coverage import load_manifest

    pub = load_manifest(root / PUBLIC_MANIFEST)
    if pub.entries != {i: e for i, e in manifest.entries.items() if e[0] != "private_eval"}:
        raise Gf01Error("does not hold exactly the public rows of split_manifest.json", file=str(root /
                                                                                              PUBLIC_MANIFEST))
    return pub


def reproduction(root: Path, runs: Runs, manifest: Manifest, report: Any,
                 manifest_name: str = "split_manifest.json",
                 rendered: Mapping[str, str] | None = None) -> dict[str, Any]:
    """report.json, report.md and report.html (those present) against the report computed again from the release's
    runs and manifest with the report's own panel, byte for byte (the claim rerun.sh makes of a package).

    ``rendered``: renderings already made of one report, by file name, report.json's text among them. When the
    report computed again has that very report.json text, its other renderings are taken from ``rendered`` rather
    than drawn again: a rendering is a function of the report alone (byte-identity, DEC-024), and the HTML page's
    figures are most of a check's time (package() would draw the public page twice)."""
    from gf01_formal.report.build import build_report, software
    from gf01_formal.report.render import html_page, markdown

    panel = report_panel(report)
    # A public package's report shows the private_eval headline of its results file (rerun.sh passes it too).
    private = (root / PRIVATE_RESULTS if manifest_name == PUBLIC_MANIFEST and (root / PRIVATE_RESULTS).is_file()
               else None)
    section = None if private is None else private_section(private)
    fresh = with_private(build_report(runs, manifest=manifest, panel=panel, caps=report_caps(root, report)),
                         section)
    render = {"report.json": pretty_json, "report.md": markdown, "report.html": html_page}
    fresh_json = pretty_json(fresh)
    known = dict(rendered) if rendered is not None and rendered.get("report.json") == fresh_json else {}
    known["report.json"] = fresh_json
    files: dict[str, str] = {}
    for name in REPORT_FILES:
        path = root / name
        if not path.is_file():
            files[name] = "absent"
            continue
        # Rendered only when present: the HTML draws every figure, the costly part of a check.
        text = known[name] if name in known else render[name](fresh)
        files[name] = "identical" if path.read_bytes() == text.encode("utf-8") else "differs"
    differ = [n for n in REPORT_FILES if files[n] == "differs"]
    out: dict[str, Any] = {"name": "reproduction", "ok": not differ, "panel": panel, "files": files}
    if differ:
        made = isinstance(report, dict) and report.get("software")
        now = software()
        versions = "" if made == now else (f"; report.json lists other software versions ({_versions(made)}) than "
                                           f"these ({_versions(now)}), and byte-identity holds on the same versions")
        again = " ".join(f"-o {n}" for n in REPORT_FILES if files[n] != "absent")
        out["error"] = (f"{', '.join(differ)} {'differs' if len(differ) == 1 else 'differ'} from the report computed "
                        f"again from runs.jsonl and {manifest_name} (make "
                        f"{'it' if len(differ) == 1 else 'them'} again with: gf01 report runs.jsonl --manifest "
                        f"{manifest_name}{f' --panel {panel}' if panel else ''}"
                        f"{f' --private-results {PRIVATE_RESULTS}' if section else ''} {again}){versions}")
    return out


def _versions(software: Any) -> str:
    """``name version, ...`` of a report's software listing (``none`` when it has none)."""
    if not isinstance(software, dict) or not software:
        return "none"
    return ", ".join(f"{k} {v}" for k, v in sorted(software.items()))


def _listed(row: dict[str, Any]) -> Any:
    """What a manifest or private hash list says of one instance: its content hash, or its keyed commitment."""
    return row.get("content_hash") if "content_hash" in row else row.get("commitment")


def _layout(root: Path, man_path: Path) -> dict[str, Any]:
    rows = _manifest_rows(man_path)
    expected = {s: {r.get("instance_id"): _listed(r) for r in rows if r.get("split_id") == s}
                for s in (*PUBLIC, "private_eval")}
    problems = []
    present = []
    for split in PUBLIC:
        path = root / f"{split}.bundle.json"
        if path.exists():
            present.append(path.name)
            data = read_json(path)
            got = {i.get("instance_id"): i.get("content_hash") for i in (data.get("instances") or [])
                   if isinstance(i, dict)} if isinstance(data, dict) else {}
            if got != expected[split]:
                problems.append(f"{path.name} does not hold exactly the manifest's {split} instances")
    path = root / "private_eval.hashes.json"
    if path.exists():
        present.append(path.name)
        data = read_json(path)
        got = {i.get("instance_id"): _listed(i) for i in (data.get("instances") or [])
               if isinstance(i, dict)} if isinstance(data, dict) else {}
        if got != expected["private_eval"]:
            problems.append(f"{path.name} does not list exactly the manifest's private_eval instances")
    return {"name": "layout", "ok": not problems, "files": present, "problems": problems,
            **({"note": "no release layout files (gf01 split --release) to compare"} if not present else {})}


def failed_names(result: dict[str, Any]) -> str:
    """The failed checks, for a one-line error."""
    parts = []
    for c in result["checks"]:
        if c["ok"]:
            continue
        if c["name"] == "coverage":
            from gf01_formal.report.coverage import describe_missing

            parts.append(f"coverage ({describe_missing(c['incomplete'])})")
        elif c["name"] == "rotation":
            parts.append(f"rotation ({c['error']})" if c.get("error") else
                         f"rotation ({len(c['previous_private_now_public'])} earlier private instance(s) now public, "
                         f"novelty {c['public_novelty']} vs {MIN_NOVELTY})")
        else:
            parts.append(f"{c['name']} ({c.get('error') or '; '.join(c.get('problems', []))})")
    return "; ".join(parts)


# -- the package --------------------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


#: The extra a package's report needs (statsmodels, scipy, matplotlib): what rerun.sh installs with the wheel.
RERUN_EXTRA = "report"
#: The oldest setuptools that builds this project: pyproject.toml's ``license = "Apache-2.0"`` (PEP 639) and its
#: build-system requirement.
MIN_SETUPTOOLS = (77,)


def toolkit(out: Path) -> dict[str, Any]:
    """The exact gf01-formal that makes a package, written under ``out/toolkit/``: its version, the Python it ran
    on, and when it runs from a git checkout, the commit, whether the checkout had uncommitted changes, and a wheel
    built offline from the checkout's tracked files as they are (``wheel``: path and sha256); ``requirements``: the
    pinned versions of every distribution it and its ``report`` extra ran with. Where no wheel can be built (an
    installed gf01-formal, no git, setuptools older than 77, a failed build) ``wheel`` is None and ``why`` says
    so."""
    import platform
    import subprocess

    import gf01_formal
    from gf01_formal.report.build import software

    info: dict[str, Any] = {"version": software()["gf01-formal"], "python": platform.python_version(),
                            "commit": None, "dirty": None, "wheel": None, "requirements": None, "why": None}
    (out / "toolkit").mkdir(exist_ok=True)
    pins = pinned_requirements(RERUN_EXTRA)
    (out / "toolkit" / "requirements.txt").write_text(
        f"# What gf01-formal {info['version']} and its [{RERUN_EXTRA}] extra ran with when this package was made "
        f"(Python {info['python']}): rerun.sh installs the wheel under these pins.\n" + "".join(
            f"{n}=={v}\n" for n, v in pins), encoding="utf-8")
    info["requirements"] = "toolkit/requirements.txt"
    src = Path(gf01_formal.__file__).resolve().parent.parent
    if not (src / "pyproject.toml").is_file():
        info["why"] = "made from an installed gf01-formal, not from a checkout: no wheel of it was built"
        return info

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(src), *args], capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--verify", "HEAD")
    if commit is None:
        info["why"] = f"{src} is not a git checkout (its tracked files are unknown): no wheel of it was built"
        return info
    dirty = git("status", "--porcelain", "--untracked-files=no")
    info.update(commit=commit, dirty=dirty is None or dirty != "")
    tracked = git("ls-files", "-z")
    epoch = git("log", "-1", "--format=%ct", commit)
    wheel, why = build_wheel(src, (tracked or "").split("\0"), out / "toolkit", epoch or "0")
    info.update(wheel=wheel and {"path": f"toolkit/{wheel.name}", "sha256": _sha256(wheel)}, why=why)
    return info


def pinned_requirements(extra: str) -> list[tuple[str, str]]:
    """(name, installed version) of every distribution gf01-formal with ``extra`` requires, transitively, in name
    order: the environment a package's report was computed in (importlib.metadata, as installed here)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [("gf01-formal", frozenset({extra}))]
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in {"", *extras}):
                continue
            dep = canonicalize_name(req.name)
            if dep != "gf01-formal":
                try:
                    pins[dep] = distribution(dep).version
                except PackageNotFoundError:  # an optional dependency not installed here: nothing ran with it
                    continue
            todo.append((dep, frozenset(req.extras)))
    return sorted(pins.items())


def build_wheel(src: Path, files: list[str], dest: Path, epoch: str) -> tuple[Path | None, str | None]:
    """A wheel of the checkout ``src`` (its tracked ``files`` as they are in the work tree, copied aside so the
    checkout gets no build/ or egg-info) into ``dest``, by setuptools' own build backend in a child process: no
    index, no network, no build isolation. ``SOURCE_DATE_EPOCH`` (the commit's time) fixes the archive's
    timestamps, so the same tree gives the same bytes. (the wheel, None) or (None, why not)."""
    import subprocess
    import sys
    from importlib.metadata import PackageNotFoundError, version

    try:
        have = version("setuptools")
    except PackageNotFoundError:
        have = None
    if have is None or tuple(int(p) for p in re.findall(r"\d+", have)[:1]) < MIN_SETUPTOOLS:
        return None, (f"building the wheel offline needs setuptools>=77 (pyproject.toml's build backend); here it "
                      f"is {have or 'not installed'}: pip install 'setuptools>=77'")
    with tempfile.TemporaryDirectory(prefix="gf01-wheel.") as tmp:
        tree, built = Path(tmp) / "src", Path(tmp) / "dist"
        for name in files:
            if name and (src / name).is_file():  # a tracked file deleted in the work tree is not part of it
                (tree / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src / name, tree / name)
                (tree / name).chmod((src / name).stat().st_mode & 0o755 | 0o644)
        env = {**os.environ, "SOURCE_DATE_EPOCH": epoch, "PYTHONDONTWRITEBYTECODE": "1"}
        code = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
        try:
            done = subprocess.run([sys.executable, "-c", code, str(built)], cwd=tree, env=env, capture_output=True,
                                  timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as ex:
            return None, f"the wheel build did not finish: {ex}"
        names = sorted(built.glob("*.whl")) if done.returncode == 0 else []
        if len(names) != 1:
            last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
            return None, f"the wheel build failed: {last[:300]}"
        shutil.copyfile(names[0], dest / names[0].name)
    return dest / names[0].name, None


def rerun_command(panel: str | None, files: tuple[str, ...], caps: str | None, manifest: str,
                  private: bool) -> str:
    """The arguments of the one ``gf01 report`` that rerun.sh runs (and RERUN.md quotes), after ``-m gf01_formal``."""
    opts = f" --panel {panel}" if panel else ""
    opts += f" --caps artifacts/{caps}" if caps else ""
    opts += f" --private-results artifacts/{PRIVATE_RESULTS}" if private else ""
    outs = " ".join(f"-o rerun/{f}" for f in files)
    return f"report artifacts/runs.jsonl --manifest artifacts/{manifest}{opts} {outs}"


def install_command(kit: dict[str, Any]) -> str | None:
    """The pip install of the toolkit's wheel (with the report's extra, under the pinned versions) that rerun.sh
    runs in its fresh virtual environment, and RERUN.md quotes; None when the package holds no wheel."""
    if not kit.get("wheel"):
        return None
    return f"pip install -c {kit['requirements']} '{kit['wheel']['path']}[{RERUN_EXTRA}]'"


#: How rerun.sh shows a difference: which lines, as a unified diff of them (at most this many lines of it).
DIFF_LINES = 40


def rerun_script(panel: str | None, files: tuple[str, ...] = REPORT_FILES, caps: str | None = None,
                 manifest: str = "split_manifest.json", kit: dict[str, Any] | None = None,
                 private: bool = False) -> str:
    """The POSIX shell script that checks the package's hashes, installs the toolkit's wheel into a fresh virtual
    environment and re-renders the report from its runs, in the formats the package holds (``files``: report.json
    and those of report.md, report.html it ships), comparing each byte for byte and naming the lines that differ.
    ``caps``: the artifact the report's diagnostic caps come from; ``manifest``: the one the report's coverage is
    against; ``private``: the report shows the private_eval headline of the package's results file; ``kit``:
    :func:`toolkit`. Every missing piece (Python, venv, the wheel, the index) stops it with one line saying what to
    install (exit 2)."""
    kit = kit or {"version": "unknown", "python": None, "commit": None, "wheel": None, "why": "unknown toolkit"}
    wheel = kit.get("wheel")
    pip = install_command(kit)
    where = f"commit {kit['commit']}" if kit.get("commit") else "no commit recorded"
    if wheel:
        install = f"""    if [ -n "${{RERUN_SYSTEM_SITE:-}}" ]; then
        "$VENV/bin/python" -m pip install --no-deps '{wheel['path']}' >rerun/install.log 2>&1 || fail=1
    else
        "$VENV/bin/python" -m {pip} >rerun/install.log 2>&1 || fail=1
    fi
    if [ -n "${{fail:-}}" ]; then
        echo "rerun.sh: pip could not install {wheel['path']} into $VENV (rerun/install.log says why): it takes \\
its pinned dependencies ({kit['requirements']}) from the package index; offline, set RERUN_SYSTEM_SITE=1 and a \\
PYTHON that has them" >&2
        exit 2
    fi"""
        check_wheel = f"""with open("{wheel['path']}", "rb") as fh:
    if hashlib.sha256(fh.read()).hexdigest() != "{wheel['sha256']}":
        sys.exit("sha256 mismatch: {wheel['path']} is not the wheel this script names ({wheel['sha256']})")
print("wheel: {wheel['path']} is gf01-formal {kit['version']} ({where}), sha256 {wheel['sha256']}")
"""
    else:
        install = f"""    echo "rerun.sh: this package holds no wheel of the gf01-formal that made it \\
({kit.get('why')}): install gf01-formal {kit['version']} ({where}) and set GF01_PYTHON to its python" >&2
    exit 2"""
        check_wheel = ""
    report = rerun_command(panel, files, caps, manifest, private)
    return f"""#!/bin/sh
# Reproduce every table and figure of the report from this package alone (RERUN.md says what each step does).
set -eu
cd "$(dirname "$0")"
PY="${{PYTHON:-python3}}"
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "rerun.sh: no $PY here: install Python 3.11 or newer (python3), or set PYTHON to one" >&2
    exit 2
fi
# 1. Every file against SHA256SUMS, and the toolkit's wheel against the sha256 written here.
"$PY" - <<'EOF'
import hashlib, sys
bad = []
for line in open("SHA256SUMS", encoding="utf-8"):
    digest, name = line.rstrip("\\n").split("  ", 1)
    with open(name, "rb") as fh:
        if hashlib.sha256(fh.read()).hexdigest() != digest:
            bad.append(name)
if bad:
    sys.exit("sha256 mismatch: " + ", ".join(bad))
print("sha256: every file matches SHA256SUMS")
{check_wheel}EOF
mkdir -p rerun
# 2. The toolkit: GF01_PYTHON (an interpreter that has gf01-formal), else the wheel in a fresh virtual environment.
if [ -n "${{GF01_PYTHON:-}}" ]; then
    RUN="$GF01_PYTHON"
    if ! "$RUN" -c 'import gf01_formal' 2>/dev/null; then
        echo "rerun.sh: $RUN has no gf01-formal: unset GF01_PYTHON to install this package's wheel into a fresh \\
virtual environment, or install gf01-formal {kit['version']} ({where}) there" >&2
        exit 2
    fi
else
    if ! "$PY" -c 'import venv, ensurepip' 2>/dev/null; then
        echo "rerun.sh: $PY cannot make a virtual environment with pip: install python3-venv (Debian, Ubuntu), or \\
set PYTHON to a Python that has venv and ensurepip" >&2
        exit 2
    fi
    if [ -n "${{RERUN_VENV:-}}" ]; then
        VENV="$RERUN_VENV"
        if [ -e "$VENV" ]; then
            echo "rerun.sh: RERUN_VENV=$VENV exists: name a new directory (the environment must be fresh)" >&2
            exit 2
        fi
    else
        VENV="$(mktemp -d "${{TMPDIR:-/tmp}}/gf01-rerun.XXXXXX")/venv"
        trap 'rm -rf "$(dirname "$VENV")"' EXIT
    fi
    "$PY" -m venv ${{RERUN_SYSTEM_SITE:+--system-site-packages}} "$VENV"
{install}
    RUN="$VENV/bin/python"
fi
"$RUN" - <<'EOF'
import platform, sys
from importlib.metadata import PackageNotFoundError, version
try:
    have = version("gf01-formal")
except PackageNotFoundError:
    have = "not installed"
if have != "{kit['version']}":
    print("rerun.sh: note: gf01-formal " + have + " here, {kit['version']} made the package: the report is "
          "byte-identical on the same versions only", file=sys.stderr)
if platform.python_version() != "{kit.get('python')}":
    print("rerun.sh: note: Python " + platform.python_version() + " here, {kit.get('python')} made the package",
          file=sys.stderr)
EOF
# 3. The report, computed again from the package's runs.
"$RUN" -m gf01_formal {report}
# 4. Byte for byte against the packaged report; a difference is named by its lines.
"$RUN" - {" ".join(files)} <<'EOF'
import difflib, sys
differ = []
for name in sys.argv[1:]:
    with open("artifacts/" + name, "rb") as fh:
        want = fh.read()
    with open("rerun/" + name, "rb") as fh:
        got = fh.read()
    if got == want:
        continue
    differ.append(name)
    a = want.decode("utf-8", "replace").splitlines()
    b = got.decode("utf-8", "replace").splitlines()
    hunks = [line[:160] for line in difflib.unified_diff(a, b, "artifacts/" + name, "rerun/" + name, n=0,
                                                         lineterm="")]
    print("\\n".join(hunks[:{DIFF_LINES}] + (["... (" + str(len(hunks) - {DIFF_LINES}) + " more diff lines)"]
                                           if len(hunks) > {DIFF_LINES} else [])), file=sys.stderr)
    spans = []
    for h in hunks:
        if h.startswith("@@"):  # "@@ -start[,count] +..." of the packaged file: its lines that differ
            start, _, count = h.split(" ")[1][1:].partition(",")
            n = int(count or 1)
            spans.append(start if n == 1 else "after " + start if n == 0 else start + "-" + str(int(start) + n - 1))
    print("rerun.sh: rerun/" + name + " differs from artifacts/" + name + " at line(s) " + ", ".join(spans)
          + " of " + str(len(a)), file=sys.stderr)
if differ:
    sys.exit(1)
EOF
echo "reproduced: {" ".join(files)} (tables{" and figures" if "report.html" in files else ""}) are byte-identical"
"""


FORMAT_NAMES = {"report.json": "JSON", "report.md": "Markdown", "report.html": "HTML"}


def rerun_md(report_files: tuple[str, ...], packaged: tuple[str, ...], manifest: str = "split_manifest.json",
             kit: dict[str, Any] | None = None, panel: str | None = None, caps: str | None = None,
             private: bool = False) -> str:
    """RERUN.md of a package: what ``rerun.sh`` does, step by step and with its very commands, naming only files the
    package holds (``report_files``: the renderings it recomputes; ``packaged``: the release files copied into
    ``artifacts/``; the rest as :func:`rerun_script` takes them)."""
    kit = kit or {"version": "unknown", "python": None, "commit": None, "wheel": None, "why": "unknown toolkit"}
    formats = [FORMAT_NAMES[f] for f in report_files]
    said = ", ".join(formats[:-1]) + (" and " if len(formats) > 1 else "") + formats[-1]
    compared = ", ".join(f"`artifacts/{f}`" for f in report_files)
    report = rerun_command(panel, report_files, caps, manifest, private)
    lines = [
        "# Reproducing this release",
        "",
        "`sh rerun.sh` does the steps below, in this order, and stops at the first that fails: exit 1 when a file "
        "or the report differs, exit 2 when something it needs is missing, saying in one line what to install. The "
        "report is byte-reproducible on the same versions of gf01-formal, numpy, scipy, statsmodels and matplotlib "
        "(the report lists them; step 2 installs them).",
        "",
        *_toolkit_lines(kit),
        "1. Every file is checked against `SHA256SUMS` (sha256, the format of `sha256sum -c`)"
        + (f", and the wheel against its sha256 written into the script ({kit['wheel']['sha256']})."
           if kit.get("wheel") else "."),
        *_install_lines(kit),
        f"3. The report is computed again from `artifacts/runs.jsonl` and `artifacts/{manifest}` alone, as {said}: "
        f"`python -m gf01_formal {report}`"
        + (f" (the private_eval headline at its top comes from `artifacts/{PRIVATE_RESULTS}`)." if private else "."),
        f"4. Each is compared byte for byte with {compared}; a file that differs is named with the lines that "
        f"differ (their unified diff, at most {DIFF_LINES} lines of it, on standard error).",
    ]
    if "report.html" in report_files:
        lines.append("   The HTML embeds every figure of the report (the headline's Score_C and goal rates per agent, "
                     "Score_C by complexity quartile per agent with 95 % Wilson intervals, the Eff_t distributions, "
                     "manifest coverage) as SVG, so a byte-identical HTML file is a byte-identical set of figures.")
    lines.append("   The figures' data are also in `report.json` (`headline`, `figures`).")
    lines += ["", "What needs more than the package: `gf01 report --official` re-verifies every certificate against "
              "the instances, and `gf01 pilot-analyze` reads the complexity knobs of every instance; the private_eval "
              "instances are published as hashes only, so those two need the full bundle."]
    produced = [f"`artifacts/{n}`" for n in ("validation.json", "analysis.json") if n in packaged]
    if produced:
        lines.append(f"Their outputs are packaged as produced ({', '.join(produced)}).")
    lines.append("`gf01 release check artifacts` repeats the publication checks on the packaged files.")
    return "\n".join(_wrap(line) for line in lines) + "\n"


def _toolkit_lines(kit: dict[str, Any]) -> list[str]:
    """Step 0 of RERUN.md: which gf01-formal made the package, and what the package holds of it."""
    where = f"commit {kit['commit']}" if kit.get("commit") else "no git commit recorded"
    if kit.get("dirty"):
        where += " with uncommitted changes (the wheel holds them; the commit alone does not)"
    pins = (f" `{kit['requirements']}` pins every package it ran with (Python {kit.get('python')})."
            if kit.get("requirements") else "")
    if kit.get("wheel"):
        return [f"0. The toolkit: `{kit['wheel']['path']}` is the gf01-formal that made this package (version "
                f"{kit['version']}, {where}; sha256 {kit['wheel']['sha256']}, also in `package.json` and "
                f"`SHA256SUMS`).{pins}"]
    return [f"0. The toolkit: gf01-formal {kit['version']} ({where}) made this package, which holds no wheel of it "
            f"({kit.get('why')}).{pins}"]


def _install_lines(kit: dict[str, Any]) -> list[str]:
    """Step 2 of RERUN.md: how rerun.sh gets an interpreter with that toolkit."""
    pip = install_command(kit)
    reuse = ("`GF01_PYTHON=/path/to/python sh rerun.sh` uses an interpreter that already has gf01-formal instead "
             "(no environment, no install; the script notes another version of gf01-formal or Python).")
    if pip is None:
        return [f"2. `GF01_PYTHON=/path/to/python sh rerun.sh`: an interpreter that has gf01-formal {kit['version']} "
                "(without it the script stops, saying so: the package has no wheel to install). The script notes "
                "another version of gf01-formal or Python."]
    return [f"2. A fresh virtual environment, `$PYTHON -m venv` (`PYTHON` defaults to `python3`), in `$RERUN_VENV` "
            "(a directory that must not exist yet; by default a temporary one, removed at the end), gets the wheel "
            f"with its `{RERUN_EXTRA}` extra under the pinned versions, from the package index: `python -m {pip}` "
            "(its output in `rerun/install.log`). Offline, `RERUN_SYSTEM_SITE=1` makes the environment with "
            f"`--system-site-packages` and runs `pip install --no-deps '{kit['wheel']['path']}'`: the dependencies "
            f"are then those in `$PYTHON`'s own site-packages (a system Python's: a virtual environment's python "
            f"makes an environment over its base). {reuse}"]


RERUN_PUBLIC = """
This is a public package (docs/release.md): the runs and the report are those of the public splits
(public_dev, public_val), the report against `artifacts/public_split_manifest.json` (the public rows of
`artifacts/split_manifest.json`); the private_eval instances are published as content hashes only, and their results as
aggregates in `artifacts/private_eval.results.json`, with commitments (sha256 of the split key, of the private
instances, of the private runs and of the full report) that a later reveal by the key holder is checked against.
`gf01 report --official` and `gf01 pilot-analyze` need the instances themselves; `validation.json` is packaged as
produced.
"""

RERUN_HOLDER = """
This is the key holder's package: it holds every run, the private_eval ones included, and must not be published.
"""


def _wrap(line: str, width: int = 118) -> str:
    """One paragraph line wrapped at ``width`` (list items keep their indentation)."""
    import textwrap

    if len(line) <= width:
        return line
    indent = "   " if line[:2].rstrip(".").isdigit() or line.startswith("   ") else ""
    return textwrap.fill(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def package(directory: str | os.PathLike[str], out: str | os.PathLike[str], *, panel: str = "full",
            previous: str | os.PathLike[str] | None = None, holder: bool = False, key: bytes | None = None,
            provisional_caps: bool = False) -> dict[str, Any]:
    """Package the key holder's release ``directory`` (which must pass :func:`check` with ``holder=True``) into
    ``out`` with SHA256SUMS, package.json, RERUN.md and rerun.sh.

    By default the package is public (docs/release.md): public instances and their runs in full, the report of the
    public runs, and for private_eval only ``private_eval.results.json`` (aggregates, coverage, commitments); it
    must pass the public :func:`check` (sealing included) or nothing is written. ``holder``: everything, as is.
    ``out`` must not exist (or be an empty directory); the package is built beside it and renamed into place, so
    an interrupted packaging leaves nothing half-written.
    """
    from gf01_formal.report.build import software

    root = _release_dir(directory)
    # A symlink (dangling or not) is followed, never replaced: os.replace onto the link would swap the link itself.
    target = Path(os.path.realpath(out)) if Path(out).is_symlink() else Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise Gf01Error("exists and is not an empty directory; give a new directory", file=str(target))
    result = check(root, previous=previous, panel=panel, holder=True, key=key, provisional_caps=provisional_caps)
    if not result["ok"]:
        raise Gf01Error(f"the release fails its checks: {failed_names(result)}", file=str(root))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as ex:
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=str(out)) from None
    try:
        arts = tmp / "artifacts"
        arts.mkdir()
        if holder:
            _copy_all(root, arts)
        else:
            rendered = _public_artifacts(root, arts, panel)
            result = check(arts, previous=previous, panel=panel, key=key, provisional_caps=provisional_caps,
                           rendered=rendered)
            if not result["ok"]:
                raise Gf01Error(f"the public package fails its checks: {failed_names(result)}", file=str(root))
        report = read_json(arts / "report.json")
        # Only the formats the package ships are recomputed and compared: cmp on a rendering the package does not
        # hold would fail the script of a release that passed its checks.
        shipped = tuple(n for n in REPORT_FILES if (arts / n).is_file())
        manifest_name = "split_manifest.json" if holder else PUBLIC_MANIFEST
        private = not holder and private_section(arts / PRIVATE_RESULTS) is not None
        kit = toolkit(tmp)
        how = {"panel": report_panel(report), "caps": caps_file(arts, report), "private": private}
        (tmp / "rerun.sh").write_text(rerun_script(files=shipped, manifest=manifest_name, kit=kit, **how),
                                      encoding="utf-8")
        names = sorted(p.name for p in arts.iterdir() if p.is_file())
        (tmp / "RERUN.md").write_text(rerun_md(shipped, tuple(names), manifest_name, kit, **how)
                                      + (RERUN_HOLDER if holder else RERUN_PUBLIC), encoding="utf-8")
        caps_row = next(c for c in result["checks"] if c["name"] == "caps")
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        entries = [{"path": p.relative_to(tmp).as_posix(), "bytes": p.stat().st_size, "sha256": _sha256(p)}
                   for p in files]
        (tmp / "package.json").write_text(pretty_json({
            "schema_version": PACKAGE_SCHEMA, "kind": "holder" if holder else "public", "software": software(),
            "toolkit": kit,
            "checks": result, "report_digest": report.get("inputs", {}).get("digest"), "files": entries,
            **({"provisional_caps": {"stated": True, "where": caps_row["provisional"]}} if caps_row["provisional"]
               else {})}),
            encoding="utf-8")
        entries.append({"path": "package.json", "sha256": _sha256(tmp / "package.json")})
        (tmp / "SHA256SUMS").write_text("".join(f"{e['sha256']}  {e['path']}\n"
                                                for e in sorted(entries, key=lambda e: e["path"])), encoding="utf-8")
        if target.exists():
            target.rmdir()
        os.replace(tmp, target)
    except OSError as ex:  # a full disk, a quota, a read-only mount met half-way: nothing is left behind
        shutil.rmtree(tmp, ignore_errors=True)
        raise Gf01Error(f"cannot write: {ex.strerror or ex}", file=str(out)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"dir": str(target), "kind": "holder" if holder else "public", "files": len(entries) + 1,
            "sha256sums": hashlib.sha256((target / "SHA256SUMS").read_bytes()).hexdigest()}


def _copy_all(root: Path, arts: Path) -> None:
    for n in (*REQUIRED, *OPTIONAL):
        if (root / n).is_file():
            shutil.copyfile(root / n, arts / n)
    side = root / "runs.jsonl.d"
    if side.is_dir():
        shutil.copytree(side, arts / "runs.jsonl.d")


def _public_artifacts(root: Path, arts: Path, panel: str) -> dict[str, str]:
    """The public package's artifacts: the release's public files, the public runs (with their tool logs) and their
    report, and the private_eval aggregates with the commitments a later reveal is checked against. Returns the
    public report's renderings by file name (report.json's always), for the public check to reuse."""
    import json

    from gf01_formal.report.build import build_report
    from gf01_formal.report.coverage import load_manifest
    from gf01_formal.report.load import load_runs
    from gf01_formal.report.render import html_page, markdown
    from gf01_formal.report.sealing import referenced_hashes

    for n in PUBLIC_COPIED:
        if (root / n).is_file():
            shutil.copyfile(root / n, arts / n)
    manifest = load_manifest(root / "split_manifest.json")
    private_ids = {iid for iid, (split, _) in manifest.entries.items() if split == "private_eval"}
    # The public report's coverage is against the public rows: its private slices are in PRIVATE_RESULTS.
    man_data = read_json(root / "split_manifest.json")
    (arts / PUBLIC_MANIFEST).write_text(pretty_json({**man_data, "instances": [
        r for r in man_data["instances"] if r.get("split_id") != "private_eval"]}), encoding="utf-8")
    public = load_manifest(arts / PUBLIC_MANIFEST)
    public_lines, private = [], hashlib.sha256()
    logs: set[str] = set()
    for line in (root / "runs.jsonl").read_bytes().splitlines(keepends=True):
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("instance_id") in private_ids or rec.get("split_id") == "private_eval":
            private.update(line)
            continue
        public_lines.append(line)
        logs |= referenced_hashes(rec)
    (arts / "runs.jsonl").write_bytes(b"".join(public_lines))
    side = root / "runs.jsonl.d"
    for p in sorted(x for x in side.rglob("*") if x.is_file()) if side.is_dir() else ():
        if p.stem in logs:  # a public run's own side file (tool log, transcript); nothing else
            dest = arts / "runs.jsonl.d" / p.relative_to(side)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)
    full = read_json(root / "report.json")
    level = report_panel(full)
    cov = full.get("coverage") or {}
    verdict = cov.get("panel") or {}
    man = read_json(root / "split_manifest.json")

    def private_rows(rows: Any) -> list[Any]:
        return [r for r in rows or [] if (r.get("key") or r).get("split_id") == "private_eval"]

    (arts / PRIVATE_RESULTS).write_text(pretty_json({
        "schema_version": PRIVATE_RESULTS_SCHEMA,
        "note": "private_eval results of the key holder's full report; the runs and instances behind them are "
                "withheld and committed to (docs/release.md)",
        "commitments": {
            "key_commitment": man.get("key_commitment"),
            **{k: man[k] for k in ("private_bundle_commitment", "private_bundle_sha256") if man.get(k)},
            "private_runs_sha256": private.hexdigest(),
            "full_report_sha256": _sha256(root / "report.json"),
            "full_runs_digest": (full.get("inputs") or {}).get("digest"),
        },
        "inputs": full.get("inputs"),
        "price_per_mtok": full.get("price_per_mtok"),
        "coverage": {"panel": level if level else panel, "slices": private_rows(cov.get("slices")),
                     "incomplete": private_rows(verdict.get("incomplete"))},
        "headline": private_rows(full.get("headline")),
        "groups": private_rows(full.get("groups")),
        "strata": private_rows(full.get("strata")),
    }), encoding="utf-8")
    # The public report, with the private_eval headline of the results file at its top (what a leaderboard reads).
    fresh = with_private(build_report(load_runs([arts / "runs.jsonl"]), manifest=public, panel=level,
                                      caps=report_caps(root, full)), private_section(arts / PRIVATE_RESULTS))
    render = {"report.json": pretty_json, "report.md": markdown, "report.html": html_page}
    rendered = {"report.json": pretty_json(fresh)}
    for n in REPORT_FILES:
        if (root / n).is_file():
            if n not in rendered:
                rendered[n] = render[n](fresh)
            (arts / n).write_text(rendered[n], encoding="utf-8")
    return rendered


def _release_dir(directory: str | os.PathLike[str]) -> Path:
    """``directory`` as a Path when it is one; a Gf01Error naming it otherwise (a name too long is not a crash)."""
    root = Path(directory)
    try:
        ok = root.is_dir()
    except OSError:  # e.g. a name longer than the system allows
        ok = False
    if not ok:
        raise Gf01Error("not a directory (a release directory is expected)", file=quote(os.fspath(directory), 200,
                                                                                           bare=True))
    return root


def reveal(directory: str | os.PathLike[str], bundle: str | os.PathLike[str], key_file: str | os.PathLike[str],
           runs: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Check a reveal against a public package's commitments: the key (``key_commitment``), the private instances
    of the split bundle (``private_bundle_commitment``, each instance's keyed commitment and sealed id against the
    manifest; the unkeyed ``private_bundle_sha256`` and content hashes of a manifest made before them) and, with
    ``runs`` (the holder's full runs file), the private runs (``private_runs_sha256``)."""
    import json

    from gf01_formal.instances.io import load_bundle
    from gf01_formal.instances.keys import key_commitment, read_key, sealed_id
    from gf01_formal.instances.model import instances_hash
    from gf01_formal.instances.splits import bundle_commitment, instance_commitment

    key = read_key(key_file)
    full = load_bundle(bundle)
    root, _ = release_root(directory)
    man = read_json(root / "split_manifest.json")
    res_path = root / PRIVATE_RESULTS
    commitments = (read_json(res_path).get("commitments") or {}) if res_path.is_file() else {}
    private = [i for i in full.instances if i.split_id == "private_eval"]
    rows = {r.get("instance_id"): _listed(r) for r in man.get("instances") or []
            if isinstance(r, dict) and r.get("split_id") == "private_eval"}
    committed = "private_bundle_commitment" in man
    listed = {i.instance_id: instance_commitment(key, i.content_hash) if committed else i.content_hash
              for i in private}
    whole = (bundle_commitment(key, instances_hash(private)) == man.get("private_bundle_commitment") if committed
             else instances_hash(private) == man.get("private_bundle_sha256"))
    checks = [
        {"name": "key", "ok": key_commitment(key) == man.get("key_commitment")},
        {"name": "private_bundle", "ok": whole and listed == rows},
        {"name": "sealed_ids", "ok": all(i.instance_id == sealed_id(key, i.content_hash) for i in private)},
    ]
    if runs is not None:
        digest = hashlib.sha256()
        for line in Path(runs).read_bytes().splitlines(keepends=True):
            if line.strip() and json.loads(line).get("instance_id") in rows:
                digest.update(line)
        checks.append({"name": "private_runs", "ok": digest.hexdigest() == commitments.get("private_runs_sha256")})
    return {"ok": all(c["ok"] for c in checks), "checks": checks}
