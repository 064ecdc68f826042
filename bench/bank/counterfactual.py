"""What a scenario truly is, by counterfactual: what removing each cause saves the user.

The user's typical request is the scenario's declared workload: ``prompt_tokens`` in,
``output_tokens`` out, ``concurrency`` requests in flight at once (a closed loop: each
user sends again as soon as an answer ends), on a connection kept alive (a new one
each time when the server closes them). Its expected time to the first token and to
the last is computed from the model's parts (:func:`parts`): the client's delay, the
connection's setup, the upload and the way there and back, the wait for a slot, busy
periods, the prefill, reasoning, the hop's hold, the decode, stalls, and the retries
failed requests cost.

A kind's **saving** is what the user's request gains when its causes are taken back
to a healthy endpoint's (:data:`REFERENCE`), everything else kept: the larger of what
it saves of the time to the first token and of the whole request. So a healthy
endpoint is healthy whatever the user's prompt: input length matters when the
prefill grows from the shortest prompt (:data:`SHORTEST_PROMPT`) to the user's faster
than a healthy endpoint's would (a longer prompt costs more everywhere; what the
diagnosis finds is an endpoint on which it costs too much; what the shortest prompt
costs is the endpoint's base, not its length). The connection's setup acts only on a
request that opens a connection: a slow lookup or handshake on a server that keeps
connections alive is weighed on such a request (the method's step 1), a server that
closes connections on the user's request, which then pays it every time.

A kind **matters** when its saving is at least :data:`MATERIAL_SHARE` of the user's
typical request and :data:`MATERIAL_MS` (:func:`bar_ms`). The primary kind is the one
whose removal saves most; the others that matter contribute, largest first; none:
``healthy``.

Every value here is the bank's own, written out and argued here: nothing is read from
:mod:`latdoc.analysis`, so a rule's threshold or a report's share that is wrong shows
as a disagreement instead of moving the truth with it (``tests/unit/bench/test_truth_bank.py``
fails if one is imported).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from bank.scenario import (
    HEADERS_MS,
    TLS_WORK_MS,
    Scenario,
    request_bytes,
    upload_ms,
)
from latdoc.model import Kind
from latdoc.reference import healthy_reference

MATERIAL_SHARE: Final = 0.10
"""A cause matters when removing it saves at least this share of the user's request: a
tenth is the Weber fraction people show telling two waits of 0.5–5 s apart when they
are not back to back (duration discrimination is 5–10% side by side, worse across
occasions), so a user comparing today's calls with yesterday's notices no less."""
MATERIAL_MS: Final = 50.0
"""... and at least this many ms: below it a difference is no longer one a person
perceives in a response (the 0.1 s of an instantaneous response, halved)."""

PROFILE: Final = healthy_reference()
"""What healthy is: the reference profile latdoc ships (``latdoc.reference``), the one
definition the bank shares with the product. Its values are read here; how a cause is
taken back to them, and what that saves, is the bank's own."""

REFERENCE: Final[Mapping[str, float]] = {
    "dns_ms": PROFILE.edge("dns_ms"),
    "rtt_ms": PROFILE.edge("rtt_ms"),
    "tls_extra_ms": PROFILE.tls_work_edge_ms - TLS_WORK_MS,
    "uplink_bytes_per_ms": PROFILE.edge("upload_mbit_s") * 125.0,
    "tpot_ms": PROFILE.edge("tpot_ms"),
    "prefill_ms_per_token": PROFILE.edge("prefill_ms_per_1k") / 1000,
    "client_delay_ms": PROFILE.edge("client_delay_ms"),
}
"""A healthy endpoint's values, where a cause is one of degree. From the reference
profile, at its slow edge: 30.2 ms a token (the 10th percentile of hosted models'
output speed), a prefill growing linearly by 62 ms per 1K tokens (the 90th percentile
of public engine and hosted figures), a client that holds a request back at most
100 ms (where asyncio calls a callback slow), a lookup of at most 200 ms (the
seed's), a round trip of at most 50 ms (the seed's near region) and a handshake that
spends at most 60 ms beyond its two round trips (its 100 ms edge less two typical
round trips of 20 ms) and an uplink of at least 10 Mbit/s. The other causes
are absent on a healthy endpoint: no queue for a slot, no busy periods, no stalls, no
failures, no reasoning before the answer, no hop holding the stream."""
SHORTEST_PROMPT: Final = 128
"""The shortest prompt the method measures (MISSION.md's curve starts at 128 tokens): what
a prompt costs up to it is the endpoint's base, not its length."""
INITIAL_RETRY_DELAY_MS: Final = 500.0
"""What a client waits before retrying a failed request when the server names no
``Retry-After`` (the OpenAI and Anthropic SDKs' first backoff)."""
RETRY_AFTER_MS: Final = 1000.0
"""The ``Retry-After`` of the bank's 429s."""
IRREGULAR_EVENT_TOKENS: Final = 4.5
"""The mean tokens of an event of 1 to 8 drawn evenly."""


