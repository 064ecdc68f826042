"""``network_path``: the way to the endpoint itself, the round trip and the upload of
long prompts. The rule reads the round trip and the upload of a long prompt: the one
nearest :data:`LONG_UPLOAD_TOKENS` (the seed's 10K-token example), its send less the
round trip the peer's ACK of the last byte adds where the send was timed to it. It
fires on a round trip past the reference profile's slow edge of a near region
(``rtt_ms``: 50 ms, the seed's) or an upload slower than its slowest healthy uplink
(``upload_mbit_s``: 10 Mbit/s); the seed's bounds (100 ms, 200 ms) stay in its line.
Its share is what the path costs the user's own request beyond a near region's
(:func:`path_share`): the round trip beyond that edge, once for the request and once
for each of slow start's rounds its upload waits, and the bandwidth's time of the
user's prompt (the measured upload of the length nearest it, scaled to its size, less
those rounds); its excess (:func:`path_excess`) counts the bandwidth's time only beyond
the slowest healthy uplink's. The whole round trip and a long prompt's upload, which it
was, charged a warm request of a few hundred tokens a round trip it pays anyway and an
upload it never makes: a round trip of 130 ms was given 250 ms where a near region
saves 80; and the rounds' round trips, counted once in the rounds and again in the
upload, gave a far region's 8K-token request twice what a near one saves.

A lossy path is named here too, from what the kernel counted (:mod:`latdoc.analysis.loss`):
more than :data:`LOSSY_RETRANSMIT_SHARE` of the client's data segments retransmitted, or
of those received arriving out of order (behind a lost one). A long round trip loses
nothing and a server's pause loses nothing, so neither is taken for loss, nor loss for
them: a pause in a request whose connection saw loss meanwhile is counted here (the
path's recovery), not as a stall. Its share is that recovery's pause per request, and
one round trip for each other request that saw loss (a fast retransmit's cost).

A gateway between the client and the model (LiteLLM, an API gateway) is on the same
path: the time it adds before the request reaches the model is named here, from the
gateway's own account (LiteLLM's ``x-litellm-overhead-duration-ms``, read by
:mod:`latdoc.analysis.servertime`) when it is over :data:`GATEWAY_MS`, with the round
trip and the upload's share when those fire too. A gateway that does not tell its time
is not told apart from the rest of the path by one endpoint's numbers: ``latdoc verify
--remedy endpoint`` (the gateway against the upstream called direct) measures it.

A forward proxy (``HTTPS_PROXY``, ``--proxy``) is on it too: its ``CONNECT`` round trip
(or SOCKS5 handshake), which every new connection pays before TLS, is named when its
median over the network step's new connections is over :data:`PROXY_CONNECT_MS`.
``latdoc verify --remedy direct`` measures what bypassing it saves, ``--remedy proxy
--alt-proxy URL`` what another proxy would.
"""

from __future__ import annotations

import math

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.policy import HIGH_RTT_MS, LOSSY_RETRANSMIT_SHARE
from latdoc.analysis.stats import median_of
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind

__all__ = [
    "GATEWAY_MS",
    "HIGH_RTT_MS",
    "LONG_UPLOAD_TOKENS",
    "LOSSY_RETRANSMIT_SHARE",
    "PROXY_CONNECT_MS",
    "SLOW_UPLOAD_MS",
    "SPEC",
    "long_upload",
    "network_path",
    "path_excess",
    "path_share",
    "upload_at",
]

SLOW_UPLOAD_MS = 200.0
GATEWAY_MS = 20.0
"""A gateway that says it adds more than this per request (median) before the model is
named: about a same-region round trip, many times a light proxy's own cost."""
PROXY_CONNECT_MS = 20.0
"""A proxy whose ``CONNECT`` takes more than this (median, new connections) is named:
about a same-region round trip, as :data:`GATEWAY_MS` for a gateway. A proxy on the
client's own network answers in a few milliseconds."""
LONG_UPLOAD_BYTES = 20_000
"""A request this large is a long prompt whose upload the rule reads."""
LONG_UPLOAD_TOKENS = 8192
"""The long prompt the upload is read at: the plan's nearest to the seed's 10K tokens."""
MSS = 1448
"""Payload bytes of a TCP segment on an Ethernet path."""
INITIAL_WINDOW = 10
"""Segments a TCP connection sends before its first ACK (RFC 6928, Linux's default)."""
UNACKED_SEGMENTS = 2
"""Segments the probe's end of send leaves unacknowledged (``latdoc.probe``'s TCP_INFO mark)."""
SAME_PROMPT = 0.1
"""Prompts within this share of one another's tokens count as one length."""


