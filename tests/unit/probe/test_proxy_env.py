"""Which proxy a URL goes through: the environment read as curl and httpx read it,
``--proxy`` and ``--no-proxy``, and ``NO_PROXY``'s entries (names, leading dots,
``*``, addresses, networks, ports); what cannot be used is a UsageError that names
the variable and never the proxy's password."""

from __future__ import annotations

import pytest

from latdoc.errors import UsageError
from latdoc.probe import ProxyConfig, parse_no_proxy, parse_proxy

HTTPS_URL = "https://api.example.com/v1/chat/completions"
HTTP_URL = "http://api.example.com:8000/v1/chat/completions"


def route(url: str, **env: str) -> str | None:
    proxy = ProxyConfig(environ=env).route(url).proxy
    return None if proxy is None else proxy.shown


def test_the_scheme_variable_wins_over_all_proxy_and_lower_case_over_upper() -> None:
    assert route(HTTPS_URL, HTTPS_PROXY="http://a:1", ALL_PROXY="http://b:2") == "http://a:1"
    assert route(HTTPS_URL, https_proxy="http://l:1", HTTPS_PROXY="http://u:2") == "http://l:1"
    assert route(HTTPS_URL, HTTP_PROXY="http://h:1") is None  # http's proxy is not https's
    assert route(HTTP_URL, HTTP_PROXY="http://h:1", HTTPS_PROXY="http://s:2") == "http://h:1"
    assert route(HTTPS_URL, all_proxy="socks5h://s:1080") == "socks5h://s:1080"
    assert route(HTTPS_URL) is None
    assert route(HTTPS_URL, HTTPS_PROXY="  ") is None  # set but empty: no proxy


def test_a_proxy_url_without_scheme_or_port_reads_as_both_tools_read_it() -> None:
    assert parse_proxy("proxy.corp").shown == "http://proxy.corp:80"
    assert parse_proxy("proxy.corp:3128").shown == "http://proxy.corp:3128"
    assert parse_proxy("socks5://s").port == 1080
    assert parse_proxy("https://p").port == 443
    assert parse_proxy("http://[::1]:3128").shown == "http://[::1]:3128"


def test_credentials_are_read_decoded_and_never_shown() -> None:
    proxy = parse_proxy("http://al%40ice:p%3Ass@proxy:3128", "HTTPS_PROXY")
    assert proxy.auth == (b"al@ice", b"p:ss")
    assert proxy.shown == "http://***@proxy:3128"
    assert "p:ss" not in repr(proxy) and "p%3Ass" not in repr(proxy)
    assert proxy.secrets == ("p:ss",)


