"""What one ``--provider`` preset is (:class:`ProviderSpec`), and what it chose with the
``--api`` and URL given (:class:`ProviderChoice`); the presets themselves are listed in
:mod:`latdoc.probe.providers`."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from latdoc.probe._quirks import Quirks

__all__ = ["BEARER", "ProviderChoice", "ProviderSpec"]

BEARER = "Authorization: Bearer"
"""The auth of OpenAI and every OpenAI-compatible host."""


@dataclass(frozen=True)
class ProviderSpec:
    """One provider: the dialects it speaks, where it is, and how its key is read."""

    name: str
    """The ``--provider`` value."""
    apis: tuple[str, ...]
    """The ``--api`` dialects it serves at its base URL, its default first."""
    base_url: str
    """Its base URL; for a preset that builds it from the environment (:attr:`url_from`),
    the pattern, as listed (``$AZURE_OPENAI_ENDPOINT``)."""
    key_variables: tuple[str, ...]
    """The environment variables its key is read from, the first set one winning; none
    for a local server that takes no key."""
    auth: str
    """The header (and scheme) the key goes in, in its default dialect (Azure's
    ``api-key``; an Entra ID token goes as ``Authorization: Bearer``)."""
    hosts: tuple[str, ...] = ()
    """The host names that are its own (a name, or a suffix after a dot or a hyphen:
    ``us-central1-aiplatform.googleapis.com`` is ``aiplatform.googleapis.com``'s); none
    for a local server, which may be anywhere."""
    url_from: Callable[[Mapping[str, str]], str] | None = None
    """Builds the base URL from the environment; :class:`UsageError` naming what is
    missing. ``None``: the base URL is :attr:`base_url`."""
    quirks: Quirks = field(default_factory=Quirks)
    """What its chat API does its own way: where its usage counts cached and reasoning
    tokens, the switch that turns its thinking off (:mod:`latdoc.probe._quirks`)."""

    @property
    def api(self) -> str:
        """The dialect it speaks unless ``--api`` names another it serves."""
        return self.apis[0]

    def url(self, environ: Mapping[str, str] | None = None) -> str:
        """Its base URL, from ``environ`` (the process's environment by default) where
        the URL names the user's own resource."""
        if self.url_from is None:
            return self.base_url
        return self.url_from(os.environ if environ is None else environ)

    def owns(self, url: str) -> bool:
        """Whether ``url``'s host is one of its own."""
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        return any(host == h or host.endswith(("." + h, "-" + h)) for h in self.hosts)


@dataclass(frozen=True)
class ProviderChoice:
    """What a preset, with the ``--api`` and the URL given, chose."""

    provider: ProviderSpec
    api: str
    """The dialect: ``--api`` if given (one the provider serves), else the provider's."""
    base_url: str
    """The URL given, else the provider's."""
    key_variables: tuple[str, ...]
    """The variables the key is read from."""
