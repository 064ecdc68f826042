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

from conftest import FAST, LabFactory
from latdoc import Endpoint, ErrorKind, Phase, ProbeSession, RequestTrace
from latdoc.analysis.facts import thinking_ms
from latdoc.lab.sim import LabConfig, LatencyModel
from latdoc.probe import dialects
from latdoc.probe.dialects import DialectSpec
from machine_noise import MachineNoise
from scripted_server import ScriptedServer, chunk, plain_response, sse_response
from unit.probe.test_probe_google_azure import _response

PROMPT = "Hello, please briefly introduce yourself."


KEY = "lab-key-0123456789abcdef"


PREFILL = LatencyModel(prefill_base_ms=80.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)


THINKER = LatencyModel(
    prefill_base_ms=10.0, prefill_ms_per_token=0.0, decode_ms_per_token=4.0, reasoning_tokens=5
)


def _probe(
    base_url: str,
    dialect: DialectSpec | str,
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
        endpoint = Endpoint(
            base_url, model, dialects.resolve(dialect), api_key=key, extra_body=extra or {}
        )
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
        hidden = _probe(base, dialects.gemini.SPEC)
        shown = _probe(
            base,
            dialects.gemini.SPEC,
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
        trace = _probe(base, dialects.gemini.SPEC, max_tokens=8, extra={"tools": tools})
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
        keyless = _probe(f"{root}/v1beta", dialects.gemini.SPEC, key=None)
        versionless = _probe(f"{root}/?api-version=", dialects.azure.SPEC)
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
        slashed = _probe(f"{root}/v1beta", dialects.gemini.SPEC, model="tuned/../../models/lab-sim")
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
        trace = _probe(server.base_url, dialects.vertex.SPEC, key="ya29.lab-token")
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
        trace = _probe(server.base_url, dialects.gemini.SPEC)
    assert trace.error is not None and trace.error.kind is ErrorKind.MALFORMED
    assert "not an event stream or a streamed JSON array" in trace.error.message


def test_a_truncated_array_element_is_a_broken_stream() -> None:
    script = _array_response([b"[" + _element("Hi") + b"\n,\r\n" + _element("there")[:20]])
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url, dialects.gemini.SPEC)
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
        trace = _probe(server.base_url, dialects.gemini.SPEC)
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
        trace = _probe(server.base_url, dialects.gemini.SPEC)
        sent = server.requests[0]
    assert trace.error is not None and trace.error.status == 500
    assert "INTERNAL: Internal error" in trace.error.message and trace.error.phase is Phase.STREAM
    assert f"x-goog-api-key: {KEY}".encode() in sent and b"authorization" not in sent.lower()
    assert b"?alt=sse" in sent.split(b"\r\n", 1)[0]
