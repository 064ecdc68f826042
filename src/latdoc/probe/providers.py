"""Provider presets: the API dialect, base URL, auth header and key variables of the
hosts people call, listed once in :data:`PROVIDERS` (``--provider NAME``).

A preset is data: everything a request does differently is its dialect's
(:mod:`latdoc.probe.dialects`); a preset only says which dialect a host speaks, where
it is, and which environment variables hold its key. So the presets live in one
module, one :class:`ProviderSpec` each, rather than a module each as the dialects do;
the two whose URL names the user's own resource (Azure's, Vertex AI's) build it from
the environment with a function of a few lines.

A preset reads only its own key variables: an OpenAI key is never sent to Groq. The
local servers are addressed as ``127.0.0.1``, not ``localhost``, so the connect time
measured is not an IPv6 attempt refused first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from latdoc.errors import UsageError

__all__ = [
    "PROVIDERS",
    "ProviderChoice",
    "ProviderSpec",
    "find",
    "get",
    "names",
    "owner_of",
    "resolve",
]

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


def _azure_url(environ: Mapping[str, str]) -> str:
    endpoint = environ.get("AZURE_OPENAI_ENDPOINT", "").strip()
    if not endpoint:
        raise UsageError(
            "--provider azure needs the resource's URL: give it, or set AZURE_OPENAI_ENDPOINT "
            "(https://RESOURCE.openai.azure.com)"
        )
    if urlsplit(endpoint).scheme not in ("http", "https"):
        raise UsageError(f"AZURE_OPENAI_ENDPOINT is not an http(s) URL: {endpoint!r}")
    return endpoint


_LOCATION = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_MULTI_REGIONS = ("us", "eu")
"""Vertex AI's multi-regional locations, served at ``aiplatform.LOCATION.rep.googleapis.com``."""


def _vertex_url(environ: Mapping[str, str]) -> str:
    """Vertex AI's base URL for ``GOOGLE_CLOUD_PROJECT`` in ``GOOGLE_CLOUD_LOCATION``
    (``global`` unless set), on the host Google's SDK picks for that location."""
    project = environ.get("GOOGLE_CLOUD_PROJECT", "").strip()
    if not project:
        raise UsageError(
            "--provider vertex needs the project: set GOOGLE_CLOUD_PROJECT (and "
            "GOOGLE_CLOUD_LOCATION, global unless set), or give the base URL"
        )
    location = environ.get("GOOGLE_CLOUD_LOCATION", "").strip() or "global"
    if not _LOCATION.fullmatch(location):
        raise UsageError(f"GOOGLE_CLOUD_LOCATION is not a location: {location!r}")
    if location == "global":
        host = "aiplatform.googleapis.com"
    elif location in _MULTI_REGIONS:
        host = f"aiplatform.{location}.rep.googleapis.com"
    else:
        host = f"{location}-aiplatform.googleapis.com"
    return f"https://{host}/v1/projects/{quote(project, safe=':')}/locations/{location}"


def _bedrock_url(environ: Mapping[str, str]) -> str:
    """Bedrock's runtime endpoint in ``AWS_REGION`` (else ``AWS_DEFAULT_REGION``)."""
    region = (environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "").strip()
    if not region:
        raise UsageError(
            "--provider bedrock needs the region: set AWS_REGION (or AWS_DEFAULT_REGION), or "
            "give the base URL (https://bedrock-runtime.REGION.amazonaws.com)"
        )
    if not _LOCATION.fullmatch(region):
        raise UsageError(f"AWS_REGION is not a region: {region!r}")
    return f"https://bedrock-runtime.{region}.amazonaws.com"


