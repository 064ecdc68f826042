"""``--api anthropic``, ``responses``, ``gemini``, ``vertex`` and ``azure`` on the
command line: the key each reads (never shown), the reasoning phase printed, the
sending commands in each, and a wrong dialect named in the failure."""

from __future__ import annotations

import pytest

from latdoc.cli import main


def test_the_help_names_each_dialects_route_and_key(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["probe", "--help"])
    out = capsys.readouterr().out
    shown = " ".join(out.split())
    assert "gemini (Google's Gemini API, /models/{model}:streamGenerateContent?alt=sse)" in shown
    assert "/publishers/google/models/{model}:streamGenerateContent" in "".join(out.split())
    assert "or /chat/completions after a base URL ending /openai/v1" in shown
    assert "GOOGLE_API_KEY or GEMINI_API_KEY with --api gemini" in shown
    assert "AZURE_OPENAI_API_KEY or AZURE_OPENAI_AD_TOKEN with --api azure" in shown
