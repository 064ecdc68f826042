"""What an application's request says about itself, read by ``latdoc.instrument``: the
dialect its path speaks, from the one registry of dialects, and its key, from whichever
header a dialect carries one in."""

from __future__ import annotations

import httpcore
import pytest

from latdoc.client._request_facts import dialect_of, trace_target
from latdoc.probe import dialects
from unit.probe.test_dialect_registry import TOY


def test_a_dialect_added_to_the_registry_is_the_dialect_its_requests_speak(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = "https://t.example/v1beta/toys/toy-2.0:stream?form=sse"
    assert dialect_of(url) == "toy-2.0:stream"
    monkeypatch.setattr(dialects, "DIALECTS", (*dialects.DIALECTS, TOY))
    assert dialect_of(url) == "toy"
    assert dialect_of("https://api.example.com/v1/chat/completions") == "chat"


def test_the_key_is_found_in_every_header_a_dialect_carries_it_in() -> None:
    key = "0123456789abcdef0123456789abcdef"
    for header in (b"api-key", b"x-goog-api-key", b"authorization"):
        value = b"Bearer " + key.encode() if header == b"authorization" else key.encode()
        request = httpcore.Request("POST", "https://h.example/v1", headers=[(header, value)])
        assert trace_target(request, None).secret == key