def long_upload(f: Facts) -> tuple[float | None, int]:
    """The median upload of the long prompts nearest :data:`LONG_UPLOAD_TOKENS`, and how
    many were read; ``(None, 0)`` without a long prompt."""
    rtt = f.network["rtt_ms"] or 0.0
    long = [
        t
        for t in f.measured
        if t.ok and t.send_ms is not None and (t.request_bytes or 0) > LONG_UPLOAD_BYTES
    ]
    if not long:
        return None, 0
    size = min(long, key=lambda t: abs((t.prompt_tokens or 0) - LONG_UPLOAD_TOKENS))
    near = size.prompt_tokens or 0
    same = [t for t in long if abs((t.prompt_tokens or 0) - near) <= SAME_PROMPT * near]
    uploads = [max(0.0, (t.send_ms or 0.0) - (rtt if t.sent_acked else 0.0)) for t in same]
    return median_of(uploads), len(same)


def upload_at(f: Facts, tokens: int) -> float | None:
    """The upload of a prompt of ``tokens``: the median rate of the measured length
    nearest it, applied to its bytes; None when no prompt's send was timed.

    A send timed to the peer's ACK ends a round trip after all but the last
    :data:`UNACKED_SEGMENTS` segments left (the probe's end of send): its upload is
    the send less that round trip, and it covers the request's bytes but those."""
    rtt = f.network["rtt_ms"] or 0.0
    timed = [
        t
        for t in f.measured
        if t.ok and t.send_ms is not None and t.prompt_tokens and t.request_bytes
    ]
    if not timed:
        return None
    nearest = min({t.prompt_tokens or 0 for t in timed}, key=lambda n: (abs(n - tokens), n))
    rates = []
    for t in (t for t in timed if t.prompt_tokens == nearest):
        size = t.request_bytes or 0
        if t.sent_acked and size > UNACKED_SEGMENTS * MSS:
            upload = max(0.0, (t.send_ms or 0.0) - rtt)
            rates.append(upload / (size - UNACKED_SEGMENTS * MSS) * size / nearest)
        else:
            rates.append((t.send_ms or 0.0) / nearest)
    rate = median_of(rates)
    return None if rate is None else rate * tokens


def path_share(f: Facts, rtt: float | None) -> float:
    """What the path costs the user's request beyond a near region's and a fast
    uplink's: the round trip beyond the reference profile's near-region edge
    (``rtt_ms``: 50 ms), once for the request and once for each of slow start's rounds
    its upload waits, and the rest of the upload (its bandwidth's time)."""
    return _path_costs(f, rtt)[0]


def path_excess(f: Facts, rtt: float | None) -> float:
    """The part of :func:`path_share` past healthy: the round trips' part of it, and
    the bandwidth's time beyond what the profile's slowest healthy uplink
    (``upload_mbit_s``: 10 Mbit/s) takes for the user's prompt."""
    return _path_costs(f, rtt)[1]


def _path_costs(f: Facts, rtt: float | None) -> tuple[float, float]:
    tokens = f.long_reference_tokens or LONG_UPLOAD_TOKENS
    upload = upload_at(f, tokens) or 0.0
    rounds = _slow_start_rounds(f, tokens)
    trip = rtt or 0.0
    beyond = max(0.0, trip - f.reference["rtt_ms"].slow_edge)
    # A send timed to the peer's ACK waited each of slow start's rounds at this round
    # trip: what is left is the bandwidth's time.
    bandwidth = max(0.0, upload - rounds * trip)
    uplink = f.reference["upload_mbit_s"].slow_edge * 125.0  # bytes per ms
    healthy = tokens * _bytes_per_token(f, tokens) / uplink
    trips = beyond * (1 + rounds)
    return trips + bandwidth, trips + max(0.0, bandwidth - healthy)


