"""An inference engine's own counters, read before and after a run, as what the run cost it.

llama.cpp's server (``--metrics``) and vLLM expose ``/metrics`` in the Prometheus
text format; :func:`parse_exposition` reads it with ``prometheus_client``'s parser
and :func:`engine_delta` turns two readings into the run's share of each counter:

=============================== ===========================================
llama.cpp                       vLLM (histograms: mean per request)
=============================== ===========================================
``prefill_total_ms``            ``queue_mean_ms``
``decode_total_ms``             ``prefill_mean_ms``
``prompt_tokens``               ``decode_mean_ms``
``prompt_tokens_cached``        ``ttft_mean_ms``
``output_tokens``               ``e2e_mean_ms``
``decode_calls``                ``requests``, ``prompt_tokens``,
``prefill_ms_per_1k_tokens``    ``output_tokens``
=============================== ===========================================

Counters are summed over their label sets (a vLLM server labels them by model).
A counter that went down means the engine restarted during the run: the delta is
then unknown and left out.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["LLAMACPP", "VLLM", "engine_delta", "parse_exposition"]

LLAMACPP = {
    "prefill_total_ms": ("llamacpp:prompt_seconds_total", 1000.0),
    "decode_total_ms": ("llamacpp:tokens_predicted_seconds_total", 1000.0),
    "prompt_tokens": ("llamacpp:prompt_tokens_total", 1.0),
    "prompt_tokens_cached": ("llamacpp:prompt_tokens_cached_total", 1.0),
    "output_tokens": ("llamacpp:tokens_predicted_total", 1.0),
    "decode_calls": ("llamacpp:n_decode_total", 1.0),
}
"""llama.cpp's counters: our name → (its sample name, factor to our unit)."""

VLLM = {
    "queue": "vllm:request_queue_time_seconds",
    "prefill": "vllm:request_prefill_time_seconds",
    "decode": "vllm:request_decode_time_seconds",
    "ttft": "vllm:time_to_first_token_seconds",
    "e2e": "vllm:e2e_request_latency_seconds",
}
"""vLLM's per-request histograms: our name → its metric name (``_sum`` and ``_count``)."""

_VLLM_COUNTERS = {
    "prompt_tokens": "vllm:prompt_tokens_total",
    "output_tokens": "vllm:generation_tokens_total",
}


def parse_exposition(text: str) -> dict[str, float]:
    """Every sample of a Prometheus text exposition, summed over its label sets.

    Histogram buckets are left out (their sum over ``le`` means nothing); ``_sum``
    and ``_count`` stay. Raises :class:`ValueError` on text that is not the format.
    """
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.endswith("_bucket") or "le" in sample.labels:
                    continue
                out[sample.name] = out.get(sample.name, 0.0) + float(sample.value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not in the Prometheus text format ({exc})") from None
    return out


def _delta(before: Mapping[str, float], after: Mapping[str, float], name: str) -> float | None:
    if name not in before or name not in after or after[name] < before[name]:
        return None
    return after[name] - before[name]


def engine_delta(
    before: Mapping[str, float], after: Mapping[str, float]
) -> tuple[str, dict[str, float | None]] | None:
    """(engine, the run's share of its counters), or ``None`` for an engine not known."""
    if any(name.startswith("llamacpp:") for name in after):
        numbers = {
            key: None if (d := _delta(before, after, name)) is None else d * factor
            for key, (name, factor) in LLAMACPP.items()
        }
        prefill, tokens = numbers["prefill_total_ms"], numbers["prompt_tokens"]
        if prefill is not None and tokens:
            numbers["prefill_ms_per_1k_tokens"] = prefill / tokens * 1000
        return "llama.cpp", numbers
    if any(name.startswith("vllm:") for name in after):
        numbers = {}
        for key, name in VLLM.items():
            total = _delta(before, after, name + "_sum")
            count = _delta(before, after, name + "_count")
            numbers[f"{key}_mean_ms"] = (
                total / count * 1000 if total is not None and count else None
            )
        numbers["requests"] = _delta(before, after, VLLM["e2e"] + "_count")
        for key, name in _VLLM_COUNTERS.items():
            numbers[key] = _delta(before, after, name)
        return "vLLM", numbers
    return None
