"""What a user's choices make, as a library call: the dialect, the URL and the key's
variables, the key itself, the endpoint with its connection, and the proxy passwords to
mask, the same as every sending command builds them from its flags."""

from __future__ import annotations

import pytest

from latdoc.errors import UsageError
from latdoc.probe import (
    ApiChoice,
    ProxyConfig,
    choose_api,
    endpoint_and_connection,
    environment_key,
    proxy_secrets,
)

_PROXIES = ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")


@pytest.fixture(autouse=True)
def _no_proxies_or_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*_PROXIES, "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_without_a_provider_the_dialect_and_the_base_url_variable_choose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert choose_api() == ApiChoice("chat", None, ("OPENAI_API_KEY",))
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gw.example.com/v1")
    assert choose_api().url == "https://gw.example.com/v1"
    assert choose_api("http://127.0.0.1:8000/v1").url == "http://127.0.0.1:8000/v1"
    assert choose_api(api="anthropic").key_variables == ("ANTHROPIC_API_KEY",)


def test_a_provider_chooses_its_preset_and_ignores_the_base_url_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gw.example.com/v1")
    chosen = choose_api(provider="groq")
    assert chosen.api == "chat"
    assert chosen.url is not None and "groq" in chosen.url
    assert chosen.key_variables == ("GROQ_API_KEY",)


def test_the_key_is_the_first_variable_set(monkeypatch: pytest.MonkeyPatch) -> None:
    choice = ApiChoice("gemini", None, ("GOOGLE_API_KEY", "GEMINI_API_KEY"))
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    assert environment_key(choice) is None
    monkeypatch.setenv("GEMINI_API_KEY", "g2")
    assert environment_key(choice) == "g2"
    monkeypatch.setenv("GOOGLE_API_KEY", "g1")
    assert environment_key(choice) == "g1"


def test_the_endpoint_and_its_connection_are_built_from_plain_values() -> None:
    endpoint, connection = endpoint_and_connection(
        "http://127.0.0.1:8000/v1",
        "m",
        api="completions",
        key="sk-1",
        extra_body={"ignore_eos": True},
        http2=True,
        cacert="ca.pem",
        timeout_s=30.0,
        direct=True,
    )
    assert endpoint.url == "http://127.0.0.1:8000/v1/completions"
    assert (endpoint.model, endpoint.api_key, dict(endpoint.extra_body)) == (
        "m",
        "sk-1",
        {"ignore_eos": True},
    )
    assert (connection.http2, connection.cacert, connection.insecure) == (True, "ca.pem", False)
    assert connection.timeouts.total == 30.0
    assert connection.proxy == ProxyConfig(direct=True)


@pytest.mark.parametrize(
    ("url", "model", "kwargs", "message"),
    [
        ("api.example.com", "m", {}, "invalid URL"),
        ("https://api.example.com/v1", "", {}, "model name is required"),
        ("https://api.example.com/v1", "m", {"proxy": "http://p:1", "direct": True}, "contradict"),
    ],
)
def test_a_choice_that_cannot_be_sent_is_a_usage_error(
    url: str, model: str, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        endpoint_and_connection(url, model, **kwargs)  # type: ignore[arg-type]


def test_proxy_passwords_are_found_in_the_url_given_and_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert proxy_secrets() == ()
    monkeypatch.setenv("HTTPS_PROXY", "http://u:envpass@proxy.example.com:3128")
    monkeypatch.setenv("all_proxy", "not a proxy url ::")
    assert proxy_secrets("http://u:given@proxy.example.com:3128") == ("given", "envpass")
