"""latdoc record's parts that need no socket: where a call goes, what is counted of the
application's connections, the gateway's time summed up, what is said and kept."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from latdoc.errors import UsageError
from latdoc.features.record import Recorded, closing_lines, parse_upstream
from latdoc.features.record.analysis import relay_figures
from latdoc.features.record.gateway import AppConnections
from latdoc.features.record.render import gateway_messages
from latdoc.records import RequestTrace
from latdoc.store.codec import trace_from_record, trace_to_record


@pytest.mark.parametrize(
    ("upstream", "path", "query", "url"),
    [
        ("https://api.openai.com/v1", "/v1/chat/completions", b"", "https://api.openai.com/v1/chat/completions"),
        ("https://api.openai.com/v1", "/chat/completions", b"", "https://api.openai.com/v1/chat/completions"),
        ("https://api.openai.com/v1/", "/v1", b"a=1", "https://api.openai.com/v1?a=1"),
        ("https://api.anthropic.com", "/v1/messages", b"", "https://api.anthropic.com/v1/messages"),
        ("http://[::1]:8000/v1", "/v1x/models", b"", "http://[::1]:8000/v1/v1x/models"),
    ],
)  # fmt: skip
def test_a_call_goes_under_the_upstreams_path_once(
    upstream: str, path: str, query: bytes, url: str
) -> None:
    assert parse_upstream(upstream).url(path, query) == url


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("api.openai.com/v1", "give the provider's base URL"),
        ("ftp://host/v1", "give the provider's base URL"),
        ("https://user:sk-secret@host/v1", "give the base URL alone"),
        ("https://host/v1?key=sk-secret", "give the base URL alone"),
    ],
)
def test_an_upstream_latdoc_cannot_use_is_refused_without_repeating_a_secret(
    text: str, says: str
) -> None:
    with pytest.raises(UsageError) as refused:
        parse_upstream(text)
    assert says in str(refused.value) and "sk-secret" not in str(refused.value)


def test_the_applications_connections_are_counted_once_each() -> None:
    seen = AppConnections()
    for client in [("127.0.0.1", 5000), ("127.0.0.1", 5000), ("127.0.0.1", 5001), None]:
        seen.saw(client)
    assert seen.document() == {"requests": 4, "connections": 2}


def test_a_bounded_memory_of_connections_forgets_the_oldest() -> None:
    seen = AppConnections()
    for port in range(AppConnections.KEPT + 10):
        seen.saw(("127.0.0.1", port))
    seen.saw(("127.0.0.1", 0))  # forgotten: counted as opened again
    seen.saw(("127.0.0.1", AppConnections.KEPT + 9))  # remembered
    assert seen.opened == AppConnections.KEPT + 11


def test_the_gateways_time_is_summed_up_in_milliseconds() -> None:
    assert relay_figures([]) is None
    figures = relay_figures([100] * 99 + [5000])
    assert figures is not None
    assert (figures.pieces, figures.p50_ms, figures.max_ms) == (100, 0.1, 5.0)
    assert 0.1 < figures.p99_ms <= 5.0
    assert figures.document()["p50"] == 0.1


def _recorded(**changes: object) -> Recorded:
    base = Recorded(
        run_id="20261207-000000-abcdef", requests=6, kept=6, not_recorded=0,
        app_connections=6, upstream_reused=5, setup_ms=41.6,
        relay=relay_figures([300, 400, 900]), interrupted=False,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_an_application_that_opens_a_connection_a_call_is_told() -> None:
    said = [str(m) for m in gateway_messages(_recorded())]
    assert said[0].startswith("The gateway added 0.400 ms a piece of body at the median")
    assert "new connection for each of its 6 calls" in said[1]
    assert "5 of them reused a connection" in said[2] and "42 ms at the median" in said[2]


def test_an_application_that_keeps_its_connection_is_not_told_about_it() -> None:
    said = " ".join(gateway_messages(_recorded(app_connections=1)))
    assert "new connection" not in said
    # Nothing reused upstream (the provider closes connections): no saving is claimed.
    said = " ".join(gateway_messages(_recorded(upstream_reused=0)))
    assert "each of its 6 calls" in said and "reused" not in said


def test_the_closing_lines_say_what_was_kept_and_what_to_run_next() -> None:
    lines = closing_lines(_recorded(kept=5, not_recorded=1, interrupted=True))
    assert lines[0] == "Recorded 5 of 6 calls as run 20261207-000000-abcdef (stopped by Ctrl-C)."
    assert lines[1].startswith("Calls passed on but not recorded: 1")
    assert lines[-1] == "Diagnose it: latdoc diagnose --from-run 20261207-000000-abcdef"
    assert not any(
        line.startswith("Diagnose it") for line in closing_lines(_recorded(kept=0, relay=None))
    )


def test_the_gateways_time_per_piece_is_stored_with_the_trace() -> None:
    trace = RequestTrace(
        started_at=datetime(2026, 12, 7, tzinfo=UTC), t0_ns=1, url="http://x/v1/chat/completions",
        model="m", dialect="chat", relay_us=(310, 402, 1200),
    )  # fmt: skip
    record = trace_to_record(trace)
    assert record["relay_us"] == [310, 402, 1200]
    assert trace_from_record(record).relay_us == (310, 402, 1200)
    del record["relay_us"]  # a trace stored before the field
    assert trace_from_record(record).relay_us == ()
