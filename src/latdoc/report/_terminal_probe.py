"""Probes in the terminal: one request as a phase waterfall, many as hyperfine-style rows.

Functions build rich renderables and print nothing; the CLI prints them.
"""

from __future__ import annotations

from rich import box
from rich.bar import Bar
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from latdoc.analysis.repeats import SETUP_METRICS, GroupSummary, RepeatSummary
from latdoc.analysis.stats import Distribution
from latdoc.records import RequestTrace
from latdoc.report._console import side_by_side
from latdoc.report._layers import layers_text, trace_layers
from latdoc.report._theme import ERROR_COLOUR, PHASE_COLOURS
from latdoc.report.names import format_ms, pick_unit

_BAR_WIDTH = 24
_BLANK = Text("")


def _indent(renderable: RenderableType) -> Padding:
    return Padding(renderable, (0, 0, 0, 2), expand=False)


def _connection_lines(trace: RequestTrace) -> Group:
    parts = [Text(f"model {trace.model}")]
    if trace.http_version:
        parts.append(Text(trace.http_version))
    if trace.connection_id is not None:
        kind = "new connection" if trace.new_connection else "reused connection"
        where = f" to {trace.remote_ip}" if trace.remote_ip else ""
        parts.append(Text(f"{kind} #{trace.connection_id}{where}"))
    if trace.proxy is not None:
        parts.append(Text(f"through proxy {trace.proxy}"))
    lost = [a for a in trace.connect_attempts if a.outcome != "connected"]
    if lost:
        said = ", ".join(
            f"IPv{a.family} {a.address} {a.outcome} after {format_ms(a.ms)}" for a in lost
        )
        parts.append(Text(f"other attempts: {said}"))
    if trace.tls_resumed:
        parts.append(Text("TLS session resumed"))
    return Group(Text(f"POST {trace.url}", style="bold"), side_by_side(parts))


def _phases(trace: RequestTrace) -> list[tuple[str, str, float | None, float | None, str]]:
    """(phase key, label, duration, cumulative mark, mark name), left to right."""
    phases: list[tuple[str, str, float | None, float | None, str]] = [
        ("dns", "DNS", trace.dns_ms, _ms(trace.dns_done_ns), "dns"),
        ("connect", "TCP" if trace.proxy is None else "TCP to proxy", trace.connect_ms,
         _ms(trace.connect_done_ns), "connect"),
    ]  # fmt: skip
    if trace.proxy_connect_done_ns is not None:
        phases.append(
            ("proxy_connect", "Proxy CONNECT", trace.proxy_connect_ms,
             _ms(trace.proxy_connect_done_ns), "tunnel open")
        )  # fmt: skip
    if trace.tls_done_ns is not None:
        phases.append(("tls", "TLS", trace.tls_ms, _ms(trace.tls_done_ns), "tls"))
    if trace.client_delay_ms is not None:
        phases.append(
            ("client", "Client delay", trace.client_delay_ms, _ms(trace.write_start_ns), "wrote")
        )
    phases += [
        ("send", "Send", trace.send_ms, _ms(trace.sent_ns), "sent"),
        ("wait", "Server wait", trace.wait_ms, trace.ttfb_ms, "first byte"),
        ("first_token", "First token", _diff(trace.ttft_ms, trace.ttfb_ms), trace.ttft_ms,
         "first token"),
    ]  # fmt: skip
    thinking = trace.reasoning_ms
    start: float | None = trace.ttft_ms
    if (
        thinking is not None
        and trace.ttfa_ms is not None
        and trace.first_token_ns == trace.first_reasoning_ns
    ):
        phases.append(("reasoning", "Reasoning", thinking, trace.ttfa_ms, "first answer token"))
        start = trace.ttfa_ms
    phases.append(("stream", "Streaming", _diff(trace.total_ms, start), trace.total_ms, "total"))
    return phases


def render_waterfall(trace: RequestTrace) -> RenderableType:
    """One request, one row per phase: how long it took, when it ended, and a bar that
    starts where the phase started on one time axis for the whole request."""
    phases = _phases(trace)
    end = max((mark for *_, mark, _ in phases if mark is not None), default=0.0)
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, show_edge=False)
    table.add_column("phase", no_wrap=True)
    table.add_column("took", justify="right", no_wrap=True)
    table.add_column("done at", justify="right", no_wrap=True)
    table.add_column("mark", style="dim", no_wrap=True)
    table.add_column("0 → " + format_ms(end) if end else "", no_wrap=True, min_width=8)
    previous = 0.0
    for key, label, duration, mark, name in phases:
        bar: RenderableType = ""
        if mark is not None and end > 0:
            start = previous if duration is None else max(mark - duration, 0.0)
            # A phase shorter than an eighth of a cell has no honest bar at this scale.
            if (mark - start) / end * _BAR_WIDTH * 8 >= 1:
                bar = Bar(end, start, mark, width=_BAR_WIDTH, color=PHASE_COLOURS[key])
            previous = mark
        table.add_row(
            Text(label, style=PHASE_COLOURS[key]),
            format_ms(duration),
            format_ms(mark),
            name,
            bar,
        )
    parts: list[RenderableType] = [
        _indent(_connection_lines(trace)),
        _BLANK,
        _indent(table),
        _BLANK,
        _indent(_tokens_line(trace)),
    ]
    if trace.tool_calls:
        parts.append(_indent(_tool_calls_line(trace)))
    layers = layers_text(trace_layers(trace))
    if layers is not None:
        parts.append(_indent(Text(layers[0].upper() + layers[1:])))
    if trace.error is not None:
        parts.append(
            Padding(
                Text(f"failed: {trace.error}", style=f"bold {ERROR_COLOUR}"),
                (0, 0, 0, 2),
                expand=False,
            )
        )
    return Group(*parts)


