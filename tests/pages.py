"""Each report's HTML page and each knob plot drawn once per test module, however many times the module's in-process
campaigns, reports and release checks ask for it.

A page (``render.html_page``) and a knob plot (``plots.knob_figure``) are functions of their data alone (DEC-024: the
same bytes on every run), and their matplotlib figures are most of the CPU of a campaign's finish, a report and a
release check (about 4.5 s a page for a test release). A module whose subject is what is done with the drawings
(compared byte for byte, packaged, checked against an edited file) takes a drawing of the very same data from the
first time it was asked, keyed by the data's exact JSON text (key order included: a page may follow it). What the
drawing itself is and that it is the same in another process stay the subject of the tests that draw in a
subprocess (tests/test_release.py's reruns, tests/test_campaign.py's resumed driver) and of tests/test_report.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


@contextmanager
def drawn_once() -> Iterator[dict[str, int]]:
    """While open, ``html_page`` and ``knob_figure`` draw each distinct input once; yields the number of drawings
    made and of drawings reused, by kind (``page``, ``page reused``, ``knob``, ``knob reused``)."""
    from gf01_formal.report import plots, render

    counts = {"page": 0, "page reused": 0, "knob": 0, "knob reused": 0}
    pages: dict[str, str] = {}
    knobs: dict[str, str] = {}
    real_page, real_knob = render.html_page, plots.knob_figure

    def html_page(report: dict[str, Any]) -> str:
        key = json.dumps(report, ensure_ascii=False)
        if key in pages:
            counts["page reused"] += 1
        else:
            counts["page"] += 1
            pages[key] = real_page(report)
        return pages[key]

    def knob_figure(knob: str, slices: list[dict[str, Any]]) -> str:
        key = json.dumps([knob, slices], ensure_ascii=False)
        if key in knobs:
            counts["knob reused"] += 1
        else:
            counts["knob"] += 1
            knobs[key] = real_knob(knob, slices)
        return knobs[key]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(render, "html_page", html_page)
        mp.setattr(plots, "knob_figure", knob_figure)
        yield counts
