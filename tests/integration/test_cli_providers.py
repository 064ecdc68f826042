"""``--provider NAME`` on the command line against the lab: it fills in the dialect and
the key variable, a URL given (the lab's) winning; each provider's usage is read in its
own shape (a cache hit in DeepSeek's ``prompt_cache_hit_tokens``, Moonshot's
``choices[0].usage``), so the prompt-cache remedy sees it; and ``verify --remedy
reasoning-effort`` turns thinking off by the preset's switch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FAST, LabFactory
from latdoc import Store
from latdoc.cli import EXIT_OK, EXIT_USAGE, main
from latdoc.lab.sim import (
    LabConfig,
    LatencyModel,
    UsageShape,
    chat_prompt_tokens,
    requests_received,
)
from latdoc.probe import providers
from unit.cli import test_cli_providers as unit_providers
from unit.cli.test_cli_providers import KEY

no_ambient_endpoint = unit_providers._no_ambient_endpoint
"""The unit tests' clean environment, for every test here too (an autouse fixture)."""

CHINESE = ("dashscope", "dashscope-intl", "moonshot", "moonshot-intl", "zhipu", "zhipu-intl",
           "ark", "qianfan", "siliconflow", "siliconflow-intl", "minimax", "minimax-intl",
           "hunyuan", "stepfun")  # fmt: skip
"""The presets of the providers the method's readers mostly call."""

SHAPES = {
    UsageShape.OPENAI: ("prompt_tokens_details.cached_tokens", "usage"),
    UsageShape.DEEPSEEK: ("prompt_cache_hit_tokens", "usage"),
    UsageShape.MOONSHOT: ("cached_tokens", "choices.0.usage"),
}
"""Each usage shape the lab's chat stand-in speaks: the field that counts the cache's
part of the prompt, and where in a chunk the usage is."""

THINKER = LatencyModel(
    prefill_base_ms=5.0, prefill_ms_per_token=0.01, decode_ms_per_token=3.0, reasoning_tokens=40
)
LONG = " ".join(f"word{k}" for k in range(80))
"""A prompt the lab's prefix cache serves all but its last few tokens of, the second time."""


@pytest.mark.parametrize(
    ("provider", "variable", "api", "path", "dialect"),
    [
        ("llama.cpp", "LLAMA_API_KEY", None, "/v1", "chat"),
        ("vllm", "VLLM_API_KEY", "completions", "/v1", "completions"),
        ("openai", "OPENAI_API_KEY", "responses", "/v1", "responses"),
        ("groq", "GROQ_API_KEY", None, "/v1", "chat"),
        ("anthropic", "ANTHROPIC_API_KEY", None, "/v1", "anthropic"),
        ("gemini", "GEMINI_API_KEY", None, "/v1beta", "gemini"),
        ("vertex", "GOOGLE_OAUTH_ACCESS_TOKEN", None, "/v1/projects/p/locations/l", "vertex"),
        ("azure", "AZURE_OPENAI_API_KEY", None, "", "azure"),
        *((spec.name, spec.key_variables[0], None, "/v1", "chat")
          for spec in providers.PROVIDERS if spec.name in CHINESE),
    ],
)  # fmt: skip
def test_a_provider_with_the_labs_url_speaks_its_dialect_with_its_own_key(
    lab: LabFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    provider: str,
    variable: str,
    api: str | None,
    path: str,
    dialect: str,
) -> None:
    monkeypatch.setenv(variable, KEY)
    if variable != "OPENAI_API_KEY":
        monkeypatch.setenv("OPENAI_API_KEY", "sk-some-other-providers-key")
    db = tmp_path / "runs.db"
    with lab(LabConfig(latency=FAST, api_key=KEY)) as server:
        base = server.base_url.removesuffix("/v1") + path
        argv = ["probe", base, "-m", "lab-sim", "--provider", provider, "--json", "--db", str(db)]
        code = main(argv + (["--api", api] if api else []))
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    row = json.loads(captured.out)
    assert row["dialect"] == dialect and row["error"] is None
    assert row["url"].startswith(base) and row["output_tokens"] == 64
    for blob in (captured.out, captured.err, db.read_bytes().decode("latin-1")):
        assert KEY not in blob


