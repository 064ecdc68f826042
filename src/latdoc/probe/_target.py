"""The endpoint a run sends to, from what a user chooses: a provider, an API, a URL, a key.

What every sending command of ``latdoc`` builds from its shared options, for a library
user to build the same way:

- :func:`choose_api`: the dialect, the base URL and the key's variables, from a
  provider's preset (:func:`latdoc.probe.providers.resolve`), else the dialect's own
  and ``OPENAI_BASE_URL``;
- :func:`environment_key`: the API key from the first of those variables that is set;
- :func:`endpoint_and_connection`: the :class:`~latdoc.probe.Endpoint` to measure
  and the :class:`~latdoc.probe.ConnectionOptions` to reach it with;
- :func:`proxy_secrets`: the proxy passwords to mask wherever a run is kept.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from latdoc.errors import UsageError
from latdoc.probe import dialects, providers
from latdoc.probe._connection import ConnectionOptions
from latdoc.probe._endpoint import Endpoint, Timeouts
from latdoc.probe._provider_spec import ProviderSpec
from latdoc.probe._proxy import ProxyConfig, parse_proxy
from latdoc.probe._tools import Tool
from latdoc.probe.dialects import DialectSpec

BASE_URL_VARIABLE = "OPENAI_BASE_URL"
"""Where the base URL is read from when neither a URL nor a provider is given."""

_PROXY_VARIABLES = tuple(
    name
    for scheme in ("https", "http", "all")
    for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY")
)


@dataclass(frozen=True)
class ApiChoice:
    """What a provider, an API dialect and a URL choose together."""

    dialect: DialectSpec
    """The dialect (a library user may name it: ``"anthropic"``)."""
    url: str | None
    """The base URL; ``None``: none was given (``latdoc`` then measures a built-in one)."""
    key_variables: tuple[str, ...]
    """The variables the key is read from, the first set one winning."""
    provider: ProviderSpec | None = None
    """The preset chosen, whose quirks the endpoint follows; ``None``: none was."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "dialect", dialects.resolve(self.dialect))

    @property
    def api(self) -> str:
        """The dialect's name, the ``--api`` value."""
        return self.dialect.name


def choose_api(
    url: str | None = None, *, provider: str | None = None, api: str | None = None
) -> ApiChoice:
    """The dialect, the base URL and the key's variables ``provider``, ``api`` and ``url``
    choose.

    With a ``provider``: its preset's, ``url`` or ``api`` given taking their place where
    the provider serves them (:func:`latdoc.probe.providers.resolve`; a
    :class:`UsageError` otherwise); ``OPENAI_BASE_URL`` is not read. Without: ``api``
    (``chat`` by default), ``url`` or ``OPENAI_BASE_URL``, and the dialect's own key
    variables.
    """
    if provider is not None:
        chosen = providers.resolve(provider, api=api, url=url)
        return ApiChoice(
            dialects.get(chosen.api), chosen.base_url, chosen.key_variables, chosen.provider
        )
    dialect = dialects.get(api or dialects.DEFAULT.name)
    return ApiChoice(dialect, url or os.environ.get(BASE_URL_VARIABLE), dialect.key_variables)


def environment_key(choice: ApiChoice) -> str | None:
    """The API key in the first of ``choice``'s variables that is set: the provider's
    (``GROQ_API_KEY`` for groq), or the dialect's own (``ANTHROPIC_API_KEY`` for
    anthropic, ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY`` for gemini)."""
    return next(filter(None, map(os.environ.get, choice.key_variables)), None)


def endpoint_and_connection(
    base_url: str,
    model: str,
    *,
    api: str | DialectSpec = dialects.DEFAULT,
    key: str | None = None,
    extra_body: Mapping[str, Any] | None = None,
    http2: bool = False,
    insecure: bool = False,
    cacert: str | None = None,
    timeout_s: float = 300.0,
    proxy: str | None = None,
    direct: bool = False,
    provider: ProviderSpec | None = None,
    tools: Sequence[Tool] = (),
) -> tuple[Endpoint, ConnectionOptions]:
    """The endpoint to measure, ``model`` at ``base_url`` in dialect ``api`` (a spec, or
    its name) with the quirks of ``provider``'s preset, and how to connect to it: the
    server verified with ``cacert`` (else ``SSL_CERT_FILE`` or the system's CAs; not at
    all when ``insecure``), through ``proxy`` (a URL) if given, else direct when
    ``direct``, else through the environment's proxy.

    A bad URL, no model, or a proxy setting that cannot reach the endpoint is a
    :class:`UsageError` here, before anything is sent.
    """
    endpoint = Endpoint(
        base_url,
        model,
        dialects.resolve(api),
        api_key=key,
        extra_body=extra_body or {},
        provider=provider,
        tools=tuple(tools),
    )
    connection = ConnectionOptions(
        http2=http2,
        cacert=cacert,
        insecure=insecure,
        timeouts=Timeouts(total=timeout_s),
        proxy=ProxyConfig(url=proxy, direct=direct),
    )
    connection.proxy.route(endpoint.url)
    return endpoint, connection


def proxy_secrets(proxy: str | None = None) -> tuple[str, ...]:
    """The passwords of ``proxy`` and of the proxies the environment names
    (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, in either case), masked wherever a
    run is written; a proxy URL that does not parse has none."""
    found: list[str] = []
    for text in (proxy, *map(os.environ.get, _PROXY_VARIABLES)):
        if text:
            with contextlib.suppress(UsageError):
                found += parse_proxy(text).secrets
    return tuple(found)
