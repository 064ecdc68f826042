"""Requests through real forward proxies on loopback: Debian's tinyproxy (HTTP
``CONNECT`` and forwarding) and microsocks (SOCKS5), chosen from the environment as
curl and httpx choose them or by ``--proxy``; the proxy's handshake timed as its own
phase; and every way a proxy can fail (refused CONNECT, credentials refused, closed,
garbage) a typed error that names the proxy and never its password.

The misbehaving proxies are stand-ins on loopback: no real proxy answers garbage on
purpose.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from conftest import LabFactory
from forward_proxy import binary, microsocks, tinyproxy
from latdoc import Endpoint, ProbeSession, RequestTrace
from latdoc.errors import ErrorKind, Phase
from latdoc.probe import ProxyConfig
from latdoc.store import trace_from_record, trace_to_record

needs_tinyproxy = pytest.mark.skipif(
    binary("tinyproxy") is None, reason="needs Debian's tinyproxy (apt-get install tinyproxy)"
)
needs_microsocks = pytest.mark.skipif(
    binary("microsocks") is None, reason="needs microsocks (apt-get install microsocks)"
)

PASSWORD = "pr0xy-s3cret-9f2a"
TIMEOUT_S = 60

_PROXY_VARIABLES = ("https_proxy", "http_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def clean_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test names its own proxies: none inherited from the machine's environment."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _requests(
    url: str, ca_file: str | None, n: int = 2, proxy: ProxyConfig | None = None
) -> list[RequestTrace]:
    async def go() -> list[RequestTrace]:
        async with ProbeSession(Endpoint(url, "lab-sim"), cacert=ca_file, proxy=proxy) as session:
            return [await session.request("Hello there", 2) for _ in range(n)]

    return asyncio.run(asyncio.wait_for(go(), TIMEOUT_S))


@needs_tinyproxy
def test_https_through_tinyproxy_from_the_environment_is_tunnelled_and_timed(
    lab: LabFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with lab(tls=True) as server, tinyproxy(tmp_path) as proxy:
        assert server.ca_file is not None
        monkeypatch.setenv("HTTPS_PROXY", proxy.url())
        cold, warm = _requests(server.base_url, server.ca_file)
        log = proxy.log_text()
    assert cold.error is None and warm.error is None, (cold.error, warm.error)
    port = server.base_url.rsplit(":", 1)[1].split("/")[0]
    assert log.count(f"CONNECT localhost:{port}") == 1  # one tunnel, kept alive for both
    assert cold.proxy == proxy.url()
    assert cold.new_connection and not warm.new_connection
    marks = (cold.dns_done_ns, cold.connect_done_ns, cold.proxy_connect_done_ns, cold.tls_done_ns)
    assert all(m is not None for m in marks)
    assert sorted(marks) == list(marks)  # type: ignore[type-var]
    assert cold.proxy_connect_ms is not None and cold.proxy_connect_ms > 0
    assert cold.write_start_ns is not None and cold.tls_done_ns is not None
    assert cold.write_start_ns >= cold.tls_done_ns  # the CONNECT is not the request's send
    assert cold.first_byte_ns is not None and cold.sent_ns is not None
    assert cold.first_byte_ns > cold.sent_ns  # nor its answer the first byte
    assert warm.proxy_connect_ms == 0.0 and warm.tls_ms == 0.0
    assert cold.output_tokens and cold.chunks
    for trace in (cold, warm):  # kept whole by the store
        assert trace_from_record(trace_to_record(trace)) == trace


@needs_tinyproxy
def test_no_proxy_sends_direct_and_plain_http_is_forwarded(
    lab: LabFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with lab(tls=True) as tls_server, lab() as plain, tinyproxy(tmp_path) as proxy:
        assert tls_server.ca_file is not None
        monkeypatch.setenv("HTTPS_PROXY", proxy.url())
        monkeypatch.setenv("HTTP_PROXY", proxy.url())
        monkeypatch.setenv("NO_PROXY", ".localhost")
        (bypassed,) = _requests(tls_server.base_url, tls_server.ca_file, 1)
        assert proxy.log_text().count("CONNECT localhost") == 0
        monkeypatch.delenv("NO_PROXY")
        (forwarded,) = _requests(plain.base_url, None, 1)
        log = proxy.log_text()
    assert bypassed.error is None and bypassed.proxy is None
    assert forwarded.error is None, forwarded.error
    assert forwarded.proxy == proxy.url()
    assert forwarded.proxy_connect_done_ns is None  # forwarded: no tunnel
    assert f"POST {plain.base_url}/chat/completions" in log


@needs_microsocks
def test_socks5h_through_microsocks_with_and_without_credentials(lab: LabFactory) -> None:
    with lab(tls=True) as server:
        assert server.ca_file is not None
        with microsocks() as socks:
            (open_trace,) = _requests(server.base_url, server.ca_file, 1,
                                      ProxyConfig(url=socks.url("socks5h")))  # fmt: skip
        with microsocks(auth=("alice", PASSWORD)) as socks:
            good = ProxyConfig(url=socks.url("socks5h", f"alice:{PASSWORD}@"))
            (authed,) = _requests(server.base_url, server.ca_file, 1, good)
            bad = ProxyConfig(url=socks.url("socks5h", "alice:wrong-one@"))
            (refused,) = _requests(server.base_url, server.ca_file, 1, bad)
            none = ProxyConfig(url=socks.url("socks5h"))
            (unasked,) = _requests(server.base_url, server.ca_file, 1, none)
    for ok in (open_trace, authed):
        assert ok.error is None, ok.error
        assert ok.proxy_connect_ms is not None and ok.proxy_connect_ms > 0
        assert ok.output_tokens
    assert authed.proxy == socks.url("socks5h", "***@")
    for failed in (refused, unasked):
        assert failed.error is not None
        assert failed.error.kind is ErrorKind.PROXY
        assert failed.error.phase is Phase.PROXY_CONNECT
        assert socks.url("socks5h") in failed.error.message or "***@" in failed.error.message
        assert PASSWORD not in str(failed.error) and "wrong-one" not in str(failed.error)
    assert refused.error is not None and "refused the credentials" in refused.error.message
    assert unasked.error is not None
    assert "refused the authentication offered" in unasked.error.message


@needs_tinyproxy
@pytest.mark.parametrize(
    ("statuses", "settings", "credentials"),
    [((403,), "ports", ""), ((407,), "auth", ""), ((401, 407), "auth", "bob:not-the-password@")],
)
def test_a_refused_connect_is_a_proxy_error_with_its_status(
    lab: LabFactory, tmp_path: Path, statuses: tuple[int, ...], settings: str, credentials: str
) -> None:
    with lab(tls=True) as server:
        assert server.ca_file is not None
        options: dict[str, object] = (
            {"connect_ports": (1,)} if settings == "ports" else {"auth": ("bob", PASSWORD)}
        )
        with tinyproxy(tmp_path, **options) as proxy:  # type: ignore[arg-type]
            config = ProxyConfig(url=proxy.url(auth=credentials))
            (trace,) = _requests(server.base_url, server.ca_file, 1, config)
            if settings == "auth":
                right = ProxyConfig(url=proxy.url(auth=f"bob:{PASSWORD}@"))
                (passed,) = _requests(server.base_url, server.ca_file, 1, right)
                assert passed.error is None, passed.error
    error = trace.error
    assert error is not None
    assert error.kind is ErrorKind.PROXY and error.status in statuses
    status = error.status
    assert error.code == f"proxy:{status}"
    assert error.phase is Phase.PROXY_CONNECT
    assert f"127.0.0.1:{proxy.port}" in error.message
    assert error.cannot_answer is not None
    assert "not-the-password" not in str(error) and PASSWORD not in str(error)


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _answer_garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(4096)
    writer.write(b"SSH-2.0-OpenSSH_9.2\r\n\x00\xff garbage\r\n\r\n")
    await writer.drain()
    writer.close()


async def _close_before_answering(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    await reader.read(4096)
    writer.close()


async def _close_mid_tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await writer.drain()
    await reader.read(100)  # the TLS ClientHello's first bytes, then the tunnel drops
    writer.close()


def _through_stand_in(handler: Handler, scheme: str) -> RequestTrace:
    async def go() -> RequestTrace:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        proxy = ProxyConfig(url=f"{scheme}://carol:{PASSWORD}@127.0.0.1:{port}")
        try:
            async with ProbeSession(
                Endpoint("https://api.example.invalid/v1", "lab-sim"), proxy=proxy
            ) as session:
                return await session.request("Hello", 2)
        finally:
            server.close()

    return asyncio.run(asyncio.wait_for(go(), TIMEOUT_S))


@pytest.mark.parametrize(
    ("handler", "scheme", "kind", "words"),
    [
        (_answer_garbage, "http", ErrorKind.PROXY, "outside its protocol"),
        (_answer_garbage, "socks5h", ErrorKind.PROXY, "outside its protocol"),
        (_close_before_answering, "http", ErrorKind.PROXY, "closed the connection"),
        (_close_before_answering, "socks5h", ErrorKind.PROXY, "closed the connection"),
        (_close_mid_tunnel, "http", None, "through proxy"),
    ],
)
def test_a_misbehaving_proxy_is_a_typed_error_naming_it(
    handler: Handler, scheme: str, kind: ErrorKind | None, words: str
) -> None:
    trace = _through_stand_in(handler, scheme)
    error = trace.error
    assert error is not None
    if kind is not None:
        assert error.kind is kind and error.phase is Phase.PROXY_CONNECT
    else:  # the tunnel opened, then dropped during TLS to the endpoint
        assert error.kind in (ErrorKind.TLS, ErrorKind.STREAM_BROKEN)
        assert trace.proxy_connect_done_ns is not None
    assert words in error.message
    assert f"{scheme}://***@127.0.0.1:" in error.message
    assert PASSWORD not in str(error) and trace.proxy is not None and PASSWORD not in trace.proxy


@pytest.mark.parametrize(
    ("host", "kind"), [("127.0.0.1", ErrorKind.CONNECT), ("proxy.invalid", ErrorKind.DNS)]
)
def test_a_proxy_that_cannot_be_reached_is_named(host: str, kind: ErrorKind) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    proxy = ProxyConfig(url=f"http://carol:{PASSWORD}@{host}:{port}")

    async def go() -> RequestTrace:
        endpoint = Endpoint("https://api.example.invalid/v1", "lab-sim")
        async with ProbeSession(endpoint, proxy=proxy) as session:
            return await session.request("Hello", 2)

    trace = asyncio.run(asyncio.wait_for(go(), TIMEOUT_S))
    assert trace.error is not None and trace.error.kind is kind
    assert f"(through proxy http://***@{host}:{port})" in trace.error.message
    assert PASSWORD not in str(trace.error)


def _latdoc(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "latdoc", *args],
        env=env, capture_output=True, text=True, timeout=TIMEOUT_S * 3,
    )  # fmt: skip


@needs_tinyproxy
def test_probe_and_diagnose_honour_the_environment_and_never_print_the_password(
    lab: LabFactory, tmp_path: Path
) -> None:
    with lab(tls=True) as server, tinyproxy(tmp_path / "proxy", auth=("dave", PASSWORD)) as proxy:
        assert server.ca_file is not None
        db = tmp_path / "runs.db"
        env = {**os.environ, "HTTPS_PROXY": proxy.url(auth=f"dave:{PASSWORD}@")}
        target = [server.base_url, "--model", "lab-sim", "--cacert", server.ca_file]
        probe = _latdoc(["probe", *target, "--repeat", "2", "--json", "--db", str(db)], env)
        assert probe.returncode == 0, probe.stderr
        after_probe = proxy.log_text().count("CONNECT localhost")
        diagnose = _latdoc(
            ["diagnose", *target, "--max-requests", "12", "--max-seconds", "60", "--db", str(db),
             "--json"], env,
        )  # fmt: skip
        after_diagnose = proxy.log_text().count("CONNECT localhost")
        shown = _latdoc(["probe", *target, "--no-proxy", "--db", str(db)], env)
        assert shown.returncode == 0, shown.stderr
        after_direct = proxy.log_text().count("CONNECT localhost")
    assert after_probe >= 1
    assert diagnose.returncode in (0, 1), diagnose.stderr[-2000:]
    assert after_diagnose > after_probe  # diagnose went through the proxy too
    assert after_direct == after_diagnose  # --no-proxy: direct
    traces = [json.loads(line) for line in probe.stdout.splitlines() if line.strip()]
    assert traces and all(t["proxy"] == proxy.url(auth="***@") for t in traces)
    assert traces[0]["proxy_connect_ms"] > 0
    outputs = probe.stdout + probe.stderr + diagnose.stdout + diagnose.stderr + shown.stdout
    assert PASSWORD not in outputs
    assert PASSWORD.encode() not in db.read_bytes()


def test_the_built_in_endpoint_is_reached_direct_whatever_the_environment_says(
    tmp_path: Path,
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{unused.getsockname()[1]}"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HTTPS_PROXY": nowhere,
           "ALL_PROXY": nowhere}  # fmt: skip
    result = _latdoc(["probe", "--json", "--max-tokens", "3"], env)
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["error"] is None and row["proxy"] is None
    through = _latdoc(["probe", "--json", "--max-tokens", "3", "--proxy", nowhere], env)
    assert json.loads(through.stdout)["error"]["kind"] == "connect"  # --proxy still applies


async def _tls_connect_proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A CONNECT proxy behind TLS (``https://``), relaying to the target it is asked for."""
    head = await reader.readuntil(b"\r\n\r\n")
    host, _, port = head.split(b" ", 2)[1].decode().rpartition(":")
    up_reader, up_writer = await asyncio.open_connection(host, int(port))
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    await writer.drain()

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            dst.close()

    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


