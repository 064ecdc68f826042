"""The probe in Google's and Azure's dialects: Gemini's server-sent events and its
streamed JSON array (read element by element as the bytes arrive), Vertex AI's path
and token, Azure's deployment and v1 routes and ``api-key``; the first token timed
within 5% of the lab's own stamp; hidden thinking kept as reasoning tokens; error
bodies, truncated streams, credentials and model ids to escape each a typed failure
with its phase."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latdoc.errors import SSEError
from latdoc.probe import (
    check_extra_body,
    choose_api,
    dialects,
    environment_key,
    error_message,
    parse_event,
    request_body,
)
from latdoc.probe._jsonarray import JSONArrayDecoder
from latdoc.store.redact import Redactor

ELEMENTS = [
    {"candidates": [{"content": {"parts": [{"text": 'braces } { and "quotes" \\ in text'}]}}]},
    {"candidates": [{"content": {"parts": [{"text": "é ü 漢字 🙂", "thought": True}]}}]},
    {"usageMetadata": {"promptTokenCount": 3}, "nested": [[{"a": "]"}], {"b": "["}]},
]


BODY = "[" + "\n,\r\n".join(json.dumps(e, indent=2, ensure_ascii=False) for e in ELEMENTS) + "\n]"


BODY_BYTES = BODY.encode()


def _ends(body: bytes) -> list[int]:
    """Where each element's closing brace is, found by parsing the body whole."""
    decoder = json.JSONDecoder()
    text, ends, at = body.decode(), [], 1
    for _ in ELEMENTS:
        while text[at] in " \r\n,":
            at += 1
        _, at = decoder.raw_decode(text, at)
        ends.append(len(text[:at].encode()) - 1)
    return ends


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(min_value=1, max_value=len(BODY_BYTES) - 1), max_size=40))
def test_every_split_of_a_json_array_yields_its_elements_stamped_by_their_closing_brace(
    cuts: set[int],
) -> None:
    bounds = [0, *sorted(cuts), len(BODY_BYTES)]
    decoder = JSONArrayDecoder()
    seen = []
    for read, (start, end) in enumerate(itertools.pairwise(bounds)):
        seen += decoder.feed(BODY_BYTES[start:end], read)
    assert decoder.ended and decoder.close(99) == []
    assert [json.loads(e.data) for e in seen] == ELEMENTS
    reads_of = [next(i for i, b in enumerate(bounds[1:]) if end < b) for end in _ends(BODY_BYTES)]
    assert [e.t_ns for e in seen] == reads_of
    assert all(e.event is None and e.id is None for e in seen)


def test_several_elements_in_one_read_share_its_stamp() -> None:
    decoder = JSONArrayDecoder()
    first = decoder.feed(BODY_BYTES[:10], 1)
    rest = decoder.feed(BODY_BYTES[10:], 2)
    assert first == [] and [e.t_ns for e in rest] == [2, 2, 2]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"candidates": []}', "where the array should open"),
        (b"[1, 2]", "'1' between elements"),
        (b'[{"a": 1}{"b": 2}]', "'{' between elements"),
        (b'[{"a": 1},]', "']' between elements"),
        (b'[{"a": 1}] trailing', "after the closing ]"),
        (b'[{"a": "\xff\xfe"}]', "not valid UTF-8"),
    ],
)
def test_what_is_no_json_array_of_objects_is_refused(body: bytes, says: str) -> None:
    decoder = JSONArrayDecoder()
    with pytest.raises(SSEError, match="not a streamed JSON array") as refused:
        decoder.feed(body, 1)
    assert says in str(refused.value)
    with pytest.raises(SSEError, match="after a decoding error"):
        decoder.feed(b"[]", 2)


