"""Latency from when each request was due (issue 40's first part): an open-loop level the
sender cannot carry (one request in flight at a time against 25 arrivals a second of a
request of ~110 ms) leaves its requests late, and what a user behind it waits, from the
due time, is far above what the server did, from the send; the run names the generator
as the bottleneck. A level it carries shows the two apart by its own lateness only."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, LabFactory
from latdoc import Store
from latdoc.cli import main
from latdoc.lab.sim import LabConfig

SLOW = LabConfig(latency=dataclasses.replace(FAST, prefill_base_ms=100.0), answer_tokens=8)
"""A request of about 110 ms: one in flight at a time carries 9 a second."""


def _load(url: str, db: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["load", url, "-m", "lab-sim", "--duration-per-level", "2", "--max-tokens",
                 "8", "--json", "--db", str(db), *args])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    document: dict[str, Any] = json.loads(out.out)
    return document


def test_a_sender_that_falls_behind_shows_the_gap_and_is_named(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "a.db"
    with lab(SLOW) as server:
        behind = _load(server.base_url, db, capsys, "--rate", "25", "--max-in-flight", "1",
                       "--slo", "ttft=1s")  # fmt: skip
        carried = _load(server.base_url, db, capsys, "--rate", "4", "--max-in-flight", "16")
    (level,) = behind["levels"]
    send, due, late = level["ttft_ms"], level["due_ttft_ms"], level["late_ms"]
    # Every request waits for the one before it: the later ones leave a second late.
    assert late["p99"] > 5 * send["p99"]
    assert due["p99"] > send["p99"] + late["p50"]
    assert any("the generator, not the server, is the bottleneck" in f for f in behind["findings"])
    # Goodput is judged from the due time: the late requests miss a TTFT they met on the wire.
    assert level["goodput_share"] < 1.0
    with Store(db) as store:
        first = store.list_runs()[-1]
        _, samples, _ = store.load_run(first.run_id)
    for s in samples:
        t = s.trace
        assert t.due_ns is not None and t.due_ns <= 0
        assert t.due_ttft_ms == pytest.approx(t.ttft_ms + t.late_ms)
    (easy,) = carried["levels"]
    # A level the sender carries: from the due time is the send plus its own lateness,
    # which no request's exceeded (each due-time TTFT is its send-time TTFT and its own).
    with Store(db) as store:
        _, easy_samples, _ = store.load_run(carried["run_id"])
    latest = max(s.trace.late_ms or 0.0 for s in easy_samples)
    gap = easy["due_ttft_ms"]["p50"] - easy["ttft_ms"]["p50"]
    assert 0.0 <= gap <= latest + 1e-6
    assert not any("the generator" in f for f in carried["findings"])


def test_slo_from_send_judges_what_the_server_did(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "a.db"
    with lab(SLOW) as server:
        document = _load(server.base_url, db, capsys, "--rate", "25", "--max-in-flight", "1",
                         "--slo", "ttft=1s", "--slo-from", "send")  # fmt: skip
    (level,) = document["levels"]
    assert document["slo"]["from"] == "send"
    assert level["ttft_ms"]["p99"] < 1000 and level["goodput_share"] == 1.0
    # The stored run judges it the same way again.
    assert main(["report", document["run_id"], "--json", "--db", str(db)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["slo"]["from"] == "send" and again["levels"][0]["goodput_share"] == 1.0


def test_a_closed_levels_first_sends_are_spread_over_a_request_time(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """16 streams after a level of one: their first requests are due across one mean
    request time of the level before (1/16 apart), not all at the level's start, as
    they are with --burst-start."""
    firsts: dict[bool, list[int]] = {}
    mean_ms = 0.0
    for burst in (False, True):
        db = tmp_path / f"{burst}.db"
        with lab(SLOW) as server:
            _load(server.base_url, db, capsys, "--concurrency", "1,16",
                  *(["--burst-start"] if burst else []))  # fmt: skip
        with Store(db) as store:
            (info,) = store.list_runs()
            _, samples, _ = store.load_run(info.run_id)
        one = [s.trace for s in samples if s.concurrency == 1 and s.trace.ok]
        if not burst:
            # The spread reads the mean request time of this run's level before it.
            mean_ms = sum(t.total_ms or 0.0 for t in one) / len(one)
        # Each stream opens its own connection: its first request is the one that did.
        level = sorted((s.trace for s in samples if s.concurrency == 16 and s.trace.new_connection),
                       key=lambda t: t.t0_ns + (t.due_ns or 0))  # fmt: skip
        assert len(level) == 16
        firsts[burst] = [t.t0_ns + (t.due_ns or 0) for t in level]
    spread = firsts[False]
    gaps_ms = [(b - a) / 1e6 for a, b in itertools.pairwise(spread)]
    assert (spread[-1] - spread[0]) / 1e6 == pytest.approx(mean_ms * 15 / 16, rel=0.05)
    assert all(g == pytest.approx(mean_ms / 16, rel=0.1) for g in gaps_ms), (mean_ms, gaps_ms)
    assert len(set(firsts[True])) == 1  # all due at the level's start


def test_the_load_page_draws_the_gap_between_the_send_and_the_due_time(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In a real browser: the TTFT plot draws the p95 from the due time beside the p95
    from the send, the gap between them shaded where the generator fell behind."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium not installed: apt-get install chromium")
    page_file = tmp_path / "load.html"
    with lab(SLOW) as server:
        _load(server.base_url, tmp_path / "a.db", capsys, "--rate", "4,25",
              "--max-in-flight", "1", "--html", str(page_file))  # fmt: skip
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_file.as_uri(), wait_until="load")
        send = page.locator("[id='load-ttft-p95']").bounding_box()
        due = page.locator("[id='load-ttft-due-p95']").bounding_box()
        gap = page.locator("[id='load-ttft-due-gap']").bounding_box()
        assert send is not None and due is not None and gap is not None
        # At 25/s the due-time p95 is far above the send's: the shaded gap is tall.
        assert gap["height"] > 20 and due["y"] < send["y"]
        browser.close()
    assert errors == []
