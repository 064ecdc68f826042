"""The server's own account of a request, beside the client's, and where they disagree.

Servers tell their timing in different words: ``Server-Timing`` entries (``queue``,
``prefill``, ``decode``, ``tpot``), llama.cpp's ``timings`` (``prompt_ms``,
``predicted_ms``), vLLM's per-request ``metrics`` (``queue_time_ms``,
``time_to_first_token_ms``, ``generation_time_ms``), Groq's ``usage.queue_time`` /
``prompt_time`` / ``completion_time``, OpenAI's ``openai-processing-ms``, Amazon
Bedrock's ``metrics.latencyMs`` (kept as ``bedrock-latency``), and a gateway's own
account of what it added: LiteLLM's ``x-litellm-overhead-duration-ms``.
:func:`server_timing_of` reads them into one :class:`ServerTiming` that names each
source it read; :func:`split_ttft` then splits one request's time to first token by
who spent it:

=========== ==================================================================
client      the measuring client's wait for a pooled connection
network     DNS + TCP + TLS, sending the request, and the response's way back
gateway     the time a gateway in front of the model says it added (0 untold)
queue       the server's queue as it tells it, else the server-side wait its
            prefill does not explain (queueing, or the server's own overhead)
prefill     the server's prefill, as it tells it
residual    what is left; below zero the server claims more time than the
            client waited, and the two disagree
=========== ==================================================================

:func:`server_account` summarises a run: medians of each part over the requests
that carry server timing, and the :class:`Disagreement` of client and server
beyond the measurement's resolution. Where no server timing exists it is ``None``
and nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from latdoc.analysis.stats import median_of
from latdoc.i18n import N_, Message
from latdoc.model import Disagreement, ServerAccount
from latdoc.records import RequestTrace, Sample, Step

__all__ = [
    "DISAGREE_FRACTION",
    "DISAGREE_MS",
    "ServerTiming",
    "TtftSplit",
    "server_account",
    "server_timing_of",
    "split_ttft",
]

DISAGREE_MS = 2.0
"""Client and server disagree only beyond this many ms: servers report whole or
rounded ms, and the client's first-token mark is the read that carried it."""
DISAGREE_FRACTION = 0.05
"""... and beyond this fraction of what the server claims."""

_QUEUE_KEYS = ("queue", "queue_time", "queueing", "wait", "vllm-queue", "groq-queue")
_PREFILL_KEYS = ("prefill", "prompt_ms", "prompt", "vllm-prefill", "groq-prompt")
_DECODE_KEYS = ("decode", "predicted_ms", "generation", "vllm-generation", "groq-completion")
_GATEWAY_KEY = "litellm-overhead"
_SOURCES = (
    (("prompt_ms", "predicted_ms"), "llama.cpp timings"),
    (("vllm-queue", "vllm-ttft", "vllm-generation"), "vLLM metrics"),
    (("groq-queue", "groq-prompt", "groq-completion"), "Groq usage timing"),
    (
        (
            "queue",
            "queue_time",
            "queueing",
            "wait",
            "prefill",
            "prompt",
            "decode",
            "generation",
            "tpot",
        ),
        "Server-Timing",
    ),
)
"""Who tells which names, in the order a told time is taken when several tell it."""
_PROCESSING_KEYS = {
    "openai-processing": "openai-processing-ms",
    "bedrock-latency": "Bedrock metrics.latencyMs",
}
"""The names of a provider's whole processing time, each with the source it names."""


@dataclass(frozen=True, slots=True)
class ServerTiming:
    """One request's timing as the server tells it, in ms; ``None`` where it does not."""

    queue_ms: float | None
    prefill_ms: float | None
    decode_ms: float | None
    """First token to last, as the server counts it (``predicted_ms``, ``decode``, or
    ``tpot`` × the output tokens after the first)."""
    processing_ms: float | None
    """The provider's whole processing time (``openai-processing-ms``, Bedrock's
    ``metrics.latencyMs``)."""
    source: str
    """Where the numbers came from: ``llama.cpp timings``, ``vLLM metrics``, ``Groq usage
    timing``, ``Server-Timing``, ``openai-processing-ms``, ``Bedrock metrics.latencyMs``
    or ``LiteLLM x-litellm-overhead-duration-ms``; several joined by `` + ``."""
    gateway_ms: float | None = None
    """The time a gateway between the client and the model says it added (LiteLLM's
    ``x-litellm-overhead-duration-ms``): before the first token, outside the model."""


