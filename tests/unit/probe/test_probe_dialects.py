"""The probe in each dialect: Anthropic Messages, OpenAI Responses and chat, with
reasoning timed apart from the answer, tool calls as output, unknown events counted,
error events classed as their status, and a wrong ``--api`` named."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from latdoc.probe import dialect_hint, dialects, request_body


def test_an_anthropic_url_refusing_another_dialect_is_told_which() -> None:
    hint = dialect_hint("https://api.anthropic.com/v1/chat/completions", dialects.chat.SPEC, 401)
    assert hint is not None and "--api anthropic" in hint
    assert (
        dialect_hint("https://api.anthropic.com/v1/messages", dialects.anthropic.SPEC, 401) is None
    )
    assert (
        dialect_hint("http://h/v1/chat/completions", dialects.chat.SPEC, 404, "model not found")
        is None
    )


def test_request_bodies_per_dialect() -> None:
    convo = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    anthropic = request_body(dialects.anthropic.SPEC, "m", convo, 9, include_usage=True)
    responses = request_body(dialects.responses.SPEC, "m", "Hi", 9, include_usage=True)
    assert anthropic["system"] == "Be brief." and anthropic["messages"] == convo[1:]
    assert anthropic["max_tokens"] == 9 and "stream_options" not in anthropic
    assert responses["input"] == [{"role": "user", "content": "Hi"}]
    assert responses["max_output_tokens"] == 9 and "max_tokens" not in responses


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=4), st.just([]), st.just({})
)


_DELTAS = st.dictionaries(
    st.sampled_from(["content", "role", "reasoning_content", "tool_calls", "refusal"]), _VALUES
)


_CHOICES = st.fixed_dictionaries(
    {"index": st.just(0), "delta": st.one_of(_DELTAS, _VALUES)},
    optional={"finish_reason": _VALUES, "text": _VALUES, "logprobs": st.none()},
)


_CHUNKS = st.fixed_dictionaries(
    {"choices": st.one_of(st.lists(_CHOICES, max_size=2), _VALUES)},
    optional={
        "id": _VALUES,
        "object": st.just("chat.completion.chunk"),
        "usage": st.one_of(st.none(), st.just({"prompt_tokens": 3, "completion_tokens": 2})),
        "timings": st.just({"prompt_ms": 1.5}),
        "error": _VALUES,
    },
)


_PLAIN_CHUNKS = st.fixed_dictionaries(
    {
        "id": st.one_of(st.text(max_size=8), _VALUES),
        "choices": st.lists(
            st.fixed_dictionaries(
                {"index": st.just(0),
                 "delta": st.fixed_dictionaries({"content": st.one_of(st.text(), _VALUES)},
                                                optional={"role": st.just("assistant")})},
                optional={"finish_reason": st.one_of(st.none(), st.just("stop")),
                          "logprobs": st.none()},
            ),
            min_size=1, max_size=2,
        ),
    },
    optional={"model": st.just("m"), "usage": st.none(), "x_groq": st.just({})},
)  # fmt: skip


"""Mostly the commonest chunk, with the few changes that take it off the fast reading."""


@settings(max_examples=400, deadline=None)
@given(st.one_of(_CHUNKS, _PLAIN_CHUNKS))
def test_the_glance_at_a_plain_chunk_reads_it_as_the_general_reading_does(obj: Any) -> None:
    """The fast reading of the commonest chunk (one choice, a delta of content) gives
    what the general one gives, and steps aside for everything else."""
    from latdoc.probe.dialects.chat import parse_chat_event, read_chat_event

    def foreign(_obj: Any, _event: str | None) -> None:
        return None

    assert parse_chat_event(obj, None, foreign) == read_chat_event(obj, None, foreign)
