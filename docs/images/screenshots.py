"""Remake the screenshots of docs/browser.md: ``python docs/images/screenshots.py`` (Debian's Chromium, headless).

A pilot on the test bundle of tests/test_web.py: the priority arbiter in progress at step 20 (1280 x 800), its end
screen, and the same game on a 390-pixel-wide phone (the whole page).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from browser import LAUNCH, Server  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from test_web import write_bundle, write_pilot  # noqa: E402

ARBITER = "gf01f-d78bf434bfab905e"


def play_to(page: object, step: int) -> None:
    """Commit unchanged steps by keyboard until ``step`` is the current one."""
    for t in range(step):
        page.keyboard.press("Enter")  # type: ignore[attr-defined]
        page.wait_for_selector(f'thead th.current[data-t="{t + 1}"]')  # type: ignore[attr-defined]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bundle = write_bundle(work)
        pilot = write_pilot(work, [ARBITER], title="GF-01 pilot study")
        with Server(["--bundle", str(bundle), "--runs-out", str(work / "runs.jsonl"), "--pilot", str(pilot)]) as srv, \
                sync_playwright() as pw:
            browser = pw.chromium.launch(**LAUNCH)
            for name, options in (("r1-game", {"viewport": {"width": 1280, "height": 800}}),
                                  ("r1-phone", {"viewport": {"width": 390, "height": 844}, "is_mobile": True,
                                                "has_touch": True, "device_scale_factor": 2})):
                page = browser.new_context(**options).new_page()
                page.goto(f"{srv.url}pilot?participant={name}")
                page.check("#agree")
                page.click("#start")
                page.wait_for_selector("td.current input:checked")
                play_to(page, 20)
                page.keyboard.press("Tab")
                page.keyboard.press("Tab")
                page.keyboard.press("1")  # r2 := 1 at step 20, not yet committed
                page.wait_for_selector("#plan >> text=1 edit")
                page.screenshot(path=str(HERE / f"{name}.png"), full_page=name == "r1-phone")
                if name == "r1-game":
                    page.keyboard.press("Enter")
                    page.wait_for_selector('thead th.current[data-t="21"]')
                    page.keyboard.press("Tab")
                    page.keyboard.press("Tab")
                    page.keyboard.press("1")
                    page.click("#finish")
                    page.click("#confirm-yes")
                    page.wait_for_selector("#completion-code")
                    page.screenshot(path=str(HERE / "r1-end.png"), full_page=True)
            browser.close()


if __name__ == "__main__":
    main()