@dataclass(frozen=True, slots=True)
class Counterfactual:
    """A scenario's truth on its user's workload."""

    primary: Kind
    contributing: tuple[Kind, ...]
    savings_ms: dict[Kind, float]
    """Every kind's saving on the user's workload, material or not (kinds with none
    left out)."""
    bars_ms: dict[Kind, float]
    """The bar each kind's saving was held against."""
    typical_ms: float
    """The user's typical request, end to end (ms, expected)."""
    typical_ttft_ms: float

    @property
    def named(self) -> frozenset[Kind]:
        if self.primary is Kind.HEALTHY:
            return frozenset()
        return frozenset((self.primary, *self.contributing))

    @property
    def material(self) -> tuple[Kind, ...]:
        return () if self.primary is Kind.HEALTHY else (self.primary, *self.contributing)

    @property
    def sizes_ms(self) -> dict[Kind, float]:
        """The savings, under the name the rule-copying truth gave its sizes."""
        return self.savings_ms


def bar_ms(typical_ms: float) -> float:
    """The least saving that matters on a request of ``typical_ms``."""
    return max(MATERIAL_SHARE * typical_ms, MATERIAL_MS)


def _jitter_mean(s: Scenario) -> float:
    """The mean factor the jitter and the Pareto tail put on a server time."""
    lognormal = math.exp(s.jitter**2 / 2)
    tail = 1.0 + s.tail_share / (s.tail_alpha - 1) if s.tail_share > 0 else 1.0
    return lognormal * tail


def parts(s: Scenario, *, new_connection: bool) -> dict[str, float]:
    """The expected parts of the user's request (ms), and its time to the first token
    (``ttft``) and to the last (``total``)."""
    f = _jitter_mean(s)
    prompt = s.prompt_tokens
    rtt = s.rtt_ms * f
    setup = 0.0
    if new_connection:
        tls = 2 * rtt + (TLS_WORK_MS + s.tls_extra_ms) * f if s.tls else 0.0
        dns = s.dns_ms * math.exp(0.1**2 / 2)
        setup = dns + rtt + tls
    upload = float(upload_ms(request_bytes(prompt), rtt, s.uplink_bytes_per_ms))
    in_flight = min(s.concurrency, max(1, s.slots))
    tpot = s.tpot_ms * f * (1.0 + s.batch_slowdown * (in_flight - 1))
    prefill = s.prefill_ms(prompt) * f
    think = 0.0
    if s.reasoning_tokens > 0:
        tokens = s.reasoning_tokens * math.exp(s.reasoning_spread**2 / 2)
        think = tokens * tpot
    answer_gaps = max(0, s.output_tokens - 1)
    decode = tpot * answer_gaps
    service = prefill + think + decode
    queue = service * max(0.0, s.concurrency / max(1, s.slots) - 1.0)
    busy = s.busy_share * s.busy_ms
    stalls = s.stall_share * s.stall_ms if answer_gaps >= 4 else 0.0
    held = _held(s, tpot)
    first_event = (_event_tokens(s) - 1) * tpot
    before = s.client_delay_ms + setup + upload + rtt + queue + busy + HEADERS_MS
    ttft = before + prefill + (0.0 if s.reasoning_shown else think) + held + first_event
    total = before + prefill + think + decode + stalls
    ttft = min(ttft, total)  # the first event can come no later than the last
    retries = _retries(s, before + prefill, ttft, total)
    return {
        "client": s.client_delay_ms,
        "setup": setup,
        "path": upload + rtt,
        "queue": queue + busy,
        "prefill": prefill,
        "think": think,
        "decode": decode,
        "stalls": stalls,
        "held": held,
        "retries": retries,
        "ttft": ttft + retries,
        "total": total + retries,
    }


def _event_tokens(s: Scenario) -> float:
    return IRREGULAR_EVENT_TOKENS if s.tokens_per_event == 0 else float(s.tokens_per_event)


def _held(s: Scenario, tpot: float) -> float:
    """How long a hop holds the first output event: until the last event of its burst
    (of the whole stream, when it holds it whole), never past the stream's end."""
    per_event = _event_tokens(s)
    tokens = s.stream_events()
    events = max(1, math.ceil(tokens / per_event))
    flush = s.flush_events(events)
    if flush <= 1:
        return 0.0
    return min((flush - 1) * per_event, tokens - 1) * tpot


def _retries(s: Scenario, headers_ms: float, ttft_ms: float, total_ms: float) -> float:
    """What failed requests cost the user on average: each failure's time, then the
    client's wait before it tries again, p / (1 − p) times a request."""
    p = min(s.error_share, 0.95)
    if p <= 0:
        return 0.0
    code = s.error_code
    if code.startswith("http:"):
        failed = headers_ms - s.prefill_ms(s.prompt_tokens)
        wait = RETRY_AFTER_MS if code == "http:429" else INITIAL_RETRY_DELAY_MS
    elif code == "timeout":
        failed, wait = ttft_ms, INITIAL_RETRY_DELAY_MS
    else:
        failed, wait = (ttft_ms + total_ms) / 2, INITIAL_RETRY_DELAY_MS
    return p / (1 - p) * (max(0.0, failed) + wait)