def _tokens_line(trace: RequestTrace) -> RenderableType:
    parts = [f"TTFT {format_ms(trace.ttft_ms)}"]
    if trace.server_ttft_ms is not None:
        parts.append(f"server TTFT {format_ms(trace.server_ttft_ms)} (from the wire)")
    parts.append(f"TPOT {format_ms(trace.tpot_ms)}")
    if trace.output_tokens is not None:
        source = "usage" if trace.output_tokens_exact else "approx., counted from chunks"
        parts.append(f"{trace.output_tokens} output tokens ({source})")
    if trace.reasoning_tokens:
        parts.append(f"{trace.reasoning_tokens} of them reasoning")
    if trace.prompt_tokens is not None:
        parts.append(f"{trace.prompt_tokens} prompt tokens")
    if trace.unknown_events:
        parts.append(f"{trace.unknown_events} events of unknown type skipped")
    if trace.rtt_ms is not None:
        parts.append(f"RTT {format_ms(trace.rtt_ms)}")
    if trace.tcp_info is not None and trace.tcp_info.retransmits:
        parts.append(f"{trace.tcp_info.retransmits} retransmits")
    return side_by_side([Text(part) for part in parts])


def _tool_calls_line(trace: RequestTrace) -> RenderableType:
    """``tool calls (first output): lookup(41 chars of arguments, 0.9 ms from first part to
    last byte) · arguments done at 312 ms``."""
    calls = ", ".join(
        f"{c.name or '(unnamed)'}({c.argument_chars} chars of arguments, "
        f"{format_ms(c.streaming_ms)} from first part to last byte)"
        for c in trace.tool_calls
    )
    first = " (first output)" if trace.first_output_kind == "tool_call" else ""
    return side_by_side(
        [
            Text(f"tool calls{first}: {calls}"),
            Text(f"arguments done at {format_ms(trace.tool_arguments_done_ms)}"),
        ]
    )


def _group_table(title: str, group: GroupSummary, *, skip_setup: bool) -> Group:
    """hyperfine's rows: the mean ± σ in one unit per row, then min … max; no σ when n = 1."""
    table = Table(
        box=None,
        padding=(0, 1),
        pad_edge=False,
        show_header=group.n > 1,
        header_style="dim",
    )
    table.add_column("", no_wrap=True, min_width=12)
    table.add_column("mean", justify="right", no_wrap=True)
    table.add_column("± σ", justify="right", no_wrap=True)
    table.add_column("min … max", no_wrap=False)
    for name, dist in group.rows:
        if skip_setup and name in SETUP_METRICS:
            continue
        table.add_row(name, *_dist_cells(dist))
    return Group(Text(title, style="bold"), _indent(table))


def _dist_cells(dist: Distribution) -> tuple[Text, str, str]:
    unit = pick_unit(dist.mean)
    mean = Text(format_ms(dist.mean, unit), style="bold")
    if dist.stdev is None:
        return mean, "", ""
    return (
        mean,
        f"± {format_ms(dist.stdev, unit)}",
        f"{format_ms(dist.min, unit)} … {format_ms(dist.max, unit)}",
    )


def render_summary(summary: RepeatSummary) -> RenderableType:
    """Cold requests apart from warm ones (mean ± σ, min … max), then keep-alive's saving."""
    ok = summary.total - summary.failed
    failed_style = f"bold {ERROR_COLOUR}" if summary.failed else ""
    parts: list[RenderableType] = [
        _indent(
            Text.assemble(
                f"{summary.total} requests: {ok} ok, ", (f"{summary.failed} failed", failed_style)
            )
        )
    ]
    if summary.cold is not None:
        title = f"Cold (new connection, n = {summary.cold.n})"
        parts += [_BLANK, _indent(_group_table(title, summary.cold, skip_setup=False))]
    if summary.warm is not None:
        title = f"Warm (reused connection, n = {summary.warm.n})"
        parts += [_BLANK, _indent(_group_table(title, summary.warm, skip_setup=True))]
    if summary.setup_saving_ms is not None and summary.keepalive_saving_ms is not None:
        parts += [
            _BLANK,
            _indent(
                Text(
                    f"Keep-alive saves {format_ms(summary.setup_saving_ms)} of DNS+TCP+TLS per "
                    f"request; TTFB cold − warm = {format_ms(summary.keepalive_saving_ms)}."
                )
            ),
        ]
    return Group(*parts)


def _ms(ns: int | None) -> float | None:
    return None if ns is None else ns / 1e6


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b
