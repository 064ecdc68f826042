"""Thinking written into the answer between ``<think>`` tags is reasoning: its text and
its time, wherever the events cut the tags; an answer that opens no tag reads as it
always did."""

from __future__ import annotations

import json

import pytest

from latdoc.probe._recorder import Recorder
from latdoc.probe._sse import SSEEvent
from latdoc.probe._stream_state import StreamState
from latdoc.probe._think import ThinkTags

THOUGHT = "<think>\nSix times seven: 42.\n</think>\n\n"
ANSWER = "It is 42."


def _split(pieces: list[str]) -> list[tuple[int, int]]:
    """Each piece's (thinking, answer) characters, with a piece that proved to open the
    tag moved to the thinking, as the stream's state moves it."""
    tags = ThinkTags()
    out: list[tuple[int, int]] = []
    for piece in pieces:
        thought, answer, opened = tags.split(piece)
        if opened:
            out = [(a + t, 0) for t, a in out]
        out.append((thought, answer))
    return out


def _chat(content: str, *, reasoning: str | None = None) -> SSEEvent:
    delta = {"content": content} if reasoning is None else {"reasoning_content": reasoning}
    obj = {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    return SSEEvent(json.dumps(obj), None, None, 0)


def _read(*events: SSEEvent) -> StreamState:
    """The stream's state after ``events``, the ``i``-th arriving at ``i`` + 1 ns."""
    state = StreamState(0, None)
    rec = Recorder()
    for t, event in enumerate(events, 1):
        state.on_event(SSEEvent(event.data, None, None, t), rec)
    return state


@pytest.mark.parametrize("cut", range(1, len(THOUGHT + ANSWER)))
def test_every_cut_in_two_reads_the_thinking_and_the_answer_alike(cut: int) -> None:
    text = THOUGHT + ANSWER
    parts = _split([text[:cut], text[cut:]])
    assert sum(t for t, _ in parts) == len(THOUGHT)
    assert sum(a for _, a in parts) == len(ANSWER)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_a_stream_cut_in_small_pieces_begins_its_answer_at_its_first_word(size: int) -> None:
    text = THOUGHT + ANSWER
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    parts = _split(pieces)
    first_answer = next(i for i, (_, a) in enumerate(parts) if a)
    assert first_answer == len(THOUGHT) // size
    state = _read(*(_chat(p) for p in pieces))
    assert state.first_token == state.first_reasoning == 1
    assert state.first_answer == first_answer + 1


def test_a_tag_split_across_events_moves_its_start_to_the_thinking() -> None:
    state = _read(_chat("\n<thi"), _chat("nk>Hmm"), _chat(" yes</th"), _chat("ink>"), _chat("Hi"))
    assert (state.first_token, state.first_reasoning, state.first_answer) == (1, 1, 5)
    assert _split(["\n<thi", "nk>Hmm", " yes</th", "ink>", "Hi"]) == [
        (5, 0),
        (6, 0),
        (8, 0),
        (4, 0),
        (0, 2),
    ]


def test_minimax_m3_tags_are_read_too() -> None:
    state = _read(_chat("<mm:think>Hmm"), _chat("</mm:think>\n"), _chat("Hi"))
    assert (state.first_reasoning, state.first_answer) == (1, 3)


def test_a_tag_never_closed_leaves_every_token_reasoning() -> None:
    state = _read(_chat("<think>"), _chat("Still"), _chat(" thinking"))
    assert (state.first_token, state.first_reasoning, state.first_answer) == (1, 1, None)
    assert [c.chars for c in state.chunks] == [7, 5, 9]


@pytest.mark.parametrize(
    "pieces",
    [
        ["Hello", " <think>"],
        ["\n\n", "Hello"],
        ["<", "b>bold</b>"],
        ["<thinking>", "x</thinking>"],
        [" <thin", "g>"],
    ],
)
def test_an_answer_that_opens_no_tag_reads_as_it_always_did(pieces: list[str]) -> None:
    state = _read(*(_chat(p) for p in pieces))
    assert (state.first_token, state.first_reasoning, state.first_answer) == (1, None, 1)
    assert _split(pieces) == [(0, len(p)) for p in pieces]


def test_reasoning_content_then_an_answer_reads_as_it_always_did() -> None:
    state = _read(_chat("", reasoning="Hmm"), _chat("\n\n"), _chat("Hi <think>"))
    assert (state.first_token, state.first_reasoning, state.first_answer) == (1, 1, 2)