def moved(factor: float) -> Mapping[str, float]:
    """:data:`REFERENCE` with every value moved by ``factor`` (1.25: 25% up), for the
    sensitivity of the figures to the definition of healthy."""
    return {key: value * factor for key, value in REFERENCE.items()}


def _healthy(s: Scenario, kind: Kind, r: Mapping[str, float] = REFERENCE) -> Scenario:
    """``s`` with ``kind``'s causes taken back to a healthy endpoint's (``r``)."""
    if kind is Kind.NETWORK_SETUP:
        return replace(
            s,
            dns_ms=min(s.dns_ms, r["dns_ms"]),
            tls_extra_ms=min(s.tls_extra_ms, r["tls_extra_ms"]),
            server_closes=False,
        )
    if kind is Kind.NETWORK_PATH:
        return replace(
            s,
            rtt_ms=min(s.rtt_ms, r["rtt_ms"]),
            uplink_bytes_per_ms=max(s.uplink_bytes_per_ms, r["uplink_bytes_per_ms"]),
        )
    if kind is Kind.INPUT_LENGTH:
        # The same prefill at the shortest prompt, growing from it as a healthy one does.
        per_token = r["prefill_ms_per_token"]
        if s.prefill_ms(s.prompt_tokens) - s.prefill_ms(SHORTEST_PROMPT) <= per_token * (
            s.prompt_tokens - SHORTEST_PROMPT
        ):
            return s
        return replace(
            s,
            prefill_a_ms=s.prefill_ms(SHORTEST_PROMPT) - per_token * SHORTEST_PROMPT,
            prefill_b_ms=per_token,
            prefill_c_ms=0.0,
        )
    if kind is Kind.QUEUEING:
        return replace(s, slots=max(s.slots, s.concurrency), busy_share=0.0)
    if kind is Kind.DECODE:
        # At the user's concurrency: decode that slows with the streams in flight is
        # slow where the user's streams decode together.
        in_flight = min(s.concurrency, max(1, s.slots))
        batched = 1.0 + s.batch_slowdown * (in_flight - 1)
        return replace(s, tpot_ms=min(s.tpot_ms, r["tpot_ms"] / batched))
    if kind is Kind.REASONING:
        return replace(s, reasoning_tokens=0)
    if kind is Kind.STALLS:
        return replace(s, stall_share=0.0)
    if kind is Kind.BUFFERING:
        return replace(s, buffer_events=0, buffer_whole=False)
    if kind is Kind.CLIENT:
        return replace(s, client_delay_ms=min(s.client_delay_ms, r["client_delay_ms"]))
    if kind is Kind.ERRORS:
        return replace(s, error_share=0.0)
    raise ValueError(f"no healthy form of {kind}")


KINDS: Final = (
    Kind.NETWORK_SETUP,
    Kind.NETWORK_PATH,
    Kind.INPUT_LENGTH,
    Kind.QUEUEING,
    Kind.DECODE,
    Kind.REASONING,
    Kind.STALLS,
    Kind.BUFFERING,
    Kind.CLIENT,
    Kind.ERRORS,
)


def _saving(
    s: Scenario, kind: Kind, reference: Mapping[str, float] = REFERENCE
) -> tuple[float, float]:
    """What removing ``kind``'s causes saves, and the request it is weighed on (ms)."""
    user = parts(s, new_connection=s.server_closes)
    if kind is Kind.NETWORK_SETUP and not s.server_closes:
        cold = parts(s, new_connection=True)
        healthy_cold = parts(_healthy(s, kind, reference), new_connection=True)
        return _gain(cold, healthy_cold), cold["total"]
    healthy = _healthy(s, kind, reference)
    return _gain(user, parts(healthy, new_connection=healthy.server_closes)), user["total"]


def _gain(now: Mapping[str, float], then: Mapping[str, float]) -> float:
    return max(0.0, now["ttft"] - then["ttft"], now["total"] - then["total"])


def counterfactual(s: Scenario, reference: Mapping[str, float] = REFERENCE) -> Counterfactual:
    """The scenario's primary and contributing kinds on its user's workload, against
    ``reference`` (the profile's; :func:`moved` for the sensitivity)."""
    user = parts(s, new_connection=s.server_closes)
    savings, bars = {}, {}
    for kind in KINDS:
        saving, weighed_on = _saving(s, kind, reference)
        if saving > 0:
            savings[kind] = saving
            bars[kind] = bar_ms(weighed_on)
    material = sorted((k for k in savings if savings[k] >= bars[k]), key=lambda k: -savings[k])
    primary = material[0] if material else Kind.HEALTHY
    return Counterfactual(
        primary,
        tuple(material[1:]),
        savings,
        bars,
        user["total"],
        user["ttft"],
    )
