"""The probe in Google's and Azure's dialects: Gemini's server-sent events and its
streamed JSON array (read element by element as the bytes arrive), Vertex AI's path
and token, Azure's deployment and v1 routes and ``api-key``; the first token timed
within 5% of the lab's own stamp; hidden thinking kept as reasoning tokens; error
bodies, truncated streams, credentials and model ids to escape each a typed failure
with its phase."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FAST, LabFactory
from latdoc import Dialect, Endpoint, ErrorKind, Phase, ProbeSession, RequestTrace
from latdoc.analysis.facts import thinking_ms
from latdoc.cli import build_parser
from latdoc.cli._options import api_key
from latdoc.errors import SSEError
from latdoc.lab.sim import LabConfig, LatencyModel
from latdoc.probe import check_extra_body, dialects, parse_event
from latdoc.probe._dialects import error_message, request_body
from latdoc.probe._jsonarray import JSONArrayDecoder
from latdoc.store.redact import Redactor
from machine_noise import MachineNoise
from scripted_server import ScriptedServer, chunk, plain_response, sse_response

PROMPT = "Hello, please briefly introduce yourself."
KEY = "lab-key-0123456789abcdef"
PREFILL = LatencyModel(prefill_base_ms=80.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)
THINKER = LatencyModel(
    prefill_base_ms=10.0, prefill_ms_per_token=0.0, decode_ms_per_token=4.0, reasoning_tokens=5
)


def _probe(
    base_url: str,
    dialect: Dialect | str,
    *,
    model: str = "lab-sim",
    max_tokens: int = 4,
    key: str | None = KEY,
    extra: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    events: list[tuple[Any, int]] | None = None,
) -> RequestTrace:
    def hook(obj: Any, t_ns: int) -> None:
        if events is not None:
            events.append((obj, t_ns))

    async def go() -> RequestTrace:
        endpoint = Endpoint(base_url, model, Dialect(dialect), api_key=key, extra_body=extra or {})
        async with ProbeSession(endpoint) as session:
            return await session.request(PROMPT, max_tokens, headers=headers, on_event=hook)

    return asyncio.run(go())


def _bases(root: str) -> dict[str, tuple[str, str]]:
    """Each way to reach the lab: (dialect, base URL), by name."""
    return {
        "gemini sse": ("gemini", f"{root}/v1beta"),
        "gemini array": ("gemini", f"{root}/v1beta?alt=json"),
        "vertex array": ("vertex", f"{root}/v1/projects/lab-project/locations/us-central1"),
        "vertex sse": ("vertex", f"{root}/v1/projects/lab-project/locations/us-central1?alt=sse"),
        "azure deployment": ("azure", root),
        "azure v1": ("azure", f"{root}/openai/v1"),
    }


# -- the streamed JSON array ---------------------------------------------------------

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


# -- Gemini's events -------------------------------------------------------------------


def _response(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if "finish" in fields:
        candidate["finishReason"] = fields.pop("finish")
    return {"candidates": [candidate], **fields}


def test_gemini_events_read_text_thoughts_tool_calls_usage_and_finish() -> None:
    thought = parse_event(_response({"text": "Hmm, ", "thought": True}), Dialect.GEMINI)
    assert (thought.reasoning_chars, thought.output_chars) == (5, 0)
    said = parse_event(_response({"text": "Hi"}, {"text": " there"}), Dialect.VERTEX)
    assert said.output_chars == 8 and said.text == "Hi there"
    call = {"functionCall": {"name": "lookup", "args": {"q": "x"}}}
    called = parse_event(_response(call, finish="STOP"), Dialect.GEMINI)
    assert (
        called.output_chars == len("lookup" + '{"q":"x"}') and called.finish_reason == "tool_calls"
    )
    usage = {
        "promptTokenCount": 120,
        "cachedContentTokenCount": 100,
        "candidatesTokenCount": 7,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 157,
    }
    end = parse_event(
        _response({"text": ""}, finish="MAX_TOKENS", usageMetadata=usage, responseId="r-1"),
        Dialect.GEMINI,
    )
    assert end.output_chars == 0 and end.finish_reason == "length" and end.response_id == "r-1"
    assert end.usage is not None
    assert (end.usage.prompt_tokens, end.usage.cached_prompt_tokens) == (120, 100)
    assert (end.usage.completion_tokens, end.usage.reasoning_tokens) == (37, 30)
    assert parse_event(_response(finish="SAFETY"), Dialect.GEMINI).finish_reason == "content_filter"
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {}}
    assert parse_event(blocked, Dialect.GEMINI).finish_reason == "content_filter"
    chat = {"object": "chat.completion.chunk", "choices": [{"delta": {"content": "Hi"}}]}
    assert parse_event(chat, Dialect.GEMINI).other_dialect == "chat"
    assert parse_event(_response({"text": "Hi"}), Dialect.CHAT).other_dialect == "gemini"


def test_a_google_error_object_is_an_error_with_its_http_code() -> None:
    error = {"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}}
    info = parse_event(error, Dialect.GEMINI)
    assert info.error == "RESOURCE_EXHAUSTED: Quota exceeded." and info.error_status == 429
    nameless = parse_event({"error": {"message": "busy", "status": "UNAVAILABLE"}}, Dialect.VERTEX)
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
        Dialect.GEMINI,
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
    low = Dialect.VERTEX.reasoning_fields("low")
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
    parse = build_parser().parse_args
    gemini = parse(["probe", "http://h/v1beta", "-m", "g", "--api", "gemini"])
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    assert api_key(gemini) == "gemini-key"
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    assert api_key(gemini) == "google-key"  # as Google's SDK reads them
    azure = parse(["probe", "http://h", "-m", "d", "--api", "azure"])
    token = "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJjb2cifQ.c2lnbmF0dXJl"
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", token)
    assert api_key(azure) == token
    assert Dialect.AZURE.auth_headers(token) == [(b"authorization", b"Bearer " + token.encode())]
    assert Dialect.AZURE.auth_headers("0123abcd") == [(b"api-key", b"0123abcd")]
    assert Dialect.GEMINI.auth_headers("k") == [(b"x-goog-api-key", b"k")]
    assert Dialect.VERTEX.auth_headers("ya29.t") == [(b"authorization", b"Bearer ya29.t")]
    assert Dialect.GEMINI.auth_headers(None) == []


# -- against the lab ---------------------------------------------------------------------


def _first_output_stamp(events: list[tuple[Any, int]]) -> int:
    """The lab's stamp on the first event that carried output text."""
    for obj, _ in events:
        choices = obj.get("choices") or []
        texts = [c.get("delta", {}).get("content") for c in choices if isinstance(c, dict)]
        for candidate in obj.get("candidates") or []:
            texts += [p.get("text") for p in candidate["content"]["parts"]]
        if any(texts):
            return int(obj["lab_t_ns"])
    raise AssertionError("no output event")


