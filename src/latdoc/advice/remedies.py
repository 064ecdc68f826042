"""Findings become remedies, ranked for the user's scenario, each with its predicted gain.

A remedy names the concrete change for httpx and the openai SDK, computed for this
machine and the user's settings (pool size ``2 × cores + concurrency``, the window
to trim to, the current TCP sysctls). Ranking: the predicted gain weighted by how
much the scenario cares (chat: latency first; batch: cost first; longdoc: quality
with long input). Trade-offs such as a smaller or quantised model always come after
the changes that cost nothing in quality.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from latdoc.analysis.attribution import RunContext
from latdoc.analysis.diagnosis import Diagnosis, Finding, Kind, Remedy, Scenario

TRIM_WINDOW_TOKENS = 2000
"""The sliding window the seed suggests: keep the last 2K tokens of history."""

WEIGHTS: dict[str, dict[Scenario, float]] = {
    "keep_alive": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.8, Scenario.LONGDOC: 0.8},
    "dns_cache": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.6},
    "pool_size": {Scenario.CHAT: 0.9, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.7},
    "async_client": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.6},
    "nearer_region": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.6},
    "tcp_settings": {Scenario.CHAT: 0.5, Scenario.BATCH: 0.4, Scenario.LONGDOC: 0.5},
    "trim_window": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.5},
    "summarize_history": {Scenario.CHAT: 0.8, Scenario.BATCH: 0.7, Scenario.LONGDOC: 0.4},
    "long_context_model": {Scenario.CHAT: 0.3, Scenario.BATCH: 0.3, Scenario.LONGDOC: 1.0},
    "spread_requests": {Scenario.CHAT: 0.8, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.7},
    "retries": {Scenario.CHAT: 0.9, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.9},
    "stall_timeout": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.6, Scenario.LONGDOC: 0.8},
    "max_tokens": {Scenario.CHAT: 0.8, Scenario.BATCH: 1.0, Scenario.LONGDOC: 0.6},
    "smaller_model": {Scenario.CHAT: 1.0, Scenario.BATCH: 0.9, Scenario.LONGDOC: 0.2},
    "client_cpu": {Scenario.CHAT: 1.0, Scenario.BATCH: 1.0, Scenario.LONGDOC: 1.0},
}


def pool_size(cpu_count: int, concurrency: int) -> int:
    """The seed's connection pool size: ``2 × CPU cores + expected concurrency``."""
    return 2 * max(1, cpu_count) + max(1, concurrency)


def recommend(diagnosis: Diagnosis, context: RunContext) -> tuple[Remedy, ...]:
    """Remedies for every finding, ranked for ``context.scenario``."""
    remedies: dict[str, Remedy] = {}
    for finding in diagnosis.findings:
        for remedy in _for_finding(finding, diagnosis, context):
            kept = remedies.get(remedy.key)
            if kept is None or (remedy.predicted_gain_ms or 0) > (kept.predicted_gain_ms or 0):
                remedies[remedy.key] = remedy
    scenario = context.scenario

    def rank(r: Remedy) -> tuple[int, float]:
        weight = WEIGHTS.get(r.key, {}).get(scenario, 0.5)
        return (1 if r.tradeoff else 0, -weight * (r.predicted_gain_ms or 1.0))

    return tuple(sorted(remedies.values(), key=rank))


def with_remedies(diagnosis: Diagnosis, context: RunContext) -> Diagnosis:
    return replace(diagnosis, remedies=recommend(diagnosis, context))


