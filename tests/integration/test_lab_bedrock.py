"""The lab's Bedrock ConverseStream route, read by the real SDK.

If ``boto3``'s ``bedrock-runtime`` client, pointed at the lab with dummy credentials,
signs its request (the lab checks the SigV4 header's shape), decodes every
event-stream message the lab writes (botocore checks both CRCs of each), reads the
text, the reasoning, the stop reason, the usage and ``metrics.latencyMs``, and raises
the lab's refusals and its exception after the 200 as the exception classes the real
service's raise, the lab is faithful enough for latdoc's probe to be tested against it.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.exceptions
import httpx
import pytest
from botocore.config import Config

from conftest import FAST, LabFactory
from latdoc import RequestTrace, Store, instrument
from latdoc.lab.sim import Fault, LabConfig, LatencyModel, output_text

KEY = "AKIALABEXAMPLE000042"
THINKING = LatencyModel(
    prefill_base_ms=5.0, prefill_ms_per_token=0.01, decode_ms_per_token=1.0, reasoning_tokens=6
)
MESSAGES = [{"role": "user", "content": [{"text": "Hello there"}]}]


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def _client(server: Any, key: str = KEY) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=str(server.base_url).removesuffix("/v1"),
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key="y",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


def _events(response: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for event in response["stream"]:
        ((name, body),) = event.items()
        yield name, body


def test_boto3_streams_reasoning_then_text_with_the_usage_and_latency(lab: LabFactory) -> None:
    with lab(LabConfig(latency=THINKING, api_key=KEY)) as server:
        response = _client(server).converse_stream(
            modelId="lab-sim",
            messages=MESSAGES,
            system=[{"text": "Be brief."}],
            inferenceConfig={"maxTokens": 5},
        )
        events = list(_events(response))
    names = [name for name, _ in events]
    assert names[0] == "messageStart" and names[-2:] == ["messageStop", "metadata"]
    deltas = [body["delta"] for name, body in events if name == "contentBlockDelta"]
    thoughts = "".join(d.get("reasoningContent", {}).get("text", "") for d in deltas)
    answer = "".join(d.get("text", "") for d in deltas)
    assert thoughts == output_text(6) and answer == output_text(5)
    stop, metadata = events[-2][1], events[-1][1]
    assert stop["stopReason"] == "max_tokens"
    usage = metadata["usage"]
    assert usage["outputTokens"] == 11 and usage["inputTokens"] > 0
    assert usage["totalTokens"] == usage["inputTokens"] + 11
    assert metadata["metrics"]["latencyMs"] >= 5 + 10 * 1.0 - 1


def test_boto3_sends_thinking_off_and_a_stop_by_itself(lab: LabFactory) -> None:
    with lab(LabConfig(latency=THINKING, answer_tokens=3)) as server:
        response = _client(server).converse_stream(
            modelId="lab-sim",
            messages=MESSAGES,
            inferenceConfig={"maxTokens": 8},
            additionalModelRequestFields={"thinking": {"type": "disabled"}},
        )
        events = list(_events(response))
    assert not any("reasoningContent" in b.get("delta", {}) for _, b in events)
    assert events[-2] == ("messageStop", {"stopReason": "end_turn"})
    assert events[-1][1]["usage"]["outputTokens"] == 3


def test_boto3_escapes_the_model_id_and_the_lab_serves_it(lab: LabFactory) -> None:
    odd = "lab sim@v1:beta"
    with lab(LabConfig(latency=FAST, alt_models={odd: FAST})) as server:
        response = _client(server).converse_stream(
            modelId=odd, messages=MESSAGES, inferenceConfig={"maxTokens": 2}
        )
        assert [n for n, _ in _events(response)][-1] == "metadata"
        with pytest.raises(botocore.exceptions.ClientError) as missing:
            _client(server).converse_stream(
                modelId="no-such-model", messages=MESSAGES, inferenceConfig={"maxTokens": 2}
            )
    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_boto3_raises_the_labs_refusals_as_aws_exceptions(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, api_key=KEY, max_context_tokens=64)) as server:
        client = _client(server, key="AKIAOTHERKEY00000042")
        with pytest.raises(botocore.exceptions.ClientError) as wrong:
            client.converse_stream(modelId="lab-sim", messages=MESSAGES)
        with pytest.raises(client.exceptions.ValidationException, match="context length"):
            _client(server).converse_stream(
                modelId="lab-sim", messages=MESSAGES, inferenceConfig={"maxTokens": 100}
            )
        url = str(server.base_url).removesuffix("/v1") + "/model/lab-sim/converse-stream"
        unsigned = httpx.post(url, json={"messages": MESSAGES})
        shapeless = httpx.post(
            url,
            json={"messages": MESSAGES},
            headers={"authorization": f"AWS4-HMAC-SHA256 Credential={KEY}/x", "x-amz-date": "1"},
        )
    assert wrong.value.response["Error"]["Code"] == "UnrecognizedClientException"
    assert wrong.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert unsigned.status_code == 403
    assert unsigned.headers["x-amzn-errortype"] == "MissingAuthenticationTokenException"
    assert unsigned.json() == {"message": "Missing Authentication Token"}
    assert shapeless.status_code == 403
    assert shapeless.headers["x-amzn-errortype"] == "IncompleteSignatureException"


def test_boto3_raises_the_exception_sent_after_the_200(lab: LabFactory) -> None:
    config = LabConfig(latency=FAST, fault=Fault.OVERLOADED, fault_rate=1.0, fault_after_tokens=2)
    with lab(config) as server:
        response = _client(server).converse_stream(
            modelId="lab-sim", messages=MESSAGES, inferenceConfig={"maxTokens": 6}
        )
        seen: list[str] = []
        with pytest.raises(botocore.exceptions.EventStreamError) as raised:
            seen.extend(name for name, _ in _events(response))
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert seen == ["messageStart", "contentBlockDelta", "contentBlockDelta"]
    assert raised.value.response["Error"]["Code"] == "serviceUnavailableException"
    assert "unable to process" in str(raised.value)


def _instrumented(root: str, db: Path) -> tuple[bytes, list[RequestTrace]]:
    """An application's own httpx client calling Bedrock with an API key, instrumented."""

    async def go() -> tuple[bytes, list[RequestTrace]]:
        client = httpx.AsyncClient(base_url=root)
        with Store(db) as store, instrument(client, store=store) as inst:
            async with client.stream(
                "POST",
                "/model/lab-sim/converse-stream",
                json={"messages": MESSAGES, "inferenceConfig": {"maxTokens": 3}},
                headers={"authorization": "Bearer bedrock-api-key"},
            ) as response:
                body = await response.aread()
            run_id = inst.run_id
        await client.aclose()
        with Store(db) as store:
            _, samples, _ = store.load_run(run_id)
        return body, [s.trace for s in samples]

    return asyncio.run(go())


def _timeless(body: bytes) -> bytes:
    return re.sub(rb'"latencyMs":\d+', b'"latencyMs":0', body)


def test_an_instrumented_client_on_bedrock_is_traced_and_never_broken(
    lab: LabFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with lab(LabConfig(latency=FAST, api_key="bedrock-api-key")) as server:
        root = str(server.base_url).removesuffix("/v1")
        body, (trace,) = _instrumented(root, tmp_path / "read.db")
        monkeypatch.setitem(sys.modules, "botocore.eventstream", None)
        unread, (kept,) = _instrumented(root, tmp_path / "unread.db")
    assert trace.dialect == "bedrock" and trace.error is None, trace.error
    assert trace.output_tokens == 3 and len(trace.chunks) == 3
    assert trace.server_timing.get("bedrock-latency") is not None
    # Without botocore the app reads on, untouched: the same stream, but for the lab's
    # measured latencyMs, whose digits a busy machine can add to.
    assert len(_timeless(unread)) == len(_timeless(body)) > 0
    assert kept.dialect == "bedrock" and kept.chunks == ()
    assert "bedrock-api-key" not in (tmp_path / "read.db").read_bytes().decode("latin-1")
