"""Provider presets: the API dialect, base URL, auth header and key variables of the
hosts people call, listed once in :data:`PROVIDERS` (``--provider NAME``).

A preset is data: everything a request does differently is its dialect's
(:mod:`latdoc.probe.dialects`); a preset only says which dialect a host speaks, where
it is, which environment variables hold its key, and what its chat API does its own
way (:class:`Quirks`: the usage fields that count cached and reasoning tokens, where a
stream carries its usage, the switch that turns thinking off). So the presets live in
one module, one :class:`ProviderSpec` each, rather than a module each as the dialects
do; the two whose URL names the user's own resource (Azure's, Vertex AI's) build it
from the environment with a function of a few lines. A provider with an international
host as well as a mainland one has a preset for each, the second named ``NAME-intl``.

A preset reads only its own key variables: an OpenAI key is never sent to Groq. The
local servers are addressed as ``127.0.0.1``, not ``localhost``, so the connect time
measured is not an IPv6 attempt refused first.

The Chinese providers' presets were checked against their own documentation where it
could be read: the base URLs of DashScope, Moonshot and SiliconFlow (each both hosts),
Zhipu and Z.AI, Ark, Qianfan, MiniMax and Hunyuan; the key variables
``DASHSCOPE_API_KEY``, ``MOONSHOT_API_KEY``, ``ZAI_API_KEY``, ``ARK_API_KEY`` and
``HUNYUAN_API_KEY``; ``enable_thinking`` (DashScope, SiliconFlow) and ``thinking.type``
(Zhipu, Ark); Zhipu's cached tokens in OpenAI's ``prompt_tokens_details.cached_tokens``;
DeepSeek's ``prompt_cache_hit_tokens``. Not confirmed there, and taken from the SDKs,
gateways and recorded responses of those who call them: ``ZHIPUAI_API_KEY`` (Zhipu's
SDK), ``QIANFAN_API_KEY``, ``SILICONFLOW_API_KEY``, ``MINIMAX_API_KEY`` and
``STEPFUN_API_KEY`` (MiniMax's own example sets ``OPENAI_API_KEY``); Moonshot's usage in
``choices[0].usage`` of the last chunk and its ``cached_tokens``; Ark's cached tokens in
OpenAI's field; StepFun's base URL and MiniMax's international host; and where
DashScope, MiniMax, Hunyuan and StepFun count cached tokens, and DashScope and StepFun
reasoning tokens (OpenAI's fields, which are read for them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.probe._provider_spec import BEARER, ProviderChoice, ProviderSpec
from latdoc.probe._quirks import (
    OPENAI_CACHED,
    OPENAI_REASONING,
    OPENAI_USAGE,
    Quirks,
    ThinkingSwitch,
    UsageFields,
)

__all__ = [
    "CACHED_TOKEN_FIELDS",
    "PROVIDERS",
    "REASONING_TOKEN_FIELDS",
    "USAGE_PLACES",
    "ProviderChoice",
    "ProviderSpec",
    "Quirks",
    "ThinkingSwitch",
    "UsageFields",
    "find",
    "get",
    "names",
    "owner_of",
    "resolve",
]


def _azure_url(environ: Mapping[str, str]) -> str:
    endpoint = environ.get("AZURE_OPENAI_ENDPOINT", "").strip()
    if not endpoint:
        raise UsageError(
            N_(
                "--provider azure needs the resource's URL: give it, or set AZURE_OPENAI_ENDPOINT "
                "(https://RESOURCE.openai.azure.com)"
            )
        )
    if urlsplit(endpoint).scheme not in ("http", "https"):
        raise UsageError(
            Message("AZURE_OPENAI_ENDPOINT is not an http(s) URL: {endpoint!r}", endpoint=endpoint)
        )
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
            N_(
                "--provider vertex needs the project: set GOOGLE_CLOUD_PROJECT (and "
                "GOOGLE_CLOUD_LOCATION, global unless set), or give the base URL"
            )
        )
    location = environ.get("GOOGLE_CLOUD_LOCATION", "").strip() or "global"
    if not _LOCATION.fullmatch(location):
        raise UsageError(
            Message("GOOGLE_CLOUD_LOCATION is not a location: {location!r}", location=location)
        )
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
            N_(
                "--provider bedrock needs the region: set AWS_REGION (or AWS_DEFAULT_REGION), or "
                "give the base URL (https://bedrock-runtime.REGION.amazonaws.com)"
            )
        )
    if not _LOCATION.fullmatch(region):
        raise UsageError(Message("AWS_REGION is not a region: {region!r}", region=region))
    return f"https://bedrock-runtime.{region}.amazonaws.com"


_ENABLE_THINKING = ThinkingSwitch("enable_thinking", on=True, off=False)
"""DashScope's and SiliconFlow's switch of a hybrid model's thinking."""
_THINKING_TYPE = ThinkingSwitch("thinking.type", on="enabled", off="disabled")
"""Zhipu's and Ark's (Ark also takes ``auto``)."""


