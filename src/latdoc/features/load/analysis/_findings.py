"""A load sweep's findings in sentences: where it failed or could not be sent, the
knee, the client's own delay, the plateau, Little's law, goodput, and the client's
own limit; the terminal view, the JSON document and the page say the same."""

from __future__ import annotations

import os

from latdoc.analysis.policy import (
    CLIENT_DELAY_MS,
    GENERATOR_BEHIND_MS,
    GENERATOR_BEHIND_SHARE,
    KNEE_MIN_RISE_MS,
    KNEE_RATIO,
    LITTLE_TOLERANCE,
    PLATEAU_GROWTH,
)
from latdoc.features.load.analysis._client import processes_for
from latdoc.features.load.analysis._level import LevelStats
from latdoc.features.load.analysis._sweep import LoadAnalysis, find_tail_knee, knee_base
from latdoc.report.names import format_ms, format_rate

__all__ = ["findings", "generator_behind", "level_name"]


def level_name(lv: LevelStats) -> str:
    """A level by its label, marked where it was cut short."""
    return f"{lv.window.label} (partial)" if lv.window.partial else lv.window.label


def findings(analysis: LoadAnalysis) -> list[str]:
    """The knee, the plateau, Little's law, goodput and unsustained rates, in sentences."""
    lines = _knee(analysis)
    lines += _warmups(analysis)
    lines += _generator_behind(analysis)
    lines += _client_delay(analysis)
    lines += _client_limits(analysis)
    lines += _plateau(analysis)
    lines += _little(analysis)
    lines += _goodput(analysis)
    for lv in analysis.levels:
        if lv.failures:
            said = ", ".join(f"{f.count} {f.code} during {f.phase}" for f in lv.failures)
            lines.append(f"Failed at {level_name(lv)}: {said}.")
    for lv in analysis.levels:
        if lv.sustained is False:
            w = lv.window
            lines.append(
                f"The client could not sustain {w.rate:g}/s: it sent "
                f"{format_rate(lv.sent_per_s)}/s "
                f"(arrivals a median {format_ms(w.late_ms_p50)} late); raise --max-in-flight "
                "or lower the rate."
            )
    return lines


def _knee(analysis: LoadAnalysis) -> list[str]:
    """The knee against the lowest level, or that there was none; and where the p95
    queued before the median did, that too, so the sentence never denies the plot."""
    reference = knee_base(analysis.levels)
    if reference is None:
        return []
    lowest, base = reference
    knee = analysis.knee
    what = "TTFT p50"
    if analysis.levels and analysis.levels[0].server_ttft_ms is not None:
        what = "server TTFT p50 (from the wire)"
    bar = f"{KNEE_RATIO:g}× and {KNEE_MIN_RISE_MS:.0f} ms"
    tail = _tail(analysis, lowest, base.p95)
    knee_ttft = None if knee is None else knee.server_side_ttft_ms
    if knee is not None and knee_ttft is not None:
        line = (
            f"Knee at {level_name(knee)}: {what} {format_ms(knee_ttft.p50)}, "
            f"{knee_ttft.p50 / base.p50:.1f}× the {format_ms(base.p50)} at "
            f"{level_name(lowest)} (at least {bar} more): requests wait for the server "
            "from there."
        )
        return [line + (f" The p95 queued sooner: {tail}" if tail else "")]
    line = (
        f"No knee{' in the median' if tail else ''}: {what} stayed below "
        f"{KNEE_RATIO:g}× or within {KNEE_MIN_RISE_MS:.0f} ms of the {format_ms(base.p50)} "
        f"at {level_name(lowest)} at every level."
    )
    return [line + (f" The p95 did not: {tail}" if tail else "")]


def _tail(analysis: LoadAnalysis, lowest: LevelStats, base_ms: float) -> str | None:
    """Where the server-side TTFT p95 queued before the knee (or with none), how far it
    rose and from what: ``None`` where it did not."""
    tail, knee = find_tail_knee(analysis.levels), analysis.knee
    levels = analysis.levels
    if tail is None or (knee is not None and levels.index(knee) <= levels.index(tail)):
        return None
    before = [
        (lv, p)
        for lv in levels[: levels.index(tail)]
        if (p := lv.server_side_ttft_ms) is not None and not lv.window.partial
    ]
    value = tail.server_side_ttft_ms
    assert value is not None  # the tail knee is a measured level
    rise = f"{format_ms(value.p95)} at {level_name(tail)}"
    if before and before[-1][0] is not lowest:
        previous, p = before[-1]
        rise = f"from {format_ms(p.p95)} at {level_name(previous)} to {rise}"
    return (
        f"it rose {rise}, {value.p95 / base_ms:.1f}× the {format_ms(base_ms)} at "
        f"{level_name(lowest)}: some requests wait for the server from {level_name(tail)} on."
    )


def _client_delay(analysis: LoadAnalysis) -> list[str]:
    """The level whose client's own delay was the longest, where it passed the bar."""
    lines: list[str] = []
    delays = [(lv, p.p50) for lv in analysis.levels if (p := lv.client_delay_ms) is not None]
    if delays:
        slowest, delay = max(delays, key=lambda pair: pair[1])
        if delay > CLIENT_DELAY_MS:
            lines.append(
                f"The client's own delay had a median of {format_ms(delay)} at "
                f"{level_name(slowest)}: its event loop held requests back before they left. "
                "TTFT includes it; the knee and the server's time do not."
            )
    return lines


