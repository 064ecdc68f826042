"""The public path: every verb and renderer used as ``latdoc.NAME`` against the lab, and
every public name with a docstring of its own and a test that reaches it that way."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import latdoc
from conftest import LabFactory
from latdoc.lab.sim import LabConfig, LatencyModel
from paths import DATA

QUICK = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=0.02, decode_ms_per_token=1.0)


def test_the_verbs_and_renderers_through_latdoc(lab: LabFactory, tmp_path: Path) -> None:
    with lab(LabConfig(latency=QUICK)) as server, latdoc.Store(str(tmp_path / "r.db")) as store:
        endpoint = latdoc.Endpoint(server.base_url, "lab-sim")
        plan = latdoc.DiagnosisPlan(endpoint, max_tokens=4, max_requests=12, seed=1)
        run = latdoc.diagnose_endpoint(plan, store=store, server_metrics="off")
        again = latdoc.rediagnose(store, run.run_id)
        _, samples, _ = store.load_run(run.run_id)

        probe = latdoc.ProbePlan(endpoint, max_tokens=4, repeat=3)
        first = latdoc.probe_endpoint(probe, store=store)
        second = latdoc.probe_endpoint(probe, store=store)
        comparison = latdoc.compare_runs(store, first.run_id, second.run_id)

        sweep = latdoc.LoadPlan(
            endpoint, concurrency=(1, 2), duration_per_level=0.3, max_tokens=4, max_requests=400
        )
        loaded = latdoc.load_endpoint(sweep, store=store, slo=latdoc.Slo(ttft_ms=1000.0))
        reloaded = latdoc.reload_load(store, loaded.run_id)

        watched = latdoc.watch_endpoint(
            latdoc.WatchPlan(endpoint, every_s=60.0, until=None, max_tokens=4),
            name="public",
            store=store,
            max_requests=10,
            token_budget=None,
            duration_s=None,
        )
        clock = latdoc.watch_clock(store, "public", bucket_s=3600.0)

        with pytest.warns(DeprecationWarning, match="measure_steps"):
            measured = asyncio.run(latdoc.run_diagnosis(plan))

    assert isinstance(run.diagnosis, latdoc.Diagnosis)
    assert again.diagnosis.verdict.primary == run.diagnosis.verdict.primary
    doc = latdoc.diagnosis_to_dict(run.diagnosis)
    assert json.loads(json.dumps(doc))["schema"] == "latdoc.diagnosis/2"
    assert "Verdict" in latdoc.render_text(latdoc.render_diagnosis(run.diagnosis), width=100)
    assert latdoc.render_html(run.diagnosis, samples).lstrip().lower().startswith("<!doctype html>")

    assert len(first.result.traces) == 3 and all(t.ok for t in first.result.traces)
    assert latdoc.trace_to_dict(first.result.traces[0])["schema"] == "latdoc.trace/1"
    waterfall = latdoc.render_text(latdoc.render_waterfall(first.result.traces[0]), width=100)
    assert "TTFT" in waterfall
    runs = {"a": {"run_id": comparison.a.run_id}, "b": {"run_id": comparison.b.run_id}}
    compared = latdoc.comparison_to_dict(comparison.comparison, **runs)
    assert compared["schema"] == "latdoc.comparison/1"
    shown = latdoc.render_comparison(comparison.comparison, a_label="first", b_label="second")
    assert "TTFT" in latdoc.render_text(shown, width=120)

    assert [lv.window.concurrency for lv in loaded.analysis.levels] == [1, 2]
    assert latdoc.load_to_dict(reloaded.analysis)["schema"] == "latdoc.load/1"
    assert "TTFT" in latdoc.render_text(latdoc.render_load(loaded.analysis), width=140)

    assert watched.result is not None and watched.result.ticks == 1
    assert clock.report.buckets and sum(b.requests for b in clock.report.buckets) > 0
    assert measured.samples, "measure_steps sent nothing"


def test_recorded_traffic_through_latdoc(lab: LabFactory, tmp_path: Path) -> None:
    import httpx

    body = {"model": "lab-sim", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}

    async def send(base_url: str, store: latdoc.Store) -> str:
        async with httpx.AsyncClient() as client:
            with latdoc.instrument(client, store=store) as attached:
                assert isinstance(attached, latdoc.Instrumentation)
                for _ in range(3):
                    async with client.stream(
                        "POST", f"{base_url}/chat/completions", json={**body, "stream": True}
                    ) as response:
                        await response.aread()
                return attached.run_id

    with lab(LabConfig(latency=QUICK)) as server, latdoc.Store(str(tmp_path / "t.db")) as store:
        run_id = asyncio.run(send(server.base_url, store))
        recorded = latdoc.diagnose_traffic(store, run_id)
        spans = latdoc.diagnose_otlp(store, DATA / "otlp_openai_v2.json")
    assert isinstance(recorded, latdoc.DiagnosisRun)
    assert recorded.diagnosis.requests == 3
    assert latdoc.Kind.ERRORS in {f.kind for f in spans.diagnosis.findings}


def test_the_pages_and_records_of_the_verbs(lab: LabFactory, tmp_path: Path) -> None:
    with lab(LabConfig(latency=QUICK)) as server, latdoc.Store(str(tmp_path / "p.db")) as store:
        endpoint = latdoc.Endpoint(server.base_url, "lab-sim")
        probe = latdoc.ProbePlan(endpoint, max_tokens=4, repeat=3)
        first = latdoc.probe_endpoint(probe, store=store)
        second = latdoc.probe_endpoint(probe, store=store)
        comparison = latdoc.compare_runs(store, first.run_id, second.run_id)
        sweep = latdoc.LoadPlan(
            endpoint, concurrency=(1,), duration_per_level=0.3, max_tokens=4, max_requests=100
        )
        loaded = latdoc.load_endpoint(sweep, store=store)
        watched = latdoc.watch_endpoint(
            latdoc.WatchPlan(endpoint, every_s=60.0, until=None, max_tokens=4),
            name="pages",
            store=store,
            max_requests=10,
            token_budget=None,
            duration_s=None,
        )
        clock = latdoc.watch_clock(store, "pages", bucket_s=3600.0)
        verified = latdoc.verify_remedy(
            latdoc.VerifyPlan(
                endpoint=endpoint,
                remedy=latdoc.VerifyRemedy("keepalive"),
                max_tokens=4,
                max_requests=40,
                max_seconds=30.0,
                seed=3,
            ),
            store=store,
        )
    assert isinstance(verified, latdoc.VerifyResult)
    assert verified.remedy == "keepalive" and verified.run_ids is not None
    assert isinstance(first, latdoc.StoredProbe) and isinstance(first.result, latdoc.ProbeRun)
    assert isinstance(comparison, latdoc.RunComparison)
    assert isinstance(loaded, latdoc.LoadRun)
    assert isinstance(watched, latdoc.WatchRun) and isinstance(clock, latdoc.WatchClock)
    page = latdoc.render_comparison_html(comparison.comparison, a_label="first", b_label="second")
    assert "<svg" in page or "<table" in page
    assert "<svg" in latdoc.render_load_html(loaded.analysis)


def test_tcp_keepalive_reaches_the_clients_socket(lab: LabFactory) -> None:
    import socket

    keepalive = latdoc.TcpKeepalive(idle_s=7, interval_s=3, probes=2)
    with (
        lab() as server,
        latdoc.make_client(tcp_keepalive=keepalive) as client,
        client.stream("GET", f"{server.base_url}/models") as response,
    ):
        sock = response.extensions["network_stream"].get_extra_info("socket")
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 7
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 3
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 2
    with pytest.raises(latdoc.PolicyError):
        latdoc.TcpKeepalive(idle_s=0)
