"""The probe in Amazon Bedrock's ConverseStream: AWS's binary event stream decoded as
its bytes arrive (frames split across reads and several in one read, each stamped with
the read that completed it), the first token timed within 5% of the lab's own stamp,
``messageStart`` never the first token, requests signed by botocore's SigV4 signer,
exception frames after the 200 typed like their HTTP statuses, ``metrics.latencyMs``
as the server's own timing; a bad CRC, a frame cut off, a missing credential or region
and a model id to escape each a typed failure, and no credential in any output."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import struct
import sys
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FAST, LabFactory
from latdoc import Dialect, Endpoint, ErrorKind, Phase, ProbeSession, RequestTrace, Store
from latdoc.analysis.servertime import server_timing_of
from latdoc.cli import EXIT_OK, EXIT_REQUEST_FAILED, EXIT_USAGE, main
from latdoc.errors import SSEError, UsageError
from latdoc.lab.sim import LabConfig, LatencyModel
from latdoc.lab.sim.dialects.bedrock import frame
from latdoc.probe import check_extra_body, dialects, parse_event
from latdoc.probe._dialects import request_body
from latdoc.probe._eventstream import EventStreamDecoder
from latdoc.probe.dialects.bedrock import SigV4Signer, region_of
from latdoc.store.redact import Redactor
from machine_noise import MachineNoise
from scripted_server import ScriptedServer, chunk

PROMPT = "Hello, please briefly introduce yourself."
ACCESS_KEY = "AKIALABEXAMPLE000042"
SECRET_KEY = "lab/Secret+Access/Key0123456789abcdefghij"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEHlabSessionToken0123456789"
PREFILL = LatencyModel(prefill_base_ms=80.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)
THINKER = LatencyModel(
    prefill_base_ms=10.0, prefill_ms_per_token=0.0, decode_ms_per_token=4.0, reasoning_tokens=5
)
SIGV4 = re.compile(
    rb"authorization: AWS4-HMAC-SHA256 Credential=(\w+)/(\d{8})/([a-z0-9-]+)/bedrock/aws4_request,"
    rb" SignedHeaders=([a-z0-9;-]+), Signature=[0-9a-f]{64}\r\n"
)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """AWS's standard chain finds only the test's keys: no profile, no shared files, no
    instance metadata."""
    for var in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_DEFAULT_REGION",
        "AWS_ROLE_ARN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", "us-east-1")


def _probe(
    base_url: str,
    *,
    model: str = "lab-sim",
    max_tokens: int = 4,
    key: str | None = None,
    extra: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
    events: list[tuple[Any, int]] | None = None,
) -> RequestTrace:
    def hook(obj: Any, t_ns: int) -> None:
        if events is not None:
            events.append((obj, t_ns))

    async def go() -> RequestTrace:
        endpoint = Endpoint(base_url, model, Dialect.BEDROCK, api_key=key, extra_body=extra or {})
        async with ProbeSession(endpoint) as session:
            return await session.request(PROMPT, max_tokens, headers=headers, on_event=hook)

    return asyncio.run(go())


def _root(server: Any) -> str:
    return str(server.base_url).removesuffix("/v1")


def _event(name: str, obj: dict[str, Any]) -> bytes:
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(obj).encode())


def _exception(name: str, obj: dict[str, Any]) -> bytes:
    headers = {
        ":exception-type": name,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return frame(headers, json.dumps(obj).encode())


# -- the event-stream decoder ------------------------------------------------------------

FRAMES = [
    _event("messageStart", {"role": "assistant"}),
    _event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "é 漢字 🙂"}}),
    _event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "x" * 300}}),
    _event("messageStop", {"stopReason": "end_turn"}),
    _exception("throttlingException", {"message": "Too many requests"}),
]
BODY = b"".join(FRAMES)
ENDS = list(itertools.accumulate(len(f) for f in FRAMES))
"""Where each frame's last byte ends (exclusive)."""