PROVIDERS: tuple[ProviderSpec, ...] = (
    ProviderSpec(
        name="openai",
        apis=("chat", "responses", "completions"),
        base_url="https://api.openai.com/v1",
        key_variables=("OPENAI_API_KEY",),
        auth=BEARER,
        hosts=("api.openai.com",),
    ),
    ProviderSpec(
        name="azure",
        apis=("azure",),
        base_url="$AZURE_OPENAI_ENDPOINT",
        key_variables=("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"),
        auth="api-key",
        hosts=("openai.azure.com", "cognitiveservices.azure.com", "services.ai.azure.com"),
        url_from=_azure_url,
    ),
    ProviderSpec(
        name="anthropic",
        apis=("anthropic",),
        base_url="https://api.anthropic.com/v1",
        key_variables=("ANTHROPIC_API_KEY",),
        auth="x-api-key",
        hosts=("anthropic.com",),
    ),
    ProviderSpec(
        name="gemini",
        apis=("gemini",),
        base_url="https://generativelanguage.googleapis.com/v1beta",
        key_variables=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        auth="x-goog-api-key",
        hosts=("generativelanguage.googleapis.com",),
    ),
    ProviderSpec(
        name="vertex",
        apis=("vertex",),
        base_url="https://LOCATION-aiplatform.googleapis.com/v1/projects/PROJECT/locations/LOCATION",
        key_variables=("GOOGLE_OAUTH_ACCESS_TOKEN",),
        auth=BEARER,
        hosts=(
            "aiplatform.googleapis.com",
            *(f"aiplatform.{region}.rep.googleapis.com" for region in _MULTI_REGIONS),
        ),
        url_from=_vertex_url,
    ),
    ProviderSpec(
        name="bedrock",
        apis=("bedrock",),
        base_url="https://bedrock-runtime.$AWS_REGION.amazonaws.com",
        key_variables=("AWS_BEARER_TOKEN_BEDROCK",),
        auth="Authorization: Bearer",
        hosts=("amazonaws.com",),
        url_from=_bedrock_url,
    ),
    ProviderSpec(
        name="groq",
        apis=("chat", "responses"),
        base_url="https://api.groq.com/openai/v1",
        key_variables=("GROQ_API_KEY",),
        auth=BEARER,
        hosts=("groq.com",),
    ),
    ProviderSpec(
        name="together",
        apis=("chat", "completions"),
        base_url="https://api.together.xyz/v1",
        key_variables=("TOGETHER_API_KEY",),
        auth=BEARER,
        hosts=("together.xyz", "together.ai"),
    ),
    ProviderSpec(
        name="fireworks",
        apis=("chat", "completions"),
        base_url="https://api.fireworks.ai/inference/v1",
        key_variables=("FIREWORKS_API_KEY",),
        auth=BEARER,
        hosts=("fireworks.ai",),
    ),
    ProviderSpec(
        name="deepseek",
        apis=("chat",),
        base_url="https://api.deepseek.com/v1",
        key_variables=("DEEPSEEK_API_KEY",),
        auth=BEARER,
        hosts=("deepseek.com",),
    ),
    ProviderSpec(
        name="mistral",
        apis=("chat",),
        base_url="https://api.mistral.ai/v1",
        key_variables=("MISTRAL_API_KEY",),
        auth=BEARER,
        hosts=("mistral.ai",),
    ),
    ProviderSpec(
        name="openrouter",
        apis=("chat", "completions", "responses"),
        base_url="https://openrouter.ai/api/v1",
        key_variables=("OPENROUTER_API_KEY",),
        auth=BEARER,
        hosts=("openrouter.ai",),
    ),
    ProviderSpec(
        name="vllm",
        apis=("chat", "completions", "responses", "anthropic"),
        base_url="http://127.0.0.1:8000/v1",
        key_variables=("VLLM_API_KEY",),
        auth=BEARER,
    ),
    ProviderSpec(
        name="sglang",
        apis=("chat", "completions", "responses", "anthropic"),
        base_url="http://127.0.0.1:30000/v1",
        key_variables=(),
        auth=BEARER,
    ),
    ProviderSpec(
        name="ollama",
        apis=("chat", "completions", "responses", "anthropic"),
        base_url="http://127.0.0.1:11434/v1",
        key_variables=(),
        auth=BEARER,
    ),
    ProviderSpec(
        name="llama.cpp",
        apis=("chat", "completions", "anthropic"),
        base_url="http://127.0.0.1:8080/v1",
        key_variables=("LLAMA_API_KEY",),
        auth=BEARER,
    ),
)
"""Every preset, in the order ``latdoc providers`` lists them."""


def names() -> tuple[str, ...]:
    """The ``--provider`` values."""
    return tuple(spec.name for spec in PROVIDERS)


def find(name: str) -> ProviderSpec | None:
    """The preset called ``name``, or ``None``."""
    return next((spec for spec in PROVIDERS if spec.name == name), None)


def get(name: str) -> ProviderSpec:
    """The preset called ``name``; :class:`UsageError` naming the known ones."""
    spec = find(name)
    if spec is None:
        raise UsageError(f"unknown provider {name!r}: {', '.join(names())}")
    return spec


def owner_of(url: str) -> ProviderSpec | None:
    """The preset whose host ``url`` is on, or ``None``."""
    return next((spec for spec in PROVIDERS if spec.owns(url)), None)


def resolve(
    name: str,
    *,
    api: str | None = None,
    url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ProviderChoice:
    """What ``--provider name`` sends with: ``api`` and ``url`` where given, the
    preset's dialect and URL otherwise, and the preset's key variables.

    :class:`UsageError` (one line) for a dialect the provider does not serve, a URL on
    another provider's host, or a URL the environment was to give and does not.
    """
    spec = get(name)
    if api is not None and api not in spec.apis:
        raise UsageError(
            f"--provider {name} speaks --api {' or '.join(spec.apis)}, not {api}: "
            "drop --api, or --provider"
        )
    base_url = url or spec.url(environ)
    owner = owner_of(base_url)
    if owner is not None and owner is not spec:
        host = urlsplit(base_url).hostname
        raise UsageError(
            f"{host} is {owner.name}'s host, not {name}'s: give --provider {owner.name}, "
            "or drop --provider"
        )
    return ProviderChoice(spec, api or spec.api, base_url, spec.key_variables)
