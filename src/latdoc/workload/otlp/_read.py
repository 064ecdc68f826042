"""The whole file read: its GenAI spans as traces, with notes on what they lack."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.records import RequestTrace, Step, StepNote
from latdoc.workload.otlp._spans import Span, role, span_ids, spans_of
from latdoc.workload.otlp._trace import Read, trace_of
from latdoc.workload.otlp._typed import decode


@dataclass(frozen=True)
class AgentSpan:
    """One span of an agent's run: what it is, where it sits in the tree, and when."""

    role: str
    """``"agent"``, ``"model"``, ``"tool"``, ``"call"`` (a framework's span holding a model
    call's own, read from that) or ``"step"`` (any other span of the tree: a chain, a
    turn, the application's own)."""
    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    start_ns: int
    """Wall clock, Unix nanoseconds."""
    end_ns: int
    trace: RequestTrace | None = None
    """A model call's trace (the one the traffic's traces hold); ``None`` for the others."""


@dataclass(frozen=True)
class OtlpTraffic:
    traces: tuple[RequestTrace, ...]
    notes: tuple[StepNote, ...]
    instrumentation: str = ""
    """What wrote the spans: the instrumentation's name and its scope's version (several,
    most spans first, when several did); the scope's name when latdoc does not know it."""
    agent: tuple[AgentSpan, ...] = ()
    """Every span of the file, in time order, when it holds an agent's run (an agent or a
    tool span); empty otherwise. Its model spans are the traffic's traces."""


Ids = tuple[str, str, str | None]
"""A span's trace id, its own id and its parent's (:func:`span_ids`)."""


def _outer_calls(ids: list[Ids], roles: list[str | None]) -> set[int]:
    """The model spans (by position) that hold another model span below them: an agent
    framework's span of a call whose client was instrumented too. The innermost span of
    a call is the one nearer the wire."""
    parents = {(trace, own): parent for trace, own, parent in ids if own}
    model_at = {ids[n][:2]: n for n, kind in enumerate(roles) if kind == "model"}
    outer: set[int] = set()
    for (trace, _own, parent), kind in zip(ids, roles, strict=True):
        if kind != "model":
            continue
        seen = 0
        while parent is not None and seen < len(parents):
            n = model_at.get((trace, parent))
            if n is not None:
                outer.add(n)
            parent = parents.get((trace, parent))
            seen += 1
    return outer


def read_otlp_file(path: Path | str) -> OtlpTraffic:
    """The OTLP JSON file at ``path`` read (:func:`read_otlp`); a file that cannot be read
    is a :class:`UsageError` naming it."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise UsageError(
            Message("cannot read {file}: {strerror}", file=file, strerror=exc.strerror)
        ) from None
    return read_otlp(decode(data, str(file)), str(file))


def read_otlp(text: str, source: str = "OTLP file") -> OtlpTraffic:
    """The GenAI spans of an OTLP JSON document as traces; ``UsageError`` when none, and
    when the document is malformed, naming ``source`` and the place in it. A call that
    two instrumentations recorded (an agent framework's span holding the client's) is
    one trace, the innermost span's; a file holding an agent's run keeps every span of
    it (:attr:`OtlpTraffic.agent`)."""
    every = list(spans_of(text, source))
    roles = [role(span) for span in every]
    ids = [span_ids(span) for span in every]
    outer = _outer_calls(ids, roles)
    spans = [s for n, s in enumerate(every) if roles[n] == "model" and n not in outer]
    if not spans:
        raise UsageError(
            Message(
                "{source} holds no GenAI spans (spans with gen_ai.* attributes, "
                "OpenInference LLM spans or Langfuse generations)",
                source=source,
            )
        )
    reads = {id(span): trace_of(span) for span in spans}
    read = sorted(reads.values(), key=lambda r: r.trace.started_at)
    traces = [r.trace for r in read]
    writers = Counter(span.scope for span in spans)
    instrumentation = ", ".join(name for name, _ in writers.most_common())
    notes = _notes(read, instrumentation)
    if outer:
        notes += (
            StepNote(
                Step.RUN,
                f"{len(outer)} model calls were recorded twice (an agent framework's span "
                "holding the client's): each is read once, from the span nearer the wire",
            ),
        )
    tree = "agent" in roles or "tool" in roles
    agent = _agent_spans(every, roles, ids, reads) if tree else ()
    return OtlpTraffic(tuple(traces), notes, instrumentation, agent)


def _agent_spans(
    every: list[Span], roles: list[str | None], ids: list[Ids], reads: dict[int, Read]
) -> tuple[AgentSpan, ...]:
    out = []
    for span, kind, (trace_id, own, parent) in zip(every, roles, ids, strict=True):
        read = reads.get(id(span))
        if kind == "model" and read is None:
            kind = "call"  # a framework's span of a call read from its inner span
        start = span.at.get("startTimeUnixNano")
        end = span.at.get("endTimeUnixNano")
        if start.missing:
            continue
        begun = start.integer(0)
        out.append(
            AgentSpan(
                kind or "step",
                _name(span, kind),
                trace_id,
                own,
                parent,
                begun,
                end.integer(begun) if not end.missing else begun,
                read.trace if read is not None else None,
            )
        )
    return tuple(sorted(out, key=lambda s: (s.start_ns, -s.end_ns)))


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


def _name(span: Span, kind: str | None) -> str:
    """A tool's or an agent's own name where the span tells it (the conventions'
    ``gen_ai.tool.name`` and ``gen_ai.agent.name``, OpenInference's ``tool.name`` and
    ``agent.name``), else the span's name."""
    keys = {
        "tool": ("gen_ai.tool.name", "tool.name"),
        "agent": ("gen_ai.agent.name", "agent.name"),
    }.get(kind or "", ())
    named = next((v for key in keys if isinstance(v := span.attributes.get(key), str) and v), None)
    if named is not None:
        return named
    name = span.at.get("name")
    return name.value if isinstance(name.value, str) else ""
