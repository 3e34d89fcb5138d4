"""The test suite's time: wall, CPU, peak memory, the sum of the tests' durations and the files that take longest.

Run: ``GF01_CORPUS=../shared/corpus python bench/suite_time.py [--top 15] [-- PYTEST_ARGS...]`` runs the suite as CI
does (``python -m pytest``, pyproject's options: one xdist worker per core) with a JUnit XML report, and prints the
figures of docs/performance.md's "Test suite"; ``python bench/suite_time.py --xml FILE`` prints them for a report
written before (``python -m pytest --junitxml=FILE``). A test's duration is its setup, call and teardown (the JUnit
report's ``time``); a file's is the sum over its tests, doctests under the module they are in. With ``--dist
loadfile`` a whole file runs on one worker (but the parts of conftest.py's SPLIT_FILES), so the longest file bounds
the wall time from below and the sum over the workers' count bounds it too.

CPU time (user + sys of pytest and every process it waited for) and peak resident memory come from ``getrusage``;
wall time counts whatever else the machine runs, CPU time much less so.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def file_of(classname: str) -> str:
    """The file a JUnit ``classname`` names: ``tests.test_backends.TestSat`` -> ``tests/test_backends.py``."""
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        path = Path(*parts[:n]).with_suffix(".py")
        if (ROOT / path).is_file():
            return path.as_posix()
        if (ROOT / Path(*parts[:n]) / "__init__.py").is_file():
            return (Path(*parts[:n]) / "__init__.py").as_posix()
    return classname


def per_file(xml: Path) -> tuple[Counter[str], Counter[str]]:
    """Seconds and test counts per file, from a JUnit XML report."""
    seconds: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for case in ET.parse(xml).getroot().iter("testcase"):
        file = file_of(case.get("classname", ""))
        seconds[file] += float(case.get("time", 0.0))
        tests[file] += 1
    return seconds, tests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xml", type=Path, help="a JUnit XML report written before (no run)")
    parser.add_argument("--top", type=int, default=15, help="how many files to list (default 15)")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest (after --)")
    args = parser.parse_args()
    if args.xml is None:
        xml = Path(tempfile.mkdtemp(prefix="suite-time-")) / "junit.xml"
        start = time.monotonic()
        status = subprocess.run([sys.executable, "-m", "pytest", f"--junitxml={xml}", *args.pytest_args], cwd=ROOT,
                                env=os.environ.copy(), check=False).returncode
        wall = time.monotonic() - start
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
        print(f"pytest exit {status}; wall {wall:.0f} s, CPU {cpu:.0f} s (user + sys), "
              f"peak RSS of one process {children.ru_maxrss / 1024:.0f} MiB, {os.cpu_count()} cores")
    else:
        xml = args.xml
    seconds, tests = per_file(xml)
    print(f"sum of test durations {sum(seconds.values()):.0f} s over {sum(tests.values())} tests in {len(tests)} "
          f"files")
    print("| file | tests | seconds |\n|---|---:|---:|")
    for file, s in seconds.most_common(args.top):
        print(f"| {file} | {tests[file]} | {s:.1f} |")


if __name__ == "__main__":
    main()