def test_the_lab_encoder_matches_botocores_parser() -> None:
    from botocore.eventstream import EventStreamBuffer

    buffer = EventStreamBuffer()
    buffer.add_data(BODY)
    messages = list(buffer)
    assert [m.headers.get(":event-type") for m in messages[:4]] == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "messageStop",
    ]
    assert messages[4].headers[":exception-type"] == "throttlingException"


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(min_value=1, max_value=len(BODY) - 1), max_size=40))
def test_every_split_of_an_event_stream_yields_its_frames_stamped_by_their_last_read(
    cuts: set[int],
) -> None:
    bounds = [0, *sorted(cuts), len(BODY)]
    decoder = EventStreamDecoder()
    seen = []
    for read, (start, end) in enumerate(itertools.pairwise(bounds)):
        seen += decoder.feed(BODY[start:end], read)
    assert decoder.close(99) == []
    assert [e.event for e in seen] == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "messageStop",
        "throttlingException",
    ]
    assert json.loads(seen[1].data)["delta"]["text"] == "é 漢字 🙂"
    reads_of = [next(i for i, b in enumerate(bounds[1:]) if end <= b) for end in ENDS]
    assert [e.t_ns for e in seen] == reads_of


def test_several_frames_in_one_read_share_its_stamp() -> None:
    decoder = EventStreamDecoder()
    assert decoder.feed(BODY[:5], 1) == []
    assert [e.t_ns for e in decoder.feed(BODY[5:], 2)] == [2] * len(FRAMES)


def _corrupt(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


@pytest.mark.parametrize(
    ("where", "says"),
    [
        (9, "Checksum mismatch"),  # the prelude's CRC
        (2, "Checksum mismatch"),  # the total length, checked by the prelude's CRC
        (30, "Checksum mismatch"),  # a header byte, checked by the message CRC
        (-1, "Checksum mismatch"),  # the message CRC itself
    ],
)
def test_a_crc_that_does_not_match_is_refused_with_where(where: int, says: str) -> None:
    second = len(FRAMES[0])
    body = FRAMES[0] + _corrupt(FRAMES[1], where % len(FRAMES[1])) + FRAMES[2]
    decoder = EventStreamDecoder()
    assert [e.event for e in decoder.feed(body[:second], 1)] == ["messageStart"]
    with pytest.raises(SSEError, match=says) as refused:
        decoder.feed(body[second:], 2)
    assert f"at byte {second} of the body" in str(refused.value)
    with pytest.raises(SSEError, match="after a decoding error"):
        decoder.feed(FRAMES[3], 3)


def test_a_frame_whose_lengths_cannot_be_is_refused_not_looped_on() -> None:
    prelude = struct.pack(">II", 0, 0)
    bogus = prelude + struct.pack(">I", zlib.crc32(prelude)) + b"\x00" * 8
    with pytest.raises(SSEError, match="not an AWS event stream"):
        EventStreamDecoder().feed(bogus, 1)


def test_a_frame_cut_off_by_the_end_of_the_body_is_refused() -> None:
    decoder = EventStreamDecoder()
    events = decoder.feed(BODY[: ENDS[1] + 7], 1)
    assert [e.event for e in events] == ["messageStart", "contentBlockDelta"]
    with pytest.raises(SSEError, match="ended inside a frame, 7 bytes into it"):
        decoder.close(2)


def test_an_error_message_is_named_by_its_code() -> None:
    headers = {
        ":message-type": "error",
        ":error-code": "InternalFailure",
        ":error-message": "boom",
    }
    (event,) = EventStreamDecoder().feed(frame(headers, b""), 1)
    assert event.event == "InternalFailure" and json.loads(event.data) == {"message": "boom"}


# -- Bedrock's events and bodies ---------------------------------------------------------


def _parse(name: str, obj: Any) -> Any:
    return parse_event(obj, Dialect.BEDROCK, name)


def test_bedrock_events_read_text_reasoning_tool_use_stop_usage_and_latency() -> None:
    assert _parse("messageStart", {"role": "assistant"}).output_chars == 0
    text = _parse("contentBlockDelta", {"delta": {"text": "Hi"}, "p": "abcd"})
    assert (text.output_chars, text.reasoning_chars, text.text) == (2, 0, "Hi")
    thought = _parse("contentBlockDelta", {"delta": {"reasoningContent": {"text": "Hmm, "}}})
    assert (thought.output_chars, thought.reasoning_chars) == (0, 5)
    signed = _parse("contentBlockDelta", {"delta": {"reasoningContent": {"signature": "s"}}})
    assert signed.output_chars == signed.reasoning_chars == 0
    start = {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "lookup"}}}
    assert _parse("contentBlockStart", start).output_chars == len("lookup")
    args = _parse("contentBlockDelta", {"delta": {"toolUse": {"input": '{"q":'}}})
    assert args.output_chars == len('{"q":')
    for reason, finish in [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("guardrail_intervened", "content_filter"),
    ]:
        stop = _parse("messageStop", {"stopReason": reason})
        assert stop.finish_reason == finish and stop.ends_stream
    usage = {
        "inputTokens": 20,
        "outputTokens": 7,
        "totalTokens": 127,
        "cacheReadInputTokens": 100,
        "cacheWriteInputTokens": 0,
    }
    meta = _parse("metadata", {"usage": usage, "metrics": {"latencyMs": 412}})
    assert meta.usage is not None
    assert (meta.usage.prompt_tokens, meta.usage.cached_prompt_tokens) == (120, 100)
    assert meta.usage.completion_tokens == 7 and meta.server_timing == {"bedrock-latency": 412.0}
    assert _parse("someFutureEvent", {"x": 1}).unknown


