"""One request's plan of service, and the truth the endpoint reports about it.

A :class:`Plan` is made when a request arrives (the API it came through, its
model's timing, its load, its fault, whether it will stall) and completed when it
gets a slot (its queue time, reservation, cached tokens and prefill). The first
token is due reservation + prefill after the slot; token ``k`` then follows by its
gaps, and :func:`server_timing` and :func:`lab_object` say what the plan was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from latdoc.lab.sim._call import Call
from latdoc.lab.sim._config import Fault, LatencyModel, TimingForm
from latdoc.lab.sim.dialects import StandIn

__all__ = ["Plan", "lab_object", "server_timing", "told_timing"]


@dataclass(slots=True)
class Plan:
    """How one request is served; times in milliseconds."""

    call: Call
    api: StandIn
    """The API the request came through, which writes its answer."""
    latency: LatencyModel
    fault: Fault | None = None
    load: float | None = None
    """The load profile's value when the request arrived."""
    slots_busy: int | None = None
    """Slots taken (by anyone) when the request arrived."""
    queue_ahead: int | None = None
    """Requests (real or background) waiting for a slot when it arrived."""
    stall_after: int | None = None
    stall_ms: float = 0.0
    queue_ms: float = 0.0
    reserve_ms: float = 0.0
    """Time reserving room for the output limit, between the slot and the prefill."""
    cached_tokens: int = 0
    blocks: list[int] = field(default_factory=list)
    prefill_ms: float = 0.0
    decode_ms: float = 0.0
    """Time from the first token to the last, stall excluded (filled as planned)."""
    holds_slot: bool = False
    admitted: bool = False
    """It has its slot, and its reservation and prefill are planned."""
    decoding: bool = False
    """It is between its first and last token (counted in the streams decoding)."""

    @property
    def slow_from(self) -> int | None:
        """The first output token whose gap is KV-penalised, if any."""
        return self.latency.first_slow_token(self.call.prompt_tokens)

    def gap_ms(self, k: int) -> float:
        """The planned gap before output token ``k`` (>= 1), stall excluded, no jitter."""
        slow = self.slow_from
        decode = self.latency.decode_ms_per_token
        return decode * self.latency.kv_penalty if slow is not None and k >= slow else decode

    def kv_extra_ms(self, k: int) -> float:
        """What KV pressure adds to token ``k``'s due time, no jitter."""
        slow = self.slow_from
        if slow is None or k < slow:
            return 0.0
        return (k - slow + 1) * self.latency.decode_ms_per_token * (self.latency.kv_penalty - 1)

    def stall_extra_ms(self, k: int) -> float:
        """What the stall adds to token ``k``'s due time."""
        return self.stall_ms if self.stall_after is not None and k >= self.stall_after else 0.0

    def stall_before(self, k: int) -> float:
        """The stall inserted before output token ``k``."""
        return self.stall_ms if k == self.stall_after else 0.0


def server_timing(plan: Plan, *, queued: bool) -> bytes:
    """The ``Server-Timing`` value: what is known when the headers are sent.

    ``queue;dur`` (with slots), ``reserve;dur`` (when the model charges for the
    output limit), ``prefill;dur``, ``tpot;dur`` (the first token gap),
    ``stall;dur;desc="after token k"`` (a planned stall) and ``load;desc`` (the load
    profile's value at arrival). Headers sent before the request was admitted (with
    keep-alive comments) know neither its queue nor its prefill: they tell the rest.
    """
    parts = [b"queue;dur=%.3f" % plan.queue_ms] if queued and plan.admitted else []
    if plan.latency.reserve_ms_per_1k_max_tokens > 0 and plan.admitted:
        parts.append(b"reserve;dur=%.3f" % plan.reserve_ms)
    if plan.admitted:
        parts.append(b"prefill;dur=%.3f" % plan.prefill_ms)
    parts.append(b"tpot;dur=%.3f" % plan.gap_ms(1))
    if plan.stall_after is not None:
        parts.append(b'stall;dur=%.3f;desc="after token %d"' % (plan.stall_ms, plan.stall_after))
    if plan.load is not None:
        parts.append(b'load;desc="%.3f"' % plan.load)
    return b", ".join(parts)


