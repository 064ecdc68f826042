"""Where a probe sends requests, how long it waits, and how it trusts TLS."""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.probe import dialects
from latdoc.probe._dialect_io import check_extra_body
from latdoc.probe._provider_spec import ProviderSpec
from latdoc.probe._tools import Tool
from latdoc.probe.dialects import DialectSpec


@dataclass(frozen=True)
class Timeouts:
    """Seconds; ``read`` applies to each socket read, ``total`` to the whole request."""

    connect: float = 10.0
    read: float = 60.0
    write: float = 30.0
    pool: float = 60.0
    total: float = 300.0


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests and how to speak to it."""

    base_url: str
    model: str
    dialect: DialectSpec = dialects.DEFAULT
    """The dialect it is spoken to in; a library user may name it (``"anthropic"``),
    looked up here once."""
    api_key: str | None = field(default=None, repr=False)
    extra_body: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """Fields added to every request body, for what an engine needs (``ignore_eos``,
    ``temperature``); never the model, the prompt, ``stream`` or ``max_tokens``."""
    provider: ProviderSpec | None = field(default=None, repr=False)
    """The ``--provider`` preset it was chosen by, whose quirks its requests follow
    (the switch that turns thinking off); ``None``: the dialect's ways alone."""
    tools: tuple[Tool, ...] = field(default=(), hash=False)
    """The tools every request offers the model (``--tools``), written in the dialect's
    shape; none by default."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "dialect", dialects.resolve(self.dialect))
        check_extra_body(self.extra_body)
        object.__setattr__(self, "tools", tuple(self.tools))
        if self.tools:
            self.dialect.tool_fields(self.tools)
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                Message(
                    "invalid URL {base_url!r}: expected http(s)://host[:port]/path, e.g. "
                    "https://api.openai.com/v1",
                    base_url=self.base_url,
                )
            )
        if not self.model:
            raise UsageError(N_("a model name is required (--model)"))

    @property
    def spec(self) -> DialectSpec:
        """Everything about the dialect the endpoint is spoken to in (:attr:`dialect`)."""
        return self.dialect

    @functools.cached_property
    def url(self) -> str:
        """Where each request goes: the dialect's route from the base URL and the model
        (made once: a load asks for it with every request)."""
        return self.spec.url(self.base_url, self.model)

    def reasoning_fields(self, effort: str) -> dict[str, Any]:
        """Request fields that ask for ``effort``: the provider's thinking switch where
        its preset has one (``enable_thinking``, ``thinking.type``: ``none`` turns
        thinking off), else the dialect's reasoning effort; :class:`UsageError` for an
        effort neither takes."""
        provider = self.provider
        switch = None if provider is None else provider.quirks.thinking
        if provider is None or switch is None:
            return self.dialect.reasoning_fields(effort)
        return switch.fields(effort, provider.name)

    @property
    def is_tls(self) -> bool:
        return self.base_url.startswith("https:")


def make_ssl_context(cacert: str | None = None, *, insecure: bool = False) -> ssl.SSLContext:
    """TLS settings with curl's meaning: ``--cacert FILE``, ``--insecure``, ``SSL_CERT_FILE``."""
    cafile = cacert or os.environ.get("SSL_CERT_FILE") or None
    if cafile is not None and not os.path.isfile(cafile):
        problem = N_("is not a file") if os.path.exists(cafile) else N_("not found")
        raise UsageError(
            Message(
                "CA certificate file {problem}: {cafile}",
                problem=Message.of(problem),
                cafile=cafile,
            )
        )
    changed = None if cafile is None else os.stat(cafile).st_mtime_ns
    return _ssl_context(cafile, changed, insecure)


def make_proxy_ssl_context(cacert: str | None = None, *, insecure: bool = False) -> ssl.SSLContext:
    """TLS to an ``https://`` proxy, trusting what the endpoint is trusted with: a context
    of its own, as httpcore sets its ALPN list for the proxy's connection."""
    shared = make_ssl_context(cacert, insecure=insecure)
    cafile = cacert or os.environ.get("SSL_CERT_FILE") or None
    context = ssl.create_default_context(cafile=cafile)
    context.check_hostname = shared.check_hostname
    context.verify_mode = shared.verify_mode
    return context


@functools.lru_cache(maxsize=16)
def _ssl_context(cafile: str | None, changed: int | None, insecure: bool) -> ssl.SSLContext:
    """One context per CA file (as last modified) and setting, shared by every session:
    loading the system's CA store costs about 15 ms, and a load sweep opens a session per
    stream."""
    try:
        ctx = ssl.create_default_context(cafile=cafile)
    except ssl.SSLError as exc:
        raise UsageError(
            Message("cannot load CA certificates from {cafile}: {exc}", cafile=cafile, exc=str(exc))
        ) from None
    except OSError as exc:
        raise UsageError(
            Message(
                "cannot read CA certificates from {cafile}: {strerror}",
                cafile=cafile,
                strerror=exc.strerror,
            )
        ) from None
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx
