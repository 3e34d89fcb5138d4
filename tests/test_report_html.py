"""The HTML report opens offline in a real Chromium (Playwright, the system's /usr/bin/chromium; nothing is
downloaded): every table and every embedded SVG figure renders, with no console error and no request beyond the
file itself."""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from pathlib import Path

import browser
import pytest
from bundles import REPORTED

from gf01_formal.agents.base import AgentSpec
from gf01_formal.artifacts import write_json_atomic
from gf01_formal.campaign.evaluate import evaluate
from gf01_formal.cli import main
from gf01_formal.instances.io import load_bundle, save_artifact
from gf01_formal.instances.splits import PUBLIC_KEY, split_bundle


@pytest.mark.skipif(shutil.which(browser.CHROMIUM) is None, reason="needs Chromium at /usr/bin/chromium")
def test_html_report_renders_tables_and_figures_offline(tmp_path: Path, generated_bundle: Callable[..., Path]) -> None:
    from PIL import Image

    bundle, manifest = split_bundle(load_bundle(generated_bundle(4, 6, REPORTED)), PUBLIC_KEY)
    save_artifact(tmp_path / "bundle.json", bundle)
    write_json_atomic(tmp_path / "manifest.json", manifest.model_dump(mode="json"))
    evaluate(tmp_path / "bundle.json", [AgentSpec("random", "EVAL-CB"), AgentSpec("oracle", "EVAL-OC")],
             tmp_path / "runs.jsonl")
    page_path = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "runs.jsonl"), "--manifest", str(tmp_path / "manifest.json"), "--panel",
                 "core", "-o", str(page_path)]) == 0
    text = page_path.read_text()
    assert "http://" not in text and "https://" not in text and "<script" not in text

    with browser.chromium() as chromium:
        context = chromium.new_context(offline=True, viewport={"width": 1300, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        requests: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri(), wait_until="load")
        tables = page.locator("table")
        # The headline first, one table per (track, split), above the Methods; then agents, groups, PRF,
        # ranking and coverage; the paired table has no row (one agent per track), only its note.
        headlines = page.locator("h2", has_text="Headline: ")
        heads = headlines.count()
        assert heads >= 2 and page.locator("h2").nth(heads).inner_text() == "Methods"
        assert tables.count() == heads + 5
        assert page.get_by_text("No stratum holds two agents").count() == 1
        legend = tables.nth(heads).locator("tbody tr")
        assert legend.count() == 2 and legend.first.locator("td").first.inner_text() == "oracle"
        assert tables.nth(heads + 1).locator("tbody tr").count() >= 4
        assert page.get_by_role("cell", name="EVAL-OC").count() >= 1
        images = page.locator("figure img")
        # The headline figure, two figures per track (Score_C by quartile, Eff_t) and the coverage figure.
        assert images.count() == 6
        sizes = page.evaluate("Array.from(document.images).map(i => [i.complete, i.naturalWidth, "
                              "i.naturalHeight])")
        assert all(ok and w > 200 and h > 100 for ok, w, h in sizes), sizes
        for k in range(images.count()):
            shot = Image.open(io.BytesIO(images.nth(k).screenshot())).convert("RGB")
            assert len(shot.getcolors(maxcolors=1 << 20) or []) > 20  # drawn, not blank
        assert errors == []
        assert all(u.startswith(("file://", "data:")) for u in requests), requests
