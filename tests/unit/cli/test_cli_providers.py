"""``--provider NAME`` on the command line: it fills in the dialect, the base URL and the
key variable; a URL given (the lab's) wins; a wrong combination is one ``Error:`` line
and exit 2 on every sending command; ``latdoc providers`` lists the presets and never
a key."""

from __future__ import annotations

import io
import json
import re
import shlex

import pytest

from latdoc import Finding, Kind, UsageError
from latdoc.advice.kinds.reasoning import reasoning_remedies
from latdoc.cli import EXIT_OK, EXIT_USAGE, build_parser, main
from latdoc.cli._sending import Sending, api_key, choice
from latdoc.features.verify import VerifyPlan, experiments
from latdoc.features.verify.plan import build_arms
from latdoc.model import Scenario
from latdoc.pipeline import run_context
from latdoc.probe import providers
from latdoc.workload import ASSUMED
from report_samples import make_diagnosis

KEY = "sk-lab-provider-0123456789abcdef"


SENDING = {
    "probe": [],
    "diagnose": [],
    "verify": ["--remedy", "keepalive"],
    "load": [],
    "watch": [],
}


"""Every command that sends, with what else it needs."""


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for spec in providers.PROVIDERS:
        for variable in spec.key_variables:
            monkeypatch.delenv(variable, raising=False)


WRONG = [
    (["--provider", "anthropic", "--api", "gemini"],
     "Error: --provider anthropic speaks --api anthropic, not gemini"),
    (["https://api.anthropic.com/v1", "--provider", "groq"],
     "Error: api.anthropic.com is anthropic's host, not groq's"),
    (["--provider", "azure"], "Error: --provider azure needs the resource's URL"),
]  # fmt: skip


@pytest.mark.parametrize("command", SENDING)
@pytest.mark.parametrize(("arguments", "message"), WRONG)
def test_a_wrong_combination_is_one_line_and_exit_2_on_every_sending_command(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    arguments: list[str],
    message: str,
) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    code = main([command, "-m", "m", *SENDING[command], *arguments])
    captured = capsys.readouterr()
    assert code == EXIT_USAGE
    assert captured.out == ""
    assert captured.err.startswith(message) and captured.err.count("\n") == 1


@pytest.mark.parametrize("command", SENDING)
def test_the_provider_fills_in_what_was_not_given(
    monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("GROQ_API_KEY", "gsk-groq")
    parser = build_parser([command])
    start = [command, "-m", "m", *SENDING[command]]
    groq = parser.parse_args([*start, "--provider", "groq"])
    assert choice(groq).url == "https://api.groq.com/openai/v1"
    assert (choice(groq).api, api_key(groq)) == ("chat", "gsk-groq")
    plain = parser.parse_args(start)
    assert (choice(plain).api, choice(plain).url) == ("chat", "http://127.0.0.1:9/v1")
    assert api_key(plain) == "sk-openai"
    named = parser.parse_args([*start, "--provider", "groq", "--api-key-env", "K2"])
    monkeypatch.setenv("K2", "the-named-one")
    assert api_key(named) == "the-named-one"
    monkeypatch.delenv("GROQ_API_KEY")
    assert api_key(parser.parse_args([*start, "--provider", "groq"])) is None


def _blocks(out: str) -> dict[str, list[str]]:
    """Each preset's block, by its name: its lines after the heading, unindented."""
    blocks: dict[str, list[str]] = {}
    for line in out.splitlines():
        if heading := re.fullmatch(r"  (\S+)  --api (.+)", line):
            blocks[heading[1]] = [heading[2]]
        elif line.startswith("    ") and blocks:
            blocks[list(blocks)[-1]].append(line[4:].rstrip())
    return blocks


@pytest.mark.parametrize("columns", [80, 100])
def test_providers_lists_every_preset_with_its_url_whole_and_never_a_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], columns: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_API_KEY", KEY + "-gemini")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj-9")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    assert main(["providers"]) == EXIT_OK
    out = capsys.readouterr().out
    assert KEY not in out
    blocks = _blocks(out)
    assert list(blocks) == list(providers.names())
    vertex_url = (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj-9/locations/europe-west4"
    )
    urls = {spec.name: spec.base_url for spec in providers.PROVIDERS} | {"vertex": vertex_url}
    keys = {}
    for spec in providers.PROVIDERS:
        api, url, *rest = blocks[spec.name]
        said = list(spec.quirks.words())
        assert api.split()[0] == spec.api
        assert url == urls[spec.name]
        assert rest[len(rest) - len(said) :] == said
        keys[spec.name] = " ".join(rest[: len(rest) - len(said)])
        assert keys[spec.name].startswith(
            f"key {spec.key_variables[0]} (" if spec.key_variables else "no key needed"
        )
    assert all(len(line) <= columns for line in out.splitlines() if vertex_url not in line)
    assert keys["groq"] == "key GROQ_API_KEY (set), in Authorization: Bearer"
    assert keys["gemini"].endswith("else GEMINI_API_KEY (set), in x-goog-api-key")
    assert keys["azure"].endswith("else AZURE_OPENAI_AD_TOKEN (not set), in api-key")
    assert blocks["moonshot"][3:] == [
        "usage in choices[0].usage of the last chunk",
        "cached prompt tokens in usage.cached_tokens",
    ]


