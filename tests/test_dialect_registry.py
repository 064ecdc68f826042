"""The registry of API dialects is the one list: ``--api``, the key, the URL, the
dialect a request path speaks and the event that names another dialect all read
``latdoc.probe.dialects.DIALECTS``, and a dialect may name its model in the path.
The lab's stand-ins are its own one list (``latdoc.lab.sim.dialects.STAND_INS``),
routed as they are listed, a model in the route included."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import httpx
import pytest

import latdoc.lab.sim.dialects as lab_dialects
from conftest import LabFactory
from latdoc import Dialect, Endpoint, UsageError
from latdoc.cli import build_parser, main
from latdoc.cli._options import api_key
from latdoc.client._request_facts import dialect_of
from latdoc.lab.sim import output_token
from latdoc.lab.sim.dialects import StandIn
from latdoc.lab.sim.dialects.chat import STAND_IN as CHAT_STAND_IN
from latdoc.probe import check_extra_body, dialects, parse_event
from latdoc.probe._dialects import request_body
from latdoc.probe._events import EventInfo
from latdoc.probe.dialects import DialectSpec, Route

TODAY = {
    "chat": "/chat/completions",
    "completions": "/completions",
    "anthropic": "/messages",
    "responses": "/responses",
}
"""Each dialect's route after the base URL, as requests have always been sent."""


def _toy_body(model: str, messages: Any, max_tokens: int, include_usage: bool) -> dict[str, Any]:
    contents = [{"role": m["role"], "parts": [{"text": m["content"]}]} for m in messages]
    return {"contents": contents, "generationConfig": {"maxOutputTokens": max_tokens}}


def _toy_parse(obj: Any, event: str | None, foreign: Any) -> EventInfo:
    if isinstance(obj, dict) and "candidates" in obj:
        parts = obj["candidates"][0]["content"]["parts"]
        text = "".join(p["text"] for p in parts)
        return EventInfo(output_chars=len(text), text=text)
    return EventInfo(unknown=True, other_dialect=foreign(obj, event))


TOY = DialectSpec(
    name="toy",
    title="a Gemini-like API",
    route=Route("/models/{model}:streamGenerateContent?alt=sse"),
    key_variable="TOY_API_KEY",
    auth_headers=lambda key: [(b"x-goog-api-key", key.encode())] if key else [],
    body=_toy_body,
    body_fields={"contents": "the prompt options set it"},
    parse=_toy_parse,
    end_marker="a finishReason",
    claims=lambda obj, event: "candidates" in obj,
)


@pytest.fixture
def toy_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dialects, "DIALECTS", (*dialects.DIALECTS, TOY))


@pytest.mark.parametrize("base_url", ["https://api.example.com/v1", "https://api.example.com/v1/"])
def test_each_dialect_builds_todays_url(base_url: str) -> None:
    assert set(dialects.names()) == set(TODAY)
    for spec in dialects.DIALECTS:
        expected = "https://api.example.com/v1" + TODAY[spec.name]
        assert spec.url(base_url, "gpt-4o-mini") == expected
        assert Endpoint(base_url, "gpt-4o-mini", Dialect(spec.name)).url == expected


def test_the_dialect_enum_is_the_registrys_names() -> None:
    assert [d.value for d in Dialect] == list(dialects.names())
    for spec in dialects.DIALECTS:
        assert Dialect(spec.name) == spec.name and Dialect(spec.name).spec is spec
    assert Dialect.CHAT == "chat" and Dialect("anthropic") is Dialect.ANTHROPIC
    assert Endpoint("http://h/v1", "m").dialect is Dialect.CHAT


