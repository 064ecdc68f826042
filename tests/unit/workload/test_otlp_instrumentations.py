"""`latdoc diagnose --from-otlp` on spans the instrumentations people use really write.

An ``openai`` SDK application (tests/otlp_app.py), traced by OpenLLMetry, the
OpenTelemetry contrib openai-v2 instrumentation, OpenInference or Langfuse, streams
prompts of four lengths from the lab, whose prefill takes half a millisecond a prompt
token; its spans go to a file as OTLP JSON, which latdoc reads: the time to first
token from the instrumentation's chunk events or attributes, the chunk rhythm where
every chunk has an event, the token counts in each one's attribute names, the prompt's
size from its recorded text, and which instrumentation wrote them.
"""

from __future__ import annotations

import json

from latdoc.workload.otlp import read_otlp

NAMES = {
    "openllmetry": "OpenLLMetry (opentelemetry-instrumentation-openai)",
    "openai-v2": "OpenTelemetry GenAI utilities (as openai-v2 writes)",
    "openinference": "OpenInference",
    "langfuse": "Langfuse",
}


def test_the_conventions_time_to_first_chunk_attribute_is_read_in_seconds() -> None:
    # As opentelemetry-util-genai 1.2 and later write it (openai-v2 2.4b0 cannot load
    # those releases): seconds from the span's start, a double.
    def span(seconds: float) -> dict[str, object]:
        return {
            "startTimeUnixNano": "1000000000",
            "endTimeUnixNano": "3000000000",
            "attributes": [
                {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
                {"key": "gen_ai.response.time_to_first_chunk", "value": {"doubleValue": seconds}},
            ],
        }

    scope = {"name": "opentelemetry.util.genai.handler", "version": "1.3b0"}
    document = {
        "resourceSpans": [{"scopeSpans": [{"scope": scope, "spans": [span(0.25), span(9.0)]}]}]
    }
    traffic = read_otlp(json.dumps(document))
    assert [t.ttft_ms for t in traffic.traces] == [250.0, None]
    assert traffic.instrumentation == NAMES["openai-v2"] + " 1.3b0"