@pytest.mark.parametrize(
    ("name", "payload", "status"),
    [
        ("throttlingException", {"message": "Too many requests"}, 429),
        ("validationException", {"message": "Bad input"}, 400),
        ("internalServerException", {"message": "Oops"}, 500),
        ("serviceUnavailableException", {"message": "Busy"}, 503),
        ("modelStreamErrorException", {"message": "Model failed"}, 424),
        (
            "modelStreamErrorException",
            {"message": "Overloaded", "originalStatusCode": 529, "originalMessage": "x"},
            529,
        ),
        ("somethingNewException", {"message": "?"}, None),
    ],
)
def test_an_exception_is_an_error_with_its_http_status(
    name: str, payload: dict[str, Any], status: int | None
) -> None:
    info = _parse(name, payload)
    assert info.error == f"{name}: {payload['message']}" and info.error_status == status


def test_converse_bodies_carry_turns_system_and_the_limit() -> None:
    convo = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "More"},
    ]
    body = request_body(
        Dialect.BEDROCK,
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        convo,
        9,
        include_usage=True,
        extra={"inferenceConfig": {"temperature": 0}},
    )
    assert body == {
        "messages": [
            {"role": "user", "content": [{"text": "Hi"}]},
            {"role": "assistant", "content": [{"text": "Hello"}]},
            {"role": "user", "content": [{"text": "More"}]},
        ],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 9, "temperature": 0},
    }
    with pytest.raises(UsageError, match=r"inferenceConfig\.maxTokens"):
        check_extra_body({"inferenceConfig": {"maxTokens": 3}})
    low = Dialect.BEDROCK.reasoning_fields("low")
    assert low == {
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    }
    base = "https://bedrock-runtime.eu-west-3.amazonaws.com"
    model = "arn:aws:bedrock:eu-west-3:123:inference-profile/eu.vendor.m-v1:0"
    assert dialects.get("bedrock").url(base, model) == (
        f"{base}/model/arn%3Aaws%3Abedrock%3Aeu-west-3%3A123%3Ainference-profile%2F"
        "eu.vendor.m-v1%3A0/converse-stream"
    )


def test_the_region_is_the_hosts_else_the_environments(monkeypatch: pytest.MonkeyPatch) -> None:
    assert region_of("https://bedrock-runtime.eu-west-3.amazonaws.com") == "eu-west-3"
    assert region_of("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com/") == (
        "us-gov-west-1"
    )
    assert region_of("http://127.0.0.1:8000") == "us-east-1"
    monkeypatch.delenv("AWS_REGION")
    assert region_of("http://127.0.0.1:8000") is None
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    assert SigV4Signer.for_url("http://127.0.0.1:8000").region == "ap-south-1"


