"""Traces, samples and a diagnosis with known numbers, for the report tests."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.model import (
    Diagnosis,
    Finding,
    Kind,
    LengthCurve,
    LengthPoint,
    Remedy,
    Scenario,
    Verdict,
)
from latdoc.records import Chunk, RequestTrace, Sample, StepNote

ENDPOINT = "https://api.example.com/v1/chat/completions"
MS = 1_000_000


def make_trace(
    *,
    dns: float | None = 12.0,
    connect: float | None = 24.0,
    tls: float | None = 41.0,
    send: float = 2.5,
    wait: float = 380.0,
    first_token: float | None = 35.0,
    stream: float | None = 1200.0,
    prompt_tokens: int | None = 128,
    output_tokens: int = 100,
    model: str = "qwen2.5-7b-instruct",
) -> RequestTrace:
    """A trace from phase durations in ms (None: phase not measured, e.g. a reused connection)."""
    elapsed_ns = 150_000
    marks: list[int | None] = [elapsed_ns]
    for duration in (dns, connect, tls, send, wait, first_token, stream):
        if duration is None:
            marks.append(None)
        else:
            elapsed_ns += round(duration * MS)
            marks.append(elapsed_ns)
    queue, dns_done, connect_done, tls_done, sent, first_byte, first_tok, done = marks
    chunks: tuple[Chunk, ...] = ()
    if first_tok is not None and done is not None:
        chunks = tuple(
            Chunk(t_ns=first_tok + (done - first_tok) * i // 9, chars=40, tokens=11)
            for i in range(10)
        )
    return RequestTrace(
        started_at=datetime(2025, 3, 14, 9, 30, tzinfo=UTC),
        t0_ns=10_000_000_000,
        url=ENDPOINT,
        model=model,
        dialect="openai-chat",
        http_version="HTTP/1.1",
        remote_ip="203.0.113.7",
        connection_id=1,
        new_connection=dns is not None,
        queue_done_ns=queue,
        dns_done_ns=dns_done,
        connect_done_ns=connect_done,
        tls_done_ns=tls_done,
        sent_ns=sent,
        first_byte_ns=first_byte,
        first_token_ns=first_tok,
        done_ns=done,
        status=200,
        chunks=chunks,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        output_tokens_exact=True,
    )


def run_samples(*, with_length: bool = True, failed: bool = True) -> list[Sample]:
    samples: list[Sample] = []
    for i in range(4):
        samples.append(Sample("network", make_trace(wait=360.0 + 15 * i), cold=True))
        samples.append(Sample("network", make_trace(dns=None, connect=None, tls=None)))
    if with_length:
        for tokens in (128, 512, 2048, 8192):
            for repeat in range(3):
                prefill = (300 + 0.12 * tokens + 0.00002 * tokens * tokens) * (0.92 + 0.06 * repeat)
                trace = make_trace(
                    dns=None, connect=None, tls=None, wait=prefill, prompt_tokens=tokens
                )
                samples.append(Sample("length", trace, target_prompt_tokens=tokens))
    for i in range(6):
        trace = make_trace(dns=None, connect=None, tls=None, wait=400.0 + 900.0 * (i % 3))
        samples.append(Sample("load", trace, concurrency=8))
    if failed:
        error = TraceError(ErrorKind.HTTP, Phase.WAIT, "rate limited <b>slow down</b>", 429)
        trace = make_trace(dns=None, connect=None, tls=None, first_token=None, stream=None)
        samples.append(Sample("load", with_error(trace, error), concurrency=8))
    return [
        Sample(s.step, s.trace, s.target_prompt_tokens, s.concurrency, s.cold, i)
        for i, s in enumerate(samples)
    ]


def with_error(trace: RequestTrace, error: TraceError) -> RequestTrace:
    return replace(trace, error=error, status=error.status, chunks=(), output_tokens=None)


CURVE = LengthCurve(
    points=tuple(
        LengthPoint(t, 300 + 0.12 * t + 0.00002 * t * t + 40, 3) for t in (128, 512, 2048, 8192)
    ),
    a_ms=340.0,
    b_ms_per_1k=120.0,
    c_ms_per_1k2=20.0,
    shape="super-linear",
)


def make_diagnosis(
    *, model: str = "qwen2.5-7b-instruct", length: LengthCurve | None = CURVE, failed: int = 1
) -> Diagnosis:
    return Diagnosis(
        run_id="run-2025-03-14-0930",
        endpoint=ENDPOINT,
        model=model,
        scenario=Scenario.CHAT,
        verdict=Verdict(Kind.INPUT_LENGTH, (Kind.QUEUEING, Kind.NETWORK_SETUP), 0.86),
        shares_ms={
            Kind.INPUT_LENGTH: 1480.0,
            Kind.QUEUEING: 610.0,
            Kind.NETWORK_SETUP: 77.0,
            Kind.DECODE: 1200.0,
        },
        findings=(
            Finding(
                Kind.INPUT_LENGTH,
                "Prefill grows with the prompt",
                "TTFT at 8K ÷ TTFT at 128 tokens ≥ 5×",
                {"ratio_long_short": 6.3, "ttft_short_ms": 337.0, "ttft_long_ms": 2124.5, "n": 12},
                1480.0,
                0.9,
            ),
            Finding(
                Kind.QUEUEING,
                "Waits follow load, not length",
                "TTFB spread under load > 3× the idle spread",
                {"idle_p90_ms": 420.0, "load_p90_ms": 2210.0, "concurrency": 8},
                610.0,
                0.7,
            ),
        ),
        remedies=(
            Remedy(
                "trim_context",
                "Trim the conversation to the last 2K tokens",
                Kind.INPUT_LENGTH,
                "messages = trim_to_tokens(messages, max_tokens=2048)",
                1150.0,
                gain_interval_ms=(1020.0, 1290.0),
                gain_source="fitted",
                verify_command=f"latdoc verify {ENDPOINT} --model qwen2.5-7b-instruct "
                "--remedy trim --from 8192 --to 2048",
            ),
            Remedy(
                "smaller_model",
                "Try a smaller model of the same family",
                Kind.INPUT_LENGTH,
                'client.chat.completions.create(model="qwen2.5-1.5b-instruct", ...)',
                None,
                "Lower answer quality; check it on your own prompts first.",
                verify_command=f"latdoc verify {ENDPOINT} --model qwen2.5-7b-instruct "
                "--remedy model --alt-model NAME",
            ),
            Remedy(
                "keepalive",
                "Reuse connections",
                Kind.NETWORK_SETUP,
                "client = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=20))",
                77.0,
                gain_interval_ms=(61.0, 90.0),
                gain_source="measured",
            ),
        ),
        network={"dns_ms": 12.0, "connect_ms": 24.0, "tls_ms": 41.0, "rtt_ms": None},
        length=length,
        load={"idle_p50_ms": 395.0, "load_p50_ms": 1310.0, "concurrency": 8.0},
        notes=(StepNote("load", "Stopped at concurrency 8: the budget of 40 requests ran out."),),
        requests=31,
        failed=failed,
    )