def test_providers_json_says_which_variables_are_set_and_never_their_values(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    assert main(["providers", "--json"]) == EXIT_OK
    out = capsys.readouterr().out
    assert KEY not in out
    document = json.loads(out)
    assert document["schema"] == "latdoc.providers/1"
    by_name = {p["name"]: p for p in document["providers"]}
    assert list(by_name) == list(providers.names())
    assert by_name["mistral"]["key_variables"] == [{"name": "MISTRAL_API_KEY", "set": True}]
    assert by_name["deepseek"]["key_variables"] == [{"name": "DEEPSEEK_API_KEY", "set": False}]
    assert by_name["vertex"]["base_url"] is None
    assert by_name["vertex"]["base_url_pattern"].startswith("https://LOCATION-aiplatform")
    assert by_name["ollama"]["key_variables"] == []
    assert by_name["vllm"]["apis"][0] == by_name["vllm"]["api"] == "chat"
    assert by_name["zhipu"]["quirks"]["thinking"] == {
        "field": "thinking.type",
        "on": "enabled",
        "off": "disabled",
    }
    assert by_name["deepseek"]["quirks"]["cached_tokens"] == ["prompt_cache_hit_tokens"]
    assert by_name["moonshot-intl"]["quirks"]["usage_at"] == "choices.0.usage"
    assert by_name["openai"]["quirks"] == {
        "cached_tokens": ["prompt_tokens_details.cached_tokens"],
        "reasoning_tokens": ["completion_tokens_details.reasoning_tokens"],
        "usage_at": "usage",
        "thinking": None,
        "notes": [],
    }


SWITCHED = [spec.name for spec in providers.PROVIDERS if spec.quirks.thinking is not None]
"""The presets whose only lever on reasoning is a switch that turns thinking off."""


def _verify_plan(command: str) -> VerifyPlan:
    """The plan ``latdoc verify`` would send by for ``command``, built as the command
    builds it; nothing is sent."""
    words = shlex.split(command)
    assert words[:2] == ["latdoc", "verify"]
    args = build_parser().parse_args(words[1:])
    sending = Sending.of(args)
    spec = experiments.experiment(args.remedy)
    with sending.to(io.StringIO(), engine=False) as (endpoint, connection):
        return VerifyPlan(endpoint, spec, connection=connection, options=spec.read(vars(args)))


@pytest.mark.parametrize("name", SWITCHED)
def test_the_reasoning_advice_for_a_preset_with_a_switch_is_a_command_verify_takes(
    name: str,
) -> None:
    """Its command names the preset and the one effort its switch takes, so verify's arm
    B turns thinking off; the effort the advice names for every other endpoint is
    refused by such a preset."""
    switch = providers.get(name).quirks.thinking
    assert switch is not None
    url = "http://127.0.0.1:9/v1"
    ctx = run_context("run", url, "qwen3", Scenario.CHAT, {"provider": name}, ())
    finding = Finding(Kind.REASONING, "It thinks first", "rule", {}, 900.0, 0.8)
    command = next(reasoning_remedies(finding, make_diagnosis(), ctx)).verify_command
    assert command is not None
    _, b = build_arms(_verify_plan(command), ASSUMED)
    assert b.endpoint.extra_body == switch.fields(switch.effort, name)
    with pytest.raises(UsageError, match="turns thinking on or off"):
        _verify_plan(
            command.replace(f"--reasoning-effort {switch.effort}", "--reasoning-effort low")
        )


def test_the_reasoning_advice_without_a_preset_asks_for_a_low_effort() -> None:
    ctx = run_context("run", "http://127.0.0.1:9/v1", "m", Scenario.CHAT, {}, ())
    finding = Finding(Kind.REASONING, "It thinks first", "rule", {}, 900.0, 0.8)
    command = next(reasoning_remedies(finding, make_diagnosis(), ctx)).verify_command
    assert command is not None
    assert "--provider" not in command
    assert command.endswith("--remedy reasoning-effort --reasoning-effort low")
