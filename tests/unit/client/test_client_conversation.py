"""Conversation helpers: trimming never splits a message and keeps the system prompt;
the model (the lab, through the real openai SDK) writes the summary; a token estimate
calibrated on the endpoint's ``usage`` predicts its prompt counts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from latdoc import ContextTooLong, PolicyError
from latdoc.client import (
    Message,
    trim_messages,
)


def words(message: Message) -> int:
    """A counter the tests can reason about: one token per word, two per message."""
    return len(str(message.get("content", "")).split()) + 2


def chat(turns: int, words_per_message: int = 5) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": "be brief"}]
    for i in range(turns):
        messages.append({"role": "user", "content": " ".join([f"u{i}"] * words_per_message)})
        messages.append({"role": "assistant", "content": " ".join([f"a{i}"] * words_per_message)})
    messages.append({"role": "user", "content": "and now?"})
    return messages


def test_trim_keeps_system_and_the_last_turns_that_fit() -> None:
    messages = chat(5)
    # system 4, each old turn 2 × 7 = 14, the open question 4
    kept = trim_messages(messages, 4 + 4 + 14 * 2 + 13, count_tokens=words)
    assert kept[0] is messages[0]
    assert kept[1:] == messages[-5:]
    assert all(any(k is m for m in messages) for k in kept)
    assert sum(words(m) for m in kept) <= 4 + 4 + 14 * 2 + 13


def test_trim_never_starts_with_an_answer_or_a_tool_result() -> None:
    messages: list[Message] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "tool_call_id": "1", "content": "result " * 50},
        {"role": "assistant", "content": "answer"},
        {"role": "user", "content": "next"},
    ]
    kept = trim_messages(messages, 20, count_tokens=words)
    assert kept == [messages[0], messages[-1]]


def test_trim_raises_when_even_the_last_turn_does_not_fit() -> None:
    with pytest.raises(ContextTooLong, match="budget of 5") as info:
        trim_messages(chat(1, 20), 5, count_tokens=words)
    assert info.value.needed_tokens > 5
    with pytest.raises(PolicyError):
        trim_messages(chat(1), 0)


def test_trim_without_keeping_the_system_prompt() -> None:
    messages = chat(3)
    kept = trim_messages(messages, 30, count_tokens=words, keep_system=False)
    assert kept[0]["role"] == "user"
    assert kept[-1] is messages[-1]


message_st = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool", "system"]),
        "content": st.text(alphabet="ab ", max_size=40),
    }
)


@given(
    system=st.lists(
        st.fixed_dictionaries({"role": st.just("system"), "content": st.text("xy ", max_size=10)}),
        max_size=2,
    ),
    history=st.lists(message_st, max_size=25),
    budget=st.integers(min_value=1, max_value=200),
)
def test_trim_property(system: list[Message], history: list[Message], budget: int) -> None:
    messages = [*system, *history]
    # The system prompt is every leading system message, whichever list it came from.
    lead = next((i for i, m in enumerate(messages) if m["role"] != "system"), len(messages))
    system, history = messages[:lead], messages[lead:]
    needed = sum(words(m) for m in system)
    last_user = [i for i, m in enumerate(history) if m["role"] == "user"]
    needed += sum(words(m) for m in history[last_user[-1] if last_user else 0 :])
    if needed > budget:
        with pytest.raises(ContextTooLong):
            trim_messages(messages, budget, count_tokens=words)
        return
    kept = trim_messages(messages, budget, count_tokens=words)
    # The system prompt first, whole and in order.
    assert kept[: len(system)] == system
    rest = kept[len(system) :]
    # Whole messages: the same objects, a suffix of the history.
    assert all(a is b for a, b in zip(rest, history[len(history) - len(rest) :], strict=True))
    assert sum(words(m) for m in kept) <= budget
    if history and rest:
        # It begins a turn, and the turn before it would not have fit.
        start = len(history) - len(rest)
        assert start == 0 or rest[0]["role"] == "user"
        earlier = [i for i in range(start) if history[i]["role"] == "user"]
        previous = earlier[-1] if earlier else (0 if start > 0 else None)
        if previous is not None:
            wider = [*system, *history[previous:]]
            assert sum(words(m) for m in wider) > budget
