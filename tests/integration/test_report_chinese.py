"""``latdoc diagnose --lang zh`` against the lab: the terminal report and the page are in
Chinese, a stored run is shown again in Chinese (but for the notes the store keeps as
they were said), and its JSON document is the English one whatever the language; in
Debian's headless chromium the page reads as Chinese too."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import LabFactory
from english import english_runs, visible_text
from latdoc.cli import main
from latdoc.lab.sim import LabConfig, LatencyModel
from latdoc.store import Store

# Prefill grows with the prompt: the length step has a curve, the report a finding.
LATENCY = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.05, decode_ms_per_token=1.0)
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def diagnosed(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[str, Path, Path]:
    """What ``latdoc diagnose --lang zh --html`` printed, its page and its store."""
    db, page = tmp_path / "runs.db", tmp_path / "report.html"
    with lab(LabConfig(latency=LATENCY)) as server:
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--db", str(db), "--html",
             str(page), "--max-requests", "30", "--output-tokens", "8", "--seed", "3",
             "--lang", "zh"]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out, page, db


def test_diagnose_in_chinese_prints_and_writes_chinese(
    diagnosed: tuple[str, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out, page, db = diagnosed
    assert "诊断结论：" in out and "第二步 — 输入长度" in out
    assert english_runs(out) == [], out
    html = page.read_text(encoding="utf-8")
    assert '<html lang="zh">' in html
    assert english_runs(visible_text(html)) == []
    with Store(str(db)) as store:
        run_id = store.list_runs()[0].run_id
    assert main(["report", run_id, "--db", str(db), "--lang", "zh"]) == 0
    again = capsys.readouterr().out
    # The notes of what was left out are kept as the run said them, in English: the
    # rest is said again in Chinese.
    said, _, notes = again.partition("未测部分：")
    assert "诊断结论：" in said and english_runs(said) == []
    assert notes
    documents = []
    for lang in ("zh", "en"):
        assert main(["report", run_id, "--db", str(db), "--json", "--lang", lang]) == 0
        documents.append(capsys.readouterr().out)
    assert documents[0] == documents[1]
    assert not CJK.search(documents[0])
    assert json.loads(documents[0])["verdict"]


def test_the_chinese_page_in_a_browser(diagnosed: tuple[str, Path, Path], tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium not installed: apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    _, report, _ = diagnosed
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(report.as_uri(), wait_until="load")
            assert errors == []
            assert page.evaluate("document.documentElement.lang") == "zh"
            assert page.title().startswith("latdoc：")
            text = page.evaluate("document.body.innerText")
            assert "优化建议" in text
            # The page's own words, as the reader's browser lays them out.
            assert english_runs(page.locator("main > header").inner_text()) == []
            assert english_runs(page.locator("section.verdict").inner_text()) == []
            assert page.evaluate("document.documentElement.scrollWidth") <= 1200
            page.screenshot(path=str(tmp_path / "report-zh.png"), full_page=True)
        finally:
            browser.close()