def _first(timing: Mapping[str, float], keys: Iterable[str]) -> float | None:
    return next((timing[k] for k in keys if k in timing), None)


def server_timing_of(trace: RequestTrace) -> ServerTiming | None:
    """The server's own timing of ``trace``, or ``None`` when it told nothing usable."""
    st = {k.lower(): v for k, v in trace.server_timing.items()}
    if "vllm-ttft" in st:
        # vLLM's time to first token runs from the request's arrival: its queue is in it.
        st.setdefault("vllm-prefill", max(0.0, st["vllm-ttft"] - st.get("vllm-queue", 0.0)))
    queue = _first(st, _QUEUE_KEYS)
    prefill = _first(st, _PREFILL_KEYS)
    decode = _first(st, _DECODE_KEYS)
    if decode is None and "tpot" in st and trace.output_tokens is not None:
        decode = st["tpot"] * max(0, trace.output_tokens - 1)
    told = next((k for k in _PROCESSING_KEYS if k in st), None)
    processing = None if told is None else st[told]
    gateway = st.get(_GATEWAY_KEY)
    if all(v is None for v in (queue, prefill, decode, processing, gateway)):
        return None
    sources = [name for keys, name in _SOURCES if any(k in st for k in keys)]
    if told is not None and not sources:
        sources.append(_PROCESSING_KEYS[told])
    if gateway is not None:
        sources.append("LiteLLM x-litellm-overhead-duration-ms")
    return ServerTiming(queue, prefill, decode, processing, " + ".join(sources), gateway)


@dataclass(frozen=True, slots=True)
class TtftSplit:
    """One request's time to first token, split by who spent it (ms)."""

    client_ms: float
    network_ms: float
    gateway_ms: float
    """What a gateway in front of the model says it added; 0 where none told it."""
    queue_ms: float
    queue_told: bool
    """The server told its queue; otherwise ``queue_ms`` is the wait its prefill does
    not explain."""
    prefill_ms: float
    residual_ms: float

    @property
    def disagrees(self) -> bool:
        """The server claims more time than the client waited, beyond the resolution."""
        claimed = self.prefill_ms + (self.queue_ms if self.queue_told else 0.0)
        return self.residual_ms < -max(DISAGREE_MS, DISAGREE_FRACTION * claimed)


def split_ttft(trace: RequestTrace) -> TtftSplit | None:
    """Split ``trace``'s TTFT by the server's own timing; ``None`` without a told prefill."""
    return _split(trace, server_timing_of(trace))


def _split(trace: RequestTrace, timing: ServerTiming | None) -> TtftSplit | None:
    ttft = trace.ttft_ms
    if timing is None or timing.prefill_ms is None or ttft is None or not trace.ok:
        return None
    client = (trace.queue_ms or 0.0) + (trace.client_delay_ms or 0.0)
    # The response's way back: half a round trip when the send was timed to the peer's
    # ACK (the request's way there is in it), else a whole one.
    back = (trace.rtt_ms or 0.0) * (0.5 if trace.sent_acked else 1.0)
    network = (trace.setup_ms or 0.0) + (trace.send_ms or 0.0) + back
    gateway = timing.gateway_ms or 0.0
    rest = ttft - client - network - gateway - timing.prefill_ms
    if timing.queue_ms is not None:
        told = timing.queue_ms
        return TtftSplit(client, network, gateway, told, True, timing.prefill_ms, rest - told)
    return TtftSplit(
        client, network, gateway, max(0.0, rest), False, timing.prefill_ms, min(0.0, rest)
    )


