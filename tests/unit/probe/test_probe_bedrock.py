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
import struct
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latdoc import Endpoint, ProbeSession, RequestTrace
from latdoc.cli import EXIT_USAGE, main
from latdoc.errors import SSEError, UsageError
from latdoc.lab.sim.dialects.bedrock import frame
from latdoc.probe import check_extra_body, dialects, parse_event, request_body
from latdoc.probe._eventstream import EventStreamDecoder
from latdoc.probe.dialects.bedrock import SigV4Signer, region_of
from latdoc.store.redact import Redactor

PROMPT = "Hello, please briefly introduce yourself."


ACCESS_KEY = "AKIALABEXAMPLE000042"


SECRET_KEY = "lab/Secret+Access/Key0123456789abcdefghij"


SESSION_TOKEN = "IQoJb3JpZ2luX2VjEHlabSessionToken0123456789"


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
        endpoint = Endpoint(
            base_url, model, dialects.bedrock.SPEC, api_key=key, extra_body=extra or {}
        )
        async with ProbeSession(endpoint) as session:
            return await session.request(PROMPT, max_tokens, headers=headers, on_event=hook)

    return asyncio.run(go())


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


def _parse(name: str, obj: Any) -> Any:
    return parse_event(obj, dialects.bedrock.SPEC, name)


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
        dialects.bedrock.SPEC,
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
    low = dialects.bedrock.SPEC.reasoning_fields("low")
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


def test_the_command_line_says_what_is_missing_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    code = main(["probe", "http://127.0.0.1:9", "-m", "m", "--api", "bedrock"])
    err = capsys.readouterr().err.strip()
    assert code == EXIT_USAGE and "no AWS credentials" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1, err
