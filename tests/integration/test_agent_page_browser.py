"""An agent's run on the report page, in a real browser (Debian's headless chromium
driven by playwright): the waterfall of its model calls and tools on one time axis
leads the plots, loads offline with no console error, and says where the time went."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FAST, LabFactory
from latdoc.cli import main
from latdoc.lab.sim import LabConfig
from paths import DATA, ROOT

SAMPLES = ROOT / "src" / "latdoc" / "workload" / "traces" / "samples"

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


def test_an_agent_replays_load_page_shows_what_the_user_waited_turn_by_turn(
    lab: LabFactory, tmp_path: Path
) -> None:
    page_file = tmp_path / "load.html"
    with lab(LabConfig(latency=FAST, answer_tokens=4)) as server:
        code = main(["load", server.base_url, "-m", "lab-sim", "--trace",
                     str(SAMPLES / "agent.jsonl"), "--concurrency", "4", "--max-tokens", "8",
                     "--slo", "ttft=5s", "--html", str(page_file),
                     "--db", str(tmp_path / "a.db")])  # fmt: skip
    assert code == 0
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_file.as_uri(), wait_until="load")
        heading = page.locator("#user-turns")
        assert heading.is_visible()
        table = page.locator("#user-turns + table")
        heads = table.locator("th").all_inner_texts()
        assert heads[:3] == ["turn", "turns", "requests a turn"] and heads[-1] == "met the SLO"
        rows = [r.locator("td").all_inner_texts() for r in table.locator("tbody tr").all()]
        # The sample's two turns of 20 sessions, then all 40; each took a tool call and
        # an answer, and met a 5 s wait.
        assert [r[:3] for r in rows] == [
            ["1", "20", "2.0"],
            ["2", "20", "2.0"],
            ["all", "40", "2.0"],
        ]
        assert all(r[-1] == "100%" for r in rows)
        browser.close()
    assert errors == []
