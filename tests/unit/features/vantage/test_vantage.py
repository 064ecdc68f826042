"""The endpoint by vantage: medians per place, the nearest named only when it is nearer."""

from __future__ import annotations

import dataclasses
import random
from datetime import UTC, datetime

import pytest

from latdoc import RequestTrace, render_text
from latdoc.cli import main
from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.features.vantage import render_vantages, vantages_to_dict
from latdoc.features.vantage.analysis import compare_vantages, vantage_row

MS = 1_000_000
_FAILED = TraceError(ErrorKind.HTTP, Phase.WAIT, "HTTP 503", status=503)


def _trace(rtt_ms: float, ttft_ms: float, *, new: bool = True) -> RequestTrace:
    dns = 2 * MS if new else 0
    connect = dns + (int(rtt_ms * MS) if new else 0)
    tls = connect + (int(2 * rtt_ms * MS) if new else 0)
    return RequestTrace(
        started_at=datetime(2026, 11, 30, tzinfo=UTC),
        t0_ns=0,
        url="https://api.example.com/v1/chat/completions",
        model="m",
        dialect="chat",
        new_connection=new,
        queue_done_ns=0,
        dns_done_ns=dns,
        connect_done_ns=connect,
        tls_done_ns=tls,
        sent_ns=tls + MS,
        first_byte_ns=int(ttft_ms * MS) - MS,
        first_token_ns=int(ttft_ms * MS),
        done_ns=int(ttft_ms * MS) + 50 * MS,
    )


def _place(rtt: float, n: int, seed: int) -> list[RequestTrace]:
    rng = random.Random(seed)
    return [_trace(rtt * rng.uniform(0.9, 1.1), 200 + 4 * rtt) for _ in range(n)]


def test_the_nearest_is_the_lowest_round_trip_with_its_margin() -> None:
    rows = [
        vantage_row("eu-west", _place(80.0, 12, 1), run_id="r1", host="eu"),
        vantage_row("us-east", _place(12.0, 12, 2), run_id="r2", host="us"),
    ]
    comparison = compare_vantages(rows)
    assert (comparison.nearest, comparison.nearest_by, comparison.runner_up) == (
        "us-east", "rtt", "eu-west"
    )  # fmt: skip
    assert comparison.significant
    assert comparison.margin_ms is not None
    low, high = comparison.margin_ms
    assert 55 < low < 68 < high < 80
    us = rows[1]
    assert us.dns_ms == 2.0 and us.rtt_ms is not None and 10.8 < us.rtt_ms < 13.2
    assert us.tls_ms == pytest.approx(2 * (us.connect_ms or 0), abs=1e-5)
    text = " ".join(render_text(render_vantages(comparison)).split())
    assert "us-east (nearest)" in text and "nearer than eu-west by" in text
    document = vantages_to_dict(comparison)
    assert document["schema"] == "latdoc.vantages/1" and document["nearest"] == "us-east"
    assert [v["run_id"] for v in document["vantages"]] == ["r1", "r2"]


def test_the_runs_by_vantage_are_shown_with_where_each_is_kept() -> None:
    from latdoc.features.vantage import VantageRuns

    rows = [
        vantage_row("a", _place(20.0, 4, 5), run_id="r1"),
        vantage_row(
            "b", [_trace(20.0, 150.0), dataclasses.replace(_trace(20.0, 150.0), error=_FAILED)]
        ),
    ]
    runs = VantageRuns({"a": "r1", "b": "r2"}, compare_vantages(rows), "s.db")
    shown = runs.shown()
    assert shown.document() == vantages_to_dict(runs.comparison) and shown.page() is None
    assert "The endpoint by vantage" in render_text(shown.shown()[0])
    assert shown.kept() == "Runs kept in s.db, one per vantage: a r1, b r2."
    assert not runs.every_failed
    every = [vantage_row("c", [dataclasses.replace(_trace(20.0, 150.0), error=_FAILED)])]
    assert VantageRuns({"c": "r3"}, compare_vantages([*rows, *every]), "s.db").every_failed


def test_places_alike_are_not_told_apart() -> None:
    rows = [vantage_row("a", _place(20.0, 6, 3)), vantage_row("b", _place(20.0, 6, 4))]
    comparison = compare_vantages(rows)
    assert comparison.nearest in ("a", "b")
    assert not comparison.significant
    text = " ".join(render_text(render_vantages(comparison)).split())
    assert "not significantly nearer than" in text


def test_setup_phases_come_from_new_connections_only() -> None:
    warm = [_trace(30.0, 150.0, new=False) for _ in range(5)]
    row = vantage_row("x", [_trace(30.0, 150.0), *warm])
    assert row.requests == 6 and row.dns_ms == 2.0 and row.connect_ms == 30.0
    only_warm = vantage_row("y", warm)
    assert only_warm.dns_ms is None and only_warm.rtt_ms is None
    comparison = compare_vantages([only_warm, vantage_row("z", warm)])
    assert comparison.nearest_by == "ttft"
    assert compare_vantages([row]).nearest is None


def test_vantage_flags_that_do_not_fit_are_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["probe", "http://127.0.0.1:9/v1", "-m", "m", "--vantage", "a"]) == 2
    assert capsys.readouterr().err == "Error: --ray ADDRESS and --vantage NAME,NAME go together\n"
    assert main(["diagnose", "--ray", "auto", "--vantage", "a,b"]) == 2
    assert "give the endpoint's URL" in capsys.readouterr().err
    assert (
        main(["probe", "http://127.0.0.1:9/v1", "-m", "m", "--ray", "auto", "--vantage", "a,a"])
        == 2
    )
    assert "distinct names" in capsys.readouterr().err
