"""The spans of an OTLP JSON file: each with its attributes read, where it was found and
the instrumentation that wrote it (:class:`Span`); which of them are model calls."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.workload.otlp._typed import At, parse

_SCOPES = (
    ("opentelemetry.instrumentation.openai", "OpenLLMetry (opentelemetry-instrumentation-openai)"),
    ("opentelemetry.instrumentation.openai_v2", "OpenTelemetry contrib openai-v2"),
    ("opentelemetry.util.genai", "OpenTelemetry GenAI utilities (as openai-v2 writes)"),
    ("openinference.instrumentation", "OpenInference"),
    ("langfuse", "Langfuse"),
    ("latdoc", "latdoc"),
)
"""Instrumentation scope name prefixes (longest first where one holds another), and
what the report calls the instrumentation."""


def _documents(text: str, source: str) -> Iterator[At]:
    """The one document ``text`` holds, or one per line when its first line is one."""
    try:
        yield At(parse(text, source), source)
        return
    except ValueError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        try:
            first = parse(lines[0][1], f"{source}:{lines[0][0]}") if len(lines) > 1 else None
        except ValueError:
            first = None
        if not isinstance(first, dict):
            raise UsageError(
                Message("{source}: not JSON ({whole})", source=source, whole=whole)
            ) from None
    for number, line in lines:
        try:
            yield At(parse(line, f"{source}:{number}"), f"{source}:{number}")
        except ValueError as exc:
            raise UsageError(
                Message(
                    "{source}:{number}: not JSON ({exc})",
                    source=source,
                    number=number,
                    exc=str(exc),
                )
            ) from None


class Span:
    """A span object, its attributes read, with where it was found and what wrote it."""

    __slots__ = ("at", "attributes", "places", "scope")

    def __init__(self, at: At, scope: str = "") -> None:
        self.at = at
        self.scope = scope
        self.places = {
            item["key"].text(): item.get("value") for item in at.get("attributes").items()
        }
        self.attributes = {key: _value(raw) for key, raw in self.places.items()}


def _scope_name(scope: At) -> str:
    """What the report calls the instrumentation an ``InstrumentationScope`` names."""
    if not isinstance(scope.value, dict):
        return "an unnamed instrumentation"
    # Only named in the report: a name or version of another type is no name.
    name, version = scope.value.get("name"), scope.value.get("version")
    name = name if isinstance(name, str) else ""
    version = version if isinstance(version, str) else ""
    known = next((label for prefix, label in _SCOPES if name.startswith(prefix)), None)
    if known is None:
        known = name or "an unnamed instrumentation"
    return f"{known} {version}".strip() if version else known


def spans_of(text: str, source: str) -> Iterator[Span]:
    for document in _documents(text, source):
        if not isinstance(document.value, dict) or "resourceSpans" not in document.value:
            raise UsageError(
                Message("{source}: not OTLP JSON (no resourceSpans)", source=document.source)
            )
        for resource_spans in document["resourceSpans"].items():
            resource = resource_spans.get("resource")
            if not resource.missing:
                Span(resource)
            for scope_spans in resource_spans.get("scopeSpans").items():
                scope = _scope_name(scope_spans.get("scope"))
                for span in scope_spans.get("spans").items():
                    yield Span(span, scope)


def _value(raw: At) -> Any:
    """An ``AnyValue``: its string, whole number, double, boolean or array (``None`` for
    the kinds latdoc does not read: ``kvlistValue``, ``bytesValue``, an empty value)."""
    if raw.missing:
        return None
    if raw.has("stringValue"):
        return raw["stringValue"].text()
    if raw.has("intValue"):
        return raw["intValue"].integer()
    if raw.has("doubleValue"):
        return raw["doubleValue"].number(finite=False)
    if raw.has("boolValue"):
        return raw["boolValue"].boolean()
    if raw.has("arrayValue"):
        return [_value(v) for v in raw["arrayValue"].get("values").items()]
    return None


_TOOL_OPERATIONS = frozenset({"execute_tool"})
_AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})


def role(span: Span) -> str | None:
    """What a span is in an agent's run: ``"model"`` (a model call), ``"tool"`` (a tool's
    execution: the conventions' ``execute_tool``, OpenInference's ``TOOL``, a Langfuse
    ``tool`` observation), ``"agent"`` (an agent's invocation: ``invoke_agent``,
    OpenInference's ``AGENT``, a Langfuse ``agent``), or ``None`` for any other span
    (a chain, a workflow's step, the application's own)."""
    a = span.attributes
    operation = a.get("gen_ai.operation.name")
    kind = a.get("openinference.span.kind")
    observation = a.get("langfuse.observation.type")
    if operation in _TOOL_OPERATIONS or kind == "TOOL" or observation == "tool":
        return "tool"
    if operation in _AGENT_OPERATIONS or kind == "AGENT" or observation == "agent":
        return "agent"
    if any(key.startswith("gen_ai.") for key in a) or kind == "LLM" or observation == "generation":
        return "model"
    return None


def span_ids(span: Span) -> tuple[str, str, str | None]:
    """The span's trace id, its own id and its parent's (``None`` for a root), as the
    file writes them (hex in OTLP/JSON)."""
    at = span.at
    trace = at.get("traceId")
    own = at.get("spanId")
    parent = at.get("parentSpanId")

    def text(value: At) -> str:
        return "" if value.missing or not isinstance(value.value, str) else value.value

    return text(trace), text(own), text(parent) or None
