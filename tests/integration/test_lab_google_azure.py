"""The lab's Gemini, Vertex AI and Azure OpenAI routes, read by the real SDKs.

If ``google-genai`` (against the Gemini API and, with a bearer token, Vertex AI) and
``openai.AzureOpenAI`` stream every answer the lab sends, accumulate its text,
thoughts and tool calls, report its usage and raise its errors as they raise the real
services', the lab is faithful enough for latdoc's probe to be tested against it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import openai
import pytest
from google import genai
from google.genai import errors, types
from google.oauth2.credentials import Credentials

from conftest import FAST, LabFactory
from latdoc import RequestTrace, Store, instrument
from latdoc.lab.sim import LabConfig, LatencyModel, output_text

KEY = "lab-key"
THINKING = LatencyModel(
    prefill_base_ms=5.0, prefill_ms_per_token=0.01, decode_ms_per_token=1.0, reasoning_tokens=6
)


def _gemini(base_url: str, key: str = KEY, **options: object) -> genai.Client:
    http = types.HttpOptions(
        base_url=base_url.removesuffix("/v1"),
        retry_options=types.HttpRetryOptions(attempts=1),
        **options,  # type: ignore[arg-type]
    )
    return genai.Client(api_key=key, http_options=http)


def _config(max_tokens: int, **fields: object) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(max_output_tokens=max_tokens, **fields)  # type: ignore[arg-type]


def test_genai_streams_thoughts_then_text_with_the_usage(lab: LabFactory) -> None:
    config = _config(
        5,
        system_instruction="Be brief.",
        thinking_config=types.ThinkingConfig(include_thoughts=True),
    )
    with lab(LabConfig(latency=THINKING, api_key=KEY)) as server:
        client = _gemini(server.base_url)
        chunks = list(
            client.models.generate_content_stream(
                model="lab-sim", contents="Hello there", config=config
            )
        )
    parts = [p for c in chunks for p in (c.candidates[0].content.parts or [])]  # type: ignore[index, union-attr]
    thoughts = "".join(p.text or "" for p in parts if p.thought)
    answer = "".join(c.text or "" for c in chunks)
    assert thoughts == output_text(6) and answer == output_text(5)
    last = chunks[-1]
    assert last.candidates is not None
    assert last.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    usage = last.usage_metadata
    assert usage is not None and usage.prompt_token_count is not None
    assert (usage.candidates_token_count, usage.thoughts_token_count) == (5, 6)
    assert usage.total_token_count == usage.prompt_token_count + 11
    assert all(c.response_id == last.response_id for c in chunks)


def test_genai_thinks_unseen_unless_asked_and_stops_by_itself(lab: LabFactory) -> None:
    with lab(LabConfig(latency=THINKING, answer_tokens=3)) as server:
        client = _gemini(server.base_url)
        hidden = list(
            client.models.generate_content_stream(model="lab-sim", contents="hi", config=_config(8))
        )
        off = list(
            client.models.generate_content_stream(
                model="lab-sim",
                contents="hi",
                config=_config(8, thinking_config=types.ThinkingConfig(thinking_budget=0)),
            )
        )
    assert "".join(c.text or "" for c in hidden) == output_text(3)
    assert not any(p.thought for c in hidden for p in c.candidates[0].content.parts or [])  # type: ignore[index, union-attr]
    assert hidden[-1].candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]
    assert hidden[-1].usage_metadata.thoughts_token_count == 6  # type: ignore[union-attr]
    assert off[-1].usage_metadata.thoughts_token_count is None  # type: ignore[union-attr]


def test_genai_async_reads_a_function_call(lab: LabFactory) -> None:
    lookup = types.FunctionDeclaration(name="lookup", parameters={"type": "OBJECT"})  # type: ignore[arg-type]
    config = _config(8, tools=[types.Tool(function_declarations=[lookup])])

    async def go(base_url: str) -> list[types.GenerateContentResponse]:
        client = _gemini(base_url)
        stream = await client.aio.models.generate_content_stream(
            model="lab-sim", contents="look it up", config=config
        )
        return [chunk async for chunk in stream]

    with lab(LabConfig(latency=FAST, answer_tokens=3)) as server:
        chunks = asyncio.run(go(server.base_url))
    calls = [call for c in chunks for call in c.function_calls or []]
    assert len(calls) == 1 and calls[0].name == "lookup"
    assert calls[0].args == {"words": output_text(3)}


def test_genai_raises_the_services_errors(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, api_key=KEY, fault_after_tokens=1)) as server:
        wrong = _gemini(server.base_url, key="wrong")
        with pytest.raises(errors.ClientError) as refused:
            list(wrong.models.generate_content_stream(model="lab-sim", contents="hi"))
        client = _gemini(server.base_url)
        with pytest.raises(errors.ClientError) as unknown:
            list(client.models.generate_content_stream(model="nope", contents="hi"))
        overloaded = _gemini(server.base_url, headers={"x-lab-fault": "overloaded"})
        with pytest.raises(errors.ServerError) as failed:
            list(overloaded.models.generate_content_stream(model="lab-sim", contents="hi"))
    assert (refused.value.code, refused.value.status) == (400, "INVALID_ARGUMENT")
    assert refused.value.message == "API key not valid. Please pass a valid API key."
    assert (unknown.value.code, unknown.value.status) == (404, "NOT_FOUND")
    assert (failed.value.code, failed.value.status) == (503, "UNAVAILABLE")


def test_genai_on_vertex_sends_its_bearer_token_to_the_project_path(lab: LabFactory) -> None:
    token = "ya29.lab-access-token"
    with lab(LabConfig(latency=FAST, api_key=token)) as server:
        client = genai.Client(
            vertexai=True,
            project="lab-project",
            location="us-central1",
            credentials=Credentials(token=token),
            http_options=types.HttpOptions(base_url=server.base_url.removesuffix("/v1")),
        )
        chunks = list(
            client.models.generate_content_stream(model="lab-sim", contents="hi", config=_config(3))
        )
    assert "".join(c.text or "" for c in chunks) == output_text(3)


def test_without_alt_sse_the_answer_is_one_json_array_of_responses(lab: LabFactory) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "generationConfig": {"maxOutputTokens": 3}}  # fmt: skip
    with lab(LabConfig(latency=FAST)) as server:
        root = server.base_url.removesuffix("/v1")
        url = f"{root}/v1/projects/p/locations/l/publishers/google/models/lab-sim"
        array = httpx.post(f"{url}:streamGenerateContent", json=body, timeout=10)
        sse = httpx.post(f"{url}:streamGenerateContent?alt=sse", json=body, timeout=10)
    assert array.headers["content-type"].startswith("application/json")
    responses = json.loads(array.text)
    assert isinstance(responses, list) and len(responses) == 4
    for response in responses:
        types.GenerateContentResponse.model_validate(response)
    texts = [r["candidates"][0]["content"]["parts"][0]["text"] for r in responses]
    assert "".join(texts) == output_text(3)
    assert sse.headers["content-type"].startswith("text/event-stream")
    frames = [json.loads(f.removeprefix("data: ")) for f in sse.text.split("\r\n\r\n") if f]
    assert frames == [{**r, "responseId": frames[0]["responseId"]} for r in responses]


def _azure(base_url: str, key: str = KEY) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(
        azure_endpoint=base_url.removesuffix("/v1"),
        api_key=key,
        api_version="2024-10-21",
        max_retries=0,
    )


def test_azure_openai_streams_a_deployment_after_its_prompt_filter_chunk(
    lab: LabFactory,
) -> None:
    with lab(LabConfig(latency=THINKING, api_key=KEY)) as server:
        chunks = list(
            _azure(server.base_url).chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=3,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    first = chunks[0]
    assert first.choices == [] and first.model_extra is not None
    assert first.model_extra["prompt_filter_results"][0]["prompt_index"] == 0
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == output_text(3)
    usage = chunks[-1].usage
    assert usage is not None and usage.completion_tokens == 3 + 6


def test_azure_v1_route_and_entra_token(lab: LabFactory) -> None:
    token = "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJsYWIifQ.bGFi"
    with lab(LabConfig(latency=FAST, api_key=token)) as server:
        root = server.base_url.removesuffix("/v1")
        v1 = openai.OpenAI(base_url=f"{root}/openai/v1", api_key=token, max_retries=0)
        answer = v1.chat.completions.create(
            model="lab-sim", messages=[{"role": "user", "content": "hi"}], max_tokens=2
        )
        entra = openai.AzureOpenAI(
            azure_endpoint=root, azure_ad_token=token, api_version="2024-10-21", max_retries=0
        )
        streamed = list(
            entra.chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=2,
                stream=True,
            )
        )
    assert answer.choices[0].message.content == output_text(2)
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == (
        output_text(2)
    )


def test_azure_refuses_as_azure_does(lab: LabFactory) -> None:
    with lab(LabConfig(latency=FAST, api_key=KEY)) as server:
        root = server.base_url.removesuffix("/v1")
        with pytest.raises(openai.AuthenticationError) as refused:
            _azure(server.base_url, key="wrong").chat.completions.create(
                model="lab-sim", messages=[{"role": "user", "content": "hi"}], max_tokens=2
            )
        with pytest.raises(openai.NotFoundError) as missing:
            _azure(server.base_url).chat.completions.create(
                model="no-such-deployment",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=2,
            )
        versionless = httpx.post(
            f"{root}/openai/deployments/lab-sim/chat/completions",
            headers={"api-key": KEY},
            json={"messages": [{"role": "user", "content": "hi"}]},
            timeout=10,
        )
    assert isinstance(refused.value.body, dict) and refused.value.body["code"] == "401"
    assert isinstance(missing.value.body, dict)
    assert missing.value.body["code"] == "DeploymentNotFound"
    assert versionless.status_code == 404
    assert versionless.json() == {"error": {"code": "404", "message": "Resource not found"}}


def test_an_instrumented_azure_client_is_traced_as_azure_and_its_key_found(
    lab: LabFactory, tmp_path: Path
) -> None:
    key = "0123456789abcdef0123456789abcdef"

    async def go(root: str) -> tuple[str, list[RequestTrace]]:
        client = openai.AsyncAzureOpenAI(
            azure_endpoint=root, api_key=key, api_version="2024-10-21", max_retries=0
        )
        with Store(tmp_path / "s.db") as store, instrument(client, store=store) as inst:
            stream = await client.chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=3,
                stream=True,
                stream_options={"include_usage": True},
            )
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            run_id = inst.run_id
        with Store(tmp_path / "s.db") as store:
            _, samples, _ = store.load_run(run_id)
        await client.close()
        return text, [s.trace for s in samples]

    with lab(LabConfig(latency=FAST, api_key=key)) as server:
        text, (trace,) = asyncio.run(go(server.base_url.removesuffix("/v1")))
    assert text == output_text(3)
    assert trace.dialect == "azure" and trace.error is None, trace.error
    assert trace.output_tokens == 3 and len(trace.chunks) == 3
    assert key not in (tmp_path / "s.db").read_bytes().decode("latin-1")