def server_account(
    samples: Sequence[Sample],
    metrics: Mapping[str, float | None] | None = None,
    metrics_source: str | None = None,
) -> ServerAccount | None:
    """The run's requests as the server told them; ``None`` when none told anything.
    ``metrics_source`` names where ``metrics`` were scraped, so it is kept only with them."""
    told_by = [(s, server_timing_of(s.trace)) for s in samples]
    timed = [
        (s, t)
        for s, t in told_by
        if t is not None and s.step is not Step.CALIBRATION and s.trace.ok
    ]
    if not timed and not metrics:
        return None
    splits = [(s, sp) for s, t in timed if (sp := _split(s.trace, t)) is not None]
    concurrent = [sp for s, sp in splits if s.concurrency > 1]
    alone = [sp for s, sp in splits if s.concurrency == 1]
    numbers: dict[str, float | None] = {
        "requests": float(len(timed)),
        "queue_ms": median_of(t.queue_ms for _, t in timed),
        "prefill_ms": median_of(t.prefill_ms for _, t in timed),
        "decode_ms": median_of(t.decode_ms for _, t in timed),
        "processing_ms": median_of(t.processing_ms for _, t in timed),
        "gateway_ms": median_of(t.gateway_ms for _, t in timed),
        "wait_beyond_prefill_ms": median_of(sp.queue_ms for _, sp in splits),
        "network_and_client_ms": median_of(
            s.trace.ttft_ms - sp.gateway_ms - sp.queue_ms - sp.prefill_ms
            for s, sp in splits
            if s.trace.ttft_ms is not None
        ),
        "alone_wait_ms": median_of(sp.queue_ms for sp in alone),
        "alone_prefill_ms": median_of(sp.prefill_ms for sp in alone),
        "concurrent_wait_ms": median_of(sp.queue_ms for sp in concurrent),
        "concurrent_prefill_ms": median_of(sp.prefill_ms for sp in concurrent),
    }
    sources = sorted({t.source for _, t in timed})
    shown = dict(metrics or {})
    disagreements = _disagreements(timed, [sp for _, sp in splits])
    counted = shown.get("prefill_total_ms")
    told = _told_prefill_total(told_by)
    if counted is not None and told is not None:
        shown["told_prefill_total_ms"] = told
        gap = counted - told
        if abs(gap) > max(DISAGREE_MS * len(samples), DISAGREE_FRACTION * told):
            why = (
                N_("others share this server, and their requests queue with these")
                if gap > 0
                else N_("the engine's counter and its responses do not agree")
            )
            disagreements += (
                Disagreement(
                    Message(
                        "the engine counted {counted:.0f} ms of prefill during the run, its "
                        "responses to this run told {told:.0f} ms: {why}",
                        counted=counted,
                        told=told,
                        why=Message.of(why),
                    ),
                    len(samples),
                    len(samples),
                    abs(gap),
                ),
            )
    return ServerAccount(
        source=", ".join(sources) if sources else "none in the responses",
        numbers={k: v for k, v in numbers.items() if v is not None},
        disagreements=disagreements,
        metrics=shown,
        metrics_source=metrics_source if metrics else None,
    )


def _told_prefill_total(told_by: Sequence[tuple[Sample, ServerTiming | None]]) -> float | None:
    """The prefill every request of the run told (calibration too: the engine counted it),
    or ``None`` unless every request succeeded and told it."""
    if any(not s.trace.ok for s, _ in told_by):
        return None
    told = [t for _, t in told_by]
    values = [t.prefill_ms for t in told if t is not None and t.prefill_ms is not None]
    return sum(values) if told and len(values) == len(told) else None


def _disagreements(
    timed: Sequence[tuple[Sample, ServerTiming]], splits: Sequence[TtftSplit]
) -> tuple[Disagreement, ...]:
    out = []
    wrong = [sp for sp in splits if sp.disagrees]
    if wrong:
        worst = min(wrong, key=lambda sp: sp.residual_ms)
        told = N_("queue + prefill") if worst.queue_told else N_("prefill")
        waited = worst.prefill_ms + (worst.queue_ms if worst.queue_told else 0.0)
        out.append(
            Disagreement(
                Message(
                    "the server's {told} ({waited:.1f} ms) is longer than the client's whole "
                    "wait for the first token after network and pool ({wait:.1f} ms): the "
                    "server's clock or its accounting is off, or the client's marks are late",
                    told=Message.of(told),
                    waited=waited,
                    wait=waited + worst.residual_ms,
                ),
                len(wrong),
                len(splits),
                -worst.residual_ms,
            )
        )
    over = [
        (t.processing_ms - total, t.processing_ms, total)
        for s, t in timed
        if t.processing_ms is not None
        and (total := s.trace.total_ms) is not None
        and t.processing_ms - total > max(DISAGREE_MS, DISAGREE_FRACTION * t.processing_ms)
    ]
    if over:
        gap, claimed, total = max(over)
        out.append(
            Disagreement(
                Message(
                    "the server says it processed for {claimed:.1f} ms, longer than the "
                    "whole request took at the client ({total:.1f} ms)",
                    claimed=claimed,
                    total=total,
                ),
                len(over),
                sum(1 for _, t in timed if t.processing_ms is not None),
                gap,
            )
        )
    return tuple(out)
