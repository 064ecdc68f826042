"""A scenario: an endpoint and the path to it, as a latency model with known parameters.

One request's time is built from the parts MISSION.md names, each a field here:

- the client: its own delay before a request leaves (``client_delay_ms``, ×0.5–1.5:
  a busy event loop holds the request before it reaches the wire, and the loop-lag
  monitor reads the block that held it, ×1–1.5 of the delay, as its lag);
- network: a DNS lookup and a TCP handshake (one round trip) on every new
  connection, a TLS handshake of two round trips plus the server's own work
  (``tls_extra_ms`` beyond a healthy handshake's few ms), then the upload: the
  request's segments leave at the uplink's bandwidth, in TCP slow start's rounds
  (ten segments, doubling every round trip: an idle connection restarts from there),
  and the request reaches the server half a round trip after its last byte left; the
  answer comes back in the other half; a server that closes connections makes every
  request a new connection;
- prefill ``a + b·n + c·n²`` for ``n`` prompt tokens, then ``reasoning_tokens``
  (×lognormal ``reasoning_spread``) decoded before the answer, streamed as reasoning
  events or hidden (reported only in the usage), then the answer at ``tpot_ms`` per
  output token, one token per streamed event;
- ``slots`` server slots, each holding a request from its prefill to its last token:
  the load step's burst of ``concurrency`` requests queues when there are fewer;
- background busy periods: a share of requests waits ``busy_ms`` (×0.5–1.5) more
  before its first byte;
- ``jitter``: the relative spread (lognormal σ) of every server time and round trip;
- mid-stream stalls: a share of streams pauses once for ``stall_ms`` (×0.8–1.2);
- a buffering hop on the way back: it passes the events on ``buffer_events`` at a
  time (each burst when its last event has come), or the whole response at its end,
  headers included (``buffer_whole``);
- errors: a share of requests fails with ``error_code``;
- what the server tells of its own timing (``server_timing``): nothing, a
  ``Server-Timing`` header (queue, prefill, time per token), llama.cpp's ``timings``
  in the last event (prompt and predicted ms), or ``openai-processing-ms``. It adds
  no latency; it changes what the analysis can read.

:func:`draw_requests` draws the phases of many like requests at once (numpy); the
generator (:mod:`bank.generate`) lays them out as the probe would record them, and
the truth (:mod:`bank.truth`) reads the same model without sampling noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

TLS_WORK_MS = 4.0
"""What a healthy TLS handshake takes beyond its two round trips."""
HEADERS_MS = 1.0
"""From the server admitting a request to its response headers."""
KEEPALIVE_COMMENT_MS = 50.0
"""How often a server with keep-alive comments writes one while a request waits for its
slot, in the bank and on the lab. A real server writes them seconds apart, to hold a
request open through a long wait for its slot; at that pace none would fire in the
lab's waits of a few hundred ms and the run would check only the early headers. Every
50 ms, a queued burst's request meets several."""
BYTES_PER_TOKEN = 4.2
REQUEST_OVERHEAD_BYTES = 320
UPLINK_BYTES_PER_MS = 12_500.0
"""100 Mbit/s: a healthy uplink, on which slow start's round trips outweigh the bandwidth."""
MSS = 1448
"""Payload bytes of one TCP segment."""
INITIAL_WINDOW = 10
"""Segments a connection may send before the first ACK (Linux's initial window, and
where an idle connection restarts)."""
ACKED_AT_ONCE = 2
"""A request of this many segments or fewer counts as delivered as soon as it is on
the wire: the probe waits for the peer's ACK of all but the last two segments."""
WRITE_MS = 0.05
"""A write of a request the socket's buffer takes at once."""
STALL_SPREAD = (0.8, 1.2)
BUSY_SPREAD = (0.5, 1.5)
CLIENT_SPREAD = (0.5, 1.5)
LAG_OF_DELAY = (1.0, 1.5)
"""The loop-lag monitor's worst reading during a request, over its delay: the loop's
block that held the request, of which the request waited only the part after it was
ready to go."""
HEALTHY_LAG_MS = (0.05, 1.5)
"""How late an idle event loop runs at worst during a request."""
SERVER_TIMINGS = ("", "server-timing", "llama.cpp", "openai-processing")


