"""The rule-copying truth: what the method's rules would conclude of a scenario with
endless, noise-free measurements, its primary kind and contributing kinds.

It is kept beside the counterfactual truth (:mod:`bank.counterfactual`, the one the
figures score against) only to publish where the two disagree. Its thresholds are the
rules' as they stood when it was written, copied here as numbers, never imported:

1. **Present**: a kind is present when its model parameter is beyond the healthy
   bound MISSION.md gives it (or, where MISSION.md gives none, the bound the kind's
   own module documents), on the model's true values: DNS > 200 ms, a server that
   closes connections, TLS work > 200 ms beyond its round trips (network setup); a
   round trip > 100 ms, or a long prompt (the seed's 10K-token example: the plan's
   8,192 tokens) that takes more than 200 ms to upload (network path); the seed's
   length rule on the true TTFTs from the wire at the shortest length and ~2K
   tokens, the upload left out (it is the path's), (≥ 5×, or ≥ 2× and +1 s: input
   length); the load step's burst rising the median TTFT from the wire ≥ 1.5× and
   +100 ms, or the seed's swing rule on the true spread of identical requests' TTFT
   from the wire, busy periods in it (CV ≥ 0.5 or p95/p50 ≥ 2, and p95 − p50
   ≥ 100 ms: queueing);
   more than 50 ms per token (decode); 100 ms or more of reasoning before the answer
   (reasoning); stalls of 100 ms or more (stalls); a hop that holds the first token
   back 100 ms or more (buffering); a client that holds its requests more than 10 ms
   before they leave (client); 5 % of requests or more failing (errors). What the
   server tells of its own timing adds nothing.
2. **Size**: each present kind's share of a typical request, as the analysis's module
   of that kind defines the share, computed from the model: the
   setup every request pays when connections close (else the slow DNS lookup or
   the TLS work); one round trip plus the long prompt's upload (from its first byte
   leaving to its last: the uplink's bandwidth and slow start's round trips); the
   true TTFT at ~2K tokens minus at the shortest; the burst's median wait for a slot
   (else the true TTFT p95 − p50); the decode time of the answer;
   the median reasoning time (reasoning tokens × time per token); the stall time per
   request; how long the hop held the first token (the events of its burst after it,
   or of the whole stream, × time per token); the client's median delay; the failed
   share of a typical request.
3. **Material**: a present kind counts when its size passes the analysis's
   noticeable rule as it stood (the analysis now asks 10 %): at least 5 % of the
   typical request's end-to-end time (the median of the network step's warm requests) and more than
   the scaled MAD of identical requests' TTFT (kinds before the first token) or
   end-to-end time (the others), both from many draws of the model. The noise is
   the model's jitter alone, without the stalls and busy periods: the rule means
   what one identical request differs from the next, not inflated by the slow
   requests the other rules explain (the analysis approximates it on the faster
   half of the identical requests). Errors always count.

The primary kind is errors when a quarter or more of requests fail, else the largest
material kind, else ``healthy``; the other material kinds contribute, largest first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bank.counterfactual import SHORTEST_PROMPT
from bank.scenario import Draws, Scenario, burst_queue_ms, draw_requests, request_bytes, upload_ms
from latdoc.model import Kind

# The thresholds of MISSION.md and of the analysis's documented rules, written out here
# rather than imported: the bank is an oracle apart from the code it judges, so a
# changed threshold in the analysis shows in the bank's figures.
SLOW_DNS_MS = 200.0
SLOW_TLS_EXTRA_MS = 200.0
HIGH_RTT_MS = 100.0
SLOW_UPLOAD_MS = 200.0
LONG_UPLOAD_TOKENS = 8192
"""The long prompt whose upload the path's share counts: MISSION.md's 10K-token
example, as the plan's nearest length."""
LENGTH_RATIO, LENGTH_MIN_RATIO, LENGTH_MIN_GROWTH_MS = 5.0, 2.0, 1000.0
LONG_REFERENCE_TOKENS = 2048
QUEUE_LOAD_RATIO, QUEUE_MIN_MS = 1.5, 100.0
QUEUE_CV, QUEUE_P95_P50 = 0.5, 2.0
SLOW_TPOT_MS = 50.0
REASONING_MIN_MS = 100.0
STALL_MIN_MS = 100.0
HELD_MIN_MS = 100.0
CLIENT_DELAY_MS = 10.0
ERROR_RATE, ERRORS_FIRST = 0.05, 0.25
NOTICEABLE_FRACTION = 0.05
MAD_TO_SIGMA = 1.4826
BEFORE_FIRST_TOKEN = frozenset(
    {
        Kind.NETWORK_SETUP,
        Kind.NETWORK_PATH,
        Kind.INPUT_LENGTH,
        Kind.QUEUEING,
        Kind.BUFFERING,
        Kind.CLIENT,
    }
)
"""The kinds whose time the model puts before the first output event. Hidden reasoning
is there too, but the reasoning kind is weighed, like decode, against the whole request."""
DRAWS = 400
"""Identical requests drawn to find the typical request and its noise."""


