"""Engine metrics read before and after a run: vLLM's names served by a real
prometheus_client exposition over HTTP, and the note when a server has none.

llama.cpp's own page is read in tests/integration/test_lab_engine.py, from the real engine.
"""

from __future__ import annotations

import pytest

from latdoc import (
    UsageError,
)
from latdoc.analysis.engine_metrics import engine_delta, parse_exposition
from latdoc.cli import main
from latdoc.pipeline import metrics_target


def test_a_restarted_engine_leaves_its_counters_unknown() -> None:
    before = {"llamacpp:prompt_seconds_total": 5.0, "llamacpp:prompt_tokens_total": 900.0}
    after = {"llamacpp:prompt_seconds_total": 0.5, "llamacpp:prompt_tokens_total": 1000.0}
    found = engine_delta(before, after)
    assert found is not None
    engine, numbers = found
    assert engine == "llama.cpp"
    assert numbers["prefill_total_ms"] is None and numbers["prompt_tokens"] == 100.0
    assert "prefill_ms_per_1k_tokens" not in numbers
    assert engine_delta({}, parse_exposition("# TYPE up gauge\nup 1\n")) is None
    with pytest.raises(ValueError, match="not in the Prometheus text format"):
        parse_exposition("this is { not prometheus")


def test_a_bad_metrics_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="--server-metrics"):
        metrics_target("ftp://host/metrics", "http://h/v1")
    assert metrics_target("auto", "https://h:8443/v1") == "https://h:8443/metrics"
    assert metrics_target("off", "https://h/v1") is None
    code = main(["diagnose", "http://127.0.0.1:9/v1", "-m", "x", "--server-metrics", "nope"])
    assert code == 2
    assert "Error: --server-metrics 'nope'" in capsys.readouterr().err
    assert metrics_target("http://h:9/m", "http://x/v1") == "http://h:9/m"