def test_an_https_proxy_is_reached_over_tls_trusting_the_given_ca(lab: LabFactory) -> None:
    pytest.importorskip("trustme")
    from latdoc.lab.tls import server_context

    with lab(tls=True) as server:
        assert server.ca_file is not None
        ca_file = server.ca_file

        async def go() -> RequestTrace:
            context = server_context(("localhost", "127.0.0.1"), ["http/1.1"])
            proxy_server = await asyncio.start_server(
                _tls_connect_proxy, "127.0.0.1", 0, ssl=context
            )
            port = proxy_server.sockets[0].getsockname()[1]
            config = ProxyConfig(url=f"https://localhost:{port}", environ={})
            try:
                endpoint = Endpoint(server.base_url, "lab-sim")
                async with ProbeSession(endpoint, cacert=ca_file, proxy=config) as session:
                    return await session.request("Hello there", 2)
            finally:
                proxy_server.close()

        trace = asyncio.run(asyncio.wait_for(go(), TIMEOUT_S))
    assert trace.error is None, trace.error
    assert trace.proxy is not None and trace.proxy.startswith("https://localhost:")
    assert trace.proxy_connect_ms is not None and trace.proxy_connect_ms > 0
    assert trace.tls_ms is not None and trace.tls_ms > 0
    assert trace.output_tokens
