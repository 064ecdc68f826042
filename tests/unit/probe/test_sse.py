"""Tests for the incremental event-stream decoder, :mod:`latdoc.probe.sse`."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from latdoc import SSEError
from latdoc.probe import SSEDecoder, SSEEvent

Triple = tuple[str, str | None, str | None]

CLOSE_T = 10_000


def run(chunks: Iterable[bytes], close_t: int = CLOSE_T) -> tuple[list[SSEEvent], SSEDecoder]:
    """Feed ``chunks`` with t_ns = their index, then close; return all events."""
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for i, chunk in enumerate(chunks):
        events += decoder.feed(chunk, i)
    events += decoder.close(close_t)
    return events, decoder


def triples(events: Iterable[SSEEvent]) -> list[Triple]:
    return [(e.data, e.event, e.id) for e in events]


def split_at(raw: bytes, points: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted(points), len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(bounds)]


def every_split_in_two(raw: bytes) -> Iterable[list[bytes]]:
    for i in range(len(raw) + 1):
        yield [raw[:i], raw[i:]]


# -- basic framing ------------------------------------------------------------


def test_one_event_in_one_read() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"event: delta\nid: 7\ndata: hello\n\n", 42)
    assert events == [SSEEvent(data="hello", event="delta", id="7", t_ns=42)]
    assert decoder.close(43) == []


def test_several_events_in_one_read() -> None:
    raw = b"data: a\n\ndata: b\n\nevent: x\ndata: c\n\n"
    events, _ = run([raw])
    assert triples(events) == [("a", None, None), ("b", None, None), ("c", "x", None)]
    assert [e.t_ns for e in events] == [0, 0, 0]


def test_event_split_across_reads() -> None:
    raw = b'data: {"choices": [{"delta": {"content": "Hi"}}]}\n\n'
    for chunks in every_split_in_two(raw):
        events, _ = run(chunks)
        assert triples(events) == [('{"choices": [{"delta": {"content": "Hi"}}]}', None, None)]


def test_byte_at_a_time() -> None:
    raw = b"event: e1\ndata: one\ndata: two\n\n: ping\nid: 9\ndata: three\n\n"
    events, decoder = run([raw[i : i + 1] for i in range(len(raw))])
    assert triples(events) == [("one\ntwo", "e1", None), ("three", None, "9")]
    assert decoder.comments == 1


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_line_endings(eol: str) -> None:
    raw = f"event: a{eol}data: 1{eol}data: 2{eol}{eol}data: 3{eol}{eol}".encode()
    for chunks in every_split_in_two(raw):
        events, _ = run(chunks)
        assert triples(events) == [("1\n2", "a", None), ("3", None, None)]


def test_mixed_line_endings() -> None:
    raw = b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r"
    events, _ = run([raw])
    assert triples(events) == [("a\nb\nc", None, None), ("d", None, None)]


def test_cr_at_end_of_read_then_lf_is_one_line_ending() -> None:
    events, _ = run([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert triples(events) == [("a\nb", None, None)]
    assert events[0].t_ns == 2


def test_cr_lf_separated_by_empty_reads_and_a_partial_character() -> None:
    events, _ = run([b"data: a\r", b"", b"\n", b"\n"])
    assert triples(events) == [("a", None, None)]
    assert events[0].t_ns == 3
    euro = "€".encode()
    events, _ = run([b"data: a\r", b"data: " + euro[:1], b"", euro[1:] + b"\r", b"\n", b"\n"])
    assert triples(events) == [("a\n€", None, None)]
    assert events[0].t_ns == 5


def test_lf_after_cr_only_swallowed_once() -> None:
    events, _ = run([b"data: a\r", b"\n", b"\n"])
    assert triples(events) == [("a", None, None)]
    assert events[0].t_ns == 2


def test_only_cr_and_lf_end_lines() -> None:
    weird = "x\u2028y\x0bz\x0c\x1c\x1d\x1e\x85w"
    events, _ = run([f"data: {weird}\n\n".encode()])
    assert triples(events) == [(weird, None, None)]


# -- fields -------------------------------------------------------------------


def test_comments_are_counted_not_dispatched() -> None:
    events, decoder = run([b": keep-alive\n\n:\n: another: one\ndata: x\n\n"])
    assert triples(events) == [("x", None, None)]
    assert decoder.comments == 3


def test_keep_alive_comments_before_the_first_event_are_stamped() -> None:
    """DeepSeek's ``: keep-alive`` while a request waits: how many came before the first
    event and when the first and last arrived; other comments, and any after the first
    event, are only counted."""
    reads = [b": keep-alive\n\n", b": PROCESSING\n\n", b":keep-alive\n", b"\n: KEEP-ALIVE\n"]
    _, decoder = run([*reads, b"data: x\n\n: keep-alive\n\n"])
    assert decoder.keepalive == (3, 0, 3)
    assert decoder.comments == 5
    _, decoder = run([b"data: x\n\n", b": keep-alive\n\n"])
    assert decoder.keepalive is None and decoder.comments == 1


def test_multi_line_data_and_empty_data_lines() -> None:
    events, _ = run([b"data: first\ndata:\ndata\ndata:  indented\n\n"])
    assert triples(events) == [("first\n\n\n indented", None, None)]


def test_whatwg_spec_examples() -> None:
    events, _ = run([b"data\n\ndata\ndata\n\n"])
    assert triples(events) == [("", None, None), ("\n", None, None)]
    events, _ = run([b"data:test\n\ndata: test\n\n"])
    assert triples(events) == [("test", None, None), ("test", None, None)]


def test_value_keeps_everything_after_the_first_colon() -> None:
    events, _ = run([b'data: {"a": "b:c"}\nevent:x: y\n\n'])
    assert triples(events) == [('{"a": "b:c"}', "x: y", None)]


def test_event_without_data_is_not_dispatched_and_does_not_leak() -> None:
    events, _ = run([b"event: ping\nid: 1\n\ndata: x\n\n"])
    assert triples(events) == [("x", None, None)]


def test_event_and_id_reset_after_dispatch() -> None:
    events, _ = run([b"event: a\nid: 1\ndata: x\n\ndata: y\n\n"])
    assert triples(events) == [("x", "a", "1"), ("y", None, None)]


def test_empty_event_and_id_values_are_kept_literally() -> None:
    events, _ = run([b"event:\nid\ndata: x\n\n"])
    assert triples(events) == [("x", "", "")]


def test_later_field_overrides_earlier_one() -> None:
    events, _ = run([b"event: a\nevent: b\nid: 1\nid: 2\ndata: x\n\n"])
    assert triples(events) == [("x", "b", "2")]


def test_id_with_nul_is_ignored() -> None:
    events, _ = run([b"id: good\nid: ba\x00d\ndata: x\n\nid: \x00\ndata: y\n\n"])
    assert triples(events) == [("x", None, "good"), ("y", None, None)]


def test_retry_and_unknown_fields_are_ignored() -> None:
    raw = b"retry: 1000\nfoo: bar\nData: no\ndata : no\n data: no\ndata: yes\n\n"
    events, decoder = run([raw])
    assert triples(events) == [("yes", None, None)]
    assert decoder.comments == 0


def test_openai_style_stream_with_done() -> None:
    raw = (
        b'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n'
        b'data: {"choices":[{"delta":{"content":"lo"}}]}\n\n'
        b"data: [DONE]\n\n"
    )
    events, _ = run([raw[:30], raw[30:70], raw[70:]])
    assert [e.data for e in events] == [
        '{"choices":[{"delta":{"content":"Hel"}}]}',
        '{"choices":[{"delta":{"content":"lo"}}]}',
        "[DONE]",
    ]
    assert [e.t_ns for e in events] == [1, 2, 2]


# -- end of stream --------------------------------------------------------------


@pytest.mark.parametrize(
    "tail", [b"data: [DONE]", b"data: [DONE]\n", b"data: [DONE]\r", b"data: [DONE]\r\n"]
)
def test_missing_final_blank_line_dispatches_at_close(tail: bytes) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n" + tail, 5) == [SSEEvent("a", None, None, 5)]
    assert decoder.close(99) == [SSEEvent("[DONE]", None, None, 99)]


def test_close_parses_a_pending_partial_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"event: end\ndata: x\nid: 3", 1) == []
    assert decoder.close(2) == [SSEEvent("x", "end", "3", 2)]


def test_close_without_pending_data_dispatches_nothing() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\nevent: only\n: bye", 1) == [SSEEvent("a", None, None, 1)]
    assert decoder.close(2) == []
    assert decoder.comments == 1


def test_close_is_idempotent_and_feed_after_close_fails() -> None:
    decoder = SSEDecoder()
    assert decoder.close(1) == []
    assert decoder.close(2) == []
    with pytest.raises(SSEError, match="closed"):
        decoder.feed(b"data: x\n\n", 3)


# -- t_ns -----------------------------------------------------------------------


def test_t_ns_is_the_read_that_completed_the_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n", 100) == []
    assert decoder.feed(b"\ndata: b\n\ndata: c", 200) == [
        SSEEvent("a", None, None, 200),
        SSEEvent("b", None, None, 200),
    ]
    assert decoder.feed(b"\n", 300) == []
    assert decoder.feed(b"\n", 400) == [SSEEvent("c", None, None, 400)]


def test_t_ns_with_blank_line_ended_by_crlf_split() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\n\r", 1) == [SSEEvent("a", None, None, 1)]
    assert decoder.feed(b"\ndata: b\r\n\r\n", 2) == [SSEEvent("b", None, None, 2)]


# -- UTF-8 ----------------------------------------------------------------------


@pytest.mark.parametrize("char", ["é", "€", "😀", "\u2028"])
def test_multi_byte_character_split_across_reads(char: str) -> None:
    raw = f"data: a{char}b\n\n".encode()
    for chunks in every_split_in_two(raw):
        events, _ = run(chunks)
        assert triples(events) == [(f"a{char}b", None, None)]
    encoded = char.encode()
    events, _ = run([b"data: ", *(encoded[i : i + 1] for i in range(len(encoded))), b"\n\n"])
    assert triples(events) == [(char, None, None)]


def test_leading_bom_is_ignored_even_when_split() -> None:
    raw = b"\xef\xbb\xbfdata: x\n\n"
    for chunks in every_split_in_two(raw):
        events, _ = run(chunks)
        assert triples(events) == [("x", None, None)]
    events, _ = run([raw[i : i + 1] for i in range(len(raw))])
    assert triples(events) == [("x", None, None)]


def test_only_one_bom_is_stripped() -> None:
    events, _ = run([b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n"])
    assert triples(events) == [("y", None, None)]


def test_bom_inside_the_stream_is_data() -> None:
    events, _ = run([b"data: x\n\n\xef\xbb\xbfdata: y\n\ndata: \xef\xbb\xbfz\n\n"])
    assert triples(events) == [("x", None, None), ("\ufeffz", None, None)]


def test_invalid_utf8_raises_with_offset() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: ok\n\n", 1) == [SSEEvent("ok", None, None, 1)]
    with pytest.raises(SSEError, match=r"not valid UTF-8 near byte 16\b"):
        decoder.feed(b"data: \xff\n\n", 2)
    with pytest.raises(SSEError, match="UTF-8"):
        decoder.feed(b"data: fine\n\n", 3)
    with pytest.raises(SSEError, match="UTF-8"):
        decoder.close(4)


def test_invalid_utf8_offset_counts_bytes_held_back_by_the_decoder() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: \xe2\x82", 1)
    with pytest.raises(SSEError, match=r"near byte 6\b"):
        decoder.feed(b"x\n\n", 2)


def test_truncated_utf8_at_close_raises() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: \xf0\x9f\x98", 1) == []
    with pytest.raises(SSEError, match=r"not valid UTF-8 near byte 6\b"):
        decoder.close(2)


@pytest.mark.parametrize("bad", [b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf5\x80\x80\x80"])
def test_invalid_sequences_raise_sse_error(bad: bytes) -> None:
    with pytest.raises(SSEError):
        run([b"data: ", bad, b"\n\n"])


# -- properties -----------------------------------------------------------------

_SPECIAL = ["é", "€", "😀", "\u2028", "\x85", "\x0b", "\ufeff", "\x00", ":", " ", "\t"]
_CHARS = st.one_of(
    st.sampled_from(_SPECIAL), st.characters(codec="utf-8", exclude_characters="\r\n")
)
_VALUE = st.builds(
    str.__add__, st.sampled_from(["", "", " ", "  "]), st.text(alphabet=_CHARS, max_size=10)
)
_ID = _VALUE.filter(lambda s: "\x00" not in s)
_UNKNOWN = st.sampled_from(["foo", "Data", "data ", " data", "ID", "eventx", "retry"])


@dataclass(frozen=True)
class Stream:
    raw: bytes
    expected: list[Triple]
    dispatch_at: list[int | None]
    """Byte offset of each expected event's dispatching line ending; None: at close."""
    comments: int