def lab_object(plan: Plan) -> dict[str, Any]:
    """The ``"lab"`` truth object (JSON) of a finished request.

    ``queue_ms``, ``reserve_ms`` (only when the model charges for the output
    limit), ``prefill_ms``, ``decode_ms`` (first to last token, stall excluded),
    ``stall_ms`` and ``stall_after_token`` (the pause that happened),
    ``cached_tokens``, ``kv_prefill_penalty`` (the KV multiplier on the prefill) and
    ``kv_slow_from_token`` (the first token whose gap KV pressure slowed),
    ``load``, ``slots_busy`` and ``queue_ahead`` (at arrival) and ``fault``.
    """
    slow = plan.slow_from
    latency, prompt = plan.latency, plan.call.prompt_tokens
    reserve = (
        {"reserve_ms": round(plan.reserve_ms, 3)}
        if latency.reserve_ms_per_1k_max_tokens > 0
        else {}
    )
    return {
        "queue_ms": round(plan.queue_ms, 3),
        **reserve,
        "prefill_ms": round(plan.prefill_ms, 3),
        "decode_ms": round(plan.decode_ms, 3),
        "stall_ms": plan.stall_ms if plan.stall_after is not None else 0.0,
        "stall_after_token": plan.stall_after,
        "cached_tokens": plan.cached_tokens,
        "kv_prefill_penalty": latency.kv_penalty if latency.over_threshold(prompt) else 1.0,
        "kv_slow_from_token": slow if slow is not None and slow < plan.call.total_tokens else None,
        "load": plan.load,
        "slots_busy": plan.slots_busy,
        "queue_ahead": plan.queue_ahead,
        "fault": None if plan.fault is None else str(plan.fault),
    }


def told_timing(plan: Plan, forms: tuple[TimingForm, ...], call_id: str) -> dict[str, Any]:
    """The top-level fields of a finished request's last event that tell its timing in
    the body ``forms`` (:class:`~latdoc.lab.sim.TimingForm`), as each server words it.

    The first token came reservation + prefill after the slot, so a server's time to
    first token from arrival is queue + reservation + prefill, and its prefill (the time
    from the slot to the first token) reservation + prefill.
    """
    prompt, tokens = plan.call.prompt_tokens, plan.call.total_tokens
    prefill = plan.reserve_ms + plan.prefill_ms
    decode = plan.decode_ms
    told: dict[str, Any] = {}
    if TimingForm.LLAMACPP in forms:
        told["timings"] = {
            "prompt_n": prompt,
            "prompt_ms": round(prefill, 3),
            "predicted_n": tokens,
            "predicted_ms": round(decode, 3),
            "predicted_per_token_ms": round(decode / max(1, tokens - 1), 3),
        }
    if TimingForm.VLLM in forms:
        told["metrics"] = {
            "queue_time_ms": round(plan.queue_ms, 3),
            "time_to_first_token_ms": round(plan.queue_ms + prefill, 3),
            "generation_time_ms": round(decode, 3),
            "mean_itl_ms": round(decode / max(1, tokens - 1), 3),
        }
    if TimingForm.GROQ in forms:
        told["x_groq"] = {
            "id": f"req_{call_id}",
            "usage": {
                "queue_time": round(plan.queue_ms / 1000, 6),
                "prompt_tokens": prompt,
                "prompt_time": round(prefill / 1000, 6),
                "completion_tokens": tokens,
                "completion_time": round(decode / 1000, 6),
                "total_tokens": prompt + tokens,
                "total_time": round((plan.queue_ms + prefill + decode) / 1000, 6),
            },
        }
    return told
