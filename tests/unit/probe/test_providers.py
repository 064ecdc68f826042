"""The provider presets: each resolves to the dialect, base URL, key variables and auth
header it states, a URL or ``--api`` given wins where the provider serves it, and a
combination that cannot be right is a one-line usage error."""

from __future__ import annotations

import pytest

from latdoc import Endpoint, UsageError
from latdoc.probe import dialects, providers
from latdoc.probe.providers import PROVIDERS, resolve

CLOUD = {
    "AZURE_OPENAI_ENDPOINT": "https://my-res.openai.azure.com",
    "GOOGLE_CLOUD_PROJECT": "p-1",
    "AWS_REGION": "eu-west-3",
}
"""An environment that names the Azure resource, the Google Cloud project and the AWS
region."""

STATED = {
    "openai": ("chat", "https://api.openai.com/v1", ("OPENAI_API_KEY",), "Bearer"),
    "azure": (
        "azure",
        "https://my-res.openai.azure.com",
        ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"),
        "api-key",
    ),
    "anthropic": ("anthropic", "https://api.anthropic.com/v1", ("ANTHROPIC_API_KEY",), "x-api-key"),
    "gemini": (
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta",
        ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        "x-goog-api-key",
    ),
    "vertex": (
        "vertex",
        "https://aiplatform.googleapis.com/v1/projects/p-1/locations/global",
        ("GOOGLE_OAUTH_ACCESS_TOKEN",),
        "Bearer",
    ),
    "bedrock": (
        "bedrock",
        "https://bedrock-runtime.eu-west-3.amazonaws.com",
        ("AWS_BEARER_TOKEN_BEDROCK",),
        "Bearer",
    ),
    "groq": ("chat", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",), "Bearer"),
    "together": ("chat", "https://api.together.xyz/v1", ("TOGETHER_API_KEY",), "Bearer"),
    "fireworks": (
        "chat",
        "https://api.fireworks.ai/inference/v1",
        ("FIREWORKS_API_KEY",),
        "Bearer",
    ),
    "deepseek": ("chat", "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",), "Bearer"),
    "mistral": ("chat", "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",), "Bearer"),
    "openrouter": ("chat", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",), "Bearer"),
    "dashscope": (
        "chat",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        ("DASHSCOPE_API_KEY",),
        "Bearer",
    ),
    "dashscope-intl": (
        "chat",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        ("DASHSCOPE_API_KEY",),
        "Bearer",
    ),
    "moonshot": ("chat", "https://api.moonshot.cn/v1", ("MOONSHOT_API_KEY",), "Bearer"),
    "moonshot-intl": ("chat", "https://api.moonshot.ai/v1", ("MOONSHOT_API_KEY",), "Bearer"),
    "zhipu": ("chat", "https://open.bigmodel.cn/api/paas/v4", ("ZHIPUAI_API_KEY",), "Bearer"),
    "zhipu-intl": ("chat", "https://api.z.ai/api/paas/v4", ("ZAI_API_KEY",), "Bearer"),
    "ark": ("chat", "https://ark.cn-beijing.volces.com/api/v3", ("ARK_API_KEY",), "Bearer"),
    "qianfan": ("chat", "https://qianfan.baidubce.com/v2", ("QIANFAN_API_KEY",), "Bearer"),
    "siliconflow": ("chat", "https://api.siliconflow.cn/v1", ("SILICONFLOW_API_KEY",), "Bearer"),
    "siliconflow-intl": (
        "chat",
        "https://api.siliconflow.com/v1",
        ("SILICONFLOW_API_KEY",),
        "Bearer",
    ),
    "minimax": ("chat", "https://api.minimaxi.com/v1", ("MINIMAX_API_KEY",), "Bearer"),
    "minimax-intl": ("chat", "https://api.minimax.io/v1", ("MINIMAX_API_KEY",), "Bearer"),
    "hunyuan": (
        "chat",
        "https://api.hunyuan.cloud.tencent.com/v1",
        ("HUNYUAN_API_KEY",),
        "Bearer",
    ),
    "stepfun": ("chat", "https://api.stepfun.com/v1", ("STEPFUN_API_KEY",), "Bearer"),
    "vllm": ("chat", "http://127.0.0.1:8000/v1", ("VLLM_API_KEY",), "Bearer"),
    "sglang": ("chat", "http://127.0.0.1:30000/v1", (), "Bearer"),
    "ollama": ("chat", "http://127.0.0.1:11434/v1", (), "Bearer"),
    "llama.cpp": ("chat", "http://127.0.0.1:8080/v1", ("LLAMA_API_KEY",), "Bearer"),
}
"""What each preset is documented to pick: dialect, base URL, key variables, and how the
key is sent (a header name, or ``Bearer`` for ``Authorization: Bearer``)."""