def _field(draw: st.DrawFn, name: str, value: str) -> str:
    forms = [f"{name}: {value}"]
    if not value.startswith(" "):
        forms.append(f"{name}:{value}")
    if not value:
        forms.append(name)
    return draw(st.sampled_from(forms))


@st.composite
def streams(draw: st.DrawFn) -> Stream:
    out = bytearray(b"\xef\xbb\xbf" if draw(st.booleans()) else b"")
    expected: list[Triple] = []
    dispatch_at: list[int | None] = []
    comments = 0
    prev_cr = False

    def emit(line: str, *, ending: bool = True) -> None:
        nonlocal prev_cr
        out.extend(line.encode())
        if not ending:
            prev_cr = False
            return
        choices = ["\n", "\r\n", "\r"]
        if prev_cr and not line:
            choices.remove("\n")
        eol = draw(st.sampled_from(choices))
        prev_cr = eol == "\r"
        out.extend(eol.encode())

    n_blocks = draw(st.integers(0, 5))
    for block in range(n_blocks):
        data = draw(st.lists(_VALUE, max_size=3))
        event = draw(st.none() | _VALUE)
        id_ = draw(st.none() | _ID)
        lines = [_field(draw, "data", value) for value in data]
        extras: list[str] = []
        if event is not None:
            extras.append(_field(draw, "event", event))
        if id_ is not None:
            extras.append(_field(draw, "id", id_))
        if draw(st.booleans()):
            extras.append(_field(draw, "id", draw(_VALUE) + "\x00"))
        if draw(st.booleans()):
            extras.append(_field(draw, draw(_UNKNOWN), draw(_VALUE)))
        n_comments = draw(st.integers(0, 2))
        comments += n_comments
        extras += [":" + draw(_VALUE) for _ in range(n_comments)]
        for extra in extras:
            lines.insert(draw(st.integers(0, len(lines))), extra)

        last = block == n_blocks - 1
        unterminated = last and draw(st.booleans())
        for i, line in enumerate(lines):
            final_line = i == len(lines) - 1
            emit(line, ending=not (unterminated and final_line and draw(st.booleans())))
        if data:
            expected.append(("\n".join(data), event, id_))
        if unterminated:
            if data:
                dispatch_at.append(None)
            break
        if data:
            dispatch_at.append(len(out))
        emit("")
        for _ in range(draw(st.integers(0, 1))):
            emit("")
    return Stream(bytes(out), expected, dispatch_at, comments)


