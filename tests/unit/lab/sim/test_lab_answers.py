"""A prompt that asks for a text back is answered with it, by every API the lab serves,
and reversed by a model the config marks wrong: the lab's way to make one arm of an
experiment answer wrongly. Every other prompt still gets the word cycle, byte for byte.

Each request goes through the lab's ASGI application in the test's own loop (no
socket), its body built and its events read by latdoc's own dialects."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

import pytest

from latdoc.lab.sim import REPEAT, LabConfig, LatencyModel, output_text
from latdoc.lab.sim._app import create_app
from latdoc.probe.dialects import get

QUICK = LatencyModel(prefill_base_ms=0.0, prefill_ms_per_token=0.0, decode_ms_per_token=0.0)
CONFIG = LabConfig(latency=QUICK, alt_models={"lab-wrong": QUICK}, wrong_models=("lab-wrong",))
BASE = {"gemini": "http://lab/v1beta"}
"""Where each API's base URL ends, where it is not ``/v1``."""
SSE_APIS = ("chat", "completions", "anthropic", "responses", "gemini")


def _exchange(
    config: LabConfig, api: str, model: str, prompt: str, max_tokens: int, *, stream: bool = True
) -> bytes:
    """The response body of one request to the lab, as ``api`` sends it (streamed, or not)."""
    spec = get(api)
    url = urlsplit(spec.url(BASE.get(api, "http://lab/v1"), model))
    fields = spec.body(model, [{"role": "user", "content": prompt}], max_tokens, stream)
    body = json.dumps(fields if stream else {**fields, "stream": False})
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": url.path, "raw_path": url.path.encode(),
        "query_string": url.query.encode(), "root_path": "",
        "headers": [(b"content-type", b"application/json"), *spec.auth_headers(None)],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2),
    }  # fmt: skip
    sent = False
    written: list[bytes] = []

    async def receive() -> dict[str, object]:
        nonlocal sent
        if sent:  # the client stays connected until the response ends
            await asyncio.Event().wait()
        sent = True
        return {"type": "http.request", "body": body.encode(), "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            assert message["status"] == 200, message
        written.append(message.get("body", b""))

    asyncio.run(create_app(config)(scope, receive, send))
    return b"".join(written)


def answer(
    api: str, model: str, prompt: str, max_tokens: int = 64, config: LabConfig = CONFIG
) -> tuple[str, str | None]:
    """The answer's text and finish reason as latdoc's ``api`` dialect reads the stream."""
    spec = get(api)
    text, finish = "", None
    body = _exchange(config, api, model, prompt, max_tokens).replace(b"\r\n", b"\n")
    for frame in body.split(b"\n\n"):
        data = [line[6:] for line in frame.split(b"\n") if line.startswith(b"data: ")]
        if not data or data[0] == b"[DONE]":
            continue
        info = spec.parse(json.loads(data[0]), None, lambda obj, event: None)
        if info.output_chars:
            text += info.text
        finish = info.finish_reason or finish
    return text, finish


@pytest.mark.parametrize("api", SSE_APIS)
def test_a_repeat_prompt_is_answered_with_its_text_in_every_api(api: str) -> None:
    assert answer(api, "lab-sim", f'{REPEAT} {{"city": "Paris"}}') == ('{"city": "Paris"}', "stop")


@pytest.mark.parametrize("api", SSE_APIS)
def test_a_model_marked_wrong_answers_it_reversed(api: str) -> None:
    assert answer(api, "lab-wrong", f"{REPEAT} Paris, France") == ("ecnarF ,siraP", "stop")


def test_an_answer_longer_than_the_limit_is_cut_there() -> None:
    """``Paris, France`` is three lab tokens: the limit keeps two, as it would any answer."""
    assert answer("chat", "lab-sim", f"{REPEAT} Paris, France", max_tokens=2) == (
        "Paris,",
        "length",
    )


def test_every_other_prompt_still_gets_the_word_cycle_on_every_model() -> None:
    cycle = (output_text(8), "length")
    plain = LabConfig(latency=QUICK)
    for prompt in ("Repeat after me: Paris", "Which is larger, the sun or the moon?"):
        assert answer("chat", "lab-sim", prompt, 8, plain) == cycle
        for model in ("lab-sim", "lab-wrong"):
            assert answer("chat", model, prompt, 8) == cycle


def test_a_whole_answer_not_streamed_is_the_repeated_text() -> None:
    document = json.loads(_exchange(CONFIG, "chat", "lab-wrong", f"{REPEAT} yes", 8, stream=False))
    assert document["choices"][0]["message"]["content"] == "sey"
    assert document["usage"]["completion_tokens"] == 1


def test_a_wrong_model_must_be_served() -> None:
    with pytest.raises(ValueError, match="not served"):
        LabConfig(wrong_models=("lab-other",))