NATIVE = ("openai", "azure", "anthropic", "gemini", "vertex", "bedrock")
"""The providers whose own dialect reads the same key variables by default."""


def test_every_preset_is_stated_and_speaks_registered_dialects() -> None:
    assert list(providers.names()) == list(STATED)
    for spec in PROVIDERS:
        assert spec.apis and all(dialects.find(api) is not None for api in spec.apis)
        assert len(set(spec.apis)) == len(spec.apis)


@pytest.mark.parametrize("name", list(STATED))
def test_each_preset_resolves_to_what_it_states(name: str) -> None:
    api, url, variables, auth = STATED[name]
    chosen = resolve(name, environ=CLOUD)
    assert (chosen.api, chosen.base_url, chosen.key_variables) == (api, url, variables)
    assert chosen.provider is providers.get(name)
    headers = dict(dialects.get(api).auth_headers("k-probe-7"))
    carrying = [n.decode() for n, v in headers.items() if b"k-probe-7" in v]
    if auth == "Bearer":
        assert headers[b"authorization"] == b"Bearer k-probe-7"
        assert chosen.provider.auth == "Authorization: Bearer"
    else:
        assert carrying == [auth] and chosen.provider.auth == auth
    if name in NATIVE:
        assert variables == dialects.get(api).key_variables


@pytest.mark.parametrize(
    ("name", "api", "model", "request_url"),
    [
        ("groq", None, "llama-3.3-70b", "https://api.groq.com/openai/v1/chat/completions"),
        ("openai", "responses", "gpt-5", "https://api.openai.com/v1/responses"),
        ("anthropic", None, "claude-x", "https://api.anthropic.com/v1/messages"),
        (
            "gemini",
            None,
            "gemini-2.5-flash",
            "https://generativelanguage.googleapis.com/v1beta/models/"
            "gemini-2.5-flash:streamGenerateContent?alt=sse",
        ),
        (
            "azure",
            None,
            "my-deploy",
            "https://my-res.openai.azure.com/openai/deployments/my-deploy/chat/completions"
            "?api-version=2024-10-21",
        ),
        ("ollama", "anthropic", "qwen3", "http://127.0.0.1:11434/v1/messages"),
    ],
)  # fmt: skip
def test_a_preset_sends_where_its_api_says(
    name: str, api: str | None, model: str, request_url: str
) -> None:
    chosen = resolve(name, api=api, environ=CLOUD)
    assert Endpoint(chosen.base_url, model, dialects.get(chosen.api)).url == request_url