@settings(max_examples=150, deadline=None)
@given(stream=streams(), data=st.data())
def test_any_split_gives_the_intended_events(stream: Stream, data: st.DataObject) -> None:
    whole, decoder = run([stream.raw])
    assert triples(whole) == stream.expected
    assert decoder.comments == stream.comments

    points = sorted(data.draw(st.lists(st.integers(0, len(stream.raw)), max_size=12)))
    chunks = split_at(stream.raw, points)
    events, decoder = run(chunks, close_t=len(chunks))
    assert triples(events) == stream.expected
    assert decoder.comments == stream.comments
    want_t = [
        len(chunks) if at is None else bisect.bisect_right(points, at) for at in stream.dispatch_at
    ]
    assert [e.t_ns for e in events] == want_t

    bytewise, _ = run([stream.raw[i : i + 1] for i in range(len(stream.raw))])
    assert triples(bytewise) == stream.expected


_PIECES = st.sampled_from(
    [
        b"data:",
        b"data: ",
        b"event:",
        b"id:",
        b":",
        b"\r",
        b"\n",
        b"\r\n",
        b"\x00",
        b"\xef\xbb\xbf",
        b"\xef\xbb",
        b"\xe2\x82",
        b"\xac",
        b"\xf0\x9f\x98",
        b"\x80",
        b"\xff",
        "é😀".encode(),
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    raw=st.lists(st.one_of(_PIECES, st.binary(max_size=6)), max_size=30).map(b"".join),
    data=st.data(),
)
def test_arbitrary_bytes_only_ever_raise_sse_error(raw: bytes, data: st.DataObject) -> None:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        first_bad: int | None = exc.start
    else:
        first_bad = None

    points = data.draw(st.lists(st.integers(0, len(raw)), max_size=10))
    chunks = split_at(raw, points)
    if first_bad is None:
        events, _ = run(chunks)
        whole, _ = run([raw])
        assert [(e.data, e.event, e.id) for e in events] == triples(whole)
    else:
        with pytest.raises(SSEError, match="not valid UTF-8") as info:
            run(chunks)
        found = re.search(r"near byte (\d+)", str(info.value))
        assert found is not None
        assert int(found.group(1)) == first_bad
