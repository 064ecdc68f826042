"""An agent's run on the report page, in a real browser (Debian's headless chromium
driven by playwright): the waterfall of its model calls and tools on one time axis
leads the plots, loads offline with no console error, and says where the time went."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from latdoc.cli import main
from paths import DATA

CHROMIUM = next(
    (p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None
)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed: apt-get install chromium"
)


def test_the_agent_waterfall_leads_the_plots_and_draws_every_call(tmp_path: Path) -> None:
    page_file = tmp_path / "agent.html"
    code = main(
        ["diagnose", "--from-otlp", str(DATA / "otlp_openai_agents.jsonl"), "--html",
         str(page_file), "--db", str(tmp_path / "a.db")]
    )  # fmt: skip
    assert code == 0
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors: list[str] = []
        requests: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_file.as_uri(), wait_until="load")
        first = page.locator("figure svg").first
        assert "agent-waterfall" in (first.get_attribute("class") or "")
        box = first.bounding_box()
        assert box is not None and box["width"] > 600 and box["height"] > 150
        # Three turns, each a model call, the lookup tool, and a model call: nine rows.
        assert page.locator("[id^='agent-'][id$='-tool']").count() == 3
        assert page.locator("[id^='agent-'][id$='-stream']").count() == 6
        caption = page.locator("figure figcaption").first.inner_text()
        assert "tool lookup: 3 calls" in caption and "Verdict for the run: " in caption
        page.screenshot(path=str(tmp_path / "agent.png"), full_page=True)
        browser.close()
    assert errors == []
    assert requests == [page_file.as_uri()]
