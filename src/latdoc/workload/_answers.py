"""The answer's own text, kept as it streams: what a conversation carries to its next
turn, and what a check of the answer reads (the probe's trace keeps only each chunk's
size)."""

from __future__ import annotations

from latdoc.probe import EventInfo, InfoHook


def answer_of(into: list[str], calls: dict[object, dict[str, str]] | None = None) -> InfoHook:
    """A request's ``on_info`` hook (each event as its dialect read it, in any dialect,
    Bedrock's event stream among them, and parsed once): the answer's text appended to
    ``into`` (not its reasoning, nor a tool call's name and arguments), and, where
    ``calls`` is given, each tool call kept by its place in the answer: its ``id``,
    ``name`` and the text of its ``arguments``. What a conversation carries to its next
    turn, and what an agent puts back in it to answer the call."""

    def hook(info: EventInfo, t_ns: int) -> None:
        # The dialects give an event's text as its reasoning, its answer, then its tool
        # calls' names and arguments.
        if info.output_chars > info.tool_chars:
            start = info.reasoning_chars
            into.append(info.text[start : start + info.output_chars - info.tool_chars])
        if calls is None:
            return
        for part in info.tool_parts:
            place: object = part.place if part.place is not None else ("whole", len(calls))
            kept = calls.setdefault(place, {"id": "", "name": "", "arguments": ""})
            if part.call_id:
                kept["id"] = part.call_id
            if part.name and not kept["name"]:
                kept["name"] = part.name
            kept["arguments"] += part.arguments

    return hook