def test_an_array_cut_off_gives_its_whole_elements_and_no_end() -> None:
    decoder = JSONArrayDecoder()
    events = decoder.feed(BODY_BYTES[: len(BODY_BYTES) // 2], 1)
    assert decoder.close(2) == [] and not decoder.ended
    assert [json.loads(e.data) for e in events] == ELEMENTS[: len(events)]


def _response(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if "finish" in fields:
        candidate["finishReason"] = fields.pop("finish")
    return {"candidates": [candidate], **fields}


def test_gemini_events_read_text_thoughts_tool_calls_usage_and_finish() -> None:
    thought = parse_event(_response({"text": "Hmm, ", "thought": True}), dialects.gemini.SPEC)
    assert (thought.reasoning_chars, thought.output_chars) == (5, 0)
    said = parse_event(_response({"text": "Hi"}, {"text": " there"}), dialects.vertex.SPEC)
    assert said.output_chars == 8 and said.text == "Hi there"
    call = {"functionCall": {"name": "lookup", "args": {"q": "x"}}}
    called = parse_event(_response(call, finish="STOP"), dialects.gemini.SPEC)
    assert called.output_chars == len("lookup" + '{"q":"x"}') and called.finish_reason == "stop"
    assert [(p.place, p.name, p.argument_chars) for p in called.tool_parts] == [(None, "lookup", 9)]
    usage = {
        "promptTokenCount": 120,
        "cachedContentTokenCount": 100,
        "candidatesTokenCount": 7,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 157,
    }
    end = parse_event(
        _response({"text": ""}, finish="MAX_TOKENS", usageMetadata=usage, responseId="r-1"),
        dialects.gemini.SPEC,
    )
    assert end.output_chars == 0 and end.finish_reason == "length" and end.response_id == "r-1"
    assert end.usage is not None
    assert (end.usage.prompt_tokens, end.usage.cached_prompt_tokens) == (120, 100)
    assert (end.usage.completion_tokens, end.usage.reasoning_tokens) == (37, 30)
    assert (
        parse_event(_response(finish="SAFETY"), dialects.gemini.SPEC).finish_reason
        == "content_filter"
    )
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {}}
    assert parse_event(blocked, dialects.gemini.SPEC).finish_reason == "content_filter"
    chat = {"object": "chat.completion.chunk", "choices": [{"delta": {"content": "Hi"}}]}
    assert parse_event(chat, dialects.gemini.SPEC).other_dialect == "chat"
    assert parse_event(_response({"text": "Hi"}), dialects.chat.SPEC).other_dialect == "gemini"


def test_a_google_error_object_is_an_error_with_its_http_code() -> None:
    error = {"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}}
    info = parse_event(error, dialects.gemini.SPEC)
    assert info.error == "RESOURCE_EXHAUSTED: Quota exceeded." and info.error_status == 429
    nameless = parse_event(
        {"error": {"message": "busy", "status": "UNAVAILABLE"}}, dialects.vertex.SPEC
    )
    assert nameless.error_status == 503
    body = json.dumps([error]).encode()
    assert error_message(body, "application/json") == "RESOURCE_EXHAUSTED: Quota exceeded."


def test_gemini_bodies_nest_the_limit_and_merge_what_is_added() -> None:
    convo = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "More"},
    ]
    body = request_body(
        dialects.gemini.SPEC,
        "gemini-2.5-flash",
        convo,
        9,
        include_usage=True,
        extra={"generationConfig": {"temperature": 0}},
    )
    assert body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Hi"}]},
            {"role": "model", "parts": [{"text": "Hello"}]},
            {"role": "user", "parts": [{"text": "More"}]},
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 9, "temperature": 0},
    }
    with pytest.raises(Exception, match=r"generationConfig\.maxOutputTokens"):
        check_extra_body({"generationConfig": {"maxOutputTokens": 3}})
    low = dialects.vertex.SPEC.reasoning_fields("low")
    assert low == {"generationConfig": {"thinkingConfig": {"thinkingBudget": 1024}}}
    check_extra_body(low)


def test_routes_take_the_base_urls_query_and_path() -> None:
    azure = dialects.get("azure")
    base = "https://res.openai.azure.com"
    assert azure.url(base, "gpt-4o") == (
        f"{base}/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
    )
    assert azure.url(f"{base}/?api-version=2025-04-01-preview", "gpt-4o") == (
        f"{base}/openai/deployments/gpt-4o/chat/completions?api-version=2025-04-01-preview"
    )
    assert azure.url(f"{base}/openai/v1/", "gpt-4o") == f"{base}/openai/v1/chat/completions"
    vertex = "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1"
    assert dialects.get("vertex").url(vertex, "gemini-2.5-pro") == (
        f"{vertex}/publishers/google/models/gemini-2.5-pro:streamGenerateContent"
    )
    gemini = "https://generativelanguage.googleapis.com/v1beta"
    assert dialects.get("gemini").url(f"{gemini}?alt=json", "gemini-2.5-pro") == (
        f"{gemini}/models/gemini-2.5-pro:streamGenerateContent?alt=json"
    )
    assert dialects.of_path("/openai/v1/chat/completions") is azure
    assert dialects.of_path("/v1/chat/completions") is dialects.get("chat")


def test_each_dialect_finds_its_key_where_it_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_AD_TOKEN",
    ):
        monkeypatch.delenv(var, raising=False)
    gemini = choose_api("http://h/v1beta", api="gemini")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    assert environment_key(gemini) == "gemini-key"
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    assert environment_key(gemini) == "google-key"  # as Google's SDK reads them
    azure = choose_api("http://h", api="azure")
    token = "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJjb2cifQ.c2lnbmF0dXJl"
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", token)
    assert environment_key(azure) == token
    assert dialects.azure.SPEC.auth_headers(token) == [
        (b"authorization", b"Bearer " + token.encode())
    ]
    assert dialects.azure.SPEC.auth_headers("0123abcd") == [(b"api-key", b"0123abcd")]
    assert dialects.gemini.SPEC.auth_headers("k") == [(b"x-goog-api-key", b"k")]
    assert dialects.vertex.SPEC.auth_headers("ya29.t") == [(b"authorization", b"Bearer ya29.t")]
    assert dialects.gemini.SPEC.auth_headers(None) == []


def test_google_keys_and_tokens_are_masked_wherever_they_are_written() -> None:
    key = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
    token = "ya29.a0AfB_byDlabToken-123"
    redactor = Redactor()
    assert redactor.text(key) == "***"
    said = redactor.text(f"API key {key} not valid; Bearer {token}; token {token}")
    assert key not in said and token not in said
