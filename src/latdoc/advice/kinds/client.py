"""Remedies for ``client``: a client that runs late gets spare CPU; a client that waits
for connections gets a pool sized for its host, HTTP/2 and an asynchronous client.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice._common import async_client
from latdoc.advice._sizing import advised_pool
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.advice.verify import VERIFY_HTTP2, VERIFY_POOL, verify_command
from latdoc.i18n import N_, Message
from latdoc.model import Diagnosis, Effects, Finding, Kind, Remedy, RunContext
from latdoc.reference import healthy_reference

__all__ = ["BUILDER", "client_remedies"]


def client_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    if "loop_lag_ms" in f.evidence or "client_delay_ms" in f.evidence:
        yield Remedy(
            keys.CLIENT_CPU,
            N_("Give the client spare CPU before trusting its timings"),
            f.kind,
            N_(
                "Its event loop ran late, so every timestamp (its own and latdoc's) is late "
                "too: run on a less loaded machine, split streams across processes, and keep "
                "CPU-heavy work off the event loop (loop.run_in_executor)."
            ),
            None,
            how_to_measure=Message(
                "run `latdoc diagnose` again from a quieter machine: the event-loop lag and "
                "the client delay in its findings should fall below {delay:.0f} ms",
                delay=healthy_reference().edge("client_delay_ms"),
            ),
        )
        return
    size = advised_pool(ctx.cpu_count, ctx.concurrency)
    yield Remedy(
        keys.POOL_SIZE,
        Message("Size the connection pool to {size}", size=size),
        f.kind,
        Message(
            "2 × {cores} cores + {concurrency} concurrent requests = {size}:\n"
            "  httpx.Limits(max_connections={size}, max_keepalive_connections={size})\n"
            "Too small queues requests in the client; too large wastes sockets and memory.",
            cores=ctx.cpu_count,
            concurrency=ctx.concurrency,
            size=size,
        ),
        None,
        verify_command=verify_command(
            ctx, VERIFY_POOL, pool_size=size, concurrency=ctx.concurrency
        ),
    )
    yield Remedy(
        keys.HTTP2,
        N_("Multiplex requests over HTTP/2"),
        f.kind,
        N_(
            "One connection carries many streams, so requests do not wait for a free one:\n"
            "  httpx.AsyncClient(http2=True)  # pip install 'httpx[http2]'"
        ),
        None,
        verify_command=verify_command(ctx, VERIFY_HTTP2, concurrency=ctx.concurrency),
    )
    yield async_client(f.kind)


BUILDER = RemedyBuilder(
    Kind.CLIENT,
    client_remedies,
    {
        keys.CLIENT_CPU: Effects(),
        keys.ASYNC_CLIENT: Effects(),
        keys.POOL_SIZE: Effects(),
        keys.HTTP2: Effects(),
    },
)
