"""The whole file read: its GenAI spans as traces, with notes on what they lack."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.records import RequestTrace, Step, StepNote
from latdoc.workload.otlp._spans import is_genai, spans_of
from latdoc.workload.otlp._trace import Read, trace_of


@dataclass(frozen=True)
class OtlpTraffic:
    traces: tuple[RequestTrace, ...]
    notes: tuple[StepNote, ...]
    instrumentation: str = ""
    """What wrote the spans: the instrumentation's name and its scope's version (several,
    most spans first, when several did); the scope's name when latdoc does not know it."""


def read_otlp(text: str, source: str = "OTLP file") -> OtlpTraffic:
    """The GenAI spans of an OTLP JSON document as traces; ``UsageError`` when none, and
    when the document is malformed, naming ``source`` and the place in it."""
    spans = [span for span in spans_of(text, source) if is_genai(span)]
    if not spans:
        raise UsageError(
            Message(
                "{source} holds no GenAI spans (spans with gen_ai.* attributes, "
                "OpenInference LLM spans or Langfuse generations)",
                source=source,
            )
        )
    read = sorted((trace_of(span) for span in spans), key=lambda r: r.trace.started_at)
    traces = [r.trace for r in read]
    writers = Counter(span.scope for span in spans)
    instrumentation = ", ".join(name for name, _ in writers.most_common())
    return OtlpTraffic(tuple(traces), _notes(read, instrumentation), instrumentation)


def _notes(read: list[Read], instrumentation: str) -> tuple[StepNote, ...]:
    traces = [r.trace for r in read]
    notes = []
    ok = [r for r in read if r.trace.ok]
    timed = [r for r in ok if r.trace.first_token_ns is not None]
    if timed:
        from_chunks = sum(1 for r in timed if r.ttft_from == "chunks")
        control = sum(1 for r in timed if r.control_chunk)
        text = (
            f"the spans were written by {instrumentation}; the time to first token of "
            f"{len(timed)} of {len(ok)} successful spans is the first streamed chunk the "
            "instrumentation recorded, which a chunk without output sent before the "
            "prefill would stand in for"
        )
        if control:
            text += (
                f" (in {control} of the {from_chunks} spans with a time for every chunk, "
                "the first chunk came long before the stream's rhythm began and is taken "
                "for such a chunk: their first token is the chunk after it)"
            )
        notes.append(StepNote(Step.RUN, text))
    else:
        notes.append(StepNote(Step.RUN, f"the spans were written by {instrumentation}"))
    no_ttft = len(ok) - len(timed)
    if no_ttft:
        notes.append(
            StepNote(
                Step.LOAD,
                f"{no_ttft} of {len(ok)} successful spans carry no time to first chunk: "
                "prefill and queueing cannot be told from generation in them",
            )
        )
    no_chunks = sum(1 for t in traces if t.ok and not t.chunks)
    if no_chunks:
        notes.append(
            StepNote(
                Step.RUN,
                f"{no_chunks} of {len(ok)} successful spans hold no chunk times: the "
                "stream's rhythm (time per token, mid-stream stalls) cannot be judged from "
                "them",
            )
        )
    return tuple(notes)