@dataclass(frozen=True, slots=True)
class Truth:
    primary: Kind
    contributing: tuple[Kind, ...]
    sizes_ms: dict[Kind, float]
    """Every present kind's share of a typical request, material or not."""
    typical_ms: float
    ttft_noise_ms: float
    noise_ms: float

    @property
    def named(self) -> frozenset[Kind]:
        """Every kind that matters: the primary and the contributing ones."""
        if self.primary is Kind.HEALTHY:
            return frozenset()
        return frozenset((self.primary, *self.contributing))


def truth(s: Scenario) -> Truth:
    rng = np.random.default_rng([s.seed, 7])
    warm = _warm(s, rng)
    quiet = _warm(replace(s, stall_share=0.0, busy_share=0.0), rng)
    typical = float(np.median(warm.total))
    ttft_noise, noise = _noise(quiet.ttft), _noise(quiet.total)
    sizes = _sizes(s, typical, warm)
    material = {
        kind: size
        for kind, size in sizes.items()
        if kind is Kind.ERRORS
        or (
            size >= NOTICEABLE_FRACTION * typical
            and size > (ttft_noise if kind in BEFORE_FIRST_TOKEN else noise)
        )
    }
    ranked = sorted(material, key=lambda k: -material[k])
    if Kind.ERRORS in material and s.error_share >= ERRORS_FIRST:
        ranked = [Kind.ERRORS, *(k for k in ranked if k is not Kind.ERRORS)]
    primary = ranked[0] if ranked else Kind.HEALTHY
    return Truth(primary, tuple(ranked[1:]), sizes, typical, ttft_noise, noise)


def _warm(s: Scenario, rng: np.random.Generator) -> Draws:
    """Many of the network step's warm requests."""
    return draw_requests(
        s,
        rng,
        size=DRAWS,
        prompt_tokens=SHORTEST_PROMPT,
        output_tokens=s.output_tokens,
        new_connection=s.server_closes,
    )


def _noise(values: np.ndarray) -> float:
    return MAD_TO_SIGMA * float(np.median(np.abs(values - np.median(values))))


def upload_ms_of(s: Scenario, prompt_tokens: int) -> float:
    """A prompt's upload without noise, from its first byte leaving to its last."""
    return float(upload_ms(request_bytes(prompt_tokens), s.rtt_ms, s.uplink_bytes_per_ms))


def held_ms(s: Scenario) -> float:
    """How long the hop holds a median stream's first output event: until the last
    event of its burst (of the whole stream, held whole) is produced."""
    events = s.stream_events()
    return (s.flush_events(events) - 1) * s.tpot_ms


def wire_ttft_ms(s: Scenario, prompt_tokens: int, *, upload: bool = True) -> float:
    """TTFT from the request reaching the wire to the first output event, without
    noise: the upload (unless left out), the way there and back, the prefill, hidden
    reasoning and the hop's hold."""
    sent = upload_ms_of(s, prompt_tokens) if upload else 0.0
    hidden = 0.0 if s.reasoning_shown else s.think_ms()
    return sent + s.rtt_ms + s.prefill_ms(prompt_tokens) + hidden + held_ms(s)


