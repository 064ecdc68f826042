"""``latdoc diagnose``, ``runs`` and ``report`` end to end against the lab."""

from __future__ import annotations

from pathlib import Path

import pytest

from latdoc.cli import main
from latdoc.errors import cannot_answer


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SSL_CERT_FILE"):
        monkeypatch.delenv(var, raising=False)


def test_report_of_an_unknown_run_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "nope", "--db", str(tmp_path / "x.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: no run nope")


def test_failures_that_may_pass_are_still_retried_by_the_remedy() -> None:
    assert cannot_answer("http:429") is None and cannot_answer("timeout:wait") is None
    assert cannot_answer("http:503") is None and cannot_answer("stream_broken") is None


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("latency,latency,cost", "Error: --priorities: latency is named twice"),
        ("latency=1,cost=1,quality=1", "Error: --priorities: latency and cost weigh the same"),
    ],
)
def test_bad_priorities_are_one_error_line_before_anything_is_sent(
    given: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagnose", "http://127.0.0.1:9/v1", "--priorities", given]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(said)