def test_a_model_in_the_path_is_quoted_into_the_url() -> None:
    base = "https://generativelanguage.googleapis.com/v1beta"
    assert TOY.url(base, "gemini-2.0-flash") == (
        f"{base}/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    )
    bedrock = Route("/model/{model}/converse-stream")
    assert bedrock.url("https://bedrock-runtime.us-east-1.amazonaws.com/", "vendor.m-v1:0") == (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/vendor.m-v1%3A0/converse-stream"
    )
    assert TOY.route.matches("/v1beta/models/gemini-2.0-flash:streamGenerateContent")
    assert not TOY.route.matches("/v1beta/models/gemini-2.0-flash:generateContent")


@pytest.mark.usefixtures("toy_registry")
def test_a_dialect_added_to_the_registry_is_an_api_choice_with_its_own_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert dialects.get("toy") is TOY and dialects.names()[-1] == "toy"
    args = build_parser().parse_args(["probe", "http://h/v1beta", "-m", "gemini", "--api", "toy"])
    assert args.api == "toy"
    monkeypatch.setenv("TOY_API_KEY", "toy-key-42")
    assert api_key(args) == "toy-key-42"
    with pytest.raises(SystemExit):
        main(["probe", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "{chat,completions,anthropic,responses,toy}" in shown
    assert "toy (a Gemini-like API, /models/{model}:streamGenerateContent?alt=sse)" in shown
    assert "TOY_API_KEY with --api toy" in shown


@pytest.mark.usefixtures("toy_registry")
def test_a_dialect_added_to_the_registry_is_read_wherever_dialects_are() -> None:
    url = "https://g.example/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    assert dialect_of(url) == "toy"
    assert dialect_of("https://api.example.com/v1/chat/completions") == "chat"
    body = request_body(TOY, "gemini-2.0-flash", "Hi", 7, include_usage=True)
    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "generationConfig": {"maxOutputTokens": 7},
    }
    with pytest.raises(UsageError, match="contents"):
        check_extra_body({"contents": []})
    candidate = {"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}
    assert parse_event(candidate, TOY).output_chars == 2
    assert parse_event(candidate, Dialect.ANTHROPIC).other_dialect == "toy"
    assert parse_event({"type": "message_start"}, TOY).other_dialect == "anthropic"


def test_no_other_module_lists_every_dialect() -> None:
    """A tuple, list, set, dict or ``Literal`` holding every dialect's name is a second
    list that a new dialect would miss."""
    names = set(dialects.names())
    src = Path(dialects.__file__).resolve().parents[2]
    found = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if not isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict) or not items:
                continue
            strings = {i.value for i in items if isinstance(i, ast.Constant)}
            if names <= strings:
                found.append(f"{path.relative_to(src)}:{node.lineno}")
    assert found == []


def _toy_messages(data: dict[str, object]) -> object:
    contents = data.get("contents")
    if not isinstance(contents, list):
        return contents
    return [{"role": c["role"], "content": c["parts"][0]["text"]} for c in contents]


TOY_STAND_IN = StandIn(
    name="toy",
    path="/v1/models/{model}:streamGenerateContent",
    messages=_toy_messages,
    writer=CHAT_STAND_IN.writer,
    document=CHAT_STAND_IN.document,
    streams=True,
)


def test_the_lab_serves_a_stand_in_whose_route_names_the_model(
    lab: LabFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lab_dialects, "STAND_INS", (*lab_dialects.STAND_INS, TOY_STAND_IN))
    body = request_body(TOY, "lab-sim", "Hello there", 3, include_usage=True)
    with lab() as server:
        answer = httpx.post(TOY.url(server.base_url, "lab-sim"), json=body, timeout=10)
        unknown = httpx.post(TOY.url(server.base_url, "no-such-model"), json=body, timeout=10)
        chat = httpx.post(
            dialects.get("chat").url(server.base_url, "lab-sim"),
            json=request_body(Dialect.CHAT, "lab-sim", "Hello there", 3, include_usage=True),
            timeout=10,
        )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert all(f'"content":"{output_token(k)}"' in answer.text for k in range(3))
    assert unknown.status_code == 404 and "no-such-model" in unknown.text
    assert chat.status_code == 200