def true_ttft_ms(s: Scenario, prompt_tokens: int, *, upload: bool = True) -> float:
    """TTFT of a request on a reused connection, from t0, without noise: the client's
    delay, the setup when every request opens a connection, and the wire's TTFT."""
    setup = s.setup_ms() if s.server_closes else 0.0
    return s.client_delay_ms + setup + wire_ttft_ms(s, prompt_tokens, upload=upload)


def burst_rise_ms(s: Scenario) -> float:
    """The burst's median wait for a slot, without noise: all arrive together."""
    service = np.full(s.concurrency, s.service_ms(SHORTEST_PROMPT))
    return float(np.median(burst_queue_ms(s, np.zeros(s.concurrency), service)))


def swing_ms(warm: Draws) -> float | None:
    """The seed's queueing rule on the true spread of identical requests' TTFT from the
    wire (past the client, the setup, the upload, hidden reasoning and the hop's hold):
    CV ≥ 0.5 or p95/p50 ≥ 2, and p95 − p50 ≥ 100 ms; its size is p95 − p50."""
    ttft = warm.wait + warm.prefill
    p50, p95 = (float(q) for q in np.quantile(ttft, [0.5, 0.95]))
    cv = float(np.std(ttft, ddof=1) / np.mean(ttft))
    swings = cv >= QUEUE_CV or p95 / p50 >= QUEUE_P95_P50
    return p95 - p50 if swings and p95 - p50 >= QUEUE_MIN_MS else None


def _sizes(s: Scenario, typical: float, warm: Draws) -> dict[Kind, float]:
    sizes: dict[Kind, float] = {}
    extra_tls = s.tls_extra_ms if s.tls else 0.0
    if s.server_closes:
        sizes[Kind.NETWORK_SETUP] = s.setup_ms()
    elif s.dns_ms > SLOW_DNS_MS:
        sizes[Kind.NETWORK_SETUP] = s.dns_ms
    elif extra_tls > SLOW_TLS_EXTRA_MS:
        sizes[Kind.NETWORK_SETUP] = extra_tls
    upload = upload_ms_of(s, LONG_UPLOAD_TOKENS)
    if s.rtt_ms > HIGH_RTT_MS or upload > SLOW_UPLOAD_MS:
        sizes[Kind.NETWORK_PATH] = s.rtt_ms + upload
    # The growth the prompt's upload brings is the path's, not the prefill's; the curve
    # is read from the wire, past the client's delay and the connection's setup.
    short = wire_ttft_ms(s, SHORTEST_PROMPT, upload=False)
    long = wire_ttft_ms(s, LONG_REFERENCE_TOKENS, upload=False)
    ratio, growth = long / short, long - short
    if ratio >= LENGTH_RATIO or (ratio >= LENGTH_MIN_RATIO and growth >= LENGTH_MIN_GROWTH_MS):
        sizes[Kind.INPUT_LENGTH] = growth
    rise = burst_rise_ms(s)
    alone = wire_ttft_ms(s, SHORTEST_PROMPT)
    if rise >= QUEUE_MIN_MS and (alone + rise) / alone >= QUEUE_LOAD_RATIO:
        sizes[Kind.QUEUEING] = rise
    elif (swing := swing_ms(warm)) is not None:
        sizes[Kind.QUEUEING] = swing
    if s.tpot_ms > SLOW_TPOT_MS:
        sizes[Kind.DECODE] = s.tpot_ms * max(0, s.output_tokens - 1)
    if s.think_ms() >= REASONING_MIN_MS:
        sizes[Kind.REASONING] = s.think_ms()
    if s.stall_share > 0 and s.stall_ms >= STALL_MIN_MS:
        sizes[Kind.STALLS] = s.stall_share * s.stall_ms
    if held_ms(s) >= HELD_MIN_MS:
        sizes[Kind.BUFFERING] = held_ms(s)
    if s.client_delay_ms > CLIENT_DELAY_MS:
        sizes[Kind.CLIENT] = s.client_delay_ms
    if s.error_share >= ERROR_RATE:
        sizes[Kind.ERRORS] = s.error_share * typical
    return sizes
