"""The HTML report in a real browser: Debian's headless chromium driven by playwright.

The page comes from a real diagnosis of the lab endpoint. It must load with no
console error and no request beyond the file itself, and show its three figures
(the waterfall, the length curve with its fitted line, the TTFT distribution)
with a real size, in the light and the dark scheme. A full-page screenshot is
saved in the test's tmp_path for a human to look at.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from latdoc.cli import main
from latdoc.lab.sim import LabConfig, LabServer, LatencyModel

CHROMIUM = next(
    (p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None
)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed: apt-get install chromium"
)

# Prefill grows with the prompt, so the length step has a curve to fit and draw.
LATENCY = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.05, decode_ms_per_token=1.0)

FIGURES = {
    "svg.waterfall": "Phases of each request",
    "svg.length": "Time to first token against prompt length",
    "svg.histogram": "Distribution of time to first token",
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML page of a real diagnosis run against the lab endpoint."""
    folder = tmp_path_factory.mktemp("browser")
    page = folder / "report.html"
    with LabServer(LabConfig(latency=LATENCY)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(folder / "runs.db"),
             "--html", str(page), "--json", "--max-requests", "30", "--output-tokens", "8",
             "--seed", "3"]
        )  # fmt: skip
    assert code == 0
    return page


@pytest.fixture(scope="module")
def browser(report: Path, verify_pages: dict[str, Path]) -> Iterator[Any]:
    # The runs that make the pages use asyncio.run; playwright's sync API keeps an
    # event loop of its own running, so the pages are made before the browser starts.
    with sync_api.sync_playwright() as playwright:
        # The system chromium: no browser download; --no-sandbox because tests may run as root.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def open_page(browser: Any, report: Path, scheme: str) -> tuple[Any, list[str], list[str]]:
    """The loaded page, its console errors and page errors, and every URL it requested."""
    page = browser.new_page(viewport={"width": 1200, "height": 900}, color_scheme=scheme)
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"failed request {r.url}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri(), wait_until="load")
    return page, errors, requests


def test_the_page_loads_offline_and_shows_three_figures(
    browser: Any, report: Path, tmp_path: Path
) -> None:
    page, errors, requests = open_page(browser, report, "light")
    assert errors == []
    assert requests == [report.as_uri()], "the page fetched something besides itself"
    assert page.title().startswith("latdoc: lab-sim at ")
    for selector, label in FIGURES.items():
        figure = page.locator(selector)
        assert figure.count() == 1, selector
        assert figure.get_attribute("aria-label") == label
        assert figure.is_visible(), selector
        box = figure.bounding_box()
        assert box is not None and box["width"] > 500 and box["height"] > 150, (selector, box)
    fit = page.locator("svg.length #length-fit path")
    assert fit.is_visible()
    fit_box = fit.bounding_box()
    assert fit_box is not None and fit_box["width"] > 100 and fit_box["height"] > 5
    assert page.locator("svg.length #length-requests use").count() > 3
    assert page.locator("svg.waterfall [id^=wf-0-]").count() >= 4
    assert page.locator("svg.histogram [id^=hist-]").count() > 0
    # the page's own width: nothing pushes it sideways at a desktop width
    assert page.evaluate("document.documentElement.scrollWidth") <= 1200
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000
    page.close()


def test_plot_text_follows_the_dark_scheme(browser: Any, report: Path, tmp_path: Path) -> None:
    colours = {}
    for scheme in ("light", "dark"):
        page, errors, _ = open_page(browser, report, scheme)
        assert errors == []
        colours[scheme] = page.evaluate(
            "getComputedStyle(document.querySelector('svg.length g[style*=\"var(--fg)\"]')).fill"
        )
        page.screenshot(path=str(tmp_path / f"report-{scheme}.png"), full_page=True)
        page.close()
    assert colours["light"] == "rgb(29, 34, 41)"
    assert colours["dark"] == "rgb(229, 232, 236)"


@pytest.fixture(scope="module")
def verify_pages(report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The pages ``latdoc compare --html`` and ``verify --remedy conversation --html`` write,
    from runs against the lab (made before the browser starts, as the report is)."""
    folder = tmp_path_factory.mktemp("verify-pages")
    db = str(folder / "runs.db")
    with LabServer(LabConfig(latency=LATENCY)) as server:
        common = [server.base_url, "-m", "lab-sim", "--db", db, "--max-tokens", "8"]
        assert (
            main(
                [
                    "verify",
                    *common,
                    "--remedy",
                    "trim",
                    "--from",
                    "800",
                    "--to",
                    "200",
                    "--max-requests",
                    "30",
                    "--html",
                    str(folder / "compare.html"),
                ]
            )
            == 0
        )
        assert main(["verify", *common, "--remedy", "conversation", "--turns", "6",
                     "--tokens-per-turn", "100", "--strategies", "window:2,summary:3",
                     "--html", str(folder / "conversation.html")]) == 0  # fmt: skip
    return {"compare": folder / "compare.html", "conversation": folder / "conversation.html"}


@pytest.mark.parametrize("name", ["compare", "conversation"])
def test_the_verify_pages_load_offline_and_show_their_results(
    browser: Any, verify_pages: dict[str, Path], name: str, tmp_path: Path
) -> None:
    page, errors, requests = open_page(browser, verify_pages[name], "light")
    try:
        assert errors == []
        assert requests == [verify_pages[name].as_uri()]
        rows = page.locator("table.compare tbody tr")
        assert rows.count() >= 2
        if name == "conversation":
            plot = page.locator("svg.conversation")
            box = plot.bounding_box()
            assert box is not None and box["width"] > 500 and box["height"] > 150
            assert page.locator("svg.conversation [id^='conversation-']").count() == 3
        else:
            assert "faster than A" in page.locator("p.sentence").first.inner_text()
        page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 1200
    finally:
        page.close()
