"""The probe in Amazon Bedrock's ConverseStream: AWS's binary event stream decoded as
its bytes arrive (frames split across reads and several in one read, each stamped with
the read that completed it), the first token timed within 5% of the lab's own stamp,
``messageStart`` never the first token, requests signed by botocore's SigV4 signer,
exception frames after the 200 typed like their HTTP statuses, ``metrics.latencyMs``
as the server's own timing; a bad CRC, a frame cut off, a missing credential or region
and a model id to escape each a typed failure, and no credential in any output."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST, LabFactory
from latdoc import ErrorKind, Phase, RequestTrace, Store
from latdoc.analysis.servertime import server_timing_of
from latdoc.cli import EXIT_OK, EXIT_REQUEST_FAILED, main
from latdoc.lab.sim import LabConfig, LatencyModel
from latdoc.probe import dialects
from machine_noise import MachineNoise
from scripted_server import ScriptedServer, chunk
from unit.probe import test_probe_bedrock as unit_bedrock
from unit.probe.test_probe_bedrock import (
    ACCESS_KEY,
    SECRET_KEY,
    SESSION_TOKEN,
    _corrupt,
    _event,
    _exception,
    _probe,
)

aws_env = unit_bedrock.aws_env
"""The unit tests' AWS environment, for every test here too (an autouse fixture)."""

PREFILL = LatencyModel(prefill_base_ms=80.0, prefill_ms_per_token=0.0, decode_ms_per_token=2.0)


THINKER = LatencyModel(
    prefill_base_ms=10.0, prefill_ms_per_token=0.0, decode_ms_per_token=4.0, reasoning_tokens=5
)


SIGV4 = re.compile(
    rb"authorization: AWS4-HMAC-SHA256 Credential=(\w+)/(\d{8})/([a-z0-9-]+)/bedrock/aws4_request,"
    rb" SignedHeaders=([a-z0-9;-]+), Signature=[0-9a-f]{64}\r\n"
)


def _root(server: Any) -> str:
    return str(server.base_url).removesuffix("/v1")


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
        off = _probe(_root(server), extra=dialects.bedrock.SPEC.reasoning_fields("none"))
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


def test_a_refused_signature_fails_the_command_without_the_key(
    lab: LabFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab(LabConfig(latency=FAST, api_key="AKIAOTHERKEY00000042")) as server:
        code = main(["probe", _root(server), "-m", "lab-sim", "--api", "bedrock"])
    captured = capsys.readouterr()
    assert code == EXIT_REQUEST_FAILED
    assert "UnrecognizedClientException" in captured.out + captured.err
    assert ACCESS_KEY not in captured.out + captured.err
