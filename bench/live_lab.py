"""Do the bank and the wire read the same endpoint the same way?

The truth bank (``bench/bank``) writes the samples a diagnosis run of a latency model
would record; ``bench/calibration.py`` scores the diagnosis on thousands of them. This
bench runs a seeded handful of the bank's scenarios that the lab can play on loopback
(:mod:`bank.lab`) both ways: (a) the bank's synthetic run,
``build_diagnosis(generate(s), context(s))``, and (b) a real run, ``measure_steps``
over the wire against the lab set up as the same model (its jitter on), then
``build_diagnosis``; beside (c) the scenario's truth by counterfactual (what removing
each cause saves the scenario's user, :mod:`bank.counterfactual`). It prints, per
scenario, the true primary kind, each run's verdict, whether they agree, and the
figures each read side by side (bank / wire): the length rule's ratio, the TTFT p50 of
requests sent alone, decode ms per token as the network figures give it and as the
decode rule reads it (each event's tokens counted), the same reading of the load
step's burst, the burst's TTFT over that of requests sent alone, the true primary
kind's saving beside its share as each run measured it (truth: bank / wire), the
streams the stall rule found stalled, the failed requests and the requests each step
sent (network, length, load).

Every scenario is drawn by the bank (its seed, causes, intensity and noise), then kept
short: a small output length and a budget of a few seconds for both runs; the seeds
are ones whose bank run fits that budget with room to spare (chosen on the run's
length, not on any verdict). Two are changed where the lab plays only part of the
bank's range: the closing server is a quick one (on loopback a new connection costs
only a TLS handshake of a few ms, which matters beside a short request alone), and
the reasoning is streamed and as long in every request. The lab's random draws are
its own (:mod:`bank.lab`): a borderline cause can fall into one run and not the other,
which the stalled and failed columns show.

The quirks' cases (:data:`QUIRKS`, named ``quirk: ...``) put the quirks of real
endpoints the bank and the lab both play on the healthy endpoint of seed 0, alone and
beside a real cause; their budget is long enough for both runs to reach the load
step's burst but where 60 ms a token makes each request too long for it.

Run: ``make bench`` or ``.venv/bin/python bench/live_lab.py [--only NAME ...]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from bank.lab import Case, Comparison, Figures, compare
from latdoc.model import Kind

CASES = (
    Case("healthy", 0),
    Case("long input, clear", 133, ("long_input",)),
    Case("long input, borderline", 0, ("long_input",), "borderline"),
    Case("slow decode", 2, ("slow_decode",), output_tokens=4),
    Case("burst queue, clear", 0, ("burst_queue",)),
    Case("burst queue, borderline", 0, ("burst_queue",), "borderline", "mid"),
    Case("stalls, clear", 133, ("stalls",), max_seconds=12.0),
    Case("stalls, borderline", 0, ("stalls",), "borderline"),
    Case("errors, 503", 7, ("errors",)),
    Case("errors, broken streams", 6, ("errors",)),
    Case(
        "closing server, TLS, quick",
        0,
        ("closes",),
        tls=True,
        changes={"prefill_a_ms": 8.0, "prefill_b_ms": 0.005, "tpot_ms": 2.0},
    ),
    Case(
        "reasoning, borderline",
        2,
        ("reasoning",),
        "borderline",
        changes={"reasoning_spread": 0.0, "reasoning_shown": True},
    ),
)
"""The scenarios, by what they were drawn with."""

QUIRK_TOKENS = 24
"""The output length of the quirks' cases: three events of eight tokens at the least."""
QUIRK_SECONDS = 20.0
QUIRKS = (
    Case(
        "quirk: healthy, 4 per event",
        0,
        output_tokens=QUIRK_TOKENS,
        max_seconds=QUIRK_SECONDS,
        changes={"tokens_per_event": 4},
    ),
    Case(
        "quirk: healthy, 8 per event",
        0,
        output_tokens=QUIRK_TOKENS,
        max_seconds=QUIRK_SECONDS,
        changes={"tokens_per_event": 8},
    ),
    Case(
        "quirk: healthy, 1-8 per event",
        0,
        output_tokens=QUIRK_TOKENS,
        max_seconds=QUIRK_SECONDS,
        changes={"tokens_per_event": 0},
    ),
    Case(
        "quirk: healthy, keep-alive, a slot each",
        0,
        changes={"keepalive_comments": True, "slots": 4},
    ),
    Case(
        "quirk: keep-alive, burst queue",
        0,
        ("burst_queue",),
        changes={"keepalive_comments": True},
    ),
    Case(
        "quirk: slow decode 60 ms, 8 per event",
        0,
        output_tokens=QUIRK_TOKENS,
        max_seconds=QUIRK_SECONDS,
        changes={"tpot_ms": 60.0, "tokens_per_event": 8},
    ),
    Case(
        "quirk: batch slowdown, 29 ms a token alone",
        0,
        output_tokens=QUIRK_TOKENS,
        max_seconds=QUIRK_SECONDS,
        changes={"batch_slowdown": 0.3, "concurrency": 8, "slots": 16},
    ),
    Case(
        "quirk: batch slowdown, 40 ms a token",
        0,
        output_tokens=QUIRK_TOKENS,
        max_seconds=QUIRK_SECONDS,
        changes={"batch_slowdown": 0.3, "concurrency": 8, "slots": 16, "tpot_ms": 40.0},
    ),
)
"""Quirks of real endpoints on the healthy seed-0 endpoint (29 ms a token, a 74 ms
prefill, four at once on eight slots), alone and beside a real cause: several tokens
per event (4, 8, an irregular 1 to 8), keep-alive comments with a slot for each of
the burst's requests and with one slot in all, 60 ms a token at 8 tokens an event, and
decode that slows by 0.3 a stream in flight at a burst of eight, at 29 and at 40 ms a
token alone (90 and 124 ms eight at once: slow where the user's streams run together)."""


