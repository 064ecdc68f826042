"""A load sweep as the store keeps it: the ``latdoc.load_record/1`` document, and back.

:func:`load_to_record` writes a sweep's analysis as data: each level's window, its
counts, percentiles, rates, Little's law and failures, then the objectives, the knee
and the plateau by level number. :func:`load_from_record` reads it back as a
:class:`~latdoc.features.load.analysis.LoadAnalysis`, and reads too the form stored
before it, the ``latdoc.load/1`` document ``load --json`` prints (runs kept by
earlier versions hold that). The printed document is the render layer's and may
change with what is shown; this one changes only with a new version here.

The record is a summary, not the run: ``latdoc report`` analyses the stored traces
again over the windows it reads from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from latdoc.errors import UsageError
from latdoc.features.load.analysis import (
    ClientLoad,
    Failure,
    LevelStats,
    LevelWindow,
    LittlesLaw,
    LoadAnalysis,
    Percentiles,
    Slo,
)
from latdoc.i18n import Message

LOAD_RECORD_SCHEMA = "latdoc.load_record/1"
"""The stored document's schema and version."""
PRINTED_SCHEMA = "latdoc.load/1"
"""The form stored before the record: the printed JSON document."""


def load_to_record(analysis: LoadAnalysis) -> dict[str, Any]:
    """``analysis`` as the store keeps it."""
    return {
        "schema": LOAD_RECORD_SCHEMA,
        "slo": {"ttft_ms": analysis.slo.ttft_ms, "tpot_ms": analysis.slo.tpot_ms},
        "levels": [_level_record(lv) for lv in analysis.levels],
        "knee": None if analysis.knee is None else analysis.knee.window.number,
        "plateau": None if analysis.plateau is None else analysis.plateau.window.number,
        "peak_requests_per_s": analysis.peak_requests_per_s,
    }


def load_from_record(document: Mapping[str, Any]) -> LoadAnalysis:
    """A stored sweep's analysis, from a record or from the printed form stored before it.

    A document without a schema is read as the printed form; a :class:`UsageError`
    names a document of another schema or version."""
    schema = document.get("schema", PRINTED_SCHEMA)
    if schema not in (LOAD_RECORD_SCHEMA, PRINTED_SCHEMA):
        raise UsageError(
            Message(
                "the stored load document is {schema!r}: this version of latdoc reads "
                "{record} and {printed}",
                schema=schema,
                record=LOAD_RECORD_SCHEMA,
                printed=PRINTED_SCHEMA,
            )
        )
    printed = schema == PRINTED_SCHEMA
    levels = tuple(_level(raw, printed=printed) for raw in document.get("levels") or ())
    slo = document.get("slo") or {}
    return LoadAnalysis(
        levels=levels,
        knee=_pick(levels, document.get("knee"), printed=printed),
        plateau=_pick(levels, document.get("plateau"), printed=printed),
        peak_requests_per_s=_number(document.get("peak_requests_per_s")),
        slo=Slo(_number(slo.get("ttft_ms")), _number(slo.get("tpot_ms"))),
    )


def _level_record(lv: LevelStats) -> dict[str, Any]:
    w = lv.window
    return {
        "window": w.document(),
        "requests": lv.requests,
        "failed": lv.failed,
        "ttft_ms": _percentiles_record(lv.ttft_ms),
        "tpot_ms": _percentiles_record(lv.tpot_ms),
        "total_ms": _percentiles_record(lv.total_ms),
        "pool_wait_ms": _percentiles_record(lv.pool_wait_ms),
        "server_ttft_ms": _percentiles_record(lv.server_ttft_ms),
        "client_delay_ms": _percentiles_record(lv.client_delay_ms),
        "due_ttft_ms": _percentiles_record(lv.due_ttft_ms),
        "due_total_ms": _percentiles_record(lv.due_total_ms),
        "late_ms": _percentiles_record(lv.late_ms),
        "warmup": lv.warmup,
        "steady": lv.steady,
        "warmup_ttft_ms": _percentiles_record(lv.warmup_ttft_ms),
        "requests_per_s": lv.requests_per_s,
        "output_tokens_per_s": lv.output_tokens_per_s,
        "sent_per_s": lv.sent_per_s,
        "littles_law": None
        if lv.little is None
        else {
            "in_flight": lv.little.in_flight,
            "predicted": lv.little.predicted,
            "target": lv.little.target,
        },
        "goodput_per_s": lv.goodput_per_s,
        "goodput_share": lv.goodput_share,
        "failures": [{"code": f.code, "phase": f.phase, "count": f.count} for f in lv.failures],
    }


