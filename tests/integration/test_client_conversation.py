"""Conversation helpers: trimming never splits a message and keeps the system prompt;
the model (the lab, through the real openai SDK) writes the summary; a token estimate
calibrated on the endpoint's ``usage`` predicts its prompt counts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import openai
import pytest

from conftest import LabFactory
from latdoc import PolicyError
from latdoc.client import (
    Message,
    ResetPolicy,
    TokenEstimate,
    asummarize_history,
    make_async_client,
    make_client,
    summarize_history,
    summary_prompt,
)
from latdoc.lab.sim import LabServer, requests_received
from unit.client.test_client_conversation import chat


def test_summarize_history_with_the_model(lab: LabFactory) -> None:
    messages = chat(6)
    with lab() as server:
        client = openai.OpenAI(
            base_url=server.base_url, api_key="x", http_client=make_client(), max_retries=0
        )

        def summarize(old: Sequence[Message]) -> str:
            answer = client.chat.completions.create(
                model="lab-sim", messages=summary_prompt(old), max_tokens=12
            )
            return answer.choices[0].message.content or ""

        with client:
            short = summarize_history(messages, summarize, keep_turns=2)
            assert _count(server) == 1
            untouched = summarize_history(chat(1), summarize, keep_turns=2)
            assert _count(server) == 1
    assert short[0] is messages[0]
    assert short[1]["role"] == "system"
    assert str(short[1]["content"]).startswith("Earlier in this conversation: ")
    assert len(str(short[1]["content"])) > len("Earlier in this conversation: ")
    assert short[2:] == messages[-3:]
    assert untouched == chat(1)


def test_asummarize_history_and_reset(lab: LabFactory) -> None:
    messages = chat(4)

    async def go(server: LabServer) -> list[Message]:
        client = openai.AsyncOpenAI(
            base_url=server.base_url, api_key="x", http_client=make_async_client()
        )

        async def summarize(old: Sequence[Message]) -> str:
            answer = await client.chat.completions.create(
                model="lab-sim", messages=summary_prompt(old), max_tokens=8
            )
            return answer.choices[0].message.content or ""

        async with client:
            return await asummarize_history(messages, summarize, keep_turns=1)

    with lab() as server:
        short = asyncio.run(go(server))
    assert short[0] is messages[0] and short[-1] is messages[-1]
    assert len(short) == 3

    policy = ResetPolicy(every_turns=3)
    assert policy.due(messages) and not policy.due(chat(1))
    fresh = policy.reset(messages, "the user asked four things")
    assert fresh == [
        messages[0],
        {"role": "system", "content": "Earlier in this conversation: the user asked four things"},
        messages[-1],
    ]
    with pytest.raises(PolicyError):
        ResetPolicy(every_turns=0)


def _count(server: LabServer) -> int:
    assert server.app is not None
    return requests_received(server.app)


def test_token_estimate_calibrated_on_usage(lab: LabFactory) -> None:
    text = "id=42, ok; go! "
    samples = [[{"role": "user", "content": text * n}] for n in (2, 5, 9)]
    held_out: list[Message] = [
        {"role": "system", "content": text * 3},
        {"role": "user", "content": text * 7},
    ]
    with lab() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", http_client=make_client())
        with client:

            def prompt_tokens(messages: list[Message]) -> int:
                answer = client.chat.completions.create(
                    model="lab-sim",
                    messages=messages,  # type: ignore[arg-type]
                    max_tokens=1,
                )
                assert answer.usage is not None
                return answer.usage.prompt_tokens

            observed = [(m, prompt_tokens(m)) for m in samples]
            truth = prompt_tokens(held_out)
    default = sum(TokenEstimate()(m) for m in held_out)
    calibrated = TokenEstimate().calibrated(observed)
    predicted = sum(calibrated(m) for m in held_out)
    assert abs(predicted - truth) / truth < 0.05
    assert abs(predicted - truth) < abs(default - truth)
    with pytest.raises(PolicyError):
        TokenEstimate().calibrated([])
    with pytest.raises(PolicyError):
        TokenEstimate(chars_per_token=0)
