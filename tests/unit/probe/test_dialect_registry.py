"""The registry of API dialects is the one list: ``--api``, the key, the URL, the
dialect a request path speaks and the event that names another dialect all read
``latdoc.probe.dialects.DIALECTS``, and a dialect may name its model in the path.
The lab's stand-ins are its own one list (``latdoc.lab.sim.dialects.STAND_INS``),
routed as they are listed, a model in the route included."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from latdoc import Dialect, Endpoint, UsageError
from latdoc.cli import build_parser, main
from latdoc.probe import (
    check_extra_body,
    choose_api,
    dialects,
    environment_key,
    parse_event,
    request_body,
)
from latdoc.probe._events import EventInfo
from latdoc.probe.dialects import DialectSpec, Route

TODAY = {
    "chat": "/chat/completions",
    "completions": "/completions",
    "anthropic": "/messages",
    "responses": "/responses",
    "gemini": "/models/gpt-4o-mini:streamGenerateContent?alt=sse",
    "vertex": "/publishers/google/models/gpt-4o-mini:streamGenerateContent",
    "azure": "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21",
    "bedrock": "/model/gpt-4o-mini/converse-stream",
}


"""Each dialect's route after the base URL, as requests have always been sent."""


def _toy_body(model: str, messages: Any, max_tokens: int, include_usage: bool) -> dict[str, Any]:
    turns = [{"role": m["role"], "pieces": [{"text": m["content"]}]} for m in messages]
    return {"turns": turns, "config": {"limit": max_tokens}}


def _toy_parse(obj: Any, event: str | None, foreign: Any) -> EventInfo:
    if isinstance(obj, dict) and "outputs" in obj:
        pieces = obj["outputs"][0]["turn"]["pieces"]
        text = "".join(p["text"] for p in pieces)
        return EventInfo(output_chars=len(text), text=text)
    return EventInfo(unknown=True, other_dialect=foreign(obj, event))


TOY = DialectSpec(
    name="toy",
    title="a toy API",
    route=Route("/toys/{model}:stream?form=sse"),
    key_variable="TOY_API_KEY",
    auth_headers=lambda key: [(b"x-toy-key", key.encode())] if key else [],
    body=_toy_body,
    body_fields={"turns": "the prompt options set it", "config.limit": "--max-tokens sets it"},
    parse=_toy_parse,
    end_marker="a stop",
    claims=lambda obj, event: "outputs" in obj,
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


def test_a_dialect_is_named_once_and_travels_as_its_spec() -> None:
    for spec in dialects.DIALECTS:
        assert dialects.get(spec.name) is spec and Dialect(spec.name) is spec
        assert Dialect(spec) is spec and Endpoint("http://h/v1", "m", spec).dialect is spec
    assert Endpoint("http://h/v1", "m").dialect is dialects.chat.SPEC
    assert Endpoint("http://h/v1", "m", "anthropic").dialect is dialects.anthropic.SPEC
    assert repr(dialects.gemini.SPEC) == "DialectSpec('gemini')"


def test_a_model_in_the_path_is_quoted_into_the_url() -> None:
    base = "https://toys.example/v1beta"
    assert TOY.url(base, "toy-2.0") == f"{base}/toys/toy-2.0:stream?form=sse"
    assert TOY.url(base, "a/b c?d") == f"{base}/toys/a%2Fb%20c%3Fd:stream?form=sse"
    bedrock = Route("/model/{model}/converse-stream")
    assert bedrock.url("https://bedrock-runtime.us-east-1.amazonaws.com/", "vendor.m-v1:0") == (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/vendor.m-v1%3A0/converse-stream"
    )
    assert TOY.route.matches("/v1beta/toys/toy-2.0:stream")
    assert not TOY.route.matches("/v1beta/toys/toy-2.0:complete")


@pytest.mark.usefixtures("toy_registry")
def test_a_dialect_added_to_the_registry_is_an_api_choice_with_its_own_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert dialects.get("toy") is TOY and dialects.names()[-1] == "toy"
    args = build_parser().parse_args(["probe", "http://h/v1beta", "-m", "toy-2", "--api", "toy"])
    assert args.api == "toy"
    monkeypatch.setenv("TOY_API_KEY", "toy-key-42")
    assert environment_key(choose_api(args.url, api=args.api)) == "toy-key-42"
    with pytest.raises(SystemExit):
        main(["probe", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "{chat,completions,anthropic,responses,gemini,vertex,azure,bedrock,toy}" in shown
    assert "toy (a toy API, /toys/{model}:stream?form=sse)" in shown
    assert "TOY_API_KEY with --api toy" in shown


@pytest.mark.usefixtures("toy_registry")
def test_a_dialect_added_to_the_registry_is_read_wherever_dialects_are() -> None:
    assert dialects.of_path("/v1beta/toys/toy-2.0:stream") is TOY
    assert dialects.of_path("/v1/chat/completions") is dialects.chat.SPEC
    body = request_body(TOY, "toy-2.0", "Hi", 7, include_usage=True, extra={"config": {"t": 0}})
    assert body == {
        "turns": [{"role": "user", "pieces": [{"text": "Hi"}]}],
        "config": {"limit": 7, "t": 0},
    }
    with pytest.raises(UsageError, match="turns"):
        check_extra_body({"turns": []})
    with pytest.raises(UsageError, match=r"config\.limit"):
        check_extra_body({"config": {"limit": 3}})
    candidate = {"outputs": [{"turn": {"pieces": [{"text": "Hi"}]}}]}
    assert parse_event(candidate, TOY).output_chars == 2
    assert parse_event(candidate, dialects.anthropic.SPEC).other_dialect == "toy"
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