@pytest.mark.parametrize("way", list(_bases("")))
def test_the_first_token_is_timed_within_5pct_of_the_labs_stamp(
    lab: LabFactory, way: str, machine_noise: MachineNoise
) -> None:
    config = LabConfig(latency=PREFILL, api_key=KEY, stamp_chunks=True)
    events: list[tuple[Any, int]] = []
    with lab(config) as server:
        dialect, base = _bases(server.base_url.removesuffix("/v1"))[way]
        trace = _probe(base, dialect, events=events)
    assert trace.error is None, trace.error
    assert trace.dialect == dialect
    lab_ttft_ms = (_first_output_stamp(events) - trace.t0_ns) / 1e6
    assert trace.ttft_ms is not None and lab_ttft_ms >= 80.0
    # Within 5 % of the lab's stamp, widened by the noise, never to half of it.
    late = machine_noise.bound_ms(0.05 * lab_ttft_ms, lab_ttft_ms / 2)
    assert lab_ttft_ms <= trace.ttft_ms <= lab_ttft_ms + late, (trace.ttft_ms, lab_ttft_ms)
    assert trace.output_tokens == 4 and [c.tokens for c in trace.chunks] == [1, 1, 1, 1]
    assert trace.finish_reason == "length" and trace.unknown_events == 0
    assert trace.prompt_tokens is not None and trace.prompt_tokens > 0


def test_hidden_thinking_is_reasoning_tokens_and_no_chunks_share(
    lab: LabFactory, machine_noise: MachineNoise
) -> None:
    with lab(LabConfig(latency=THINKER)) as server:
        base = server.base_url.removesuffix("/v1") + "/v1beta"
        hidden = _probe(base, Dialect.GEMINI)
        shown = _probe(
            base,
            Dialect.GEMINI,
            extra={"generationConfig": {"thinkingConfig": {"includeThoughts": True}}},
        )
    assert hidden.error is None and shown.error is None, (hidden.error, shown.error)
    assert hidden.reasoning_tokens == 5 and hidden.output_tokens == 9
    assert hidden.first_reasoning_ns is None and hidden.reasoning_ms is None
    assert [c.tokens for c in hidden.chunks] == [1, 1, 1, 1] and hidden.chunk_tokens_exact
    assert hidden.ttft_ms is not None and hidden.ttft_ms >= 10.0 + 5 * 4.0
    thought = thinking_ms(hidden)
    assert thought is not None and not thought[1]
    machine_noise.assert_near(thought[0], 5 * 4.0, 10.0, 5 * 4.0 - 1)
    assert shown.first_token_ns == shown.first_reasoning_ns
    assert shown.reasoning_ms is not None
    machine_noise.assert_near(shown.reasoning_ms, 5 * 4.0, 15.0, 5 * 4.0 - 1)
    assert [c.tokens for c in shown.chunks] == [1] * 9


