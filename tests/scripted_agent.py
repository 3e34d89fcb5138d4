"""The prelude of the scripted gf01.agent.v1 agents that the subprocess and leakage tests run (tests only).

A script made of ``PRELUDE`` and a call ``play(answer)`` logs every message it receives to its output file (the
descriptor ``$GF01_OUTPUT_FD`` the harness opens on the spec's ``output``: the sandbox lets it write nothing else;
none: not logged) and writes
``answer(t)`` for each step t it is asked to act on: a str is written as it is (so a test can send raw or broken
lines), anything else as one JSON line.

It imports only the standard library: the tests run it as ``python -S``, which spares each agent process site's
work (the editable install's finder, .pth files: about 0.045 of a bare interpreter's 0.1 s of CPU).
"""

PRELUDE = """
import json, os, subprocess, sys, time
log = os.fdopen(int(os.environ["GF01_OUTPUT_FD"]), "a") if "GF01_OUTPUT_FD" in os.environ else open(os.devnull, "a")
def messages():
    for line in sys.stdin:
        log.write(line); log.flush()
        yield json.loads(line)
def play(answer):
    for m in messages():
        if m["type"] == "start":
            t = 0
        elif m["type"] == "observation" and not m["done"]:
            t = m["t"] + 1
        else:
            continue
        out = answer(t)
        sys.stdout.write(out if isinstance(out, str) else json.dumps(out) + "\\n")
        sys.stdout.flush()
"""
