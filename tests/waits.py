"""Waiting for events in tests, with generous ceilings: a test asserts that something happens (a process exits, a
file appears), never how fast; timing targets live in bench/ and docs/performance.md.

A ceiling is long enough for a loaded machine and short enough that a hang fails the test, not the whole run.
"""

from __future__ import annotations

#: The longest a test waits for an event that normally takes a fraction of a second (a stop after Ctrl-C, a kill).
CEILING = 30.0