def _bytes_per_token(f: Facts, tokens: int) -> float:
    """Bytes per prompt token (median) of the requests of the measured length nearest
    ``tokens``: a request's fixed part weighs on a short prompt's, so all lengths
    together overstate a long one's (a 128-token request's bytes made an 8K-token
    prompt wait one slow-start round too many)."""
    sized = [t for t in f.measured if t.prompt_tokens and t.request_bytes]
    if not sized:
        return 0.0
    nearest = min({t.prompt_tokens or 0 for t in sized}, key=lambda n: (abs(n - tokens), n))
    same = [t for t in sized if t.prompt_tokens == nearest]
    return median_of((t.request_bytes or 0) / (t.prompt_tokens or 1) for t in same) or 0.0


def _slow_start_rounds(f: Facts, tokens: int) -> int:
    """The round trips a prompt of ``tokens`` waits while it is sent: TCP slow start sends
    :data:`INITIAL_WINDOW` segments, then twice as many a round trip."""
    per_token = _bytes_per_token(f, tokens)
    if not per_token:
        return 0
    left, window, rounds = math.ceil(tokens * per_token / MSS), INITIAL_WINDOW, 0
    while left > window:
        left -= window
        window *= 2
        rounds += 1
    return rounds


def network_path(f: Facts) -> Finding | None:
    parts = [p for p in (_gateway(f), _proxy(f), _loss(f), _path(f)) if p is not None]
    if not parts:
        return None
    first, *rest = parts
    if not rest:
        return first
    evidence: dict[str, float] = {}
    for part in reversed(parts):
        evidence.update(part.evidence)
    return Finding(
        Kind.NETWORK_PATH,
        Message.joined("; ", [p.title for p in parts], lower=True),
        Message.joined("; ", [p.rule for p in parts]),
        evidence,
        share_ms=sum(p.share_ms for p in parts),
        n=sum(p.n or 0 for p in parts),
        confidence=max(p.confidence for p in parts),
    )


def _gateway(f: Facts) -> Finding | None:
    numbers = f.server.numbers if f.server is not None else {}
    gateway = numbers.get("gateway_ms")
    if gateway is None or gateway <= GATEWAY_MS:
        return None
    told = int(numbers.get("requests") or 0)
    return Finding(
        Kind.NETWORK_PATH,
        N_("A gateway adds time before the model"),
        Message(
            "the gateway's own header (LiteLLM's x-litellm-overhead-duration-ms) says it adds "
            "{ms:.0f} ms (median) before each request reaches the model > {limit:.0f} ms",
            ms=gateway,
            limit=GATEWAY_MS,
        ),
        {"gateway_ms": gateway},
        share_ms=gateway,
        n=told,
        confidence=confidence(told, gateway / GATEWAY_MS - 1),
    )


def _proxy(f: Facts) -> Finding | None:
    n = f.network
    tunnel = n.get("proxy_connect_ms")
    if tunnel is None or tunnel <= PROXY_CONNECT_MS:
        return None
    cold_n = int(n["cold_n"] or 0)
    proxies = sorted({t.proxy for t in f.measured if t.proxy is not None})
    named = (
        Message("the proxy {proxy}", proxy=proxies[0])
        if len(proxies) == 1
        else Message("the proxy")
    )
    evidence = {"proxy_connect_ms": tunnel}
    if n["connect_ms"] is not None:
        evidence["proxy_tcp_ms"] = n["connect_ms"]
    return Finding(
        Kind.NETWORK_PATH,
        N_("A proxy adds time to every new connection"),
        Message(
            "{named} took {ms:.0f} ms (median) to open its tunnel (CONNECT) after the TCP "
            "handshake > {limit:.0f} ms, before TLS with the endpoint could start",
            named=named,
            ms=tunnel,
            limit=PROXY_CONNECT_MS,
        ),
        evidence,
        share_ms=tunnel,
        n=cold_n,
        confidence=confidence(cold_n, tunnel / PROXY_CONNECT_MS - 1),
    )


