"""Each preset's quirks as its entry states them: the usage fields its stream counts
cached and reasoning tokens in, where the stream carries its usage, and the switch that
turns its thinking off. The chat dialect reads every preset's fields, whichever
provider a stream comes from, and an endpoint chosen by a preset asks for thinking off
by that preset's switch."""

from __future__ import annotations

from typing import Any

import pytest

from latdoc import Endpoint, UsageError
from latdoc.probe import choose_api, endpoint_and_connection, parse_event, providers
from latdoc.probe._events import Usage
from latdoc.probe._quirks import OPENAI_CACHED, OPENAI_REASONING, Quirks

OFF_BY_ENABLE = {"enable_thinking": False}
OFF_BY_TYPE = {"thinking": {"type": "disabled"}}

QUIRKS: dict[str, tuple[tuple[str, ...], str, dict[str, Any] | None]] = {
    "groq": ((OPENAI_CACHED,), "x_groq.usage", None),
    "deepseek": (("prompt_cache_hit_tokens",), "usage", None),
    "dashscope": ((OPENAI_CACHED,), "usage", OFF_BY_ENABLE),
    "dashscope-intl": ((OPENAI_CACHED,), "usage", OFF_BY_ENABLE),
    "moonshot": (("cached_tokens",), "choices.0.usage", None),
    "moonshot-intl": (("cached_tokens",), "choices.0.usage", None),
    "zhipu": ((OPENAI_CACHED,), "usage", OFF_BY_TYPE),
    "zhipu-intl": ((OPENAI_CACHED,), "usage", OFF_BY_TYPE),
    "ark": ((OPENAI_CACHED,), "usage", OFF_BY_TYPE),
    "siliconflow": ((OPENAI_CACHED,), "usage", OFF_BY_ENABLE),
    "siliconflow-intl": ((OPENAI_CACHED,), "usage", OFF_BY_ENABLE),
}
"""The presets whose chat API is not OpenAI's likeness in its usage or its thinking:
the cached-token fields, where the usage is, and the fields that turn thinking off.
Every other preset counts as OpenAI does and takes the dialect's effort."""


def _stated(name: str) -> tuple[tuple[str, ...], str, dict[str, Any] | None]:
    return QUIRKS.get(name, ((OPENAI_CACHED,), "usage", None))


@pytest.mark.parametrize("name", providers.names())
def test_each_preset_states_its_quirks(name: str) -> None:
    cached, at, off = _stated(name)
    usage = providers.get(name).quirks.usage
    assert (usage.cached, usage.reasoning, usage.at) == (cached, (OPENAI_REASONING,), at)
    switch = providers.get(name).quirks.thinking
    assert (switch is None) == (off is None)
    if switch is not None:
        assert switch.fields("none", name) == off


def _put(obj: Any, path: str, value: Any) -> None:
    *steps, last = path.split(".")
    for step in steps:
        obj = obj[int(step)] if isinstance(obj, list) else obj.setdefault(step, {})
    obj[last] = value


def _last_chunk(at: str, usage: dict[str, Any]) -> dict[str, Any]:
    """The last chunk of a stream that carries ``usage`` at ``at``."""
    chunk: dict[str, Any] = {
        "id": "chatcmpl-q",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    _put(chunk, at, usage)
    return chunk


@pytest.mark.parametrize("name", [p.name for p in providers.PROVIDERS if "chat" in p.apis])
def test_the_chat_dialect_reads_each_presets_usage_where_it_puts_it(name: str) -> None:
    fields = providers.get(name).quirks.usage
    usage: dict[str, Any] = {"prompt_tokens": 20, "completion_tokens": 9}
    _put(usage, fields.cached[0], 7)
    _put(usage, fields.reasoning[0], 3)
    info = parse_event(_last_chunk(fields.at, usage), "chat")
    assert info.usage == Usage(20, 9, 7, 3)
    assert info.finish_reason == "stop"


def test_usage_in_a_choice_is_read_from_a_chunk_that_also_carries_text() -> None:
    chunk = {
        "choices": [
            {
                "index": 0,
                "delta": {"content": "ok"},
                "finish_reason": None,
                "usage": {"prompt_tokens": 4, "completion_tokens": 1, "cached_tokens": 2},
            }
        ]
    }
    info = parse_event(chunk, "chat")
    assert (info.output_chars, info.usage) == (2, Usage(4, 1, 2, None))


def test_openais_fields_come_first_and_a_missing_count_is_none() -> None:
    assert providers.CACHED_TOKEN_FIELDS[0] == OPENAI_CACHED
    both = {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 5}, "cached_tokens": 6}
    assert parse_event({"choices": [], "usage": both}, "chat").usage == Usage(9, None, 5, None)
    plain = {"prompt_tokens": 9, "completion_tokens": 2, "prompt_cache_hit_tokens": True}
    assert parse_event({"choices": [], "usage": plain}, "chat").usage == Usage(9, 2, None, None)


@pytest.mark.parametrize(
    ("quirks", "words"),
    [
        (Quirks(), ()),
        (
            providers.get("moonshot").quirks,
            ("usage in choices[0].usage of the last chunk", "cached prompt tokens in "
             "usage.cached_tokens"),
        ),
        (providers.get("deepseek").quirks, ("cached prompt tokens in "
                                            "usage.prompt_cache_hit_tokens",)),
        (providers.get("groq").quirks, ("usage in x_groq.usage of the last chunk",)),
        (providers.get("zhipu").quirks, ("thinking on|off by thinking.type enabled|disabled",)),
        (
            providers.get("siliconflow").quirks,
            ("thinking on|off by enable_thinking true|false",
             "x-siliconcloud-trace-id names each response"),
        ),
    ],
)  # fmt: skip
def test_quirks_in_words(quirks: Quirks, words: tuple[str, ...]) -> None:
    assert quirks.words() == words


@pytest.mark.parametrize(
    ("provider", "effort", "fields"),
    [
        ("dashscope", "none", OFF_BY_ENABLE),
        ("siliconflow", "none", OFF_BY_ENABLE),
        ("zhipu", "none", OFF_BY_TYPE),
        ("ark", "none", OFF_BY_TYPE),
        ("deepseek", "low", {"reasoning_effort": "low"}),
        (None, "none", {"reasoning_effort": "none"}),
    ],
)
def test_an_endpoint_asks_for_thinking_off_by_its_presets_switch(
    provider: str | None, effort: str, fields: dict[str, Any]
) -> None:
    spec = None if provider is None else providers.get(provider)
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", provider=spec)
    assert endpoint.reasoning_fields(effort) == fields


def test_a_switch_takes_no_effort_but_none() -> None:
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", provider=providers.get("dashscope"))
    with pytest.raises(UsageError) as raised:
        endpoint.reasoning_fields("low")
    text = str(raised.value)
    assert text.startswith("--provider dashscope turns thinking on or off (enable_thinking")
    assert "--reasoning-effort none turns it off" in text and "\n" not in text


def test_the_preset_chosen_reaches_the_endpoint() -> None:
    lab = "http://127.0.0.1:9/v1"
    chosen = choose_api(lab, provider="zhipu")
    assert chosen.provider is providers.get("zhipu")
    assert choose_api(lab).provider is None
    endpoint, _ = endpoint_and_connection(lab, "glm", api=chosen.dialect, provider=chosen.provider)
    assert endpoint.provider is providers.get("zhipu")
    assert endpoint.reasoning_fields("none") == OFF_BY_TYPE