def test_a_gemini_tool_call_is_one_output_with_the_whole_call(lab: LabFactory) -> None:
    tools = [{"functionDeclarations": [{"name": "lookup", "parameters": {"type": "object"}}]}]
    with lab(LabConfig(latency=FAST, answer_tokens=3)) as server:
        base = server.base_url.removesuffix("/v1") + "/v1beta"
        trace = _probe(base, Dialect.GEMINI, max_tokens=8, extra={"tools": tools})
    assert trace.error is None, trace.error
    assert len(trace.chunks) == 1 and trace.chunks[0].tokens == 3
    assert trace.output_tokens == 3 and trace.finish_reason in ("tool_calls", "stop")


@pytest.mark.parametrize(
    ("way", "status", "says"),
    [
        ("gemini sse", 400, "INVALID_ARGUMENT: API key not valid"),
        ("vertex array", 401, "UNAUTHENTICATED: Request had invalid authentication credentials"),
        ("azure deployment", 401, "Access denied"),
        ("azure v1", 401, "Access denied"),
    ],
)
def test_a_wrong_credential_is_a_typed_error_without_the_credential(
    lab: LabFactory, way: str, status: int, says: str
) -> None:
    wrong = "AIzaSyWRONGWRONGWRONGWRONGWRONGWRONG123"
    with lab(LabConfig(latency=FAST, api_key=KEY)) as server:
        dialect, base = _bases(server.base_url.removesuffix("/v1"))[way]
        trace = _probe(base, dialect, key=wrong)
    assert trace.error is not None and trace.error.kind is ErrorKind.HTTP
    assert trace.error.status == status and says in trace.error.message
    assert trace.error.phase is Phase.WAIT
    assert wrong not in trace.error.message


def test_a_missing_key_and_a_missing_api_version_are_refused_as_the_services_do(
    lab: LabFactory,
) -> None:
    with lab(LabConfig(latency=FAST, api_key=KEY)) as server:
        root = server.base_url.removesuffix("/v1")
        keyless = _probe(f"{root}/v1beta", Dialect.GEMINI, key=None)
        versionless = _probe(f"{root}/?api-version=", Dialect.AZURE)
    assert keyless.error is not None and keyless.error.status == 403
    assert "PERMISSION_DENIED" in keyless.error.message
    assert versionless.error is not None and versionless.error.status == 404
    assert "Resource not found" in versionless.error.message


@pytest.mark.parametrize("way", ["gemini sse", "gemini array", "azure deployment"])
def test_an_error_after_the_stream_began_is_typed_with_the_stream_phase(
    lab: LabFactory, way: str
) -> None:
    with lab(LabConfig(latency=FAST, fault_after_tokens=2)) as server:
        dialect, base = _bases(server.base_url.removesuffix("/v1"))[way]
        trace = _probe(base, dialect, headers={"x-lab-fault": "overloaded"})
    assert trace.error is not None and trace.error.kind is ErrorKind.HTTP
    assert trace.error.status in (503, 529) and trace.error.phase is Phase.STREAM
    assert len(trace.chunks) == 2


@pytest.mark.parametrize("way", ["gemini sse", "gemini array", "vertex array"])
@pytest.mark.parametrize(
    ("fault", "kind"), [("truncate", "stream_broken"), ("malformed", "malformed")]
)
def test_a_cut_or_broken_gemini_stream_is_typed(
    lab: LabFactory, way: str, fault: str, kind: str
) -> None:
    with lab(LabConfig(latency=FAST, fault_after_tokens=2)) as server:
        dialect, base = _bases(server.base_url.removesuffix("/v1"))[way]
        trace = _probe(base, dialect, headers={"x-lab-fault": fault})
    assert trace.error is not None and trace.error.kind == kind, trace.error
    assert trace.error.phase is Phase.STREAM and len(trace.chunks) == 2
    if fault == "truncate":
        assert "finishReason" in trace.error.message


def test_a_model_id_with_characters_to_escape_is_quoted_into_the_path(lab: LabFactory) -> None:
    odd = "lab sim@v1:beta"
    config = LabConfig(latency=FAST, alt_models={odd: FAST})
    with lab(config) as server:
        root = server.base_url.removesuffix("/v1")
        traces = {way: _probe(base, d, model=odd) for way, (d, base) in _bases(root).items()}
        slashed = _probe(f"{root}/v1beta", Dialect.GEMINI, model="tuned/../../models/lab-sim")
    for way, trace in traces.items():
        assert trace.error is None, (way, trace.error)
        assert trace.model == odd and trace.output_tokens == 4
        in_path = way != "azure v1"  # the v1 API names the deployment in the body
        assert ("lab%20sim%40v1%3Abeta" in trace.url) is in_path, trace.url
    assert slashed.error is not None and slashed.error.kind is ErrorKind.HTTP
    assert slashed.error.status == 404 and "tuned%2F..%2F..%2Fmodels" in slashed.url