def _loss(f: Facts) -> Finding | None:
    loss = f.loss
    if loss is None or not loss.lossy:
        return None
    ok = max(1, sum(1 for t in f.measured if t.ok))
    rtt = loss.rtt_ms or f.network["rtt_ms"] or 0.0
    paused: dict[int, float] = {}
    for i, gap in f.path_stalls:
        paused[i] = paused.get(i, 0.0) + gap
    recovery = sum(paused.values()) + rtt * max(0, loss.losing - len(paused))
    c = loss.counts
    evidence = {
        "retransmitted_segments": float(c.retransmits),
        "sent_segments": float(c.sent),
        "out_of_order_segments": float(c.out_of_order),
        "received_segments": float(c.received),
        "losing_requests": float(loss.losing),
        "counted_requests": float(loss.requests),
        "path_stall_ms": sum(paused.values()),
    }
    said: list[str] = []
    up, down = loss.up_share, loss.down_share
    if up is not None:
        evidence["retransmit_share"] = up
        said.append(
            Message(
                "{share:.1%} of the client's {n} data segments retransmitted", share=up, n=c.sent
            )
        )
    if down is not None:
        evidence["out_of_order_share"] = down
        said.append(
            Message(
                "{share:.1%} of the {n} received arrived out of order", share=down, n=c.received
            )
        )
    if loss.rttvar_ms is not None:
        evidence["rttvar_ms"] = loss.rttvar_ms
    if loss.rtt_ms is not None:
        evidence["kernel_rtt_ms"] = loss.rtt_ms
    worst = max(s for s in (up, down) if s is not None)
    return Finding(
        Kind.NETWORK_PATH,
        N_("The path loses packets"),
        Message(
            "{said} (> {limit:.0%}), in {losing} of {n} requests, round-trip variance "
            "{rttvar:.0f} ms: loss on the way, not the server's pauses",
            said=said[0] if len(said) == 1 else Message("{a} and {b}", a=said[0], b=said[1]),
            limit=LOSSY_RETRANSMIT_SHARE,
            losing=loss.losing,
            n=loss.requests,
            rttvar=loss.rttvar_ms or 0,
        ),
        evidence,
        share_ms=recovery / ok,
        n=loss.requests,
        confidence=confidence(loss.requests, worst / LOSSY_RETRANSMIT_SHARE - 1),
    )


def _path(f: Facts) -> Finding | None:
    n = f.network
    rtt = n["rtt_ms"]
    upload, upload_n = long_upload(f)
    cold_n = int(n["cold_n"] or 0)
    evidence = {k: v for k, v in n.items() if v is not None and k in {"rtt_ms", "connect_ms"}}
    if upload is not None:
        evidence["long_prompt_send_ms"] = upload
    share, excess = _path_costs(f, rtt)
    near = f.reference["rtt_ms"]
    if rtt is not None and near.is_slow(rtt):
        return Finding(
            Kind.NETWORK_PATH,
            N_("High round-trip time to the endpoint"),
            Message(
                "TCP connect (one round trip) {rtt:.0f} ms, past the slow edge of healthy for "
                "a near region, {edge:.0f} ms (~{typical:.0f} ms: {source}); seed rule > "
                "{limit:.0f} ms: far region or a slow path",
                rtt=rtt,
                edge=near.slow_edge,
                typical=near.typical,
                source=near.cited(),
                limit=HIGH_RTT_MS,
            ),
            evidence,
            share_ms=share,
            excess_ms=excess,
            n=cold_n,
            confidence=confidence(cold_n, rtt / HIGH_RTT_MS - 1),
        )
    if upload is not None and excess > 0:
        uplink = f.reference["upload_mbit_s"]
        return Finding(
            Kind.NETWORK_PATH,
            N_("Slow upload of long prompts"),
            Message(
                "uploading a long prompt took {ms:.0f} ms; your prompt's upload takes "
                "{excess:.0f} ms longer than at the slowest healthy uplink, {edge:.0f} Mbit/s "
                "(~{typical:.0f} Mbit/s: {source}); seed rule > {limit:.0f} ms: the uplink's "
                "bandwidth",
                ms=upload,
                excess=excess,
                edge=uplink.slow_edge,
                typical=uplink.typical,
                source=uplink.cited(),
                limit=SLOW_UPLOAD_MS,
            ),
            evidence,
            share_ms=share,
            excess_ms=excess,
            n=upload_n,
            confidence=confidence(upload_n, upload / SLOW_UPLOAD_MS - 1),
        )
    return None


SPEC = KindSpec(
    Kind.NETWORK_PATH,
    N_("Network path"),
    N_("round-trip time and bandwidth to the server, and gateways and proxies on the way"),
    colour="#e6843f",
    rule=network_path,
    before_first_token=True,
    network=True,
)