@pytest.mark.parametrize(
    ("location", "base_url"),
    [
        ("", "https://aiplatform.googleapis.com/v1/projects/p-1/locations/global"),
        ("global", "https://aiplatform.googleapis.com/v1/projects/p-1/locations/global"),
        ("us-central1",
         "https://us-central1-aiplatform.googleapis.com/v1/projects/p-1/locations/us-central1"),
        ("eu", "https://aiplatform.eu.rep.googleapis.com/v1/projects/p-1/locations/eu"),
    ],
)  # fmt: skip
def test_vertex_is_built_from_the_project_and_location(location: str, base_url: str) -> None:
    chosen = resolve("vertex", environ={**CLOUD, "GOOGLE_CLOUD_LOCATION": location})
    assert chosen.base_url == base_url
    assert providers.owner_of(base_url) is providers.get("vertex")
    model_url = Endpoint(base_url, "gemini-2.5-pro", dialects.get("vertex")).url
    assert model_url == base_url + "/publishers/google/models/gemini-2.5-pro:streamGenerateContent"


def test_a_url_or_api_given_wins_where_the_provider_serves_it() -> None:
    lab = "http://127.0.0.1:18555/v1"
    chosen = resolve("llama.cpp", url=lab)
    assert (chosen.api, chosen.base_url) == ("chat", lab)
    chosen = resolve("openai", api="completions", url=lab)
    assert (chosen.api, chosen.base_url, chosen.key_variables) == (
        "completions",
        lab,
        ("OPENAI_API_KEY",),
    )
    gateway = "https://gateway.example.com/groq/v1"
    assert resolve("groq", url=gateway).base_url == gateway
    assert resolve("azure", url="https://other.openai.azure.com", environ={}).api == "azure"
    assert resolve("vertex", url=lab, environ={}).base_url == lab


def test_each_host_belongs_to_one_provider() -> None:
    for spec in PROVIDERS:
        url = spec.url(CLOUD)
        owner = providers.owner_of(url)
        assert owner is (spec if spec.hosts else None), spec.name
    assert providers.owner_of("https://eu.api.anthropic.com/v1") is providers.get("anthropic")
    assert providers.owner_of("https://notanthropic.com/v1") is None
    assert providers.owner_of("http://localhost:8000/v1") is None
    assert providers.owner_of("https://x.services.ai.azure.com") is providers.get("azure")
    assert providers.owner_of("https://api.moonshot.ai/v1") is providers.get("moonshot-intl")
    assert providers.owner_of("https://dashscope.aliyuncs.com/api/v1") is providers.get("dashscope")
    assert providers.owner_of("https://evil-z.ai/api/paas/v4") is None


@pytest.mark.parametrize(
    ("name", "api", "url", "environ", "message"),
    [
        ("anthropic", "gemini", None, {},
         "--provider anthropic speaks --api anthropic, not gemini"),
        ("groq", "completions", None, {}, "--provider groq speaks --api chat or responses, not"),
        ("openai", "azure", None, {}, "--provider openai speaks --api chat or responses or"),
        ("groq", None, "https://api.anthropic.com/v1", {},
         "api.anthropic.com is anthropic's host, not groq's"),
        ("openai", None, "https://my-res.openai.azure.com", {},
         "my-res.openai.azure.com is azure's host, not openai's"),
        ("vllm", None, "https://europe-west4-aiplatform.googleapis.com/v1", {},
         "europe-west4-aiplatform.googleapis.com is vertex's host, not vllm's"),
        ("azure", None, None, {}, "--provider azure needs the resource's URL"),
        ("azure", None, None, {"AZURE_OPENAI_ENDPOINT": "my-res.openai.azure.com"},
         "AZURE_OPENAI_ENDPOINT is not an http(s) URL"),
        ("vertex", None, None, {}, "--provider vertex needs the project"),
        ("vertex", None, None, {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us/../x"},
         "GOOGLE_CLOUD_LOCATION is not a location"),
    ],
)  # fmt: skip
def test_a_combination_that_cannot_be_right_is_one_line(
    name: str, api: str | None, url: str | None, environ: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError) as raised:
        resolve(name, api=api, url=url, environ=environ)
    text = str(raised.value)
    assert text.startswith(message) and "\n" not in text


def test_an_unknown_provider_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match="unknown provider 'bedrok': openai, azure"):
        providers.get("bedrok")
