"""A scenario: an endpoint and the path to it, as a latency model with known parameters.

One request's time is built from the parts MISSION.md names, each a field here:

- network: a DNS lookup and a TCP handshake (one round trip) on every new
  connection, a TLS handshake of two round trips plus the server's own work
  (``tls_extra_ms`` beyond a healthy handshake's few ms), and one round trip from
  the end of sending to the first response byte; a server that closes connections
  makes every request a new connection;
- prefill ``a + b·n + c·n²`` for ``n`` prompt tokens, and decode at ``tpot_ms`` per
  output token, one token per streamed chunk;
- ``slots`` server slots, each holding a request from its prefill to its last token:
  the load step's burst of ``concurrency`` requests queues when there are fewer;
- background busy periods: a share of requests waits ``busy_ms`` (×0.5–1.5) more
  before its first byte;
- ``jitter``: the relative spread (lognormal σ) of every server time and round trip;
- mid-stream stalls: a share of streams pauses once for ``stall_ms`` (×0.8–1.2);
- errors: a share of requests fails with ``error_code``.

:func:`draw_requests` draws the phases of many like requests at once (numpy); the
generator (:mod:`bank.generate`) lays them out as the probe would record them, and
the truth (:mod:`bank.truth`) reads the same model without sampling noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

TLS_WORK_MS = 4.0
"""What a healthy TLS handshake takes beyond its two round trips."""
HEADERS_MS = 1.0
"""From the server admitting a request to its response headers."""
BYTES_PER_TOKEN = 4.2
REQUEST_OVERHEAD_BYTES = 320
UPLINK_BYTES_PER_MS = 12_500.0
"""100 Mbit/s: a long prompt uploads in a few ms, so upload is never a cause here."""
STALL_SPREAD = (0.8, 1.2)
BUSY_SPREAD = (0.5, 1.5)


@dataclass(frozen=True, slots=True)
class Scenario:
    """One endpoint with a known latency model; ``seed`` makes its samples reproducible."""

    seed: int
    label: str = "healthy"
    """The causes the scenario was drawn with, in words (the truth is computed, not this)."""
    # network
    dns_ms: float = 20.0
    rtt_ms: float = 30.0
    tls: bool = True
    tls_extra_ms: float = 0.0
    """The server's TLS work beyond a healthy handshake (long chain, slow crypto)."""
    server_closes: bool = False
    # the model service
    prefill_a_ms: float = 120.0
    prefill_b_ms: float = 0.05
    """ms per prompt token."""
    prefill_c_ms: float = 0.0
    """ms per prompt token squared."""
    tpot_ms: float = 20.0
    output_tokens: int = 32
    """``max_tokens`` of the run: every answer runs to it."""
    slots: int = 16
    concurrency: int = 4
    """The load step's burst (the plan's ``concurrency``)."""
    busy_share: float = 0.0
    busy_ms: float = 0.0
    # noise and faults
    jitter: float = 0.05
    stall_share: float = 0.0
    stall_ms: float = 0.0
    error_share: float = 0.0
    error_code: str = "http:503"
    """``http:429``, ``http:503``, ``timeout`` (before the first token) or ``stream_broken``."""

    def prefill_ms(self, prompt_tokens: float) -> float:
        n = prompt_tokens
        return self.prefill_a_ms + self.prefill_b_ms * n + self.prefill_c_ms * n * n

    def setup_ms(self) -> float:
        """What a new connection pays before it can send: DNS, TCP and TLS."""
        tls = 2 * self.rtt_ms + TLS_WORK_MS + self.tls_extra_ms if self.tls else 0.0
        return self.dns_ms + self.rtt_ms + tls

    def service_ms(self, prompt_tokens: float) -> float:
        """How long a request holds a server slot: its prefill and its whole stream."""
        return self.prefill_ms(prompt_tokens) + self.tpot_ms * max(0, self.output_tokens - 1)


@dataclass(frozen=True, slots=True)
class Draws:
    """Phases of ``size`` like requests in ms, one entry each (``gaps``: one row each)."""

    dns: Floats
    connect: Floats
    tls: Floats
    send: Floats
    wait: Floats
    """End of send to the first response byte: a round trip, the queue, busy periods."""
    prefill: Floats
    """First byte to first token."""
    gaps: Floats
    """Inter-chunk gaps, shape (size, output tokens − 1), a stall included."""

    @property
    def ttft(self) -> Floats:
        return self.dns + self.connect + self.tls + self.send + self.wait + self.prefill

    @property
    def total(self) -> Floats:
        return self.ttft + self.gaps.sum(axis=1)


def request_bytes(prompt_tokens: int) -> int:
    return round(prompt_tokens * BYTES_PER_TOKEN) + REQUEST_OVERHEAD_BYTES


def draw_requests(
    s: Scenario,
    rng: np.random.Generator,
    *,
    size: int,
    prompt_tokens: int,
    output_tokens: int,
    new_connection: bool,
    queue_ms: Floats | None = None,
) -> Draws:
    """The phases of ``size`` requests alike but for the model's noise; ``queue_ms`` is
    each one's wait for a server slot (none by default)."""

    def spread(scale: float) -> Floats:
        return scale * rng.lognormal(0.0, s.jitter, size)

    rtt = spread(s.rtt_ms)
    zero = np.zeros(size)
    if new_connection:
        dns = s.dns_ms * rng.lognormal(0.0, 0.1, size)
        connect = rtt.copy()
        tls = 2 * rtt + spread(TLS_WORK_MS + s.tls_extra_ms) if s.tls else zero.copy()
    else:
        dns, connect, tls = zero.copy(), zero.copy(), zero.copy()
    send = np.full(size, request_bytes(prompt_tokens) / UPLINK_BYTES_PER_MS)
    busy = rng.random(size) < s.busy_share
    busy_ms = np.where(busy, s.busy_ms * rng.uniform(*BUSY_SPREAD, size), 0.0)
    queue = np.zeros(size) if queue_ms is None else queue_ms
    wait = rtt + queue + busy_ms + HEADERS_MS
    prefill = spread(s.prefill_ms(prompt_tokens))
    n_gaps = max(0, output_tokens - 1)
    gaps = s.tpot_ms * rng.lognormal(0.0, s.jitter, (size, n_gaps))
    if n_gaps >= 4 and s.stall_share > 0:
        stalled = np.flatnonzero(rng.random(size) < s.stall_share)
        # A stall in the middle of the stream, never in its first or last gaps.
        where = rng.integers(2, n_gaps - 1, stalled.size)
        gaps[stalled, where] += s.stall_ms * rng.uniform(*STALL_SPREAD, stalled.size)
    return Draws(dns, connect, tls, send, wait, prefill, gaps)


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
