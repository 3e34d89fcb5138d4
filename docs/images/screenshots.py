"""Remake the screenshots of docs/browser.md: ``python docs/images/screenshots.py`` (Debian's Chromium, headless).

A two-puzzle pilot on the test bundle of tests/test_web.py (the priority arbiter, then a small generated instance),
played as a participant plays it from the study link: the arbiter in progress at step 20 (1280 x 800, and the whole
page on a 390-pixel-wide phone), the end of the first puzzle with its "Next puzzle" button, and the completion code
(each as the screen shows it, without scrolling, at both sizes).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from browser import LAUNCH, Server  # noqa: E402
from bundles import TINY  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from test_web import sig, write_bundle, write_pilot  # noqa: E402

from gf01_formal.instances.generator import GenConfig, generate  # noqa: E402
from gf01_formal.instances.io import save_artifact  # noqa: E402

ARBITER = "gf01f-d78bf434bfab905e"
LAPTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}


def play_to(page: object, step: int) -> None:
    """Commit unchanged steps by keyboard until ``step`` is the current one."""
    for t in range(step):
        page.keyboard.press("Enter")  # type: ignore[attr-defined]
        page.wait_for_selector(f'thead th.current[data-t="{t + 1}"]')  # type: ignore[attr-defined]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tiny = work / "tiny.json"
        save_artifact(tiny, generate(2, 2, GenConfig.model_validate(TINY)))
        bundle = write_bundle(work, tiny)
        small = generate(2, 2, GenConfig.model_validate(TINY)).instances[0].instance_id
        pilot = write_pilot(work, [ARBITER, small], title="A study of puzzles")
        with Server(["--bundle", str(bundle), "--runs-out", str(work / "runs.jsonl"), "--pilot", str(pilot)]) as srv, \
                sync_playwright() as pw:
            browser = pw.chromium.launch(**LAUNCH)
            for size, options in (("laptop", LAPTOP), ("phone", PHONE)):
                page = browser.new_context(**options).new_page()
                who = f"P-{size}"
                page.goto(f"{srv.url}pilot?participant={who}&sig={sig(pilot, who)}")
                page.check("#agree")
                page.click("#start")
                page.wait_for_selector("td.current input:checked")
                play_to(page, 20)
                page.keyboard.press("Tab")
                page.keyboard.press("Tab")
                page.keyboard.press("1")  # r2 := 1 at step 20, not yet committed
                page.wait_for_selector("#plan >> text=1 change")
                page.screenshot(path=str(HERE / ("r1-game.png" if size == "laptop" else "r1-phone.png")),
                                full_page=size == "phone")
                page.keyboard.press("Enter")
                page.wait_for_selector('thead th.current[data-t="21"]')
                page.keyboard.press("Tab")
                page.keyboard.press("Tab")
                page.keyboard.press("1")
                page.click("#finish")
                page.click("#confirm-yes")
                page.wait_for_selector("#next")
                page.screenshot(path=str(HERE / f"r1-next-{size}.png"))
                page.click("#next")
                page.wait_for_selector("td.current input:checked")
                page.click("#finish")
                page.click("#confirm-yes")
                page.wait_for_selector("#completion-code")
                page.screenshot(path=str(HERE / f"r1-end-{size}.png"))
            browser.close()


if __name__ == "__main__":
    main()