def test_botocores_signer_signs_each_request_with_the_session_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    url = "https://bedrock-runtime.eu-west-3.amazonaws.com/model/m%3A0/converse-stream"
    signer = SigV4Signer.for_url(url)
    headers = dict(signer("POST", url, [(b"content-type", b"application/json")], b"{}"))
    auth = headers[b"authorization"].decode()
    assert auth.startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    assert "/eu-west-3/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;" in auth
    assert headers[b"x-amz-security-token"] == SESSION_TOKEN.encode()
    assert SECRET_KEY not in auth and set(signer.secrets) == {ACCESS_KEY, SESSION_TOKEN}
    other = dict(signer("POST", url, [(b"content-type", b"application/json")], b"{ }"))
    assert other[b"authorization"] != headers[b"authorization"]  # the body is signed


# -- against the lab ---------------------------------------------------------------------


def _first_text_stamp(events: list[tuple[Any, int]]) -> int:
    for obj, _ in events:
        delta = obj.get("delta") if isinstance(obj, dict) else None
        if isinstance(delta, dict) and delta.get("text"):
            return int(obj["lab_t_ns"])
    raise AssertionError("no text delta")


def test_the_first_token_is_timed_within_5pct_of_the_labs_stamp(
    lab: LabFactory, machine_noise: MachineNoise
) -> None:
    events: list[tuple[Any, int]] = []
    with lab(LabConfig(latency=PREFILL, api_key=ACCESS_KEY, stamp_chunks=True)) as server:
        trace = _probe(_root(server), events=events)
    assert trace.error is None, trace.error
    assert trace.dialect == "bedrock" and trace.url.endswith("/model/lab-sim/converse-stream")
    lab_ttft_ms = (_first_text_stamp(events) - trace.t0_ns) / 1e6
    assert trace.ttft_ms is not None and lab_ttft_ms >= 80.0
    # Within 5 % of the lab's stamp, widened by the noise, never to half of it.
    late = machine_noise.bound_ms(0.05 * lab_ttft_ms, lab_ttft_ms / 2)
    assert lab_ttft_ms <= trace.ttft_ms <= lab_ttft_ms + late, (trace.ttft_ms, lab_ttft_ms)
    start = next(t for obj, t in events if obj.get("role") == "assistant")  # messageStart
    assert (start - trace.t0_ns) / 1e6 < 0.5 * trace.ttft_ms  # came early, and is no token
    assert trace.output_tokens == 4 and [c.tokens for c in trace.chunks] == [1, 1, 1, 1]
    assert trace.finish_reason == "length" and trace.unknown_events == 0
    assert trace.prompt_tokens is not None and trace.prompt_tokens > 0
    latency = trace.server_timing["bedrock-latency"]
    assert trace.total_ms is not None and 80.0 <= latency <= trace.total_ms
    told = server_timing_of(trace)
    assert told is not None and told.processing_ms == latency


def test_reasoning_deltas_are_the_reasoning_phase(
    lab: LabFactory, machine_noise: MachineNoise
) -> None:
    with lab(LabConfig(latency=THINKER)) as server:
        trace = _probe(_root(server))
        off = _probe(_root(server), extra=Dialect.BEDROCK.reasoning_fields("none"))
    assert trace.error is None and off.error is None, (trace.error, off.error)
    assert trace.first_token_ns == trace.first_reasoning_ns
    assert trace.first_answer_ns is not None and trace.first_reasoning_ns is not None
    assert trace.reasoning_ms is not None
    machine_noise.assert_near(trace.reasoning_ms, 5 * 4.0, 15.0, 5 * 4.0 - 1)
    assert trace.output_tokens == 9 and len(trace.chunks) == 9
    assert off.first_reasoning_ns is None and off.output_tokens == 4


