"""OpenTelemetry both ways: instrument(otel=True) emits GenAI spans and metrics through
the application's own SDK providers, and `latdoc diagnose --from-otlp` reads spans
exported as OTLP JSON, saying which phases they cannot tell apart."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from conftest import FAST, LabFactory
from latdoc import Store, instrument
from latdoc.cli import main
from latdoc.lab.sim import LabConfig
from latdoc.workload.otlp import read_otlp


@pytest.fixture(scope="module")
def telemetry() -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    """The application's own providers (set once per process, as an application does)."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    return exporter, reader


def _traffic(base_url: str, db: Path, words: Sequence[int]) -> str:
    async def go() -> str:
        client = openai.AsyncOpenAI(api_key="sk-x", base_url=base_url, max_retries=0)
        with Store(db) as store, instrument(client, store=store, otel=True) as inst:
            for n in words:
                stream = await client.chat.completions.create(
                    model="lab-sim",
                    messages=[{"role": "user", "content": "word " * n}],
                    max_tokens=6,
                    stream=True,
                    stream_options={"include_usage": True},
                )
                async for _ in stream:
                    pass
            run_id = inst.run_id
        await client.close()
        return run_id

    return asyncio.run(go())


def _otlp_json(spans: Sequence[ReadableSpan]) -> str:
    """The OTLP/JSON document an exporter writes for ``spans``."""

    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        if isinstance(v, tuple | list):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        return {"stringValue": str(v)}

    def attributes(items: Any) -> list[dict[str, Any]]:
        return [{"key": k, "value": value(v)} for k, v in (items or {}).items()]

    out = []
    for span in spans:
        context = span.get_span_context()
        assert context is not None
        out.append(
            {
                "traceId": f"{context.trace_id:032x}",
                "spanId": f"{context.span_id:016x}",
                "name": span.name,
                "kind": span.kind.value + 1,
                "startTimeUnixNano": str(span.start_time),
                "endTimeUnixNano": str(span.end_time),
                "attributes": attributes(span.attributes),
                "events": [{"name": e.name, "timeUnixNano": str(e.timestamp)} for e in span.events],
                "status": {"code": span.status.status_code.value},
            }
        )
    return json.dumps(
        {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": out}]}]}
    )


def test_otel_spans_and_metrics_follow_the_genai_conventions(
    lab: LabFactory,
    tmp_path: Path,
    telemetry: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, reader = telemetry
    exporter.clear()
    with lab(LabConfig(latency=FAST, seed=7)) as server:
        _traffic(server.base_url, tmp_path / "s.db", (20, 20))
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["chat lab-sim", "chat lab-sim"]
    first = spans[0]
    attrs = dict(first.attributes or {})
    assert first.kind is trace.SpanKind.CLIENT
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "lab-sim"
    assert attrs["gen_ai.usage.input_tokens"] > 20
    assert attrs["gen_ai.usage.output_tokens"] == 6
    for phase in ("dns", "connect", "send", "wait", "ttfb", "ttft", "total"):
        assert isinstance(attrs[f"latdoc.{phase}_ms"], float)
    assert attrs["latdoc.new_connection"] is True
    assert dict(spans[1].attributes or {})["latdoc.new_connection"] is False
    # The conventions' newer attributes: the request streamed, and its first chunk.
    assert attrs["gen_ai.request.stream"] is True
    assert attrs["gen_ai.response.time_to_first_chunk"] == pytest.approx(
        attrs["latdoc.ttft_ms"] / 1000, abs=1e-5
    )
    assert "latdoc.first_tool_call_ms" not in attrs  # no tool was offered
    assert first.end_time is not None and first.start_time is not None
    assert first.end_time - first.start_time == pytest.approx(
        attrs["latdoc.total_ms"] * 1e6, abs=1e3
    )
    data = reader.get_metrics_data()
    assert data is not None
    found = {
        m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    for name in (
        "gen_ai.client.operation.duration",
        "gen_ai.client.operation.time_to_first_chunk",
        "gen_ai.client.operation.time_per_output_chunk",
    ):
        assert found[name].unit == "s"
    assert found["gen_ai.client.token.usage"].unit == "{token}"
    duration = found["gen_ai.client.operation.duration"].data.data_points[0]
    assert duration.count == 2 and 0 < duration.sum < 5
    chunks = found["gen_ai.client.operation.time_per_output_chunk"].data.data_points[0]
    assert chunks.count == 2 * 5
    token_types = {
        p.attributes["gen_ai.token.type"]
        for p in found["gen_ai.client.token.usage"].data.data_points
    }
    assert token_types == {"input", "output"}


def test_spans_exported_as_otlp_json_are_diagnosed_with_latdocs_phases(
    lab: LabFactory,
    tmp_path: Path,
    telemetry: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, _ = telemetry
    exporter.clear()
    with lab(LabConfig(latency=FAST, keep_alive=False, seed=8)) as server:
        _traffic(server.base_url, tmp_path / "s.db", (10,) * 6)
    file = tmp_path / "spans.json"
    file.write_text(_otlp_json(exporter.get_finished_spans()))
    traffic = read_otlp(file.read_text())
    assert len(traffic.traces) == 6
    assert all(t.new_connection for t in traffic.traces)
    assert all(t.ttft_ms is not None and t.connect_ms is not None for t in traffic.traces)
    db = tmp_path / "otlp.db"
    assert main(["diagnose", "--from-otlp", str(file), "--db", str(db), "--json"]) == 0
    with Store(db) as store:
        (info,) = store.list_runs()
        assert info.kind == "instrument" and info.requests == 6


def test_the_applications_key_is_in_no_span_metric_or_stored_trace(
    lab: LabFactory,
    tmp_path: Path,
    telemetry: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    canary = "sk-canary-otel-" + "4d2c8e6a0b" * 3
    exporter, reader = telemetry
    exporter.clear()
    db = tmp_path / "k.db"

    async def go(base_url: str) -> None:
        client = openai.AsyncOpenAI(api_key=canary, base_url=base_url, max_retries=0)
        wrong = openai.AsyncOpenAI(api_key=canary[:-1], base_url=base_url, max_retries=0)
        with Store(db) as store, instrument(client, store=store, otel=True):
            stream = await client.chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "word " * 20}],
                max_tokens=4,
                stream=True,
                stream_options={"include_usage": True},
            )
            async for _ in stream:
                pass
        with (
            Store(db) as store,
            instrument(wrong, store=store, otel=True),
            pytest.raises(openai.AuthenticationError),
        ):
            await wrong.chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "hello"}],
                max_tokens=4,
                stream=True,
            )
        await client.close()
        await wrong.close()

    with lab(LabConfig(latency=FAST, api_key=canary)) as server:
        asyncio.run(go(server.base_url))
    spans = exporter.get_finished_spans()
    assert len(spans) == 2
    texts = [span.to_json() for span in spans] + [_otlp_json(spans)]
    data = reader.get_metrics_data()
    assert data is not None
    texts.append(data.to_json())
    assert "gen_ai.client.operation.duration" in texts[-1]
    for text in texts:
        assert canary not in text and canary[:-1] not in text
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("k.db*"))
    assert stored and canary[:-1].encode() not in stored
