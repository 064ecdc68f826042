"""``latdoc serve`` in a real browser: the command itself, serving a store filled by real
runs against the lab, read by Debian's headless chromium through playwright.

The store holds one run of each kind the lab makes quickly (a diagnosis, an experiment's
two arms, a watch, a load); the list shows them and filters them, each run's page shows
what its kind draws, a load written while a page is open is followed live until it ends,
and axe-core finds nothing serious on the pages. With ``LATDOC_SCREENSHOTS=1`` one test
saves the pictures ``docs/serve/*.png`` shows.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST
from latdoc.cli import main
from latdoc.lab.sim import LabConfig, LabProcess
from paths import ROOT

CHROMIUM = next(
    (p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None
)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
pytest.importorskip("starlette", reason="latdoc serve needs the serve extra")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed: apt-get install chromium"
)

WIDTH = 1280
START_S = 30.0
"""The longest the server, or a run it should show, may take to appear."""
SCREENSHOTS = os.environ.get("LATDOC_SCREENSHOTS") == "1"
SHOTS = ROOT / "docs" / "serve"
KINDS = ("diagnose", "load", "verify", "watch")
SERIOUS = {"serious", "critical"}


@dataclass(frozen=True)
class Served:
    """The store, the server reading it, the lab its runs were made against."""

    db: Path
    base: str
    lab_url: str
    runs: dict[str, list[dict[str, Any]]]
    """The finished runs by kind, newest first, as the API lists them."""
    log: list[str]
    """What the server has said on stderr."""

    def page(self, kind: str) -> str:
        return f"{self.base}runs/{self.runs[kind][0]['run_id']}"


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


def _fill(db: Path, url: str) -> None:
    """One run of each kind, each a second or two against the lab."""
    common = [url, "-m", "lab-sim", "--db", str(db)]
    commands = [
        ["diagnose", *common, "--max-requests", "30", "--output-tokens", "8", "--seed", "3"],
        ["verify", *common, "--max-tokens", "8", "--remedy", "trim", "--from", "800",
         "--to", "200", "--max-requests", "30"],
        ["watch", *common, "--name", "nightly", "--every", "0.2s", "--duration", "1s",
         "--long-tokens", "128", "--max-tokens", "4"],
        ["load", *common, "--concurrency", "1,2", "--duration-per-level", "0.5",
         "--max-tokens", "8"],
    ]  # fmt: skip
    for command in commands:
        assert main(command) == 0, command


def _serve(db: Path, log: list[str]) -> tuple[subprocess.Popen[str], str]:
    """``latdoc serve`` on a free port, and the address it printed once it listens; the
    rest of what it says is kept in ``log``. It is started beside the store, so the list
    (and a screenshot of it) names the store ``runs.db``, not a temporary folder."""
    server = subprocess.Popen(
        [sys.executable, "-m", "latdoc", "serve", "--db", db.name, "--port", "0"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=db.parent,
    )  # fmt: skip
    assert server.stderr is not None
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([server.stderr], [], [], deadline - time.monotonic())
        line = server.stderr.readline() if ready else ""
        log.append(line)
        found = re.search(r"^Serving .* at (http://127\.0\.0\.1:\d+/)", line)
        if found:
            threading.Thread(target=log.extend, args=(server.stderr,), daemon=True).start()
            return server, found.group(1)
        if not line:
            break
    _stop(server)
    raise AssertionError(f"latdoc serve did not say where it listens: {''.join(log)}")


def _stop(process: subprocess.Popen[str]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    return process.returncode


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One store for the module, filled before the browser starts (the runs use
    asyncio.run; playwright's sync API keeps an event loop of its own running), served by
    ``latdoc serve``; the lab stays up for the live test's load."""
    db = tmp_path_factory.mktemp("serve") / "runs.db"
    log: list[str] = []
    with LabProcess(LabConfig(latency=FAST)) as lab:
        _fill(db, lab.base_url)
        server, base = _serve(db, log)
        try:
            runs: dict[str, list[dict[str, Any]]] = {}
            for run in _get(f"{base}api/runs")["runs"]:
                runs.setdefault(run["kind"], []).append(run)
            yield Served(db, base, lab.base_url, runs, log)
        finally:
            code = _stop(server)
    assert code in (0, -signal.SIGINT, 130), "".join(log)
    assert "Traceback" not in "".join(log), "".join(log)


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        # The system chromium: no browser download; --no-sandbox because tests may run as root.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class Tab:
    """A page of the browser with what went wrong in it: console errors, page errors,
    failed requests and answers of 400 or more."""

    def __init__(self, browser: Any, scheme: str = "light") -> None:
        self.page = browser.new_page(viewport={"width": WIDTH, "height": 900}, color_scheme=scheme)
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self._failed(r))
        self.page.on(
            "response",
            lambda r: self.errors.append(f"{r.status} {r.url}") if r.status >= 400 else None,
        )

    def _failed(self, request: Any) -> None:
        # An event stream the page closes, or leaves as it goes, is not a failure.
        if "/events" not in request.url:
            self.errors.append(f"failed request {request.url}")

    def open(self, url: str) -> Any:
        self.page.goto(url, wait_until="load")
        return self.page

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def tab(browser: Any) -> Iterator[Tab]:
    opened = Tab(browser)
    yield opened
    opened.close()
    assert opened.errors == []


