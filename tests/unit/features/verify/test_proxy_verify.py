"""A proxy named: a slow ``CONNECT`` is a network-path finding with its remedies, and
``latdoc verify --remedy direct`` and ``--remedy proxy --alt-proxy URL`` measure them
through real proxies on loopback (tinyproxy, microsocks)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from latdoc import Kind, RunContext, Sample, Step, build_diagnosis
from latdoc.advice import keys
from latdoc.analysis.kinds.network_path import PROXY_CONNECT_MS
from latdoc.model import Diagnosis
from latdoc.records import RequestTrace
from report_samples import ENDPOINT, make_trace

PROXY = "http://***@proxy.corp.example:3128"


_PROXY_VARIABLES = ("https_proxy", "http_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def clean_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _through_proxy(trace: RequestTrace, tunnel_ms: float | None) -> RequestTrace:
    """``trace`` as if sent through :data:`PROXY`, its CONNECT taking ``tunnel_ms`` between
    the TCP handshake and TLS (the later marks moved on by as much)."""
    if tunnel_ms is None or trace.connect_done_ns is None:
        return replace(trace, proxy=PROXY)
    shift = round(tunnel_ms * 1e6)

    def later(mark: int | None) -> int | None:
        return None if mark is None else mark + shift

    return replace(
        trace,
        proxy=PROXY,
        proxy_connect_done_ns=trace.connect_done_ns + shift,
        tls_done_ns=later(trace.tls_done_ns),
        sent_ns=later(trace.sent_ns),
        first_byte_ns=later(trace.first_byte_ns),
        first_token_ns=later(trace.first_token_ns),
        done_ns=later(trace.done_ns),
        chunks=tuple(replace(c, t_ns=c.t_ns + shift) for c in trace.chunks),
    )


def _diagnosis(tunnel_ms: float) -> Diagnosis:
    samples = []
    for i in range(6):
        cold = _through_proxy(make_trace(dns=2.0, connect=3.0, tls=8.0, wait=90.0 + i), tunnel_ms)
        warm = _through_proxy(make_trace(dns=None, connect=None, tls=None, wait=90.0 + i), None)
        samples += [Sample(Step.NETWORK, cold, 128, cold=True), Sample(Step.NETWORK, warm, 128)]
    numbered = [replace(s, index=i) for i, s in enumerate(samples)]
    return build_diagnosis(numbered, RunContext("proxy", ENDPOINT, "m", cpu_count=2))


def test_a_slow_connect_is_named_with_the_proxy_and_its_remedies() -> None:
    d = _diagnosis(tunnel_ms=150.0)
    (finding,) = [f for f in d.findings if f.kind is Kind.NETWORK_PATH]
    assert finding.title == "A proxy adds time to every new connection"
    assert finding.evidence["proxy_connect_ms"] == pytest.approx(150.0)
    assert PROXY in finding.rule and f"> {PROXY_CONNECT_MS:.0f} ms" in finding.rule
    assert d.network["proxy_connect_ms"] == pytest.approx(150.0)
    by_key = {r.key: r for r in d.remedies}
    assert {keys.PROXY_BYPASS, keys.PROXY_KEEP_ALIVE, keys.NEARER_PROXY} <= set(by_key)
    assert keys.GATEWAY not in by_key  # the proxy is named: no "measure a gateway"
    bypass = by_key[keys.PROXY_BYPASS]
    host = ENDPOINT.split("//", 1)[1].split("/", 1)[0].split(":", 1)[0]
    assert f"NO_PROXY={host}" in bypass.change
    assert bypass.verify_command is not None and "--remedy direct" in bypass.verify_command
    nearer = by_key[keys.NEARER_PROXY].verify_command
    assert nearer is not None and "--remedy proxy --alt-proxy PROXY_URL" in nearer


def test_a_quick_connect_is_not_named() -> None:
    d = _diagnosis(tunnel_ms=PROXY_CONNECT_MS / 2)
    assert not [f for f in d.findings if "proxy" in f.title.lower()]
    assert d.network["proxy_connect_ms"] == pytest.approx(PROXY_CONNECT_MS / 2)