def _num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pair(bank: float | None, wire: float | None, digits: int = 0) -> str:
    return f"{_num(bank, digits)} / {_num(wire, digits)}"


def _steps(f: Figures) -> str:
    return " ".join(str(f.by_step.get(step, 0)) for step in ("network", "length", "load"))


def _kind(f: Figures) -> str:
    extra = f" +{','.join(str(k) for k in f.contributing)}" if f.contributing else ""
    return f"{f.primary}{extra}"


def _share(c: Comparison) -> str:
    """The true primary kind's share: the truth's, then as the bank and the wire measured it."""
    kind = c.truth.primary
    if kind is Kind.HEALTHY:
        return "–"
    true = c.truth.savings_ms.get(kind)
    return f"{_num(true)}: {_pair(c.bank.shares_ms.get(kind), c.wire.shares_ms.get(kind))}"


def table(rows: Sequence[Comparison]) -> Table:
    t = Table(title="bank / wire, one run each", show_lines=False)
    for header in ("scenario", "truth", "bank", "wire", "agree"):
        t.add_column(header, no_wrap=True)
    for header in (
        "length ratio",
        "TTFT alone p50 ms",
        "ms/token",
        "per token",
        "burst per token",
        "burst ×",
        "true kind's share ms",
        "stalled",
        "failed",
        "requests net len load",
    ):
        t.add_column(header, justify="right")
    for c in rows:
        b, w = c.bank, c.wire
        truth_kinds = str(c.truth.primary) + (
            f" +{','.join(str(k) for k in c.truth.contributing)}" if c.truth.contributing else ""
        )
        t.add_row(
            c.case.name,
            truth_kinds,
            _kind(b),
            _kind(w),
            "yes" if c.agree else "NO",
            _pair(b.length_ratio, w.length_ratio, 2),
            _pair(b.ttft_alone_ms, w.ttft_alone_ms),
            _pair(b.tpot_ms, w.tpot_ms, 1),
            _pair(b.token_tpot_ms, w.token_tpot_ms, 1),
            _pair(b.burst_tpot_ms, w.burst_tpot_ms, 1),
            _pair(b.burst_ratio, w.burst_ratio, 2),
            _share(c),
            f"{b.stalled} / {w.stalled}",
            f"{b.failed} / {w.failed}",
            f"{_steps(b)} / {_steps(w)}",
        )
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run only the scenarios whose name starts so")
    args = parser.parse_args()
    cases = [
        c
        for c in (*CASES, *QUIRKS)
        if not args.only or any(c.name.startswith(o) for o in args.only)
    ]
    console = Console(width=max(Console().width, 260))
    rows = []
    started = time.perf_counter()
    for case in cases:
        row = compare(case)
        rows.append(row)
        console.print(
            f"{case.name}: seed {case.seed}, {row.scenario.label}, "
            f"{case.output_tokens} tokens, {case.max_seconds:.0f} s budget; "
            f"bank {row.bank.primary}, wire {row.wire.primary} ({row.wire_seconds:.1f} s)"
        )
    console.print(table(rows))
    agree = sum(r.agree for r in rows)
    right_bank = sum(r.bank.primary is r.truth.primary for r in rows)
    right_wire = sum(r.wire.primary is r.truth.primary for r in rows)
    console.print(
        f"bank and wire name the same primary kind in {agree} of {len(rows)}; "
        f"the truth's: bank {right_bank}, wire {right_wire}; "
        f"{time.perf_counter() - started:.0f} s in all"
    )


if __name__ == "__main__":
    main()