def _kinds_listed(page: Any) -> list[str]:
    return page.locator("table.runs tbody tr td:nth-child(2)").all_inner_texts()


def _assert_plots_visible(page: Any, at_least: int) -> None:
    plots = page.locator("main svg.plot")
    assert plots.count() >= at_least
    for index in range(plots.count()):
        plot = plots.nth(index)
        assert plot.is_visible(), index
        box = plot.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 100, (index, box)


def test_the_list_shows_every_kind_filters_by_kind_and_opens_a_run(
    served: Served, tab: Tab
) -> None:
    page = tab.open(served.base)
    assert page.title() == "latdoc runs"
    assert set(KINDS) <= set(_kinds_listed(page))
    page.select_option("select[name=kind]", "diagnose")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"[?&]kind=diagnose"))
    assert set(_kinds_listed(page)) == {"diagnose"}
    assert page.locator("p.count").inner_text().startswith("1 of 1 runs shown")
    assert page.locator("select[name=kind]").input_value() == "diagnose"
    page.locator("table.runs tbody tr a").first.click()
    page.wait_for_url(served.page("diagnose"))
    _assert_plots_visible(page, 3)


def test_a_diagnosis_page_shows_its_verdict_and_its_bar_leads_back(
    served: Served, tab: Tab
) -> None:
    diagnosis = served.runs["diagnose"][0]
    page = tab.open(served.page("diagnose"))
    headline = page.locator("section.verdict h2.primary")
    assert headline.is_visible()
    assert diagnosis["verdict"].lower() in headline.inner_text().lower()
    bar = page.locator("nav.serve")
    assert bar.is_visible()
    assert diagnosis["run_id"] in bar.inner_text() and "done" in bar.inner_text()
    verified = bar.get_by_role("link", name=re.compile(r"^Verified: trim"))
    assert verified.count() == 1
    bar.get_by_role("link", name="All runs").click()
    page.wait_for_url(served.base)
    assert page.locator("h1").inner_text() == "Runs"


def test_an_arm_of_an_experiment_shows_both_arms(served: Served, tab: Tab) -> None:
    for arm in served.runs["verify"]:
        page = tab.open(f"{served.base}runs/{arm['run_id']}")
        assert "A against B" in page.title()
        heads = page.locator("table.compare thead").first.inner_text()
        assert "A median" in heads and "B median" in heads
        assert page.locator("table.compare tbody tr").count() >= 2
        assert "faster than A" in page.locator("p.sentence").first.inner_text()
        proposer = page.locator("nav.serve").get_by_role("link", name=re.compile("Proposed by"))
        assert proposer.get_attribute("href") == f"/runs/{served.runs['diagnose'][0]['run_id']}"


