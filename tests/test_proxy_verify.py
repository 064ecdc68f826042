"""A proxy named: a slow ``CONNECT`` is a network-path finding with its remedies, and
``latdoc verify --remedy direct`` and ``--remedy proxy --alt-proxy URL`` measure them
through real proxies on loopback (tinyproxy, microsocks)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import LabFactory
from forward_proxy import binary, microsocks, slow_answering, tinyproxy
from latdoc import Kind, RunContext, Sample, Step, build_diagnosis
from latdoc.advice import keys
from latdoc.analysis.kinds.network_path import PROXY_CONNECT_MS
from latdoc.cli import EXIT_OK, EXIT_USAGE, main
from latdoc.model import Diagnosis
from latdoc.records import RequestTrace
from report_samples import ENDPOINT, make_trace

PROXY = "http://***@proxy.corp.example:3128"
PASSWORD = "alt-pr0xy-pw-51c0"
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


needs_tinyproxy = pytest.mark.skipif(binary("tinyproxy") is None, reason="needs tinyproxy")


def _verify(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, object], str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip().startswith("{") else {}, out + err


@needs_tinyproxy
def test_verify_direct_measures_the_proxy_against_the_direct_route(
    lab: LabFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    with lab(tls=True) as server, tinyproxy(tmp_path / "proxy") as proxy:
        assert server.ca_file is not None
        monkeypatch.setenv("HTTPS_PROXY", proxy.url())
        argv = ["verify", server.base_url, "-m", "lab-sim", "--cacert", server.ca_file,
                "--remedy", "direct", "--max-requests", "30", "--max-seconds", "60",
                "--db", str(tmp_path / "v.db"), "--json"]  # fmt: skip
        code, document, text = _verify(argv, capsys)
        tunnels = proxy.log_text().count("CONNECT localhost")
        monkeypatch.delenv("HTTPS_PROXY")
        direct_code, direct_doc, _ = _verify(argv, capsys)
    assert direct_code == EXIT_USAGE  # not applicable: nothing was measured
    assert code == EXIT_OK, text[-2000:]
    assert document["verdict"] != "not_applicable", document.get("reason")
    assert f"through {proxy.url()} (HTTPS_PROXY)" in json.dumps(document)
    assert tunnels >= 3  # arm A's requests, each on a new connection through the proxy
    assert direct_doc["verdict"] == "not_applicable"
    assert "go direct already" in str(direct_doc["reason"])


@pytest.mark.skipif(binary("microsocks") is None, reason="needs microsocks")
def test_verify_another_proxy_keeps_its_password_out_of_every_output(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with lab(tls=True) as server, microsocks(auth=("erin", PASSWORD)) as socks:
        assert server.ca_file is not None
        db = tmp_path / "p.db"
        alt = socks.url("socks5h", f"erin:{PASSWORD}@")
        argv = ["verify", server.base_url, "-m", "lab-sim", "--cacert", server.ca_file,
                "--remedy", "proxy", "--alt-proxy", alt, "--max-requests", "30",
                "--max-seconds", "60", "--db", str(db), "--json"]  # fmt: skip
        code, document, text = _verify(argv, capsys)
        missing, _, missing_text = _verify(argv[:8] + argv[10:], capsys)
    assert code == EXIT_OK, text[-2000:]
    assert document["verdict"] != "not_applicable", document.get("reason")
    assert socks.url("socks5h", "***@") in json.dumps(document)
    assert PASSWORD not in text
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("p.db*"))
    assert stored and PASSWORD.encode() not in stored
    assert missing == EXIT_USAGE and "--alt-proxy URL" in missing_text


HOLD_S = 0.08


@needs_tinyproxy
def test_diagnose_names_a_proxy_slow_to_open_its_tunnels(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (
        lab(tls=True) as server,
        tinyproxy(tmp_path / "proxy") as near,
        slow_answering(near, HOLD_S) as slow,
    ):
        assert server.ca_file is not None
        code = main(
            ["diagnose", server.base_url, "-m", "lab-sim", "--cacert", server.ca_file,
             "--proxy", slow.url(), "--max-requests", "16", "--max-seconds", "90",
             "--db", str(tmp_path / "d.db"), "--json"]
        )  # fmt: skip
        out, err = capsys.readouterr()
    assert code == EXIT_OK, err[-2000:]
    document = json.loads(out)
    assert document["steps"]["network"]["proxy_connect_ms"] >= HOLD_S * 1000
    titles = [f["title"] for f in document["findings"]]
    assert any(t.startswith("A proxy adds time to every new connection") for t in titles), titles
    remedies = {r["key"] for r in document["remedies"]}
    assert {keys.PROXY_BYPASS, keys.PROXY_KEEP_ALIVE, keys.NEARER_PROXY} <= remedies, remedies
