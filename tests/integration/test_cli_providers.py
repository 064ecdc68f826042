"""``--provider NAME`` on the command line: it fills in the dialect, the base URL and the
key variable; a URL given (the lab's) wins; a wrong combination is one ``Error:`` line
and exit 2 on every sending command; ``latdoc providers`` lists the presets and never
a key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FAST, LabFactory
from latdoc import Store
from latdoc.cli import EXIT_OK, main
from latdoc.lab.sim import LabConfig
from unit.cli import test_cli_providers as unit_providers
from unit.cli.test_cli_providers import KEY

no_ambient_endpoint = unit_providers._no_ambient_endpoint
"""The unit tests' clean environment, for every test here too (an autouse fixture)."""


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
