"""Repeated probes summarised: cold (new connection) apart from warm, and keep-alive's saving."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from latdoc.analysis.policy import negligible
from latdoc.analysis.stats import Distribution
from latdoc.records import RequestTrace


def parts(layer: float | None, *others: float | None) -> float | None:
    """``layer``, where it was measured apart from every other measured layer (more than
    :func:`~latdoc.analysis.policy.negligible`), else ``None``: a first event that came
    with the first byte or the first token is no layer of its own."""
    if layer is None:
        return None
    for other in others:
        if other is not None and negligible(layer - other, max(layer, other)):
            return None
    return layer


METRICS: tuple[tuple[str, Callable[[RequestTrace], float | None]], ...] = (
    ("DNS", lambda t: t.dns_ms),
    ("TCP connect", lambda t: t.connect_ms),
    ("Proxy CONNECT", lambda t: t.proxy_connect_ms),
    ("TLS", lambda t: t.tls_ms),
    ("Client delay", lambda t: t.client_delay_ms),
    ("Send", lambda t: t.send_ms),
    ("Server wait", lambda t: t.wait_ms),
    ("TTFB", lambda t: t.ttfb_ms),
    ("First event", lambda t: parts(t.first_event_ms, t.ttfb_ms, t.ttft_ms)),
    ("TTFT", lambda t: t.ttft_ms),
    ("Server TTFT", lambda t: t.server_ttft_ms),
    ("Reasoning", lambda t: t.reasoning_ms),
    ("TTFA", lambda t: t.ttfa_ms if t.first_reasoning_ns is not None else None),
    ("First tool call", lambda t: parts(t.first_tool_call_ms, t.ttft_ms)),
    ("TPOT", lambda t: t.tpot_ms),
    ("Total", lambda t: t.total_ms),
)
"""The rows of a summary, in the order a request passes through them (reasoning and
the first answer token only for requests that reasoned, the first event and the first
tool call only for requests where they came apart from the first byte and token)."""

SETUP_METRICS = frozenset({"DNS", "TCP connect", "Proxy CONNECT", "TLS"})


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """Distributions of every metric over one group of successful requests."""

    n: int
    rows: tuple[tuple[str, Distribution], ...]

    def get(self, metric: str) -> Distribution | None:
        for name, dist in self.rows:
            if name == metric:
                return dist
        return None


@dataclass(frozen=True, slots=True)
class RepeatSummary:
    """A probe's repeats summarised: the requests that opened a connection apart
    from those that reused one, and what reuse saved."""

    total: int
    failed: int
    cold: GroupSummary | None
    """Requests that opened a new connection."""
    warm: GroupSummary | None
    """Requests that reused a connection."""
    keepalive_saving_ms: float | None
    """Mean TTFB of cold requests minus mean TTFB of warm ones."""
    setup_saving_ms: float | None
    """Mean DNS + TCP + TLS of cold requests: what a reused connection does not pay."""


def summarize_group(traces: Sequence[RequestTrace]) -> GroupSummary | None:
    ok = [t for t in traces if t.ok]
    if not ok:
        return None
    rows: list[tuple[str, Distribution]] = []
    for name, metric in METRICS:
        dist = Distribution.of(metric(t) for t in ok)
        if dist is not None:
            rows.append((name, dist))
    return GroupSummary(n=len(ok), rows=tuple(rows))


def summarize(traces: Sequence[RequestTrace]) -> RepeatSummary:
    """The repeats of ``traces``: each group's distributions and the keep-alive saving."""
    ok = [t for t in traces if t.ok]
    cold = summarize_group([t for t in ok if t.new_connection])
    warm = summarize_group([t for t in ok if t.new_connection is False])
    saving = setup = None
    if cold is not None and warm is not None:
        cold_ttfb, warm_ttfb = cold.get("TTFB"), warm.get("TTFB")
        if cold_ttfb is not None and warm_ttfb is not None:
            saving = cold_ttfb.mean - warm_ttfb.mean
        setup_dist = Distribution.of(t.setup_ms for t in ok if t.new_connection)
        setup = setup_dist.mean if setup_dist is not None else None
    return RepeatSummary(
        total=len(traces),
        failed=len(traces) - len(ok),
        cold=cold,
        warm=warm,
        keepalive_saving_ms=saving,
        setup_saving_ms=setup,
    )
