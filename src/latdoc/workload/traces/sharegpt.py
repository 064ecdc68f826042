"""ShareGPT's conversations: a JSON array (or JSON Lines) of ``{"id": ...,
"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}, ...]}``.
Each human turn is a request of its conversation's session, sent with the turn's own
words; the model's answers in the file only size the answer asked for (the endpoint's
own answers are what the session carries). A JSON array is read element by element
as the file is read, never whole. Token counts are the words' (about 0.75 of a token
each in English), an estimate: the endpoint's own usage is what the report reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from latdoc.errors import SSEError, UsageError, nesting_checked
from latdoc.i18n import Message
from latdoc.probe import JSONArrayDecoder
from latdoc.workload.traces._format import Lines, TraceFormat, TraceRequest

_HUMAN = frozenset({"human", "user"})
_MODEL = frozenset({"gpt", "assistant", "model", "chatgpt", "bard", "bing"})


def _sniff(first: str) -> bool:
    text = first.lstrip()
    return text.startswith("[") or '"conversations"' in text


def _read(lines: Lines, source: str) -> Iterator[TraceRequest]:
    first = next(lines, None)
    if first is None:
        return
    if first[1].lstrip().startswith("["):
        yield from _from_array(first, lines, source)
        return
    yield from _conversation(_parse(first[1], f"{source}:{first[0]}"), first[0], source)
    for number, line in lines:
        yield from _conversation(_parse(line, f"{source}:{number}"), number, source)


def _from_array(first: tuple[int, str], lines: Lines, source: str) -> Iterator[TraceRequest]:
    decoder = JSONArrayDecoder()
    element = 0
    number, line = first
    while True:
        try:
            events = decoder.feed(line.encode("utf-8"), 0)
        except SSEError as exc:
            raise UsageError(
                Message(
                    "{source}:{number}: not a JSON array of conversations: {exc}",
                    source=source,
                    number=number,
                    exc=str(exc),
                )
            ) from None
        for event in events:
            element += 1
            where = f"{source}:{number} (conversation {element})"
            yield from _conversation(_parse(event.data, where), number, source, element)
        nxt = next(lines, None)
        if nxt is None:
            return
        number, line = nxt


def _parse(text: str, where: str) -> Any:
    try:
        with nesting_checked(where):
            return json.loads(text)
    except ValueError as exc:
        raise UsageError(
            Message("{where}: invalid JSON ({exc})", where=where, exc=str(exc))
        ) from None


def _conversation(
    obj: Any, number: int, source: str, element: int | None = None
) -> Iterator[TraceRequest]:
    where = f"{source}:{number}" + ("" if element is None else f" (conversation {element})")
    if not isinstance(obj, dict) or not isinstance(obj.get("conversations"), list):
        raise UsageError(
            Message("{where}: expected an object with a list of conversations", where=where)
        )
    session = str(obj.get("id", f"{number}.{element or 0}"))
    turns: list[tuple[str, str]] = []
    for i, turn in enumerate(obj["conversations"]):
        if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
            raise UsageError(
                Message(
                    "{where}: turn {i}: expected {{'from': ..., 'value': text}}", where=where, i=i
                )
            )
        turns.append((str(turn.get("from", "")).lower(), turn["value"]))
    k = 0
    for i, (who, text) in enumerate(turns):
        if who not in _HUMAN or not text.strip():
            continue
        answer = next((t for w, t in turns[i + 1 :] if w in _MODEL), "")
        yield TraceRequest(
            number,
            None,
            max(1, len(text.split())),
            max(1, len(answer.split())),
            session=session,
            turn=k,
            text=text,
        )
        k += 1


FORMAT = TraceFormat("sharegpt", _sniff, _read)