@pytest.mark.parametrize(
    "text",
    [
        "ftp://user:hunter2@proxy:21",
        "socks4://user:hunter2@proxy:1080",
        "http://user:hunter2@proxy:99999",
        "http://user:hunter2@:3128",
        "http://user:hunter2@proxy:3128/path",
    ],
)
def test_a_proxy_that_cannot_be_used_is_a_usage_error_without_its_password(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        ProxyConfig(environ={"HTTPS_PROXY": text}).route(HTTPS_URL)
    message = str(caught.value)
    assert "HTTPS_PROXY" in message
    assert "hunter2" not in message


def test_no_proxy_entries_name_hosts_domains_addresses_networks_and_ports() -> None:
    env = {"HTTPS_PROXY": "http://p:1", "HTTP_PROXY": "http://p:1"}

    def direct(url: str, no_proxy: str) -> bool:
        return route(url, **env, NO_PROXY=no_proxy) is None

    assert direct("https://api.example.com/v1", "example.com")
    assert direct("https://example.com/v1", ".example.com")  # leading dot: the name too
    assert direct("https://a.b.example.com/v1", ".example.com")
    assert not direct("https://notexample.com/v1", "example.com")
    assert direct("https://a.example.com/v1", "*.example.com")
    assert not direct("https://example.com/v1", "*.example.com")
    assert direct("https://anything.test/v1", "*")
    assert direct("https://anything.test/v1", "other.test, *")
    assert direct("https://10.1.2.3/v1", "10.0.0.0/8")
    assert not direct("https://11.1.2.3/v1", "10.0.0.0/8")
    assert direct("https://[fd00::5]/v1", "fd00::/8")
    assert direct("https://[::1]:8443/v1", "[::1]:8443")
    assert direct("https://127.0.0.1/v1", "127.0.0.1")
    assert direct("https://api.example.com:8443/v1", "api.example.com:8443")
    assert not direct("https://api.example.com/v1", "api.example.com:8443")  # another port
    assert direct("http://api.example.com:8000/v1", "localhost api.example.com")  # spaces too
    assert direct("https://API.Example.COM/v1", "api.example.com")


def test_no_proxy_lower_case_wins_and_applies_to_a_proxy_given_on_the_command_line() -> None:
    env = {"no_proxy": "example.com", "NO_PROXY": "other.test"}
    config = ProxyConfig(url="http://p:3128", environ=env)
    assert config.route(HTTPS_URL).proxy is None
    assert config.route(HTTPS_URL).why == "no_proxy entry 'example.com'"
    assert config.route("https://other.test/v1").proxy is not None


def test_the_command_line_takes_the_place_of_the_environment() -> None:
    env = {"HTTPS_PROXY": "http://env:1"}
    assert ProxyConfig(url="socks5h://cli:2", environ=env).route(HTTPS_URL).shown == (
        "socks5h://cli:2 (--proxy)"
    )
    assert ProxyConfig(direct=True, environ=env).route(HTTPS_URL).shown == "direct (--no-proxy)"
    with pytest.raises(UsageError, match="contradict"):
        ProxyConfig(url="http://p:1", direct=True)


@pytest.mark.parametrize(
    "entry",
    ["10.0.0.0/33", "example.com:http", "example.com:0", "[::1", "*.", "..", "user@host", "a*b"],
)
def test_an_odd_no_proxy_entry_is_a_usage_error_naming_it(entry: str) -> None:
    with pytest.raises(UsageError) as caught:
        ProxyConfig(environ={"HTTPS_PROXY": "http://u:hunter2@p:1", "NO_PROXY": entry}).route(
            HTTPS_URL
        )
    assert repr(entry) in str(caught.value) and "NO_PROXY" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_empty_no_proxy_items_are_skipped() -> None:
    assert parse_no_proxy(" , ,example.com,,") == parse_no_proxy("example.com")


def _system(capsys: pytest.CaptureFixture[str], *urls: str) -> dict[str, object]:
    import json

    from latdoc.cli import EXIT_OK, main

    assert main(["system", "--json", *urls]) == EXIT_OK
    out, _ = capsys.readouterr()
    document: dict[str, object] = json.loads(out)
    return document


def test_system_shows_which_proxy_each_url_would_use(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("https_proxy", "http_proxy", "all_proxy", "no_proxy", "ALL_PROXY", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://ops:hunter2-pw@corp-proxy:3128")
    monkeypatch.setenv("NO_PROXY", ".internal.example")
    document = _system(
        capsys, "https://api.openai.com/v1", "https://llm.internal.example/v1",
        "https://api.anthropic.com/v1",
    )  # fmt: skip
    items = [i for i in document["items"] if i["key"] == "proxy"]  # type: ignore[attr-defined]
    assert [i["name"] for i in items] == [
        "proxy for api.openai.com and 1 more",
        "proxy for llm.internal.example",
    ]
    assert items[0]["current"] == "http://***@corp-proxy:3128 (HTTPS_PROXY)"
    assert "NO_PROXY=api.openai.com,api.anthropic.com" in items[0]["command"]
    assert items[1]["current"] == "direct (NO_PROXY entry '.internal.example')"
    assert "hunter2-pw" not in str(document)


def test_system_names_a_proxy_variable_that_cannot_be_used(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://ops:hunter2-pw@corp-proxy:3128")
    monkeypatch.setenv("NO_PROXY", "10.0.0.0/99")
    monkeypatch.delenv("no_proxy", raising=False)
    document = _system(capsys, "https://api.openai.com/v1")
    assert "proxy" in document["failing"]  # type: ignore[operator]
    (item,) = [i for i in document["items"] if i["key"] == "proxy"]  # type: ignore[attr-defined]
    assert "'10.0.0.0/99'" in item["current"]
    assert "hunter2-pw" not in str(document)
