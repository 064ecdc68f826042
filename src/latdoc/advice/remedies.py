"""Findings become remedies, ranked for the user's scenario.

A remedy names the concrete change for httpx and the openai SDK, computed for this
machine, the user's settings and this run's numbers (pool size ``2 × cores +
concurrency``, the window to trim to, a read timeout between the stream's normal
gaps and its stalls). A gain is printed only where this run measured it
(keep-alive: cold minus warm first byte) or the length curve models it (trimming:
the curve's prediction at the long prompt minus at the window), each with its 95%
interval; every other remedy carries the ``latdoc verify`` command that would
measure it on this endpoint, or says in words how one would.

Only the kinds that contribute get remedies: a negligible finding gets none.
Ranking: remedies with a gain first, by gain weighted by how much the scenario
cares (chat: latency first; batch: cost first; longdoc: quality with long input);
then the rest by that weight times the share of the kind they address; trade-offs
such as a smaller model always last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace

from latdoc.advice._buffering import buffering_remedies
from latdoc.advice._reasoning import reasoning_remedies
from latdoc.advice._stall import stall_timeout
from latdoc.advice.verify import CONVERSATION_STRATEGIES, verify_command
from latdoc.analysis.attribution import RunContext
from latdoc.analysis.diagnosis import Diagnosis, Finding, Kind, Remedy, Scenario

TRIM_WINDOW_TOKENS = 2000
"""The sliding window the seed suggests: keep the last 2K tokens of history."""
SUMMARY_AFTER_TURNS = 10
"""The seed summarises history beyond 10 turns; the conversation experiment's history
reaches the long prompt measured here at that turn."""

WEIGHTS: dict[str, dict[Scenario, float]] = {
    "keep_alive": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.8},
    "dns_cache": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.6},
    "pool_size": {Scenario.CHAT: 0.9, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.7},
    "http2": {Scenario.CHAT: 0.8, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.6},
    "async_client": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.6},
    "nearer_region": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.6},
    "tcp_settings": {Scenario.CHAT: 0.5, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.5},
    "trim_window": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.5},
    "summarize_history": {Scenario.CHAT: 0.8, Scenario.BATCH: 0.7, Scenario.LONGDOC: 0.4},
    "prompt_cache": {Scenario.CHAT: 0.9, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.9},
    "long_context_model": {Scenario.CHAT: 0.3, Scenario.BATCH: 0.3, Scenario.LONGDOC: 1.0},
    "spread_requests": {Scenario.CHAT: 0.8, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.7},
    "retries": {Scenario.CHAT: 0.9, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.9},
    "stall_timeout": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.8},
    "max_tokens": {Scenario.CHAT: 0.8, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.6},
    "smaller_model": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.2},
    "client_cpu": {Scenario.CHAT: 1.0, Scenario.BATCH: 1.0, Scenario.LONGDOC: 1.0},
    "unbuffer_stream": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.8},
    "reasoning_effort": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.5},
    "non_reasoning_model": {Scenario.CHAT: 0.9, Scenario.BATCH: 0.7, Scenario.LONGDOC: 0.3},
}
DEFAULT_WEIGHT = 0.5

SELF_PACED = frozenset({"bbr"})
"""Congestion controls that set their own rate: the kernel skips the restart after idle."""


def pool_size(cpu_count: int, concurrency: int) -> int:
    """The seed's connection pool size: ``2 × CPU cores + expected concurrency``."""
    return 2 * max(1, cpu_count) + max(1, concurrency)


def recommend(diagnosis: Diagnosis, context: RunContext) -> tuple[Remedy, ...]:
    """Remedies for every contributing finding, ranked for ``context.scenario``."""
    remedies: dict[str, Remedy] = {}
    negligible = set(diagnosis.verdict.negligible)
    for finding in diagnosis.findings:
        if finding.kind in negligible:
            continue
        for remedy in _for_finding(finding, diagnosis, context):
            kept = remedies.get(remedy.key)
            if kept is None or (remedy.predicted_gain_ms or 0) > (kept.predicted_gain_ms or 0):
                remedies[remedy.key] = remedy
    shares = diagnosis.shares_ms
    return tuple(sorted(remedies.values(), key=lambda r: _rank(r, context.scenario, shares)))


