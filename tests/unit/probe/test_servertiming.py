"""The response headers in which a server, or a gateway in front of it, tells its own
timing: read into numbers by name, and nonsense is not."""

from __future__ import annotations

from latdoc.probe._servertiming import parse_server_timing


def test_the_headers_that_tell_time_are_read_and_nonsense_is_not() -> None:
    headers = {
        "x-litellm-overhead-duration-ms": "12.5",
        "x-litellm-response-duration-ms": "None",
        "llm_provider-server-timing": "prefill;dur=50.000, tpot;dur=2.000",
        "openai-processing-ms": "-3",
        "x-litellm-timing-pre-processing-ms": "4.25",
        "x-litellm-callback-duration-ms": "0.0",
    }
    assert parse_server_timing(headers) == {
        "litellm-overhead": 12.5,
        "litellm-pre-processing": 4.25,
        "litellm-callback": 0.0,
        "prefill": 50.0,
        "tpot": 2.0,
    }
    # The endpoint's own Server-Timing wins over the one a gateway passes on.
    own = {**headers, "server-timing": "prefill;dur=7"}
    assert parse_server_timing(own)["prefill"] == 7.0
