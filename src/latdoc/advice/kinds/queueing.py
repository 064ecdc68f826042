"""Remedies for ``queueing``: spread requests out (measured by watching the endpoint
through the day), an asynchronous client, and retries by error class.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice._common import async_client, retries
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.advice.verify import WATCH_NAME, watch_command
from latdoc.i18n import N_, Message
from latdoc.model import Diagnosis, Effects, Finding, Kind, Remedy, RunContext

__all__ = ["BUILDER", "queueing_remedies"]


def queueing_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    yield Remedy(
        keys.SPREAD_REQUESTS,
        N_("Spread requests out; avoid bursts and the provider's peak hours"),
        f.kind,
        N_(
            "Send through an asyncio.Semaphore sized to the provider's limit instead of "
            "bursts (asyncio.gather of everything at once); schedule batch work off-peak."
        ),
        None,
        how_to_measure=Message(
            "`{watch}` for a day, then `latdoc report --watch {name} --by hour-of-day`: the "
            "peak hours' TTFT against the off-peak ones, with the ratio, its interval and "
            "significance",
            watch=watch_command(ctx),
            name=WATCH_NAME,
        ),
    )
    yield async_client(f.kind)
    yield retries(f.kind, None, ctx)


BUILDER = RemedyBuilder(
    Kind.QUEUEING,
    queueing_remedies,
    {keys.ASYNC_CLIENT: Effects(), keys.RETRIES: Effects(), keys.SPREAD_REQUESTS: Effects()},
)