def test_requests_are_signed_by_botocore_as_aws_checks_them() -> None:
    body = (
        _event("messageStart", {"role": "assistant"})
        + _event("contentBlockDelta", {"delta": {"text": "Hi"}})
        + _event("messageStop", {"stopReason": "end_turn"})
    )
    with ScriptedServer(_stream([body])) as server:
        trace = _probe(server.base_url, model="vendor.m-v1:0")
        sent = server.requests[0]
    assert trace.error is None, trace.error
    signed = SIGV4.search(sent)
    assert signed is not None, sent[:600]
    assert signed.group(1).decode() == ACCESS_KEY and signed.group(3) == b"us-east-1"
    assert b"host" in signed.group(4).split(b";") and b"x-amz-date: " in sent
    assert b"POST /v1/model/vendor.m-v1%3A0/converse-stream HTTP/1.1" in sent
    assert b"accept: application/vnd.amazon.eventstream" in sent
    assert SECRET_KEY.encode() not in sent
    assert _signature_of(sent, signed.group(4).decode()) in sent.decode()


def _signature_of(sent: bytes, signed_headers: str) -> str:
    """The signature AWS computes for the request as it arrived, with the secret key."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    head, _, body = sent.partition(b"\r\n\r\n")
    start, *lines = head.decode().split("\r\n")
    method, target, _ = start.split(" ")
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines)}
    url = f"http://{headers['host']}{target}"
    request = AWSRequest(
        method=method,
        url=url,
        data=body,
        headers={name: headers[name] for name in signed_headers.split(";")},
    )
    request.context["timestamp"] = headers["x-amz-date"]
    auth = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "bedrock", "us-east-1")
    canonical = auth.canonical_request(request)
    return f"Signature={auth.signature(auth.string_to_sign(request, canonical), request)}"


def test_a_bedrock_api_key_goes_as_a_bearer_token_unsigned(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, api_key="bedrock-api-key-42")) as server:
        trace = _probe(_root(server), key="bedrock-api-key-42")
        wrong = _probe(_root(server), key="bedrock-api-key-43")
    assert trace.error is None, trace.error
    assert wrong.error is not None and wrong.error.status == 403
    assert "AccessDeniedException" in wrong.error.message
    assert "bedrock-api-key-43" not in wrong.error.message


def test_another_access_key_is_refused_as_aws_refuses_it(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, api_key="AKIAOTHERKEY00000042")) as server:
        trace = _probe(_root(server))
    assert trace.error is not None and trace.error.kind is ErrorKind.HTTP
    assert trace.error.status == 403 and trace.error.phase is Phase.WAIT
    assert trace.error.message.startswith(
        "HTTP 403: UnrecognizedClientException: The security token included in the request"
    )


def test_no_credential_botocore_or_region_is_one_line_before_anything_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = "http://127.0.0.1:9"
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(UsageError, match="no AWS region: set AWS_REGION"):
        _probe(base)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(UsageError, match="no AWS credentials: set AWS_ACCESS_KEY_ID") as none:
        _probe(base)
    assert "\n" not in str(none.value)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(UsageError, match="the AWS credentials cannot be read"):
        _probe(base)
    monkeypatch.setitem(sys.modules, "botocore.eventstream", None)
    with pytest.raises(UsageError, match=r"need botocore: pip install '.*\[bedrock\]'$"):
        _probe(base, key="bedrock-api-key")


def test_an_exception_frame_after_the_200_is_typed_in_the_stream_phase(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, fault_after_tokens=2)) as server:
        trace = _probe(_root(server), headers={"x-lab-fault": "overloaded"})
    assert trace.error is not None and trace.error.kind is ErrorKind.HTTP
    assert trace.error.status == 503 and trace.error.phase is Phase.STREAM
    assert "serviceUnavailableException: Bedrock is unable" in trace.error.message
    assert len(trace.chunks) == 2


@pytest.mark.parametrize(
    ("fault", "kind", "says"),
    [("truncate", "stream_broken", "messageStop"), ("malformed", "malformed", "not valid JSON")],
)
def test_a_cut_or_broken_bedrock_stream_is_typed(
    lab: LabFactory, fault: str, kind: str, says: str
) -> None:
    with lab(LabConfig(latency=FAST, fault_after_tokens=2)) as server:
        trace = _probe(_root(server), headers={"x-lab-fault": fault})
    assert trace.error is not None and trace.error.kind == kind, trace.error
    assert trace.error.phase is Phase.STREAM and len(trace.chunks) == 2
    assert says in trace.error.message


def _stream(pieces: list[bytes | float]) -> list[bytes | float | str]:
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/vnd.amazon.eventstream\r\n"
        b"transfer-encoding: chunked\r\n\r\n"
    )
    return [head, *(chunk(p) if isinstance(p, bytes) else p for p in pieces), b"0\r\n\r\n"]


def _text(text: str) -> bytes:
    return _event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}})


def test_frames_split_and_merged_across_reads_are_timed_per_frame() -> None:
    one, two, three = _text("Hel"), _text("lo"), _text("!")
    stop = _event("messageStop", {"stopReason": "end_turn"})
    meta = _event("metadata", {"usage": {"inputTokens": 4, "outputTokens": 3, "totalTokens": 7},
                               "metrics": {"latencyMs": 95}})  # fmt: skip
    script = _stream(
        [_event("messageStart", {"role": "assistant"}) + one[:7], 0.05, one[7:] + two[:3], 0.05,
         two[3:], 0.05, three + stop + meta]
    )  # fmt: skip
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url)
    assert trace.error is None, trace.error
    assert [c.chars for c in trace.chunks] == [3, 2, 1]
    gaps = [b.t_ns - a.t_ns for a, b in itertools.pairwise(trace.chunks)]
    assert all(gap >= 40e6 for gap in gaps), gaps
    assert trace.finish_reason == "stop" and trace.prompt_tokens == 4
    assert trace.output_tokens == 3 and trace.server_timing["bedrock-latency"] == 95.0
    told = server_timing_of(trace)
    assert told is not None and told.source == "Bedrock metrics.latencyMs"
    assert told.processing_ms == 95.0 and told.prefill_ms is None


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("throttlingException", 429),
        ("modelStreamErrorException", 424),
        ("validationException", 400),
        ("serviceUnavailableException", 503),
        ("internalServerException", 500),
    ],
)
def test_each_exception_after_the_200_is_its_http_equivalent(name: str, status: int) -> None:
    script = _stream([_text("Hi"), 0.02, _exception(name, {"message": "went wrong"})])
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url)
    assert trace.error is not None and trace.error.kind is ErrorKind.HTTP
    assert trace.error.status == status and trace.error.phase is Phase.STREAM
    assert trace.error.message == f"error event: {name}: went wrong"
    assert len(trace.chunks) == 1


def test_a_bad_crc_mid_stream_is_malformed_in_the_stream_phase() -> None:
    script = _stream([_text("Hi"), 0.02, _corrupt(_text("there"), 40)])
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url)
    assert trace.error is not None and trace.error.kind is ErrorKind.MALFORMED
    assert trace.error.phase is Phase.STREAM and "Checksum mismatch" in trace.error.message
    assert len(trace.chunks) == 1


def test_a_body_ending_inside_a_frame_is_malformed() -> None:
    script = _stream([_text("Hi"), 0.02, _text("there")[:20]])
    with ScriptedServer(script) as server:
        trace = _probe(server.base_url)
    assert trace.error is not None and trace.error.kind is ErrorKind.MALFORMED
    assert trace.error.phase is Phase.STREAM and "ended inside a frame" in trace.error.message


@pytest.mark.parametrize(
    ("status", "kind", "message"),
    [
        ("403 Forbidden", "UnrecognizedClientException",
         f"The security token included in the request is invalid ({ACCESS_KEY})."),
        ("403 Forbidden", "ExpiredTokenException",
         f"The security token included in the request is expired: {SESSION_TOKEN}"),
        ("400 Bad Request", "ValidationException",
         "The provided model identifier is invalid."),
    ],
)  # fmt: skip
def test_an_aws_error_body_names_its_type_without_a_credential(
    monkeypatch: pytest.MonkeyPatch, status: str, kind: str, message: str
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    body = json.dumps({"message": message}).encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"x-amzn-errortype: {kind}:http://internal.amazon.com/coral/com.amazon.bedrock/\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode()
    with ScriptedServer([head, body]) as server:
        trace = _probe(server.base_url)
    assert trace.error is not None and trace.error.kind is ErrorKind.HTTP
    assert trace.error.status == int(status[:3]) and trace.error.phase is Phase.WAIT
    assert f"HTTP {status[:3]}: {kind}: " in trace.error.message
    assert ACCESS_KEY not in trace.error.message and SESSION_TOKEN not in trace.error.message


def test_a_model_id_with_characters_to_escape_is_quoted_into_the_path(lab: LabFactory) -> None:
    odd = "lab sim@v1:beta"
    with lab(LabConfig(latency=FAST, alt_models={odd: FAST})) as server:
        trace = _probe(_root(server), model=odd)
        slashed = _probe(_root(server), model="tuned/../../model/lab-sim")
    assert trace.error is None, trace.error
    assert "/model/lab%20sim%40v1%3Abeta/converse-stream" in trace.url
    assert slashed.error is not None and slashed.error.status == 404
    assert "tuned%2F..%2F..%2Fmodel" in slashed.url


def test_aws_credentials_are_masked_wherever_they_are_written() -> None:
    redactor = Redactor()
    assert redactor.text(ACCESS_KEY) == "***"
    header = (
        f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20260101/us-east-1/bedrock/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={'ab' * 32}"
    )
    said = redactor.text(f"refused: {header}")
    assert ACCESS_KEY not in said and "ab" * 32 not in said
    assert "Credential=***" in said and "Signature=***" in said
    assert Redactor([SECRET_KEY, SESSION_TOKEN]).text(f"{SECRET_KEY} {SESSION_TOKEN}") == "*** ***"


# -- the command line ------------------------------------------------------------------


def _traces(db: Path) -> Iterator[RequestTrace]:
    with Store(db) as store:
        for run in store.list_runs():
            for sample in store.load_run(run.run_id)[1]:
                yield sample.trace


@pytest.mark.parametrize(
    "command",
    [
        ["probe", "--json"],
        ["diagnose", "--max-requests", "24", "--max-tokens", "8", "--seed", "3"],
        ["load", "--concurrency", "1,2", "--max-requests", "16", "--max-tokens", "8"],
        ["verify", "--remedy", "reasoning-effort", "--max-requests", "24", "--max-tokens", "8"],
    ],
)
def test_the_commands_speak_bedrock(
    lab: LabFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: list[str],
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    db = tmp_path / "runs.db"
    thinker = LatencyModel(
        prefill_base_ms=5.0, prefill_ms_per_token=0.01, decode_ms_per_token=1.0, reasoning_tokens=4
    )
    with lab(LabConfig(latency=thinker, api_key=ACCESS_KEY)) as server:
        code = main(
            [command[0], _root(server), "-m", "lab-sim", "--api", "bedrock", "--db", str(db),
             *command[1:]]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    traces = list(_traces(db))
    assert len(traces) >= (1 if command[0] == "probe" else 8)
    assert all(t.dialect == "bedrock" and t.error is None for t in traces)
    assert all(t.server_timing.get("bedrock-latency") is not None for t in traces)
    assert any(t.first_reasoning_ns is not None for t in traces)
    for blob in (captured.out, captured.err, db.read_bytes().decode("latin-1")):
        for secret in (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN):
            assert secret not in blob


def test_probe_without_a_url_measures_the_built_in_lab_in_bedrock(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code = main(["probe", "--api", "bedrock", "--json", "--max-tokens", "4"])
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    row = json.loads(captured.out.splitlines()[-1])
    assert row["dialect"] == "bedrock" and row["url"].endswith("/converse-stream")
    assert row["output_tokens"] == 4 and "bedrock-latency" in row["server_timing"]


def test_the_command_line_says_what_is_missing_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    code = main(["probe", "http://127.0.0.1:9", "-m", "m", "--api", "bedrock"])
    err = capsys.readouterr().err.strip()
    assert code == EXIT_USAGE and "no AWS credentials" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1, err


def test_a_refused_signature_fails_the_command_without_the_key(
    lab: LabFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab(LabConfig(latency=FAST, api_key="AKIAOTHERKEY00000042")) as server:
        code = main(["probe", _root(server), "-m", "lab-sim", "--api", "bedrock"])
    captured = capsys.readouterr()
    assert code == EXIT_REQUEST_FAILED
    assert "UnrecognizedClientException" in captured.out + captured.err
    assert ACCESS_KEY not in captured.out + captured.err