def _array_response(pieces: list[bytes | float]) -> list[bytes | float | str]:
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=UTF-8\r\n"
        b"transfer-encoding: chunked\r\n\r\n"
    )
    return [head, *(chunk(p) if isinstance(p, bytes) else p for p in pieces), b"0\r\n\r\n"]


def _element(text: str, finish: str | None = None, **usage: int) -> bytes:
    obj = _response({"text": text}, **({"finish": finish} if finish else {}))
    if usage:
        obj["usageMetadata"] = usage
    return json.dumps(obj, indent=2).encode()


def test_a_json_array_split_and_merged_across_reads_is_timed_per_element() -> None:
    one, two, three = _element("Hel"), _element("lo"), _element("!", "STOP", promptTokenCount=4)
    script = _array_response(
        [b"[" + one[:7], 0.05, one[7:] + b"\n,\r\n" + two[:3], 0.05, two[3:], 0.05,
         b"\n,\r\n" + three + b"\n]"]
    )  # fmt: skip
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url, Dialect.VERTEX, key="ya29.lab-token")
        sent = server.requests[0]
    assert trace.error is None, trace.error
    assert [c.chars for c in trace.chunks] == [3, 2, 1]
    gaps = [b.t_ns - a.t_ns for a, b in itertools.pairwise(trace.chunks)]
    assert all(gap >= 40e6 for gap in gaps), gaps
    assert trace.finish_reason == "stop" and trace.prompt_tokens == 4
    assert b"authorization: Bearer ya29.lab-token" in sent
    assert b"accept: application/json, text/event-stream" in sent


def test_a_json_array_read_as_sse_or_anything_else_is_refused() -> None:
    script = plain_response("200 OK", "text/plain", b"[]")
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url, Dialect.GEMINI)
    assert trace.error is not None and trace.error.kind is ErrorKind.MALFORMED
    assert "not an event stream or a streamed JSON array" in trace.error.message


def test_a_truncated_array_element_is_a_broken_stream() -> None:
    script = _array_response([b"[" + _element("Hi") + b"\n,\r\n" + _element("there")[:20]])
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url, Dialect.GEMINI)
    assert trace.error is not None and trace.error.kind is ErrorKind.STREAM_BROKEN
    assert trace.error.phase is Phase.STREAM and len(trace.chunks) == 1


@pytest.mark.parametrize(
    ("status", "body"),
    [
        ("429 Too Many Requests", {"error": {"code": 429, "message": "Quota exceeded.",
                                              "status": "RESOURCE_EXHAUSTED"}}),
        ("400 Bad Request", [{"error": {"code": 400, "message": "Quota exceeded.",
                                        "status": "INVALID_ARGUMENT"}}]),
    ],
)  # fmt: skip
def test_a_google_error_body_names_its_status(status: str, body: Any) -> None:
    script = plain_response(status, "application/json", json.dumps(body).encode())
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url, Dialect.GEMINI)
    assert trace.error is not None and trace.error.kind is ErrorKind.HTTP
    assert trace.error.status == int(status[:3]) and trace.error.phase is Phase.WAIT
    assert trace.error.message.endswith("Quota exceeded.") and ": Quota" in trace.error.message


def test_an_error_frame_after_200_on_sse_is_its_http_equivalent() -> None:
    frames = [
        b"data: " + json.dumps(_response({"text": "Hi"})).encode() + b"\r\n\r\n",
        b'data: {"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}'
        b"\r\n\r\n",
    ]
    with ScriptedServer(sse_response(frames)) as server:
        trace = _probe(server.base_url, Dialect.GEMINI)
        sent = server.requests[0]
    assert trace.error is not None and trace.error.status == 500
    assert "INTERNAL: Internal error" in trace.error.message and trace.error.phase is Phase.STREAM
    assert f"x-goog-api-key: {KEY}".encode() in sent and b"authorization" not in sent.lower()
    assert b"?alt=sse" in sent.split(b"\r\n", 1)[0]


def test_google_keys_and_tokens_are_masked_wherever_they_are_written() -> None:
    key = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
    token = "ya29.a0AfB_byDlabToken-123"
    redactor = Redactor()
    assert redactor.text(key) == "***"
    said = redactor.text(f"API key {key} not valid; Bearer {token}; token {token}")
    assert key not in said and token not in said
