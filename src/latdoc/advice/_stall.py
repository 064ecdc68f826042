"""A timeout between chunks chosen from this run's stalls and normal gaps.

To catch a stall without cutting a healthy stream, the bound on the gap between
chunks must lie below the stalls seen and well above the stream's normal gaps: at
least :data:`NORMAL_GAP_MARGIN` × their p99, rounded up to two significant figures.
When no such value exists the remedy says so and proposes no number.

httpx's ``read`` timeout bounds every wait for data, the wait for the first token
included; it is proposed only when the slowest first token seen here came sooner.
Otherwise the bound goes on the stream loop, after the first chunk.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from latdoc.i18n import N_, Message

NORMAL_GAP_MARGIN = 3.0
"""The timeout between chunks is at least this multiple of the stream's normal p99 gap."""

_TAIL = N_("Retry (or fall back) when it fires; report recurring stalls to the provider.")


@dataclass(frozen=True, slots=True)
class StallTimeout:
    gap_ms: float | None
    """The proposed bound between chunks; None when none tells stalls from normal gaps."""
    catches_all: bool
    """Every stall seen here lasted longer than ``gap_ms``."""
    change: str


def round_up(ms: float) -> float:
    """Up to two significant figures: 312 → 320, 1234 → 1300."""
    if ms <= 0:
        return ms
    step = 10.0 ** (math.floor(math.log10(ms)) - 1)
    return round(math.ceil(ms / step) * step, 6)


def _seconds(ms: float) -> str:
    return f"{ms / 1000:g}"


def _ms(value: float) -> str:
    """``4.6 ms``, ``405 ms``: a tenth of a millisecond where it changes the sum."""
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def stall_timeout(evidence: Mapping[str, float]) -> StallTimeout:
    """The bound between chunks for the stalls of a ``stalls`` finding's evidence."""
    longest = evidence.get("longest_ms")
    shortest = evidence.get("shortest_ms", longest)
    p99 = evidence.get("normal_gap_p99_ms")
    stalls = int(evidence.get("stalls", 0))
    first = evidence.get("slowest_ttft_ms")
    if longest is None or shortest is None or p99 is None:
        return StallTimeout(
            None,
            False,
            Message.joined(" ", [N_("Bound the wait between chunks in the stream loop."), _TAIL]),
        )
    floor = NORMAL_GAP_MARGIN * p99
    if floor >= longest:
        return StallTimeout(
            None,
            False,
            Message(
                "No timeout tells these stalls (at most {longest}) from the stream's normal "
                "gaps (p99 {p99} × {margin:g} = {floor}): bound the whole request instead. "
                "{tail}",
                longest=_ms(longest),
                p99=_ms(p99),
                margin=NORMAL_GAP_MARGIN,
                floor=_ms(floor),
                tail=Message.of(_TAIL),
            ),
        )
    gap = round_up(floor)
    if gap >= longest:
        gap = floor
    catches_all = gap < shortest
    seen = (
        Message(
            "all {n} stalls seen here ({shortest} to {longest})",
            n=stalls,
            shortest=_ms(shortest),
            longest=_ms(longest),
        )
        if catches_all
        else Message(
            "the stalls seen here longer than {gap} (the longest {longest})",
            gap=_ms(gap),
            longest=_ms(longest),
        )
    )
    head = Message(
        "A bound of {gap} s between chunks, {margin:g}× the stream's normal p99 gap ({p99}) "
        "rounded up, catches {seen}",
        gap=_seconds(gap),
        margin=NORMAL_GAP_MARGIN,
        p99=_ms(p99),
        seen=seen,
    )
    if first is not None and first < gap:
        code = Message(
            ", and the slowest first token here ({first}) comes sooner, so httpx's read "
            "timeout can hold it:\n  httpx.Timeout(None, read={gap})\n",
            first=_ms(first),
            gap=_seconds(gap),
        )
    else:
        wait = Message(" (up to {first} here)", first=_ms(first)) if first is not None else ""
        code = Message(
            ". httpx's read timeout would also cut the wait for the first token{wait}, so "
            "bound each chunk after the first in the stream loop:\n"
            "  async with asyncio.timeout({gap}):\n"
            "      chunk = await anext(chunks)\n",
            wait=wait,
            gap=_seconds(gap),
        )
    return StallTimeout(gap, catches_all, Message.joined("", [head, code, _TAIL]))
