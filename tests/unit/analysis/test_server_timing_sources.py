"""Every place a server tells its own timing, read into the one record of who spent what:
vLLM's per-request ``metrics``, Groq's usage timing, LiteLLM's overhead header and the
upstream ``Server-Timing`` it passes on, beside llama.cpp's ``timings`` and
``Server-Timing``. Hand-made traces pin each mapping; the simulated endpoint, telling
its timing in each form in turn, checks that a probe reads each into the record."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from latdoc import (
    Finding,
    Kind,
    RequestTrace,
    RunContext,
    Sample,
    Step,
    build_diagnosis,
)
from latdoc.advice import keys
from latdoc.advice.kinds.network_path import network_path_remedies
from latdoc.analysis.servertime import server_account, server_timing_of, split_ttft
from latdoc.probe.dialects.chat import parse_chat_event
from report_samples import make_trace, run_samples


def _told(timing: dict[str, float]) -> RequestTrace:
    return dataclasses.replace(make_trace(), server_timing=timing)


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        (
            {"vllm-queue": 30.0, "vllm-ttft": 150.0, "vllm-generation": 400.0},
            (30.0, 120.0, 400.0, None, "vLLM metrics"),
        ),
        (
            {"groq-queue": 12.0, "groq-prompt": 45.0, "groq-completion": 300.0},
            (12.0, 45.0, 300.0, None, "Groq usage timing"),
        ),
        (
            {"litellm-overhead": 18.0, "litellm-response": 700.0},
            (None, None, None, None, "LiteLLM x-litellm-overhead-duration-ms"),
        ),
        (
            {"prefill": 90.0, "tpot": 5.0, "litellm-overhead": 18.0},
            (None, 90.0, 5.0 * 99, None, "Server-Timing + LiteLLM x-litellm-overhead-duration-ms"),
        ),
    ],
    ids=["vllm", "groq", "litellm", "litellm-over-server-timing"],
)
def test_each_new_source_reads_into_one_view(
    timing: dict[str, float], expected: tuple[object, ...]
) -> None:
    told = server_timing_of(_told(timing))
    assert told is not None
    assert (
        told.queue_ms,
        told.prefill_ms,
        told.decode_ms,
        told.processing_ms,
        told.source,
    ) == expected
    assert told.gateway_ms == timing.get("litellm-overhead")


def test_a_gateways_told_overhead_is_its_own_part_of_the_first_token() -> None:
    # make_trace: TTFT 494.5, network 77 + 2.5 + 24: the rest is the server's and the gateway's.
    alone = split_ttft(_told({"prefill": 300.0}))
    behind = split_ttft(_told({"prefill": 300.0, "litellm-overhead": 50.0}))
    assert alone is not None and behind is not None
    assert alone.gateway_ms == 0.0 and behind.gateway_ms == 50.0
    assert behind.queue_ms == pytest.approx(alone.queue_ms - 50.0)
    account = server_account(
        [Sample(Step.LOAD, _told({"prefill": 300.0, "litellm-overhead": 50.0}))]
    )
    assert account is not None and account.numbers["gateway_ms"] == 50.0


def test_a_path_without_a_gateways_word_gets_how_to_measure_one_never_a_number() -> None:
    ctx = RunContext("gateway", "https://gw.example/v1", "m", cpu_count=2)
    d = build_diagnosis(run_samples(), ctx)
    far = Finding(Kind.NETWORK_PATH, "High round-trip time", "rtt", {"rtt_ms": 150.0}, 150.0, 0.9)
    (untold,) = [r for r in network_path_remedies(far, d, ctx) if r.key == keys.GATEWAY]
    assert untold.predicted_gain_ms is None
    assert untold.how_to_measure is not None and "--remedy endpoint" in untold.how_to_measure
    assert untold.verify_command is not None and "UPSTREAM_URL" in untold.verify_command
    assert not any(ch.isdigit() for ch in untold.change)
    told = dataclasses.replace(far, evidence={"rtt_ms": 150.0, "gateway_ms": 42.0})
    remedies = list(network_path_remedies(told, d, ctx))
    assert remedies[0].key == keys.GATEWAY and "42 ms" in remedies[0].change


def _nobody(obj: dict[str, Any], event: str | None) -> str | None:
    return None


def test_the_chat_events_carry_each_servers_words() -> None:
    groq_last = {
        "id": "chatcmpl-1",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "x_groq": {
            "id": "req_1",
            "usage": {
                "queue_time": 0.012,
                "prompt_tokens": 9,
                "prompt_time": 0.0045,
                "completion_tokens": 20,
                "completion_time": 0.08,
            },
        },
    }
    info = parse_chat_event(groq_last, None, _nobody)
    assert info.server_timing == pytest.approx(
        {"groq-queue": 12.0, "groq-prompt": 4.5, "groq-completion": 80.0}
    )
    assert info.usage is not None and info.usage.completion_tokens == 20
    # Only usage, in the top-level usage chunk include_usage asks for.
    usage_only = {"choices": [], "usage": {"completion_tokens": 3, "queue_time": 0.5}}
    assert parse_chat_event(usage_only, None, _nobody).server_timing == {"groq-queue": 500.0}
    vllm_last = {
        "choices": [],
        "metrics": {
            "queue_time_ms": 3.0,
            "time_to_first_token_ms": 40.0,
            "generation_time_ms": 90.0,
            "tokens_per_second": 100.0,
        },
    }
    told = parse_chat_event(vllm_last, None, _nobody).server_timing
    assert told == {"vllm-queue": 3.0, "vllm-ttft": 40.0, "vllm-generation": 90.0}
    nonsense = {"choices": [], "metrics": {"queue_time_ms": -1, "generation_time_ms": True}}
    assert parse_chat_event(nonsense, None, _nobody).server_timing is None
