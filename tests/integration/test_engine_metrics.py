"""Engine metrics read before and after a run: vLLM's names served by a real
prometheus_client exposition over HTTP, and the note when a server has none.

llama.cpp's own page is read in tests/integration/test_lab_engine.py, from the real engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

from conftest import LabFactory
from latdoc import (
    ConnectionOptions,
    DiagnosisPlan,
    Endpoint,
    Store,
    diagnose_endpoint,
    rediagnose,
)
from latdoc.lab.sim import LabConfig, LatencyModel
from latdoc.pipeline import MetricsReading

QUICK = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.01, decode_ms_per_token=1.0)


class FakeVllm:
    """vLLM's metric names in a registry of their own, served on loopback."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ["model_name"]
        self.hist = {
            name: Histogram(f"vllm:{name}", name, labels, registry=self.registry)
            for name in (
                "request_queue_time_seconds",
                "request_prefill_time_seconds",
                "request_decode_time_seconds",
                "time_to_first_token_seconds",
                "e2e_request_latency_seconds",
            )
        }
        self.prompt = Counter("vllm:prompt_tokens", "p", labels, registry=self.registry)
        self.output = Counter("vllm:generation_tokens", "g", labels, registry=self.registry)

    def serve(self, queue: float, prefill: float, decode: float, model: str = "m") -> None:
        self.hist["request_queue_time_seconds"].labels(model).observe(queue)
        self.hist["request_prefill_time_seconds"].labels(model).observe(prefill)
        self.hist["request_decode_time_seconds"].labels(model).observe(decode)
        self.hist["time_to_first_token_seconds"].labels(model).observe(queue + prefill)
        self.hist["e2e_request_latency_seconds"].labels(model).observe(queue + prefill + decode)
        self.prompt.labels(model).inc(100)
        self.output.labels(model).inc(20)


@pytest.fixture
def vllm() -> Iterator[tuple[FakeVllm, str]]:
    fake = FakeVllm()
    server, thread = start_http_server(0, addr="127.0.0.1", registry=fake.registry)
    try:
        yield fake, f"http://127.0.0.1:{server.server_port}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_vllm_histograms_become_the_runs_means(vllm: tuple[FakeVllm, str]) -> None:
    fake, url = vllm
    fake.serve(queue=9.0, prefill=9.0, decode=9.0, model="earlier")
    reading = MetricsReading(url, ConnectionOptions())
    assert reading.before is not None and reading.note is None
    fake.serve(queue=0.2, prefill=0.5, decode=1.0)
    fake.serve(queue=0.4, prefill=0.7, decode=3.0, model="other")
    record = reading.finish()
    assert record is not None, reading.note
    assert record["engine"] == "vLLM"
    numbers = record["numbers"]
    assert numbers["queue_mean_ms"] == pytest.approx(300.0)
    assert numbers["prefill_mean_ms"] == pytest.approx(600.0)
    assert numbers["decode_mean_ms"] == pytest.approx(2000.0)
    assert numbers["ttft_mean_ms"] == pytest.approx(900.0)
    assert numbers["requests"] == 2.0
    assert (numbers["prompt_tokens"], numbers["output_tokens"]) == (200.0, 40.0)


def test_a_server_without_metrics_is_a_note_and_off_reads_nothing(lab: LabFactory) -> None:
    with lab(LabConfig(latency=QUICK)) as server, Store(None) as store:
        plan = DiagnosisPlan(Endpoint(server.base_url, "lab-sim"), max_tokens=4, max_requests=6)
        run = diagnose_endpoint(plan, store=store)
        quiet = diagnose_endpoint(plan, store=store, server_metrics="off")
    notes = [n.text for n in run.diagnosis.notes]
    assert f"server metrics not read at {server.base_url[:-3]}/metrics (HTTP 404)" in notes
    assert not any("server metrics" in n.text for n in quiet.diagnosis.notes)
    assert run.diagnosis.server is not None and run.diagnosis.server.metrics == {}


def test_metrics_are_kept_with_the_run_and_shown_again(
    lab: LabFactory, vllm: tuple[FakeVllm, str], tmp_path: Path
) -> None:
    fake, url = vllm
    with lab(LabConfig(latency=QUICK)) as server, Store(str(tmp_path / "r.db")) as store:
        plan = DiagnosisPlan(Endpoint(server.base_url, "lab-sim"), max_tokens=4, max_requests=4)
        fake.serve(queue=0.1, prefill=0.2, decode=0.3)
        run = diagnose_endpoint(plan, store=store, server_metrics=url)
        again = rediagnose(store, run.run_id)
    for d in (run.diagnosis, again.diagnosis):
        assert d.server is not None
        assert d.server.metrics_source == f"vLLM /metrics at {url}"
        assert d.server.metrics["requests"] == 0.0
