"""Terminal rendering of probes: an httpstat-style waterfall and a hyperfine-style summary.

Every function returns a string; only the CLI prints.
"""

from __future__ import annotations

from latdoc.analysis.repeats import SETUP_METRICS, GroupSummary, RepeatSummary
from latdoc.analysis.stats import Distribution
from latdoc.records import RequestTrace


def format_ms(value: float | None, unit: str | None = None) -> str:
    """A duration in the unit that suits it (µs, ms or s), or ``-`` when not measured."""
    if value is None:
        return "-"
    unit = unit or pick_unit(value)
    if unit == "µs":
        return f"{value * 1000:.0f} µs"
    if unit == "s":
        return f"{value / 1000:.2f} s"
    return f"{value:.1f} ms"


def pick_unit(value: float) -> str:
    if abs(value) < 1.0:
        return "µs"
    if abs(value) >= 1000.0:
        return "s"
    return "ms"


def _connection_line(trace: RequestTrace) -> str:
    parts = [f"POST {trace.url}", f"model {trace.model}"]
    if trace.http_version:
        parts.append(trace.http_version)
    if trace.connection_id is not None:
        kind = "new connection" if trace.new_connection else "reused connection"
        where = f" to {trace.remote_ip}" if trace.remote_ip else ""
        parts.append(f"{kind} #{trace.connection_id}{where}")
    return "  " + "  ·  ".join(parts)


def render_waterfall(trace: RequestTrace) -> str:
    """One request as phases left to right, durations above, cumulative marks below."""
    first_token_gap = _diff(trace.ttft_ms, trace.ttfb_ms)
    streaming = _diff(trace.total_ms, trace.ttft_ms)
    phases: list[tuple[str, float | None, float | None, str]] = [
        ("DNS", trace.dns_ms, _ms(trace.dns_done_ns), "dns"),
        ("TCP", trace.connect_ms, _ms(trace.connect_done_ns), "connect"),
    ]
    if trace.tls_done_ns is not None:
        phases.append(("TLS", trace.tls_ms, _ms(trace.tls_done_ns), "tls"))
    phases += [
        ("Send", trace.send_ms, _ms(trace.sent_ns), "sent"),
        ("Server wait", trace.wait_ms, trace.ttfb_ms, "first byte"),
        ("First token", first_token_gap, trace.ttft_ms, "first token"),
        ("Streaming", streaming, trace.total_ms, "total"),
    ]
    widths = [max(len(label), len(format_ms(d)), len(m)) + 2 for label, d, _, m in phases]
    head = " ".join(label.center(w) for (label, *_), w in zip(phases, widths, strict=True))
    bar = "│".join(format_ms(d).center(w) for (_, d, _, _), w in zip(phases, widths, strict=True))
    lines = [_connection_line(trace), "", "   " + head, "  [" + bar + "]"]
    marks_cum = "   "
    marks_name = "   "
    for (_, _, cum, name), w in zip(phases, widths, strict=True):
        marks_cum += format_ms(cum).rjust(w + 1)
        marks_name += name.rjust(w + 1)
    lines += [marks_cum, marks_name, "", "  " + _tokens_line(trace)]
    if trace.error is not None:
        lines.append(f"  failed: {trace.error}")
    return "\n".join(lines)


def _tokens_line(trace: RequestTrace) -> str:
    parts = [f"TTFT {format_ms(trace.ttft_ms)}", f"TPOT {format_ms(trace.tpot_ms)}"]
    if trace.output_tokens is not None:
        source = "usage" if trace.output_tokens_exact else "approx., counted from chunks"
        parts.append(f"{trace.output_tokens} output tokens ({source})")
    if trace.prompt_tokens is not None:
        parts.append(f"{trace.prompt_tokens} prompt tokens")
    if trace.rtt_ms is not None:
        parts.append(f"RTT {format_ms(trace.rtt_ms)}")
    if trace.tcp_info is not None and trace.tcp_info.retransmits:
        parts.append(f"{trace.tcp_info.retransmits} retransmits")
    return "  ·  ".join(parts)


def _dist_row(name: str, dist: Distribution) -> str:
    unit = pick_unit(dist.mean)
    if dist.stdev is None:
        return f"    {name:<12}  {format_ms(dist.mean, unit):>10}"
    return (
        f"    {name:<12} (mean ± σ): {format_ms(dist.mean, unit):>10} ± "
        f"{format_ms(dist.stdev, unit):>9}    "
        f"[min … max: {format_ms(dist.min, unit)} … {format_ms(dist.max, unit)}]"
    )


def _group_rows(group: GroupSummary, *, skip_setup: bool) -> list[str]:
    return [
        _dist_row(name, dist)
        for name, dist in group.rows
        if not (skip_setup and name in SETUP_METRICS)
    ]


def render_summary(summary: RepeatSummary) -> str:
    """hyperfine-style rows: cold requests apart from warm ones, then the keep-alive saving."""
    ok = summary.total - summary.failed
    lines = [f"  {summary.total} requests: {ok} ok, {summary.failed} failed"]
    if summary.cold is not None:
        lines += ["", f"  Cold (new connection, n = {summary.cold.n}):"]
        lines += _group_rows(summary.cold, skip_setup=False)
    if summary.warm is not None:
        lines += ["", f"  Warm (reused connection, n = {summary.warm.n}):"]
        lines += _group_rows(summary.warm, skip_setup=True)
    if summary.setup_saving_ms is not None and summary.keepalive_saving_ms is not None:
        lines += [
            "",
            f"  Keep-alive saves {format_ms(summary.setup_saving_ms)} of DNS+TCP+TLS per "
            f"request; TTFB cold − warm = {format_ms(summary.keepalive_saving_ms)}.",
        ]
    return "\n".join(lines)


def _ms(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e6


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b
