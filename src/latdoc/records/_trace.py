"""The one record of a measured request: :class:`RequestTrace`.

All phase times are integer nanoseconds from ``t0`` (the moment the request was
handed to the client), taken with :func:`time.perf_counter_ns`. Phase marks are
cumulative, as curl's ``-w`` variables are: ``connect_done`` includes DNS,
``tls_done`` includes connect, and so on. ``None`` always means "not measured",
never zero.

Two clocks of TTFT. ``ttft`` counts from ``t0``: what the user waits, the client's
own delay included. ``server_ttft`` counts from ``sent``, the moment the request
reached the wire (the peer's ACK of its last byte where the kernel tells): what the
server and the path back took. Every rule about the server's speed reads the
second; the client's own delay (event-loop lateness, the time before the request
leaves) is the phase ``client_delay``, never the server's time. Response arrivals
(``first_byte``, every chunk) are the kernel's receive stamps where the platform
gives them (``arrival_clock`` says which clock stamped them), so a late event loop
does not delay them either.

Derived metrics are defined once, here, as properties returning milliseconds:

=========== ==========================================================
queue       client-side wait for a pooled connection (all were busy)
client      the client's own delay before the request left: event-loop
            lateness between steps, not a wait for the pool or the network
dns         DNS resolution (0 on a reused connection); through a proxy, the
            proxy's name (curl's ``time_namelookup`` too)
connect     TCP handshake (0 on a reused connection); through a proxy, to the proxy
proxy_connect
            through a proxy's tunnel: its ``CONNECT`` round trip (or the SOCKS5
            handshake; with an ``https://`` proxy, TLS with the proxy too), from the
            TCP handshake with the proxy to the tunnel open (0 on a reused
            connection, ``None`` without a tunnel)
tls         TLS handshake (0 on a reused connection, ``None`` over plain TCP); through
            a tunnel, with the endpoint through it
send        from the first request byte handed to the kernel to the end of send:
            written *and acknowledged by the peer*
wait        server wait: first response byte minus end of send
ttfb        first response byte, from t0 (curl's ``time_starttransfer``)
first_event the stream's first event of any kind, from t0: a control event
            (``response.created``, ``message_start``, ``messageStart``, a role-only
            chunk, a Gemini frame without parts) counts here and nowhere else
ttft        first chunk carrying output of any kind (reasoning, answer text or a
            tool call), from t0 (user-side)
server_ttft the same first chunk, from ``sent`` (the server's side)
ttfr        first chunk carrying reasoning (thinking), from t0
ttfa        first chunk carrying the answer (text, tool call, structured output),
            from t0
first_tool_call
            first chunk carrying a tool call (its name or arguments), from t0
tool_arguments_done
            the last byte of the last tool call's arguments, from t0
reasoning   thinking before the answer: first answer (else the end) minus first
            reasoning
keepalive_wait
            the first response byte to the last ``: keep-alive`` comment before the
            stream's first event: the wait in the server's queue, as it tells it
tpot        (done - first_token) / (output_tokens - 1)
itl         gaps between consecutive content chunks
total       end of the response, from t0 (curl's ``time_total``)
=========== ==========================================================
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from latdoc.errors import RequestFailed, TraceError
from latdoc.records._parts import _NS_PER_MS, Chunk, ConnectAttempt, TcpInfo, ToolCall


@dataclass(frozen=True, slots=True)
class RequestTrace:
    """Everything measured about one request. Frozen; built by the probe."""

    started_at: datetime
    """Wall-clock start (UTC)."""
    t0_ns: int
    """Monotonic start (``perf_counter_ns``); every ``*_ns`` field is relative to it."""
    url: str
    model: str
    dialect: str
    http_version: str | None = None
    remote_ip: str | None = None
    connection_id: int | None = None
    new_connection: bool | None = None

    queue_done_ns: int | None = None
    dns_done_ns: int | None = None
    connect_done_ns: int | None = None
    tls_done_ns: int | None = None
    sent_ns: int | None = None
    sent_acked: bool = False
    """True when ``sent_ns`` is the peer's ACK of the last byte (TCP_INFO),
    False when it is only the moment the write returned."""
    first_byte_ns: int | None = None
    first_token_ns: int | None = None
    done_ns: int | None = None

    status: int | None = None
    chunks: tuple[Chunk, ...] = ()
    chunk_tokens_exact: bool = False
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    output_tokens_exact: bool = False
    cached_prompt_tokens: int | None = None
    finish_reason: str | None = None
    request_bytes: int | None = None
    response_bytes: int | None = None
    server_timing: Mapping[str, float] = field(default_factory=dict)
    """Server-reported durations in ms (``Server-Timing``, ``openai-processing-ms``,
    llama.cpp ``timings``)."""
    tcp_info: TcpInfo | None = None
    error: TraceError | None = None
    started_ns: int | None = None
    """Wall-clock start (``time.time_ns()``, nanoseconds since the Unix epoch), read
    beside ``t0_ns``: the exact instant to line requests up with other machines' logs."""
    request_id: str | None = None
    """The ``X-Request-ID`` sent with this attempt (a new one per attempt)."""
    response_id: str | None = None
    """The id the server gave the response: its events' ``id``, else its
    ``X-Request-ID`` header."""
    attempt: int = 1
    """1 for the first send of a request, 2 for a resend of the same request, …"""
    first_reasoning_ns: int | None = None
    """The first chunk carrying reasoning: ``reasoning_content``, a thinking delta, a
    reasoning summary delta, or thinking written into the answer between ``<think>`` tags
    (:mod:`latdoc.probe._think`). ``None`` when the response showed no reasoning."""
    first_answer_ns: int | None = None
    """The first chunk carrying the answer: text, a tool call's arguments or a refusal."""
    reasoning_tokens: int | None = None
    """Reasoning tokens as the server reports them in its usage (part of ``output_tokens``)."""
    unknown_events: int | None = None
    """Events of a type the dialect does not define, skipped; ``None`` when no stream was read."""
    proxy_headers: Mapping[str, str] = field(default_factory=dict)
    """Response headers that tell what stands between client and server (``server``,
    ``via``, CDN headers, ``x-accel-buffering``, ``content-length``), by lower-case
    name: a fixed list of names, none that can carry a secret."""
    pool_granted_ns: int | None = None
    """When a pooled connection was free for this request: up to here the pool held it
    back (``queue``); from here to ``queue_done`` it waited on the client's own event
    loop (part of ``client_delay``). ``None`` when not tracked: then ``queue`` runs to
    ``queue_done``, as in traces recorded before this mark existed."""
    write_start_ns: int | None = None
    """When the first byte of the request was handed to the kernel. From the
    connection being ready to here is the client's own delay; from here to ``sent``
    is the send."""
    first_event_ns: int | None = None
    """The stream's first event of any kind, control events included (``response.created``,
    ``message_start``, ``messageStart``, a role-only chunk, a Gemini frame without parts):
    the first sign of the server past the headers. ``None`` when no event was read."""
    first_tool_call_ns: int | None = None
    """The first chunk carrying a tool call's output: its name or arguments (a chat
    ``tool_calls`` delta, an Anthropic ``tool_use`` block and its ``input_json_delta``,
    a Responses arguments delta, a Gemini ``functionCall``, a Bedrock ``toolUse``).
    ``None`` when the response called no tool. A tool call is answer too
    (``first_answer_ns``)."""
    arrival_clock: str | None = None
    """What stamped the response's arrivals (``first_byte``, chunks): ``"kernel"``, the
    socket's software receive stamps, or ``"loop"``, the event loop when it ran the
    read. ``None`` when not recorded."""
    prompt_chars: int | None = None
    """Characters of the prompt's text as the request body carried it (its messages'
    text, a completion's prompt, system instructions), counted by the client from the
    body it sent; ``None`` when the body was not read."""
    prompt_tokens_estimated: int | None = None
    """An estimate of the prompt's tokens from :attr:`prompt_chars`
    (:func:`~latdoc.records.estimate_tokens`), for requests whose server reports no
    usage; never the server's count, which is :attr:`prompt_tokens`."""
    proxy: str | None = None
    """The proxy the request went through, as its URL with the credentials masked
    (``http://***@proxy:3128``); ``None``: direct. Through a proxy, ``remote_ip``,
    the TCP handshake and ``tcp_info`` are the proxy's."""
    proxy_connect_done_ns: int | None = None
    """When the proxy's tunnel was open: its answer to ``CONNECT``, or the SOCKS5 reply.
    ``None`` without a tunnel (direct, or a plain ``http://`` request forwarded)."""
    connect_attempts: tuple[ConnectAttempt, ...] = ()
    """Every TCP connection attempt of a new connection, in the order they started:
    the addresses of both families raced as RFC 8305 says. Empty on a reused
    connection and in traces recorded before attempts were."""
    tls_resumed: bool | None = None
    """Whether the TLS handshake resumed an earlier session (ticket or session id);
    ``None`` without a new TLS handshake."""
    tls_session_offered: bool = False
    """Whether the client offered an earlier session to resume."""
    keepalive_comments: int | None = None
    """``: keep-alive`` comment lines before the stream's first event: DeepSeek writes
    them while a request waits to be scheduled. ``None`` when no event stream was read."""
    first_keepalive_ns: int | None = None
    """The first of them to arrive; ``None`` without one."""
    last_keepalive_ns: int | None = None
    """The last of them to arrive before the first event; ``None`` without one."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Every tool call the response streamed, in the order they began: name, arguments'
    size, first part and arguments' last byte. Empty when it called none, and in traces
    recorded before tool calls were kept."""
    due_ns: int | None = None
    """When the request was due, relative to ``t0`` (0 or less: it left then or later):
    an open loop's arrival, a trace's time, the end of the request before it on a closed
    loop's stream. What a user behind the generator waits runs from here; ``None`` where
    nothing scheduled the request (a probe, recorded traffic)."""
    relay_us: tuple[int, ...] = ()
    """For a request passed on by a gateway of latdoc's (``latdoc record``): for each
    piece of the response body, in order, the microseconds from the read that brought
    it from the upstream to its hand-over to the application's connection: what the
    gateway added. Empty for a request nothing passed on."""

    # -- derived metrics, in milliseconds -------------------------------------

    @property
    def ok(self) -> bool:
        return self.error is None

    def raise_for_error(self) -> RequestTrace:
        """Return the trace, or raise :class:`latdoc.errors.RequestFailed` if the request failed."""
        if self.error is not None:
            raise RequestFailed(self.error)
        return self

    @property
    def queue_ms(self) -> float | None:
        """Wait for a pooled connection while all were busy."""
        if self.pool_granted_ns is not None:
            return _ms(self.pool_granted_ns)
        return _ms(self.queue_done_ns)

    @property
    def client_delay_ms(self) -> float | None:
        """The client's own delay before the request left: from the pool's grant to the
        task picking the connection up, and from the connection being ready to the first
        byte handed to the kernel. Never part of the server's time."""
        if self.write_start_ns is None:
            return None
        ready = self._ready_ns
        if ready is None:
            return None
        picked_up = 0
        if self.pool_granted_ns is not None and self.queue_done_ns is not None:
            picked_up = max(0, self.queue_done_ns - self.pool_granted_ns)
        return (picked_up + max(0, self.write_start_ns - ready)) / _NS_PER_MS

    @property
    def dns_ms(self) -> float | None:
        return _span(self.queue_done_ns, self.dns_done_ns)

    @property
    def connect_ms(self) -> float | None:
        return _span(self.dns_done_ns, self.connect_done_ns)

    @property
    def proxy_connect_ms(self) -> float | None:
        """The proxy's tunnel: from the TCP handshake with the proxy to its ``CONNECT``
        answer (or SOCKS5 reply); ``None`` without a tunnel."""
        return _span(self.connect_done_ns, self.proxy_connect_done_ns)

    @property
    def tls_ms(self) -> float | None:
        start = self.proxy_connect_done_ns
        return _span(self.connect_done_ns if start is None else start, self.tls_done_ns)

    @property
    def setup_ms(self) -> float | None:
        """Network setup: DNS + TCP (+ the proxy's tunnel) + TLS."""
        marks = (self.tls_done_ns, self.proxy_connect_done_ns, self.connect_done_ns)
        return _span(self.queue_done_ns, next((m for m in marks if m is not None), None))

    @property
    def _ready_ns(self) -> int | None:
        marks = (self.tls_done_ns, self.proxy_connect_done_ns, self.connect_done_ns)
        for mark in (*marks, self.queue_done_ns):
            if mark is not None:
                return mark
        return None

    @property
    def send_ms(self) -> float | None:
        """From the first request byte handed to the kernel (else the connection being
        ready, in traces without that mark) to the end of send."""
        start = self.write_start_ns if self.write_start_ns is not None else self._ready_ns
        return _span(start, self.sent_ns)

    @property
    def wait_ms(self) -> float | None:
        return _span(self.sent_ns, self.first_byte_ns)

    @property
    def ttfb_ms(self) -> float | None:
        return _ms(self.first_byte_ns)

    @property
    def ttft_ms(self) -> float | None:
        """User-side TTFT: from ``t0``, the client's own delay and setup included."""
        return _ms(self.first_token_ns)

    @property
    def server_ttft_ms(self) -> float | None:
        """Server-side TTFT: from the request reaching the wire (``sent``) to the first
        token's arrival; no pool wait, setup or client delay in it."""
        return _span(self.sent_ns, self.first_token_ns)

    @property
    def first_event_ms(self) -> float | None:
        """Time to the stream's first event, control events included."""
        return _ms(self.first_event_ns)

    @property
    def first_tool_call_ms(self) -> float | None:
        """Time to the first tool-call output."""
        return _ms(self.first_tool_call_ns)

    @property
    def tool_arguments_done_ms(self) -> float | None:
        """Time to the last byte of the last tool call's arguments, from ``t0``; ``None``
        when the response called no tool."""
        if not self.tool_calls:
            return None
        return _ms(max(call.last_ns for call in self.tool_calls))

    @property
    def first_output_kind(self) -> str | None:
        """What the first output was: ``"reasoning"``, ``"tool_call"`` or ``"text"`` (an
        answer's text, a refusal); ``None`` without output."""
        first = self.first_token_ns
        if first is None:
            return None
        if self.first_reasoning_ns == first:
            return "reasoning"
        if self.first_tool_call_ns == first:
            return "tool_call"
        return "text"

    @property
    def ttfr_ms(self) -> float | None:
        """Time to the first reasoning output."""
        return _ms(self.first_reasoning_ns)

    @property
    def ttfa_ms(self) -> float | None:
        """Time to the first answer token (reasoning excluded)."""
        return _ms(self.first_answer_ns)

    @property
    def reasoning_ms(self) -> float | None:
        """Time spent thinking before the answer: from the first reasoning output to the
        first answer token (to the end when no answer came); ``None`` without reasoning
        output before the answer."""
        start = self.first_reasoning_ns
        if start is None:
            return None
        end = self.first_answer_ns if self.first_answer_ns is not None else self.done_ns
        if end is None or end < start:
            return None
        return (end - start) / _NS_PER_MS

    @property
    def keepalive_wait_ms(self) -> float | None:
        """How long the server kept the request waiting, by its ``: keep-alive`` comments:
        from the first response byte to the last of them before the stream's first
        event. A server that writes them while a request waits to be scheduled
        (DeepSeek) held it in its queue at least this long, at most one comment's
        interval more, and the prefill came after. 0 for a stream without one; ``None``
        when no event stream was read."""
        if self.keepalive_comments is None:
            return None
        if self.last_keepalive_ns is None or self.first_byte_ns is None:
            return 0.0
        return max(0, self.last_keepalive_ns - self.first_byte_ns) / _NS_PER_MS

    @property
    def answer_tokens(self) -> int | None:
        """Output tokens that are the answer: output minus reported reasoning tokens."""
        if self.output_tokens is None:
            return None
        return self.output_tokens - min(self.reasoning_tokens or 0, self.output_tokens)

    @property
    def total_ms(self) -> float | None:
        return _ms(self.done_ns)

    @property
    def late_ms(self) -> float | None:
        """How late the request left against when it was due (the generator's own
        queue: coordinated omission where it is left out); ``None`` where not due."""
        return None if self.due_ns is None else max(0, -self.due_ns) / _NS_PER_MS

    @property
    def due_ttft_ms(self) -> float | None:
        """TTFT from when the request was due: what a user behind the generator waits
        (AIPerf's ``effective`` latency, GuideLLM's scheduled latency)."""
        late, ttft = self.late_ms, self.ttft_ms
        return None if late is None or ttft is None else late + ttft

    @property
    def due_total_ms(self) -> float | None:
        """End to end from when the request was due."""
        late, total = self.late_ms, self.total_ms
        return None if late is None or total is None else late + total

    @property
    def stream_ms(self) -> float | None:
        """From the first token to the end of the response."""
        return _span(self.first_token_ns, self.done_ns)

    @property
    def tpot_ms(self) -> float | None:
        if self.first_token_ns is None or self.done_ns is None:
            return None
        tokens = self.output_tokens
        if tokens is None or tokens < 2:
            return None
        return (self.done_ns - self.first_token_ns) / (tokens - 1) / _NS_PER_MS

    @property
    def itl_ms(self) -> tuple[float, ...]:
        times = [c.t_ns for c in self.chunks]
        return tuple((b - a) / _NS_PER_MS for a, b in itertools.pairwise(times))

    @property
    def reads(self) -> int:
        """How many distinct arrival stamps the chunks carry: the reads that brought
        them, where chunks read together share one stamp."""
        return len({c.t_ns for c in self.chunks})

    @property
    def handshake_ms(self) -> float | None:
        """One TCP handshake: the attempt that connected, from its own start; the connect
        phase where no attempt was recorded. Less than ``connect`` by the time attempts
        that lost the race (a dead address family) cost before it started."""
        won = next((a for a in self.connect_attempts if a.outcome == "connected"), None)
        return won.ms if won is not None else self.connect_ms

    @property
    def rtt_ms(self) -> float | None:
        """Round-trip estimate: the TCP handshake of a new connection (:attr:`handshake_ms`),
        else the kernel's."""
        if self.new_connection and self.handshake_ms is not None:
            return self.handshake_ms
        if self.tcp_info is not None:
            return self.tcp_info.rtt_us / 1000
        return None


def _ms(ns: int | None) -> float | None:
    return None if ns is None else ns / _NS_PER_MS


def _span(start: int | None, end: int | None) -> float | None:
    if start is None or end is None:
        return None
    return (end - start) / _NS_PER_MS