@dataclass(frozen=True, slots=True)
class Scenario:
    """One endpoint with a known latency model; ``seed`` makes its samples reproducible."""

    seed: int
    label: str = "healthy"
    """The causes the scenario was drawn with, in words (the truth is computed, not this)."""
    # the client
    client_delay_ms: float = 0.0
    """The client's own delay before a request reaches the wire (its busy event loop)."""
    # network
    dns_ms: float = 20.0
    rtt_ms: float = 30.0
    tls: bool = True
    tls_extra_ms: float = 0.0
    """The server's TLS work beyond a healthy handshake (long chain, slow crypto)."""
    server_closes: bool = False
    uplink_bytes_per_ms: float = UPLINK_BYTES_PER_MS
    # the model service
    prefill_a_ms: float = 120.0
    prefill_b_ms: float = 0.05
    """ms per prompt token."""
    prefill_c_ms: float = 0.0
    """ms per prompt token squared."""
    tpot_ms: float = 20.0
    output_tokens: int = 32
    """``max_tokens`` of the run: every answer runs to it (reasoning tokens come on top)."""
    reasoning_tokens: int = 0
    """The median reasoning tokens a request decodes before its answer."""
    reasoning_spread: float = 0.0
    """Lognormal σ of each request's reasoning tokens."""
    reasoning_shown: bool = False
    """The reasoning is streamed (``reasoning_content``), else only counted in the usage."""
    slots: int = 16
    concurrency: int = 4
    """The load step's burst (the plan's ``concurrency``)."""
    busy_share: float = 0.0
    busy_ms: float = 0.0
    server_timing: str = ""
    """What the server tells of its timing: one of :data:`SERVER_TIMINGS`."""
    # noise and faults
    jitter: float = 0.05
    stall_share: float = 0.0
    stall_ms: float = 0.0
    buffer_events: int = 0
    """A hop on the way back passes the stream on this many events at a time (0: no hop)."""
    buffer_whole: bool = False
    """The hop holds the whole response, headers too, and passes it on at its end."""
    error_share: float = 0.0
    error_code: str = "http:503"
    """``http:429``, ``http:503``, ``timeout`` (before the first token) or ``stream_broken``."""
    # the user's workload: what the user's own typical request is
    prompt_tokens: int = 2048
    """The user's typical prompt (the seed's long prompt unless a workload was drawn);
    their output is ``output_tokens`` and their concurrency ``concurrency``."""
    # realism: quirks of real endpoints (none by default)
    tail_share: float = 0.0
    """The share of server times (each prefill, token gap, round trip) drawn from a
    Pareto tail: ×(1 + Pareto(``tail_alpha``)) on top of the jitter."""
    tail_alpha: float = 2.0
    spell_s: float = 0.0
    """Busy periods come in spells of this mean length (s), alternating with quiet ones
    so that ``busy_share`` of the time is busy; 0: each request meets one on its own."""
    drift: float = 0.0
    """The server's times change by this share from the run's start to its end (from
    ×(1 − drift/2) to ×(1 + drift/2))."""
    tokens_per_event: int = 1
    """Tokens each streamed event carries; 0: an irregular 1 to 8, drawn per event."""
    batch_slowdown: float = 0.0
    """Decode slows with the streams in flight: each token gap ×(1 + this × (streams − 1))."""
    keepalive_comments: bool = False
    """The server answers with its headers as soon as the request arrives and keeps the
    stream alive with SSE comments while it waits and prefills (as DeepSeek does)."""
    quirks: tuple[str, ...] = ()
    """The quirks drawn, by name (:data:`bank.hard.QUIRKS`)."""

    def prefill_ms(self, prompt_tokens: float) -> float:
        n = prompt_tokens
        return self.prefill_a_ms + self.prefill_b_ms * n + self.prefill_c_ms * n * n

    def setup_ms(self) -> float:
        """What a new connection pays before it can send: DNS, TCP and TLS."""
        tls = 2 * self.rtt_ms + TLS_WORK_MS + self.tls_extra_ms if self.tls else 0.0
        return self.dns_ms + self.rtt_ms + tls

    def think_ms(self) -> float:
        """The median request's reasoning before its answer."""
        return self.reasoning_tokens * self.tpot_ms

    def service_ms(self, prompt_tokens: float) -> float:
        """How long a request holds a server slot: its prefill, its reasoning and its
        whole stream."""
        decode = self.tpot_ms * max(0, self.output_tokens - 1)
        return self.prefill_ms(prompt_tokens) + self.think_ms() + decode

    def stream_events(self, output_tokens: int | None = None) -> int:
        """Events of a median stream: the answer's, and the reasoning's when shown."""
        answer = self.output_tokens if output_tokens is None else output_tokens
        return answer + (self.reasoning_tokens if self.reasoning_shown else 0)

    def flush_events(self, events: int) -> int:
        """Events the hop passes on at a time in a stream of ``events`` (no hop: 1)."""
        if self.buffer_whole:
            return max(1, events)
        if self.buffer_events > 1:
            return min(self.buffer_events, max(1, events))
        return 1