def _plateau(analysis: LoadAnalysis) -> list[str]:
    """The throughput plateau, or that requests/s still grew."""
    lines: list[str] = []
    plateau = analysis.plateau
    if plateau is not None and analysis.peak_requests_per_s is not None:
        lines.append(
            f"Throughput plateau at {level_name(plateau)}: {format_rate(plateau.requests_per_s)} "
            f"requests/s, less than {PLATEAU_GROWTH:.0%} more than the level before "
            f"(peak {format_rate(analysis.peak_requests_per_s)}/s)."
        )
    elif analysis.levels:
        lines.append("No throughput plateau: requests/s still grew at the highest level.")
    return lines


def _little(analysis: LoadAnalysis) -> list[str]:
    """Whether Little's law held at every level, or where it did not."""
    lines: list[str] = []
    off = [lv for lv in analysis.levels if lv.little is not None and not lv.little.holds]
    checked = [lv for lv in analysis.levels if lv.little is not None]
    if checked and not off:
        worst = max(lv.little.error for lv in checked if lv.little is not None)
        lines.append(
            f"Little's law holds at every level (in flight ≈ the level's target, "
            f"at most {worst:.0%} off)."
        )
    for lv in off:
        assert lv.little is not None
        lines.append(
            f"Little's law is {lv.little.error:.0%} off at {level_name(lv)} "
            f"({lv.little.in_flight:.1f} in flight against a target of "
            f"{lv.little.target:.1f}; tolerance {LITTLE_TOLERANCE:.0%}): the client did not "
            "hold the load it meant to, or the level was too short for its latency."
        )
    return lines


def _goodput(analysis: LoadAnalysis) -> list[str]:
    """The best goodput under the objectives asked for."""
    lines: list[str] = []
    slo = analysis.slo
    if slo.any:
        asked = ", ".join(
            part
            for part in (
                None if slo.ttft_ms is None else f"TTFT ≤ {format_ms(slo.ttft_ms)}",
                None if slo.tpot_ms is None else f"TPOT ≤ {format_ms(slo.tpot_ms)}",
            )
            if part
        )
        best = max(
            (lv for lv in analysis.levels if lv.goodput_per_s is not None),
            key=lambda lv: lv.goodput_per_s or 0.0,
            default=None,
        )
        if best is not None:
            lines.append(
                f"Goodput ({asked}): at most {format_rate(best.goodput_per_s)} requests/s, at "
                f"{level_name(best)} ({best.goodput_share or 0:.0%} of its requests)."
            )
    return lines


def _warmups(analysis: LoadAnalysis) -> list[str]:
    """A sentence per level whose start was a warm-up, or that never settled."""
    lines: list[str] = []
    for lv in analysis.levels:
        if lv.warmup and lv.warmup_ttft_ms is not None:
            lines.append(
                f"At {level_name(lv)} the first {lv.warmup} requests to finish were a warm-up "
                f"(MSER-5 on their TTFT), TTFT p50 {format_ms(lv.warmup_ttft_ms.p50)}: left out "
                "of the level's latency, counted in its throughput."
            )
        elif lv.steady is False:
            lines.append(
                f"At {level_name(lv)} the TTFT never settled in the level's "
                f"{lv.window.seconds:.0f} s (MSER-5): its figures hold every request; a longer "
                "--duration-per-level would show where it settles, if it does."
            )
    return lines


def generator_behind(lv: LevelStats, slo_ttft_ms: float | None) -> bool:
    """The level's requests left late enough that what a user behind the generator waits
    is not what the server did (:data:`GENERATOR_BEHIND_MS`)."""
    due, send = lv.due_ttft_ms, lv.ttft_ms
    if due is None or send is None:
        return False
    gap = due.p99 - send.p99
    if slo_ttft_ms is not None and send.p99 <= slo_ttft_ms < due.p99:
        return True
    return gap > GENERATOR_BEHIND_MS and gap > GENERATOR_BEHIND_SHARE * send.p99


def _generator_behind(analysis: LoadAnalysis) -> list[str]:
    """A sentence per level the generator's own queue held back, with how to lift it."""
    lines: list[str] = []
    for lv in analysis.levels:
        if lv.due_ttft_ms is None or not generator_behind(lv, analysis.slo.ttft_ms):
            continue
        due, send, late = lv.due_ttft_ms, lv.ttft_ms, lv.late_ms
        assert due is not None and send is not None
        left = (
            "" if late is None else f", its requests leaving up to {format_ms(late.p99)} late (p99)"
        )
        lines.append(
            f"At {level_name(lv)} the generator, not the server, is the bottleneck: TTFT p99 "
            f"{format_ms(due.p99)} from when each request was due against {format_ms(send.p99)} "
            f"from its send{left}. A user behind it waits the former; give it more with "
            "`--processes N` or `--ray` (or raise --max-in-flight)."
        )
    return lines


def _client_limits(analysis: LoadAnalysis) -> list[str]:
    """A sentence per level the client itself held back, with what would lift it."""
    lines: list[str] = []
    for lv in analysis.levels:
        load = lv.window.client
        if load is None or not load.saturated:
            continue
        reasons = load.reasons()
        said = reasons[0] if len(reasons) == 1 else ", ".join(reasons[:-1]) + " and " + reasons[-1]
        who = "" if load.processes == 1 else f" (the busiest of its {load.processes} workers)"
        wanted = processes_for(load)
        cores = os.cpu_count() or 1
        spread = f"`--processes {wanted}`" + (
            f" (this machine has {cores} cores; beyond them, `--ray` over more machines)"
            if wanted > cores
            else " or `--ray`"
        )
        together = (
            ""
            if load.read_together is None
            else f" {load.read_together:.1%} of its gaps between tokens were read together, "
            "each later token's own arrival lost."
        )
        lines.append(
            f"At {level_name(lv)} the client{who}, not the server, shaped the numbers (*): "
            f"{said}. Its TTFT, inter-token gaps and throughput carry the client's own "
            f"waiting;{together} {spread} would spread the streams."
        )
    return lines
