"""OpenTelemetry both ways: instrument(otel=True) emits GenAI spans and metrics through
the application's own SDK providers, and `latdoc diagnose --from-otlp` reads spans
exported as OTLP JSON, saying which phases they cannot tell apart."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

from latdoc import Kind, Store, UsageError, instrument
from latdoc.cli import main
from latdoc.workload.otlp import read_otlp
from paths import DATA


def test_otel_without_the_extra_is_a_one_line_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(UsageError, match=r"pip install 'llm-latency-doctor\[otel\]'"):
        instrument(httpx.AsyncClient(), otel=True)


def test_openai_instrumentation_spans_say_what_they_cannot_tell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = DATA / "otlp_openai_v2.json"
    traffic = read_otlp(file.read_text())
    assert len(traffic.traces) == 6
    limited = [t for t in traffic.traces if not t.ok]
    assert [t.error.code for t in limited if t.error] == ["http:429"]
    ok = [t for t in traffic.traces if t.ok]
    assert all(t.dns_ms is None and t.ttfb_ms is None and t.ttft_ms is None for t in ok)
    assert [t.total_ms for t in ok][:2] == [820.0, 790.0]
    assert ok[2].prompt_tokens == 3900 and ok[2].model == "gpt-4o-mini"
    db = tmp_path / "s.db"
    assert main(["diagnose", "--from-otlp", str(file), "--db", str(db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    kinds = {f["kind"] for f in report["findings"]}
    assert Kind.ERRORS.value in kinds
    assert not kinds & {Kind.NETWORK_SETUP.value, Kind.QUEUEING.value, Kind.DECODE.value}
    notes = " ".join(n["text"] for n in report["notes"])
    assert "DNS, TCP connect, TLS, sending and the server's wait are not told apart" in notes
    assert "carry no time to first chunk" in notes
    assert "no chunk times" in notes
    assert "prompt lengths varied, but the requests carry no time to first token" in notes
    with Store(db) as store:
        (info,) = store.list_runs()
    assert main(["diagnose", "--from-run", info.run_id, "--db", str(db), "--json"]) == 0