@dataclass(frozen=True, slots=True)
class Draws:
    """Phases of ``size`` like requests in ms, one entry each (``gaps``: one row each)."""

    client: Floats
    """The client's own delay before the request left."""
    dns: Floats
    connect: Floats
    tls: Floats
    upload: Floats
    """From the first request byte leaving to the last: bandwidth and slow start."""
    send: Floats
    """From the first byte handed to the kernel to the probe's end-of-send mark: the
    peer's ACK of the upload (a round trip after it), or the write itself for a request
    of :data:`ACKED_AT_ONCE` segments or fewer."""
    wait: Floats
    """End of send to the first response byte, were it not held: the rest of the way
    there and back, the queue, busy periods."""
    prefill: Floats
    """First byte to the first output produced."""
    think: Floats
    """The reasoning: from its first token to the first answer token."""
    reasoning: Floats
    """Reasoning tokens, one count each."""
    gaps: Floats
    """Inter-token gaps of the answer, shape (size, output tokens − 1), a stall included."""
    hidden: Floats
    """The reasoning before the first output event: ``think`` when it is not streamed."""
    held: Floats
    """How long the hop held the first output event back."""
    rtt: Floats
    lag: Floats
    """The loop-lag monitor's worst reading during the request."""

    @property
    def at_server(self) -> Floats:
        """When the whole request has reached the server, from t0."""
        return self.client + self.dns + self.connect + self.tls + self.upload + self.rtt / 2

    @property
    def ttft(self) -> Floats:
        before = self.client + self.dns + self.connect + self.tls + self.send + self.wait
        return before + self.prefill + self.hidden + self.held

    @property
    def total(self) -> Floats:
        before = self.client + self.dns + self.connect + self.tls + self.send + self.wait
        return before + self.prefill + self.think + self.gaps.sum(axis=1)


def request_bytes(prompt_tokens: int) -> int:
    return round(prompt_tokens * BYTES_PER_TOKEN) + REQUEST_OVERHEAD_BYTES


def segments(nbytes: int) -> int:
    return max(1, math.ceil(nbytes / MSS))


def upload_ms(
    nbytes: int, rtt: Floats | float, bytes_per_ms: float, *, upto: int | None = None
) -> Floats:
    """From the first byte of a request leaving to its last (to the last of its first
    ``upto`` segments): each slow-start round sends the window at the uplink's
    bandwidth, the next starts when the first ACK is back (a round trip) or the window
    is out, whichever is later."""
    rtt = np.asarray(rtt, dtype=float)
    left, window, t = segments(nbytes), INITIAL_WINDOW, np.zeros_like(rtt)
    if upto is not None:
        left = min(left, upto)
    per_segment = min(nbytes, MSS) / bytes_per_ms
    while True:
        burst = min(left, window)
        left -= burst
        if left == 0:
            return t + burst * per_segment
        t = t + np.maximum(rtt, burst * per_segment)
        window *= 2


def send_mark_ms(nbytes: int, rtt: Floats, bytes_per_ms: float) -> Floats:
    """From the first request byte handed to the kernel to the probe's end of send: the
    peer's ACK of all but the last :data:`ACKED_AT_ONCE` segments, a round trip after
    they left the bottleneck; a request of no more segments counts as sent when the
    write returns (the kernel has it out; the slow link is further on)."""
    count = segments(nbytes)
    if count <= ACKED_AT_ONCE:
        return np.full_like(rtt, WRITE_MS)
    return upload_ms(nbytes, rtt, bytes_per_ms, upto=count - ACKED_AT_ONCE) + rtt