def _rank(r: Remedy, scenario: Scenario, shares: Mapping[Kind, float]) -> tuple[int, int, float]:
    """Trade-offs last; before them, gains by size, then the rest by the share of the
    kind they address (what the run measured, not what the remedy would save)."""
    weight = WEIGHTS.get(r.key, {}).get(scenario, DEFAULT_WEIGHT)
    if r.predicted_gain_ms is not None:
        return (1 if r.tradeoff else 0, 0, -weight * r.predicted_gain_ms)
    return (1 if r.tradeoff else 0, 1, -weight * shares.get(r.addresses, 1.0))


def with_remedies(diagnosis: Diagnosis, context: RunContext) -> Diagnosis:
    return replace(diagnosis, remedies=recommend(diagnosis, context))


def _for_finding(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    builder = _BUILDERS.get(f.kind)
    if builder is not None:
        yield from builder(f, d, ctx)


def _keep_alive_gain(d: Diagnosis) -> tuple[float, tuple[float, float]] | None:
    """What reusing connections saves here, measured: the setup every new connection paid
    when the server closes them, else cold minus warm first byte; None without an interval."""
    n = d.network
    closes = n.get("server_closes_connections")
    if closes is not None and closes >= 0.5:
        gain, low, high = (
            n.get(k)
            for k in ("new_connection_setup_ms", "new_connection_setup_low_ms",
                      "new_connection_setup_high_ms")
        )  # fmt: skip
    else:
        gain, low, high = (
            n.get(k)
            for k in ("keepalive_saving_ms", "keepalive_saving_low_ms", "keepalive_saving_high_ms")
        )
    if gain is None or low is None or high is None or gain <= 0:
        return None
    return gain, (low, high)


def _network_setup(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    if "dns" in f.title.lower():
        yield Remedy(
            "dns_cache",
            "Cache DNS answers or use a faster resolver",
            Kind.NETWORK_SETUP,
            "Run a local caching resolver (systemd-resolved, dnsmasq or nscd) or point "
            "/etc/resolv.conf at a faster one; keep connections alive so lookups are rare.",
            None,
            how_to_measure=f"compare the DNS phase of `latdoc probe {ctx.endpoint} --model "
            f"{ctx.model}` before and after the change",
        )
    size = pool_size(ctx.cpu_count, ctx.concurrency)
    measured = _keep_alive_gain(d)
    yield Remedy(
        "keep_alive",
        "Reuse connections (HTTP keep-alive)",
        Kind.NETWORK_SETUP,
        "Create one client at start-up and reuse it for every call:\n"
        f"  httpx.AsyncClient(limits=httpx.Limits(max_connections={size}, "
        f"max_keepalive_connections={size}))\n"
        "  client = openai.AsyncOpenAI()  # once, not per request\n"
        "If the server still closes connections, check the proxy or load balancer's "
        "keep-alive timeout and any 'Connection: close' it adds.",
        measured[0] if measured else None,
        gain_interval_ms=measured[1] if measured else None,
        gain_source="measured" if measured else None,
        verify_command=verify_command(ctx, "keepalive"),
    )


def _network_path(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    rtt = f.evidence.get("rtt_ms")
    if rtt is not None and rtt > 60:
        yield Remedy(
            "nearer_region",
            "Use the nearest region or endpoint",
            Kind.NETWORK_PATH,
            f"The round trip is {rtt:.0f} ms here. Set base_url to the endpoint nearest the "
            "client (openai.AsyncOpenAI(base_url=...)) or run the client next to the service.",
            None,
            verify_command=verify_command(ctx, "endpoint", alt="URL2"),
        )
    slow_start = ctx.tcp_settings.get("net.ipv4.tcp_slow_start_after_idle")
    self_paced = ctx.host is not None and ctx.host.congestion_control in SELF_PACED
    if slow_start != 0 and not self_paced:
        yield Remedy(
            "tcp_settings",
            "No TCP slow start after idle on the client host",
            Kind.NETWORK_PATH,
            "A long prompt sent after a pause then goes out at the full rate:\n"
            "  sysctl -w net.ipv4.tcp_slow_start_after_idle=0",
            None,
            how_to_measure="run `latdoc diagnose` again after the change and compare the "
            "send time of the long prompts",
        )
    if f.evidence.get("long_prompt_send_ms") and d.length is not None:
        longest = d.length.points[-1].prompt_tokens
        yield Remedy(
            "trim_window",
            "Send less: trim the prompt to what the answer needs",
            Kind.NETWORK_PATH,
            "The uplink is slow for long prompts: keep the last turns only, or compress "
            "the history (see the input-length remedies).",
            None,
            verify_command=verify_command(ctx, "trim", **{"from": longest, "to": _window(longest)}),
        )


def _window(long_tokens: int) -> int:
    return min(TRIM_WINDOW_TOKENS, max(256, long_tokens // 2))


def _input_length(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    curve = d.length
    long_tokens = int(f.evidence.get("long_tokens", 0))
    window = _window(long_tokens) if long_tokens else TRIM_WINDOW_TOKENS
    gain: float | None = None
    interval = None
    if curve is not None and long_tokens > window:
        interval = curve.difference_interval_ms(long_tokens, window)
        if interval is not None:
            gain = max(0.0, curve.predict_ms(long_tokens) - curve.predict_ms(window))
    rate = f.evidence.get("prefill_per_1k_ms")
    rate_text = f" (prefill costs {rate:.0f} ms per 1K tokens here)" if rate else ""
    yield Remedy(
        "trim_window",
        f"Trim the context to a sliding window of ~{window} tokens",
        Kind.INPUT_LENGTH,
        f"Keep the system prompt and the most recent ~{window} tokens of history"
        f"{rate_text}:\n"
        "  messages = [system, *last_turns_within(history, budget_tokens="
        f"{window})]",
        gain,
        gain_interval_ms=interval if gain is not None else None,
        gain_source="fitted" if gain is not None else None,
        verify_command=verify_command(ctx, "trim", **{"from": long_tokens, "to": window})
        if long_tokens > window
        else None,
    )
    per_turn = max(1, long_tokens // SUMMARY_AFTER_TURNS) if long_tokens else 1000
    yield Remedy(
        "summarize_history",
        "Compress old turns into a summary",
        Kind.INPUT_LENGTH,
        "Beyond ~10 turns, replace the oldest turns with a model-written summary, and "
        "start a fresh conversation carrying the summary every ~20 turns.",
        None,
        verify_command=verify_command(
            ctx,
            "conversation",
            turns=2 * SUMMARY_AFTER_TURNS,
            tokens_per_turn=per_turn,
            strategies=CONVERSATION_STRATEGIES,
        ),
    )
    if long_tokens > window:
        yield Remedy(
            "prompt_cache",
            "Keep the prompt's start the same so the server can cache it",
            Kind.INPUT_LENGTH,
            "Put the fixed parts first (system prompt, documents, older turns) and the new "
            "turn last; where the provider caches prompt prefixes, a repeated prefix skips "
            "its prefill.",
            None,
            verify_command=verify_command(ctx, "prompt-cache", prefix_tokens=long_tokens - window),
        )
    yield Remedy(
        "long_context_model",
        "Prefer a model served for long context",
        Kind.INPUT_LENGTH,
        "A model and server built for 128K+ context (FlashAttention/PagedAttention "
        "serving) keep prefill linear where classic serving degrades past ~4K tokens.",
        None,
        tradeoff="another model: check quality and price on your own task first",
        verify_command=verify_command(ctx, "model", alt_model="NAME"),
    )
    yield _smaller_model(
        Kind.INPUT_LENGTH,
        "e.g. a 7B instead of a 72B, or INT8/INT4 weights: prefill and decode both get faster.",
        ctx,
    )


def _queueing(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield Remedy(
        "spread_requests",
        "Spread requests out; avoid bursts and the provider's peak hours",
        Kind.QUEUEING,
        "Send through an asyncio.Semaphore sized to the provider's limit instead of "
        "bursts (asyncio.gather of everything at once); schedule batch work off-peak.",
        None,
        how_to_measure="run `latdoc diagnose` at a quiet hour and at a busy one and compare step 3",
    )
    yield _async_client(Kind.QUEUEING)
    yield _retries(Kind.QUEUEING, None, ctx)


def _async_client(kind: Kind) -> Remedy:
    return Remedy(
        "async_client",
        "Use an asynchronous client",
        kind,
        "httpx.AsyncClient or openai.AsyncOpenAI with one shared client, so waiting "
        "requests do not hold threads.",
        None,
    )


def _smaller_model(kind: Kind, change: str, ctx: RunContext) -> Remedy:
    return Remedy(
        "smaller_model",
        "A smaller or quantised model of the same family",
        kind,
        change,
        None,
        tradeoff="lower quality; know your priority order of latency, cost and quality",
        verify_command=verify_command(ctx, "model", alt_model="NAME"),
    )


def _retries(kind: Kind, retry_after_s: float | None, ctx: RunContext) -> Remedy:
    wait = (
        f"429: wait the Retry-After the server sends ({retry_after_s:g} s here)"
        if retry_after_s is not None
        else "429: wait for Retry-After"
    )
    return Remedy(
        "retries",
        "Retry by error class with exponential backoff",
        kind,
        "Timeouts and 5xx: retry with exponential backoff and jitter, a few tries at most; "
        f"{wait}; other 4xx: never retry; never replay a stream that has begun.\n"
        "  from latdoc.client import RetryPolicy, make_async_client\n"
        "  openai.AsyncOpenAI(max_retries=0, http_client=make_async_client(retry=RetryPolicy()))",
        None,
        verify_command=verify_command(ctx, "retry"),
    )


def _errors(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield _retries(Kind.ERRORS, f.evidence.get("retry_after_s"), ctx)
    if any(code == "http:429" for code in f.evidence):
        yield Remedy(
            "spread_requests",
            "Stay under the rate limit",
            Kind.ERRORS,
            "Limit concurrency with an asyncio.Semaphore and honour Retry-After; ask "
            "the provider for a higher limit if the load is steady.",
            None,
        )


def _decode(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    tpot = f.evidence.get("tpot_ms", 0.0)
    yield Remedy(
        "max_tokens",
        "Ask for no more output than the answer needs",
        Kind.DECODE,
        f"Each output token costs ~{tpot:.0f} ms here: set max_tokens to the answer's "
        "real length and ask for concise answers in the prompt.",
        None,
        verify_command=verify_command(ctx, "max-tokens"),
    )
    yield _smaller_model(
        Kind.DECODE,
        "Decode speed grows as the model shrinks (e.g. 7B instead of 72B, INT8/INT4).",
        ctx,
    )


def _stalls(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield Remedy(
        "stall_timeout",
        "Bound the wait between chunks",
        Kind.STALLS,
        stall_timeout(f.evidence).change,
        None,
    )


def _client(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    if "loop_lag_ms" in f.evidence or "client_delay_ms" in f.evidence:
        yield Remedy(
            "client_cpu",
            "Give the client spare CPU before trusting its timings",
            Kind.CLIENT,
            "Its event loop ran late, so every timestamp (its own and latdoc's) is late too: "
            "run on a less loaded machine, split streams across processes, and keep CPU-heavy "
            "work off the event loop (loop.run_in_executor).",
            None,
            how_to_measure="run `latdoc diagnose` again from a quieter machine: the "
            "event-loop lag and the client delay in its findings should fall below 20 and "
            "10 ms",
        )
        return
    size = pool_size(ctx.cpu_count, ctx.concurrency)
    yield Remedy(
        "pool_size",
        f"Size the connection pool to {size}",
        Kind.CLIENT,
        f"2 × {ctx.cpu_count} cores + {ctx.concurrency} concurrent requests = {size}:\n"
        f"  httpx.Limits(max_connections={size}, max_keepalive_connections={size})\n"
        "Too small queues requests in the client; too large wastes sockets and memory.",
        None,
        verify_command=verify_command(ctx, "pool", pool_size=size, concurrency=ctx.concurrency),
    )
    yield Remedy(
        "http2",
        "Multiplex requests over HTTP/2",
        Kind.CLIENT,
        "One connection carries many streams, so requests do not wait for a free one:\n"
        "  httpx.AsyncClient(http2=True)  # pip install 'httpx[http2]'",
        None,
        verify_command=verify_command(ctx, "http2", concurrency=ctx.concurrency),
    )
    yield _async_client(Kind.CLIENT)


_BUILDERS: dict[Kind, Callable[[Finding, Diagnosis, RunContext], Iterator[Remedy]]] = {
    Kind.NETWORK_SETUP: _network_setup,
    Kind.NETWORK_PATH: _network_path,
    Kind.INPUT_LENGTH: _input_length,
    Kind.QUEUEING: _queueing,
    Kind.ERRORS: _errors,
    Kind.DECODE: _decode,
    Kind.STALLS: _stalls,
    Kind.BUFFERING: buffering_remedies,
    Kind.CLIENT: _client,
    Kind.REASONING: reasoning_remedies,
}