def _percentiles_record(p: Percentiles | None) -> dict[str, float] | None:
    return None if p is None else {"p50": p.p50, "p95": p.p95, "p99": p.p99, "mean": p.mean}


def _window(raw: Mapping[str, Any]) -> LevelWindow:
    """One level's window, as both forms keep it."""
    return LevelWindow(
        number=int(raw["number"]),
        concurrency=raw.get("concurrency"),
        rate=raw.get("rate"),
        start_ns=int(raw["start_ns"]),
        end_ns=int(raw["end_ns"]),
        scheduled=raw.get("scheduled"),
        late_ms_p50=raw.get("late_ms_p50"),
        unsent=int(raw.get("unsent") or 0),
        partial=raw.get("partial") is True,
        client=ClientLoad.from_document(raw.get("client")),
    )


def _level(raw: Mapping[str, Any], *, printed: bool) -> LevelStats:
    little = raw.get("littles_law")
    predicted = "throughput_x_latency" if printed else "predicted"
    return LevelStats(
        window=_window(raw["window"]),
        requests=int(raw.get("requests") or 0),
        failed=int(raw.get("failed") or 0),
        ttft_ms=_percentiles(raw.get("ttft_ms")),
        tpot_ms=_percentiles(raw.get("tpot_ms")),
        total_ms=_percentiles(raw.get("total_ms")),
        pool_wait_ms=_percentiles(raw.get("pool_wait_ms")),
        requests_per_s=float(raw.get("requests_per_s") or 0.0),
        output_tokens_per_s=float(raw.get("output_tokens_per_s") or 0.0),
        sent_per_s=float(raw.get("sent_per_s") or 0.0),
        little=None
        if not isinstance(little, Mapping)
        else LittlesLaw(
            float(little["in_flight"]), float(little[predicted]), float(little["target"])
        ),
        goodput_per_s=_number(raw.get("goodput_per_s")),
        goodput_share=_number(raw.get("goodput_share")),
        server_ttft_ms=_percentiles(raw.get("server_ttft_ms")),
        client_delay_ms=_percentiles(raw.get("client_delay_ms")),
        due_ttft_ms=_percentiles(raw.get("due_ttft_ms")),
        due_total_ms=_percentiles(raw.get("due_total_ms")),
        late_ms=_percentiles(raw.get("late_ms")),
        warmup=int(raw.get("warmup") or 0),
        steady=raw.get("steady") if isinstance(raw.get("steady"), bool) else None,
        warmup_ttft_ms=_percentiles(raw.get("warmup_ttft_ms")),
        failures=tuple(
            Failure(str(f["code"]), str(f["phase"]), int(f["count"]))
            for f in raw.get("failures") or ()
        ),
    )


def _percentiles(raw: object) -> Percentiles | None:
    if not isinstance(raw, Mapping):
        return None
    return Percentiles(float(raw["p50"]), float(raw["p95"]), float(raw["p99"]), float(raw["mean"]))


def _pick(levels: Sequence[LevelStats], key: object, *, printed: bool) -> LevelStats | None:
    """The level a record names by number, or the printed form by label."""
    if key is None:
        return None
    for lv in levels:
        if (lv.window.label if printed else lv.window.number) == key:
            return lv
    return None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


__all__ = [
    "LOAD_RECORD_SCHEMA",
    "PRINTED_SCHEMA",
    "load_from_record",
    "load_to_record",
]