def _for_finding(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    builder = _BUILDERS.get(f.kind)
    if builder is not None:
        yield from builder(f, d, ctx)


def _network_setup(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    if "dns" in f.title.lower():
        dns = f.evidence.get("dns_ms", f.share_ms)
        yield Remedy(
            "dns_cache",
            "Cache DNS answers or use a faster resolver",
            Kind.NETWORK_SETUP,
            "Run a local caching resolver (systemd-resolved, dnsmasq or nscd) or point "
            "/etc/resolv.conf at a faster one; keep connections alive so lookups are rare.",
            max(0.0, dns - 10.0),
        )
    size = pool_size(ctx.cpu_count, ctx.concurrency)
    yield Remedy(
        "keep_alive",
        "Reuse connections (HTTP keep-alive)",
        Kind.NETWORK_SETUP,
        "Create one client at start-up and reuse it for every call:\n"
        f"  httpx.AsyncClient(limits=httpx.Limits(max_connections={size}, "
        f"max_keepalive_connections={size}, keepalive_expiry=60))\n"
        "  client = openai.AsyncOpenAI()  # once, not per request\n"
        "If the server still closes connections, check the proxy or load balancer's "
        "keep-alive timeout and any 'Connection: close' it adds.",
        f.share_ms,
    )


def _network_path(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    rtt = f.evidence.get("rtt_ms")
    if rtt is not None and rtt > 60:
        yield Remedy(
            "nearer_region",
            "Use the nearest region or endpoint",
            Kind.NETWORK_PATH,
            f"The round trip is {rtt:.0f} ms; an endpoint in the client's own region is "
            "typically 10–50 ms. Set base_url to the nearest regional endpoint "
            "(openai.AsyncOpenAI(base_url=...)) or run the client next to the service.",
            max(0.0, rtt - 30.0),
        )
    slow_start = ctx.tcp_settings.get("net.ipv4.tcp_slow_start_after_idle")
    lines = []
    if slow_start != 0:
        lines.append("sysctl -w net.ipv4.tcp_slow_start_after_idle=0")
    lines += [
        "sysctl -w net.ipv4.tcp_keepalive_time=60",
        "sysctl -w net.ipv4.tcp_keepalive_intvl=10",
        "sysctl -w net.ipv4.tcp_keepalive_probes=6",
    ]
    yield Remedy(
        "tcp_settings",
        "Tune the client host's TCP settings",
        Kind.NETWORK_PATH,
        "No slow start after idle (a long prompt after a pause goes out at full rate) and "
        "faster detection of dead connections:\n  " + "\n  ".join(lines),
        None,
    )
    upload = f.evidence.get("long_prompt_send_ms")
    if upload:
        yield Remedy(
            "trim_window",
            "Send less: trim the prompt to what the answer needs",
            Kind.NETWORK_PATH,
            "The uplink is slow for long prompts: keep the last turns only, or compress "
            "the history (see the input-length remedies).",
            upload / 2,
        )


def _input_length(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    curve = d.length
    long_tokens = int(f.evidence.get("long_tokens", 0))
    window = min(TRIM_WINDOW_TOKENS, max(256, long_tokens // 2)) if long_tokens else 2000
    gain = None
    if curve is not None and long_tokens > window:
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
    )
    yield Remedy(
        "summarize_history",
        "Compress old turns into a summary",
        Kind.INPUT_LENGTH,
        "Beyond ~10 turns, replace the oldest turns with a model-written summary, and "
        "start a fresh conversation carrying the summary every ~20 turns.",
        gain * 0.8 if gain else None,
    )
    yield Remedy(
        "long_context_model",
        "Prefer a model served for long context",
        Kind.INPUT_LENGTH,
        "A model and server built for 128K+ context (FlashAttention/PagedAttention "
        "serving) keep prefill linear where classic serving degrades past ~4K tokens.",
        None,
        tradeoff="another model: check quality and price on your own task first",
    )
    yield _smaller_model(
        Kind.INPUT_LENGTH,
        "e.g. a 7B instead of a 72B, or INT8/INT4 weights: prefill and decode both get faster.",
        gain * 0.5 if gain else None,
    )


def _queueing(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield Remedy(
        "spread_requests",
        "Spread requests out; avoid bursts and the provider's peak hours",
        Kind.QUEUEING,
        "Send through an asyncio.Semaphore sized to the provider's limit instead of "
        "bursts (asyncio.gather of everything at once); schedule batch work off-peak.",
        f.share_ms / 2,
    )
    yield _async_client(Kind.QUEUEING, None)
    yield _retries(Kind.QUEUEING)


def _async_client(kind: Kind, gain: float | None) -> Remedy:
    return Remedy(
        "async_client",
        "Use an asynchronous client",
        kind,
        "httpx.AsyncClient or openai.AsyncOpenAI with one shared client, so waiting "
        "requests do not hold threads.",
        gain,
    )


def _smaller_model(kind: Kind, change: str, gain: float | None) -> Remedy:
    return Remedy(
        "smaller_model",
        "A smaller or quantised model of the same family",
        kind,
        change,
        gain,
        tradeoff="lower quality; know your priority order of latency, cost and quality",
    )


def _retries(kind: Kind) -> Remedy:
    return Remedy(
        "retries",
        "Retry by error class with exponential backoff",
        kind,
        "Timeouts and 5xx: retry with exponential backoff and jitter (0.5 s, 1 s, 2 s, "
        "at most 3 tries); 429: wait for Retry-After; other 4xx: never retry.\n"
        "  openai.AsyncOpenAI(max_retries=3, timeout=httpx.Timeout(60, connect=5))",
        None,
    )


def _errors(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield replace(_retries(Kind.ERRORS), predicted_gain_ms=f.share_ms)
    if any(code == "http:429" for code in f.evidence):
        yield Remedy(
            "spread_requests",
            "Stay under the rate limit",
            Kind.ERRORS,
            "Limit concurrency with an asyncio.Semaphore and honour Retry-After; ask "
            "the provider for a higher limit if the load is steady.",
            f.share_ms,
        )


def _decode(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    tpot = f.evidence.get("tpot_ms", 0.0)
    yield Remedy(
        "max_tokens",
        "Ask for no more output than the answer needs",
        Kind.DECODE,
        f"Each output token costs ~{tpot:.0f} ms here: set max_tokens to the answer's "
        "real length and ask for concise answers in the prompt.",
        f.share_ms / 2,
    )
    yield _smaller_model(
        Kind.DECODE,
        "Decode speed grows as the model shrinks (e.g. 7B instead of 72B, INT8/INT4).",
        f.share_ms / 2,
    )


def _stalls(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    longest = f.evidence.get("longest_ms", 0.0)
    yield Remedy(
        "stall_timeout",
        "Bound the wait between chunks",
        Kind.STALLS,
        f"A read timeout per chunk catches stalls like the {longest:.0f} ms one seen here:\n"
        "  httpx.Timeout(connect=5, read=10, write=10, pool=5)\n"
        "and retry (or fall back) when it fires; report recurring stalls to the provider.",
        None,
    )


def _client(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    if "loop_lag_ms" in f.evidence:
        yield Remedy(
            "client_cpu",
            "Give the client spare CPU before trusting its timings",
            Kind.CLIENT,
            "Its event loop ran late, so every timestamp (its own and latdoc's) is late too: "
            "run on a less loaded machine, split streams across processes, and keep CPU-heavy "
            "work off the event loop (loop.run_in_executor).",
            f.share_ms,
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
        f.share_ms,
    )
    yield _async_client(Kind.CLIENT, f.share_ms / 2)


_BUILDERS: dict[Kind, Callable[[Finding, Diagnosis, RunContext], Iterator[Remedy]]] = {
    Kind.NETWORK_SETUP: _network_setup,
    Kind.NETWORK_PATH: _network_path,
    Kind.INPUT_LENGTH: _input_length,
    Kind.QUEUEING: _queueing,
    Kind.ERRORS: _errors,
    Kind.DECODE: _decode,
    Kind.STALLS: _stalls,
    Kind.CLIENT: _client,
}
