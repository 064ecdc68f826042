"""An application instrumented by another tool, run as its own process by the tests: it
streams chat completions with the ``openai`` SDK, traced by the named OpenTelemetry
instrumentation (the real package), and its spans are written as OTLP JSON, one
export request a line, as the OpenTelemetry Collector's file exporter writes them.

    python tests/otlp_app.py INSTRUMENTATION BASE_URL OUT_FILE WORDS [WORDS ...]

Each ``WORDS`` is one request whose prompt is that many words. ``--usage`` asks the
streams for usage.
"""

from __future__ import annotations

import argparse
import base64
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

INSTRUMENTATIONS = ("openllmetry", "openai-v2", "openinference", "langfuse")


class OtlpJsonFile(SpanExporter):
    """Appends each export as one OTLP/JSON ``ExportTraceServiceRequest`` line: the
    protobuf JSON mapping, with trace and span ids in hex as OTLP/JSON has them."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        document = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
        for resource_spans in document.get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                for span in scope_spans.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = _hex(span[key])
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(document) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class _Nowhere(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _hex(b64: str) -> str:
    return base64.b64decode(b64).hex()


def _client(name: str, provider: TracerProvider, base_url: str) -> Any:
    if name == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif name == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as V2

        V2().instrument(tracer_provider=provider)
    elif name == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as OI

        OI().instrument(tracer_provider=provider)
    elif name == "langfuse":
        from langfuse import Langfuse

        # Langfuse's own processor would send the spans to its server: it sends nowhere,
        # and the provider's file exporter writes them as for the others.
        Langfuse(
            public_key="pk-lf-test",
            secret_key="sk-lf-test",
            base_url="http://127.0.0.1:9",
            tracer_provider=provider,
            span_exporter=_Nowhere(),
        )
        from langfuse.openai import OpenAI as LangfuseOpenAI

        return LangfuseOpenAI(api_key="sk-test", base_url=base_url, max_retries=0)
    import openai

    return openai.OpenAI(api_key="sk-test", base_url=base_url, max_retries=0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("instrumentation", choices=INSTRUMENTATIONS)
    parser.add_argument("base_url")
    parser.add_argument("out", type=Path)
    parser.add_argument("words", type=int, nargs="+")
    parser.add_argument("--usage", action="store_true")
    parser.add_argument("--max-tokens", type=int, default=16)
    args = parser.parse_args()
    provider = TracerProvider(resource=Resource.create({"service.name": "otlp-app"}))
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFile(args.out)))
    client = _client(args.instrumentation, provider, args.base_url)
    for words in args.words:
        stream = client.chat.completions.create(
            model="lab-sim",
            messages=[{"role": "user", "content": "word " * words}],
            max_tokens=args.max_tokens,
            stream=True,
            **({"stream_options": {"include_usage": True}} if args.usage else {}),
        )
        for _ in stream:
            pass
    provider.force_flush()
    print(json.dumps({"requests": len(args.words)}))


if __name__ == "__main__":
    main()
