"""One endpoint seen from several places: the network phases side by side, the nearest named.

``latdoc probe|diagnose --ray ADDRESS --vantage a,b`` measures from Ray nodes in
other places (regions, offices); each vantage's traces are one stored run. Here
they are summarised per vantage as medians: DNS, TCP connect and TLS over the
requests that opened a new connection (a reused one has none to measure), the
round trip (:attr:`~latdoc.records.RequestTrace.rtt_ms`) and TTFT over every
successful request. The **nearest** vantage is the one with the lowest median
round trip: the place the method's "choose the nearest region" is about; when no
vantage measured a round trip, the lowest median TTFT decides. How much nearer it is
than the runner-up is a 95% interval of the difference of medians, with a
Mann–Whitney p-value: with few requests, or vantages alike, the nearest may be no
nearer than noise, and the comparison says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from latdoc.analysis.policy import ALPHA
from latdoc.analysis.stats import difference_ci, mann_whitney_p, median_of
from latdoc.records import RequestTrace


@dataclass(frozen=True, slots=True)
class VantageRow:
    """One vantage's medians, in ms; ``None`` where nothing was measured."""

    name: str
    run_id: str | None
    host: str | None
    requests: int
    failed: int
    dns_ms: float | None
    connect_ms: float | None
    tls_ms: float | None
    rtt_ms: float | None
    ttft_ms: float | None
    rtt_samples: tuple[float, ...] = field(default=(), repr=False)
    ttft_samples: tuple[float, ...] = field(default=(), repr=False)


@dataclass(frozen=True, slots=True)
class VantageComparison:
    """The vantages side by side, and the nearest named with its margin, the margin's
    interval and a Mann-Whitney p."""

    rows: tuple[VantageRow, ...]
    nearest: str | None
    """The vantage with the lowest median round trip (else TTFT); ``None`` with fewer
    than two vantages measured."""
    nearest_by: str | None
    """``"rtt"`` or ``"ttft"``: what decided the nearest."""
    runner_up: str | None = None
    margin_ms: tuple[float, float] | None = None
    """95% interval of the runner-up's median minus the nearest's, in ms."""
    p_value: float | None = None
    """Mann–Whitney p-value that the two are alike."""

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < ALPHA


def vantage_row(
    name: str, traces: Sequence[RequestTrace], *, run_id: str | None = None, host: str | None = None
) -> VantageRow:
    ok = [t for t in traces if t.ok]
    cold = [t for t in ok if t.new_connection]
    rtts = tuple(v for t in ok if (v := t.rtt_ms) is not None)
    ttfts = tuple(v for t in ok if (v := t.ttft_ms) is not None)
    return VantageRow(
        name=name,
        run_id=run_id,
        host=host,
        requests=len(traces),
        failed=len(traces) - len(ok),
        dns_ms=median_of([t.dns_ms for t in cold]),
        connect_ms=median_of([t.connect_ms for t in cold]),
        tls_ms=median_of([t.tls_ms for t in cold]),
        rtt_ms=median_of(rtts),
        ttft_ms=median_of(ttfts),
        rtt_samples=rtts,
        ttft_samples=ttfts,
    )


def compare_vantages(rows: Sequence[VantageRow]) -> VantageComparison:
    """The rows in the order given, and the nearest of them."""
    for key in ("rtt", "ttft"):
        known = sorted(
            ((getattr(r, f"{key}_ms"), i) for i, r in enumerate(rows)),
            key=lambda pair: (pair[0] is None, pair[0] or 0.0, pair[1]),
        )
        if len(known) >= 2 and known[1][0] is not None:
            best, second = rows[known[0][1]], rows[known[1][1]]
            a = getattr(second, f"{key}_samples")
            b = getattr(best, f"{key}_samples")
            return VantageComparison(
                tuple(rows),
                best.name,
                key,
                runner_up=second.name,
                margin_ms=difference_ci(a, b),
                p_value=mann_whitney_p(a, b),
            )
    return VantageComparison(tuple(rows), None, None)
