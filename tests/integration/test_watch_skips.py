"""Ticks a watch skips because the tick before them overran: counted, stored, reported."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from conftest import FAST, LabFactory
from latdoc import Store
from latdoc.cli import EXIT_OK, main
from latdoc.lab.sim import LabConfig

EVERY_S = 0.3
DURATION_S = 2.4


def test_overrunning_ticks_are_counted_stored_and_reported(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 3 s lab day, quiet for its first second, then one slot kept busy by background
    requests of 0.6 s on average: the first ticks take milliseconds, the later ones queue
    behind the background for longer than the 0.3 s between ticks."""
    db = tmp_path / "w.db"
    config = LabConfig(latency=FAST, slots=1, load_profile=(0.0, 1.0, 1.0), day_seconds=3.0,
                       background_request_ms=600, seed=11)  # fmt: skip
    with lab(config) as server:
        code = main(["watch", server.base_url, "--model", "lab-sim", "--name", "busy",
                     "--every", f"{EVERY_S}s", "--duration", f"{DURATION_S}s", "--jitter", "0",
                     "--long-tokens", "128", "--max-tokens", "4", "--seed", "2",
                     "--db", str(db)])  # fmt: skip
    assert code == EXIT_OK
    captured = capsys.readouterr()
    ticks = int(re.search(r"Watch 'busy': (\d+) ticks?", captured.err)[1])  # type: ignore[index]
    with Store(db) as store:
        (info,) = store.find_runs("watch", "busy")
    skipped = info.meta["skipped_ticks"]
    assert skipped >= 1, captured.err
    assert f"{skipped} tick{'s' if skipped > 1 else ''} skipped this time" in captured.err
    # Every slot before the end was either ticked or counted as skipped, none twice.
    slots = math.ceil(DURATION_S / EVERY_S)
    assert slots - 2 <= ticks + skipped <= slots, (ticks, skipped)
    sentence = (
        f"{skipped} tick{'s' if skipped > 1 else ''} skipped: a tick took longer than --every"
    )
    assert sentence in captured.out

    report = ["report", "--watch", "busy", "--cycle", "3s", "--bucket", "1s", "--db", str(db)]
    assert main([*report, "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["skipped_ticks"] == skipped
    assert main(report) == EXIT_OK
    assert sentence in capsys.readouterr().out
    html = tmp_path / "w.html"
    assert main([*report, "--html", str(html)]) == EXIT_OK
    assert f'<p class="muted" id="skipped">{sentence}.</p>' in html.read_text()