def draw_requests(
    s: Scenario,
    rng: np.random.Generator,
    *,
    size: int,
    prompt_tokens: int,
    output_tokens: int,
    new_connection: bool,
    queue_ms: Floats | None = None,
    busy: npt.NDArray[np.bool_] | None = None,
    speed: float = 1.0,
    in_flight: int = 1,
) -> Draws:
    """The phases of ``size`` requests alike but for the model's noise; ``queue_ms`` is
    each one's wait for a server slot (none by default), ``busy`` which of them meet a
    busy period (drawn each on its own by default), ``speed`` the drift's factor on the
    server's times and ``in_flight`` the streams decoding together."""

    def spread(scale: float, shape: int | tuple[int, int] = size) -> Floats:
        return scale * rng.lognormal(0.0, s.jitter, shape) * tail(shape)

    def tail(shape: int | tuple[int, int]) -> Floats:
        if s.tail_share <= 0:
            return np.ones(shape)
        hit = rng.random(shape) < s.tail_share
        return np.where(hit, 1.0 + rng.pareto(s.tail_alpha, shape), 1.0)

    rtt = spread(s.rtt_ms)
    zero = np.zeros(size)
    client = zero.copy()
    if s.client_delay_ms > 0:
        client = s.client_delay_ms * rng.uniform(*CLIENT_SPREAD, size)
    lag = client * rng.uniform(*LAG_OF_DELAY, size) + rng.uniform(*HEALTHY_LAG_MS, size)
    if new_connection:
        dns = s.dns_ms * rng.lognormal(0.0, 0.1, size)
        connect = rtt.copy()
        tls = 2 * rtt + spread(TLS_WORK_MS + s.tls_extra_ms) if s.tls else zero.copy()
    else:
        dns, connect, tls = zero.copy(), zero.copy(), zero.copy()
    nbytes = request_bytes(prompt_tokens)
    upload = upload_ms(nbytes, rtt, s.uplink_bytes_per_ms)
    send = send_mark_ms(nbytes, rtt, s.uplink_bytes_per_ms)
    if busy is None:
        busy = rng.random(size) < s.busy_share
    busy_ms = np.where(busy, s.busy_ms * rng.uniform(*BUSY_SPREAD, size), 0.0)
    queue = np.zeros(size) if queue_ms is None else queue_ms
    wait = upload + rtt + queue + busy_ms + HEADERS_MS - send
    prefill = speed * spread(s.prefill_ms(prompt_tokens))
    reasoning, think = zero.copy(), zero.copy()
    if s.reasoning_tokens > 0:
        counts = s.reasoning_tokens * rng.lognormal(0.0, s.reasoning_spread, size)
        reasoning = np.maximum(1.0, np.round(counts))
        think = speed * reasoning * s.tpot_ms * rng.lognormal(0.0, s.jitter / 4, size)
    n_gaps = max(0, output_tokens - 1)
    batched = 1.0 + s.batch_slowdown * max(0, in_flight - 1)
    gaps = speed * batched * spread(s.tpot_ms, (size, n_gaps))
    if n_gaps >= 4 and s.stall_share > 0:
        stalled = np.flatnonzero(rng.random(size) < s.stall_share)
        # A stall in the middle of the stream, never in its first or last gaps.
        where = rng.integers(2, n_gaps - 1, stalled.size)
        gaps[stalled, where] += s.stall_ms * rng.uniform(*STALL_SPREAD, stalled.size)
    hidden = zero.copy() if s.reasoning_shown else think
    held = _held(s, think, reasoning, gaps)
    return Draws(
        client,
        dns,
        connect,
        tls,
        upload,
        send,
        wait,
        prefill,
        think,
        reasoning,
        gaps,
        hidden,
        held,
        rtt,
        lag,
    )


def produced(s: Scenario, d: Draws, i: int) -> tuple[list[float], int]:
    """When request ``i``'s output events were produced, in ms from its first, and how
    many of them are reasoning (streamed reasoning first, evenly over its time)."""
    shown = int(d.reasoning[i]) if s.reasoning_shown else 0
    times = [d.think[i] * k / shown for k in range(shown)]
    start = float(d.think[i]) if shown else 0.0
    times.append(start)
    for gap in d.gaps[i]:
        times.append(times[-1] + float(gap))
    return times, shown


def arrived(s: Scenario, times: list[float]) -> list[float]:
    """When the events produced at ``times`` arrived, the hop's bursts applied: each
    burst when its last event has come."""
    flush = s.flush_events(len(times))
    if flush <= 1:
        return list(times)
    last = len(times) - 1
    return [times[min((k // flush + 1) * flush - 1, last)] for k in range(len(times))]


def _held(s: Scenario, think: Floats, reasoning: Floats, gaps: Floats) -> Floats:
    """How long the hop held each request's first output event back."""
    size = gaps.shape[0]
    if not s.buffer_whole and s.buffer_events <= 1:
        return np.zeros(size)
    if not s.reasoning_shown or s.reasoning_tokens == 0:
        times = np.concatenate([np.zeros((size, 1)), np.cumsum(gaps, axis=1)], axis=1)
        flush = s.flush_events(times.shape[1])
        return times[:, flush - 1]
    out = np.zeros(size)
    for i in range(size):
        shown = int(reasoning[i])
        events = shown + gaps.shape[1] + 1
        k = s.flush_events(events) - 1
        if k < shown:
            out[i] = think[i] * k / shown
        else:
            out[i] = think[i] + gaps[i, : k - shown].sum()
    return out


def burst_queue_ms(s: Scenario, arrivals: Floats, service: Floats) -> Floats:
    """Each request's wait for a free slot, first come first served on ``s.slots``."""
    free = np.zeros(max(1, s.slots))
    waits = np.zeros(arrivals.size)
    for i in np.argsort(arrivals, kind="stable"):
        k = int(np.argmin(free))
        start = max(arrivals[i], free[k])
        waits[i] = start - arrivals[i]
        free[k] = start + service[i]
    return waits