def test_a_watch_page_shows_its_day_by_the_hour(served: Served, tab: Tab) -> None:
    page = tab.open(served.page("watch"))
    assert page.locator("h1").inner_text() == "nightly across the day"
    heatmap = page.locator("#heatmap svg.heatmap")
    assert heatmap.is_visible()
    box = heatmap.bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 100, box
    assert page.locator("#buckets tbody tr").count() >= 1
    assert re.search(r"\d\d:00", page.locator("#buckets tbody").inner_text())


REQUESTS_SHOWN = """() => [...document.querySelectorAll("main table.compare tbody tr")]
    .reduce((sum, row) => sum + Number(row.cells[1].textContent.replace(/,/g, "")), 0)"""
"""The requests a load's page shows, summed over its levels (0 before it has a table)."""


def _running_load(served: Served, before: set[str], deadline: float) -> dict[str, Any]:
    while time.monotonic() < deadline:
        for run in _get(f"{served.base}api/runs?kind=load")["runs"]:
            if run["run_id"] not in before and run["status"] == "running":
                return run
        time.sleep(0.1)
    raise AssertionError("the load did not appear as running")


def test_a_load_being_written_is_followed_live_until_it_ends(served: Served, browser: Any) -> None:
    listing, live = Tab(browser), Tab(browser)
    listing.open(served.base)
    before = {run["run_id"] for run in served.runs["load"]}
    load = subprocess.Popen(
        [sys.executable, "-m", "latdoc", "load", served.lab_url, "-m", "lab-sim", "--db",
         str(served.db), "--concurrency", "1,2", "--duration-per-level", "3",
         "--max-tokens", "8"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        run = _running_load(served, before, time.monotonic() + START_S)
        href = f"/runs/{run['run_id']}"
        listing.page.locator(f"tr.status-running a[href='{href}']").wait_for(timeout=10_000)
        page = live.open(f"{served.base}runs/{run['run_id']}")
        assert page.locator("nav.serve .live").inner_text() == "running"
        shown = page.evaluate(REQUESTS_SHOWN)
        redrawn = "Number(document.body.dataset.updated || 0) >= 1"
        page.wait_for_function(f"() => {redrawn} && ({REQUESTS_SHOWN})() > {shown}", timeout=15_000)
        assert page.evaluate(REQUESTS_SHOWN) > shown
        _, err = load.communicate(timeout=60)
        assert load.returncode == 0, err
    finally:
        if load.poll() is None:
            _stop(load)
    page.locator("nav.serve", has_text="done").wait_for(timeout=10_000)
    assert page.locator("nav.serve .live").count() == 0
    redrawn = int(page.evaluate("document.body.dataset.updated"))
    assert redrawn >= 2
    final = _get(f"{served.base}api/runs/{run['run_id']}")["run"]
    assert final["status"] == "done"
    assert page.evaluate(REQUESTS_SHOWN) == final["requests"]
    listing.page.locator(f"tr.status-done a[href='{href}']").wait_for(timeout=10_000)
    for opened in (listing, live):
        opened.close()
        assert opened.errors == []


PAGES = {"list": None, "diagnosis": "diagnose", "load": "load", "watch": "watch",
         "comparison": "verify"}  # fmt: skip
"""Each page the tests below open: the list, or the newest run of a kind."""


def _url(served: Served, name: str) -> str:
    kind = PAGES[name]
    return served.base if kind is None else served.page(kind)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", list(PAGES))
def test_axe_finds_nothing_serious(served: Served, browser: Any, name: str, scheme: str) -> None:
    from axe_playwright_python.sync_playwright import Axe

    tab = Tab(browser, scheme)
    try:
        results = Axe().run(tab.open(_url(served, name))).response
    finally:
        tab.close()
    serious = [
        (v["id"], v["impact"], [node["target"] for node in v["nodes"]])
        for v in results["violations"]
        if v["impact"] in SERIOUS
    ]
    assert serious == []
    assert tab.errors == []


@pytest.mark.skipif(not SCREENSHOTS, reason="LATDOC_SCREENSHOTS=1 saves docs/serve/*.png")
def test_screenshots_for_the_docs(served: Served, browser: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for name in PAGES:
        tab = Tab(browser)
        try:
            tab.open(_url(served, name)).screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
        finally:
            tab.close()
        assert (SHOTS / f"{name}.png").stat().st_size > 10_000
