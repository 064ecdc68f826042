"""The remedies on the client's side: failed requests get retries by error class and a
rate kept under the limit; a client that runs late gets spare CPU; a client that
waits for connections gets a pool sized for its host, HTTP/2 and an async client.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice._common import async_client, retries
from latdoc.advice._sizing import pool_size
from latdoc.advice.verify import verify_command
from latdoc.analysis.kinds.client import CLIENT_DELAY_MS, CLIENT_LOOP_LAG_MS
from latdoc.errors import cannot_answer
from latdoc.model import Diagnosis, Finding, Kind, Remedy, RunContext

__all__ = ["client_remedies", "errors_remedies"]

_NOT_CODES = frozenset({"failed", "requests", "retry_after_s"})
"""The errors finding's evidence that counts no error code."""


def errors_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    codes = [code for code in f.evidence if code not in _NOT_CODES]
    checks = {code: hint for code in codes if (hint := cannot_answer(code)) is not None}
    if checks:
        yield Remedy(
            "fix_endpoint",
            "Fix the endpoint's address or credentials",
            Kind.ERRORS,
            "These failures meet every request alike, and no retry passes them:\n"
            + "\n".join(f"  {code}: {hint}" for code, hint in checks.items()),
            None,
            how_to_measure="run `latdoc probe` on the corrected URL, model and key: it answers",
        )
    if len(checks) == len(codes):
        return
    yield retries(Kind.ERRORS, f.evidence.get("retry_after_s"), ctx)
    if any(code == "http:429" for code in f.evidence):
        yield Remedy(
            "spread_requests",
            "Stay under the rate limit",
            Kind.ERRORS,
            "Limit concurrency with an asyncio.Semaphore and honour Retry-After; ask "
            "the provider for a higher limit if the load is steady.",
            None,
        )


def client_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
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
            "event-loop lag and the client delay in its findings should fall below "
            f"{CLIENT_LOOP_LAG_MS:.0f} and {CLIENT_DELAY_MS:.0f} ms",
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
    yield async_client(Kind.CLIENT)