def _chat_presets(
    name: str,
    url: str,
    international: str | None,
    key_variables: str | tuple[str, str],
    quirks: Quirks | None = None,
) -> tuple[ProviderSpec, ...]:
    """A provider of the chat dialect alone, with its key in ``Authorization: Bearer``:
    ``name`` at ``url``, and ``name-intl`` at its ``international`` host where it has
    one; a pair of key variables is the mainland's, then the international host's."""
    domestic, abroad = (
        (key_variables, key_variables) if isinstance(key_variables, str) else key_variables
    )
    made = [(name, url, domestic)]
    if international is not None:
        made.append((f"{name}-intl", international, abroad))
    return tuple(
        ProviderSpec(
            name=preset,
            apis=("chat",),
            base_url=base_url,
            key_variables=(variable,),
            auth=BEARER,
            hosts=(urlsplit(base_url).hostname or "",),
            quirks=quirks or Quirks(),
        )
        for preset, base_url, variable in made
    )


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
        quirks=Quirks(usage=UsageFields(at="x_groq.usage")),
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
        quirks=Quirks(usage=UsageFields(cached=("prompt_cache_hit_tokens",))),
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
    *_chat_presets(
        "dashscope",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
        Quirks(thinking=_ENABLE_THINKING),
    ),
    *_chat_presets(
        "moonshot",
        "https://api.moonshot.cn/v1",
        "https://api.moonshot.ai/v1",
        "MOONSHOT_API_KEY",
        Quirks(usage=UsageFields(cached=("cached_tokens",), at="choices.0.usage")),
    ),
    *_chat_presets(
        "zhipu",
        "https://open.bigmodel.cn/api/paas/v4",
        "https://api.z.ai/api/paas/v4",
        ("ZHIPUAI_API_KEY", "ZAI_API_KEY"),
        Quirks(thinking=_THINKING_TYPE),
    ),
    *_chat_presets(
        "ark",
        "https://ark.cn-beijing.volces.com/api/v3",
        None,
        "ARK_API_KEY",
        Quirks(thinking=_THINKING_TYPE),
    ),
    *_chat_presets(
        "qianfan",
        "https://qianfan.baidubce.com/v2",
        None,
        "QIANFAN_API_KEY",
        Quirks(notes=("its keys have the form bce-v3/ALTAK-…/…",)),
    ),
    *_chat_presets(
        "siliconflow",
        "https://api.siliconflow.cn/v1",
        "https://api.siliconflow.com/v1",
        "SILICONFLOW_API_KEY",
        Quirks(
            thinking=_ENABLE_THINKING,
            notes=("x-siliconcloud-trace-id names each response",),
        ),
    ),
    *_chat_presets(
        "minimax", "https://api.minimaxi.com/v1", "https://api.minimax.io/v1", "MINIMAX_API_KEY"
    ),
    *_chat_presets("hunyuan", "https://api.hunyuan.cloud.tencent.com/v1", None, "HUNYUAN_API_KEY"),
    *_chat_presets("stepfun", "https://api.stepfun.com/v1", None, "STEPFUN_API_KEY"),
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

CACHED_TOKEN_FIELDS = tuple(
    dict.fromkeys((OPENAI_CACHED, *(f for p in PROVIDERS for f in p.quirks.usage.cached)))
)
"""Every usage field a preset counts cached prompt tokens in, OpenAI's first: the chat
dialect reads the first one present, so a cache hit is seen whoever served it."""
REASONING_TOKEN_FIELDS = tuple(
    dict.fromkeys((OPENAI_REASONING, *(f for p in PROVIDERS for f in p.quirks.usage.reasoning)))
)
"""Every usage field a preset counts reasoning tokens in, OpenAI's first."""
USAGE_PLACES = tuple(dict.fromkeys((OPENAI_USAGE, *(p.quirks.usage.at for p in PROVIDERS))))
"""Every place in a chunk a preset's stream carries its usage, OpenAI's first."""


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
        raise UsageError(
            Message("unknown provider {name!r}: {known}", name=name, known=", ".join(names()))
        )
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
            Message(
                "--provider {name} speaks --api {apis}, not {api}: drop --api, or --provider",
                name=name,
                apis=" or ".join(spec.apis),
                api=api,
            )
        )
    base_url = url or spec.url(environ)
    owner = owner_of(base_url)
    if owner is not None and owner is not spec:
        host = urlsplit(base_url).hostname
        raise UsageError(
            Message(
                "{host} is {owner}'s host, not {name}'s: give --provider {owner}, or "
                "drop --provider",
                host=host,
                owner=owner.name,
                name=name,
            )
        )
    return ProviderChoice(spec, api or spec.api, base_url, spec.key_variables)