def test_load_with_a_provider_against_the_lab(
    lab: LabFactory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    with lab() as server:
        code = main(
            ["load", server.base_url, "-m", "lab-sim", "--provider", "sglang", "--db", str(db),
             "--concurrency", "1,2", "--max-requests", "12", "--max-tokens", "8"]
        )  # fmt: skip
    assert code == EXIT_OK, capsys.readouterr().err
    with Store(db) as store:
        traces = [s.trace for run in store.list_runs() for s in store.load_run(run.run_id)[1]]
    assert len(traces) >= 6 and all(t.dialect == "chat" and t.error is None for t in traces)


def _spoken(spec: providers.ProviderSpec) -> UsageShape:
    usage = spec.quirks.usage
    return next(shape for shape, said in SHAPES.items() if said == (usage.cached[0], usage.at))


def test_every_presets_usage_has_a_stand_in_that_speaks_it() -> None:
    """Each cached-token field and usage place a preset states is spoken by one of the
    lab's shapes (Groq's x_groq.usage by its timing form), so a test can read it."""
    for spec in providers.PROVIDERS:
        usage = spec.quirks.usage
        if "chat" in spec.apis and usage.at != "x_groq.usage":
            assert {(field, usage.at) for field in usage.cached} <= set(SHAPES.values())


@pytest.mark.parametrize("provider", ["dashscope", "deepseek", "moonshot"])
def test_a_cache_hit_and_the_reasoning_are_read_in_each_providers_usage(
    lab: LabFactory, capsys: pytest.CaptureFixture[str], tmp_path: Path, provider: str
) -> None:
    shape = _spoken(providers.get(provider))
    config = LabConfig(latency=THINKER, prefix_cache=True, usage_shape=shape)
    with lab(config) as server:
        code = main(["probe", server.base_url, "-m", "lab-sim", "--provider", provider,
                     "--prompt", LONG, "-n", "2", "--max-tokens", "4", "--json",
                     "--db", str(tmp_path / "runs.db")])  # fmt: skip
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    rows = [json.loads(line) for line in captured.out.splitlines()]
    prompt = chat_prompt_tokens([{"role": "user", "content": LONG}])
    block = config.prefix_block_tokens
    assert [row["prompt_tokens"] for row in rows] == [prompt, prompt]
    assert [row["cached_prompt_tokens"] for row in rows] == [0, (prompt - 1) // block * block]
    assert [row["reasoning_tokens"] for row in rows] == [THINKER.reasoning_tokens] * 2


@pytest.mark.parametrize("provider", ["deepseek", "moonshot"])
def test_the_prompt_cache_remedy_sees_a_hit_in_each_providers_usage(
    lab: LabFactory, capsys: pytest.CaptureFixture[str], tmp_path: Path, provider: str
) -> None:
    quick = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.2, decode_ms_per_token=1.0)
    shape = _spoken(providers.get(provider))
    with lab(LabConfig(latency=quick, prefix_cache=True, usage_shape=shape)) as server:
        code = main(["verify", server.base_url, "-m", "lab-sim", "--provider", provider,
                     "--remedy", "prompt-cache", "--json", "--max-requests", "80",
                     "--seed", "3", "--db", str(tmp_path / "runs.db")])  # fmt: skip
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    document = json.loads(captured.out)
    assert document["verdict"] == "better"
    assert document["cached_tokens_b"] >= 900


@pytest.mark.parametrize(
    ("provider", "switch"),
    [("dashscope", {"enable_thinking": False}), ("zhipu", {"thinking": {"type": "disabled"}})],
)
def test_reasoning_effort_none_turns_thinking_off_by_the_presets_switch(
    lab: LabFactory,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    provider: str,
    switch: dict[str, object],
) -> None:
    db = tmp_path / "runs.db"
    with lab(LabConfig(latency=THINKER)) as server:
        code = main(["verify", server.base_url, "-m", "lab-sim", "--provider", provider,
                     "--remedy", "reasoning-effort", "--reasoning-effort", "none", "--json",
                     "--max-requests", "40", "--max-tokens", "8", "--seed", "3",
                     "--db", str(db)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    document = json.loads(captured.out)
    assert document["arms"]["B"] == f"reasoning effort none: {switch}"
    assert document["verdict"] == "better"
    with Store(db) as store:
        thought = [
            {
                (sample.trace.reasoning_tokens, sample.trace.first_reasoning_ns is None)
                for sample in store.load_run(run_id)[1]
            }
            for run_id in document["run_ids"]
        ]
    assert thought == [{(THINKER.reasoning_tokens, False)}, {(None, True)}]


def test_a_switch_refuses_an_effort_before_anything_is_sent(
    lab: LabFactory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with lab(LabConfig(latency=THINKER)) as server:
        code = main(["verify", server.base_url, "-m", "lab-sim", "--provider", "ark",
                     "--remedy", "reasoning-effort", "--reasoning-effort", "low",
                     "--db", str(tmp_path / "runs.db")])  # fmt: skip
        sent = requests_received(server.app)
    captured = capsys.readouterr()
    assert (code, sent, captured.out) == (EXIT_USAGE, 0, "")
    assert captured.err == (
        "Error: --provider ark turns thinking on or off (thinking.type enabled|disabled), "
        "it takes no reasoning effort low: --reasoning-effort none turns it off\n"
    )
