"""``latdoc record`` as a user runs it, a gateway in front of a real server on loopback,
with the clients applications use: the openai and anthropic SDKs, curl, and Node's
openai package where the machine has it. What the application receives is what the
upstream sent; every call is a trace; the recording is diagnosed."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import anthropic
import httpx
import openai
import pytest

from conftest import FAST, LabFactory, closed_port
from latdoc import Kind, Step, Store, diagnose_traffic
from latdoc.lab.sim import LabConfig, LatencyModel
from paths import ROOT
from streamed_chat import stream_chat

SECRET = "sk-record-secret-4242"
URL_LINE = re.compile(r"(http://127\.0\.0\.1:\d+\S*?):?\s")


@dataclass
class Recording:
    base_url: str
    process: subprocess.Popen[str]
    db: Path
    stderr: list[str] = field(default_factory=list)
    stdout: str = ""

    def stop(self, timeout: float = 30.0) -> None:
        """Ctrl-C, as a user stops it, unless it stopped by itself."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout)
        # Only the run id comes on stdout; stderr is the reader thread's to read.
        assert self.process.stdout is not None
        self.stdout = self.process.stdout.read()

    @property
    def run_id(self) -> str:
        return self.stdout.strip().splitlines()[-1]


@contextmanager
def recording(upstream: str, db: Path, *extra: str) -> Iterator[Recording]:
    """``latdoc record`` in front of ``upstream``, on a free port, until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "latdoc", "record", "--upstream", upstream,
         "--listen", "127.0.0.1:0", "--db", str(db), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "LATDOC_LANG": "en"},
    )  # fmt: skip
    assert process.stderr is not None
    lines: list[str] = []
    found = threading.Event()
    address: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            match = URL_LINE.search(line)
            if match and not address:
                address.append(match.group(1))
                found.set()
        found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    found.wait(30)
    if not address:
        process.kill()
        raise AssertionError("latdoc record did not start: " + "".join(lines))
    rec = Recording(address[0], process, db, lines)
    try:
        yield rec
    finally:
        rec.stop()
        reader.join(10)


def _openai(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=SECRET, base_url=base_url, max_retries=0)


def _samples(db: Path, run_id: str) -> list:  # type: ignore[type-arg]
    with Store(db) as store:
        info, samples, _ = store.load_run(run_id)
    assert info.kind == "instrument" and info.status == "recorded"
    return samples


def test_the_openai_sdk_through_the_gateway_gets_the_same_answer_and_every_call_is_kept(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "r.db"
    with lab(LabConfig(latency=FAST, seed=1)) as server:

        async def both() -> tuple[list[str], str, Recording]:
            direct = _openai(server.base_url)
            expected = await stream_chat(direct, "hello there")
            await direct.close()
            with recording(server.base_url, db) as rec:
                client = _openai(rec.base_url)
                answers = [await stream_chat(client, "hello there") for _ in range(3)]
                await client.close()
            return answers, expected, rec

        answers, expected, rec = asyncio.run(both())
    assert answers == [expected] * 3
    samples = _samples(db, rec.run_id)
    assert [s.step for s in samples] == [Step.TRAFFIC] * 3
    first, *later = (s.trace for s in samples)
    assert first.ok and first.dialect == "chat" and first.model == "lab-sim"
    assert first.new_connection is True and all(t.new_connection is False for t in later)
    assert first.connect_ms is not None and first.arrival_clock == "kernel"
    assert len(first.chunks) == 8 and first.output_tokens == 8
    # What the gateway added, piece by piece, is kept with each call.
    assert all(len(t.relay_us) >= 8 for t in (first, *later))
    assert all(0 <= us < 1_000_000 for t in later for us in t.relay_us)
    assert SECRET.encode() not in db.read_bytes()
    said = "".join(rec.stderr)
    assert f"Recorded 3 of 3 calls as run {rec.run_id}" in said
    assert "The gateway added" in said and "latdoc diagnose --from-run" in said
    with Store(db) as store:
        gateway = store.run_info(rec.run_id).meta["gateway"]
    assert gateway["requests"] == 3 and gateway["connections"] == 1
    assert gateway["relay_ms"]["pieces"] == sum(len(t.relay_us) for t in (first, *later))


def test_the_anthropic_sdk_is_passed_on_and_read_in_its_dialect(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "r.db"
    with (
        lab(LabConfig(latency=FAST, seed=3)) as server,
        recording(server.base_url.removesuffix("/v1"), db, "--max-requests", "2") as rec,
    ):

        async def talk() -> list[str]:
            client = anthropic.AsyncAnthropic(api_key=SECRET, base_url=rec.base_url,
                                              max_retries=0)  # fmt: skip
            texts = []
            for _ in range(2):
                async with client.messages.stream(
                    model="lab-sim", max_tokens=6,
                    messages=[{"role": "user", "content": "hello"}],
                ) as stream:  # fmt: skip
                    texts.append("".join([t async for t in stream.text_stream]))
            await client.close()
            return texts

        texts = asyncio.run(talk())
        rec.process.wait(30)  # --max-requests ends it by itself
    assert all(texts) and texts[0] == texts[1]
    traces = [s.trace for s in _samples(db, rec.run_id)]
    assert [t.dialect for t in traces] == ["anthropic", "anthropic"]
    assert all(t.ok and t.output_tokens == 6 and t.first_token_ns for t in traces)


class _Fixed(BaseHTTPRequestHandler):
    """An upstream that answers every POST with fixed bytes, in uneven pieces."""

    protocol_version = "HTTP/1.1"
    PIECES: ClassVar[list[bytes]] = [
        b'data: {"a"',
        b": 1}\n\n",
        'data: {"b": "\u00e9"}\n'.encode(),
        b"\n",
        b"data: [DONE]\n\n",
    ]
    seen: ClassVar[list[dict[str, str]]] = []

    def log_message(self, *args: object) -> None:
        return None

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        _Fixed.seen.append({**{k.lower(): v for k, v in self.headers.items()},
                            "path": self.path, "body": body.decode()})  # fmt: skip
        if self.path.startswith("/v1/gzip"):
            packed = gzip.compress(b'{"ok": true}')
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(len(packed)))
            self.end_headers()
            self.wfile.write(packed)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("x-upstream", "fixed")
        self.end_headers()
        for piece in self.PIECES:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            time.sleep(0.01)
        self.wfile.write(b"0\r\n\r\n")


@contextmanager
def fixed_upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fixed)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_the_application_receives_the_upstreams_bytes_and_its_request_goes_unchanged(
    tmp_path: Path,
) -> None:
    _Fixed.seen.clear()
    with (
        fixed_upstream() as upstream,
        recording(upstream, tmp_path / "r.db") as rec,
        httpx.Client() as client,
    ):
        root = rec.base_url.removesuffix("/v1")
        # Under the upstream's /v1 whether the application's base URL has it or not.
        for path in ("/v1/chat/completions?x=1", "/chat/completions?x=1"):
            with client.stream("POST", root + path, content=b'{"model": "m"}',
                                   headers={"Authorization": f"Bearer {SECRET}",
                                            "X-Custom": "kept"}) as response:  # fmt: skip
                pieces = list(response.iter_raw())
            assert b"".join(pieces) == b"".join(_Fixed.PIECES)
            assert response.headers["x-upstream"] == "fixed"
            # The upstream's own headers, none of the gateway's.
            assert response.headers["server"].startswith("BaseHTTP")
        packed = client.post(root + "/v1/gzip", content=b"{}",
                                 headers={"accept-encoding": "gzip"})  # fmt: skip
        assert packed.headers["content-encoding"] == "gzip"
        assert packed.json() == {"ok": True}
    assert [s["path"] for s in _Fixed.seen] == [
        "/v1/chat/completions?x=1", "/v1/chat/completions?x=1", "/v1/gzip"
    ]  # fmt: skip
    first = _Fixed.seen[0]
    assert first["authorization"] == f"Bearer {SECRET}" and first["x-custom"] == "kept"
    assert first["body"] == '{"model": "m"}' and "x-latdoc-token" not in first
    assert first["host"] == upstream.removeprefix("http://").removesuffix("/v1")
    samples = _samples(rec.db, rec.run_id)
    assert len(samples) == 3 and all(s.trace.ok or s.trace.status == 200 for s in samples)
    assert SECRET.encode() not in rec.db.read_bytes()


def test_failures_reach_the_application_as_the_upstream_failed(
    lab: LabFactory, tmp_path: Path
) -> None:
    with (
        lab(LabConfig(latency=FAST, seed=5)) as server,
        recording(server.base_url, tmp_path / "r.db") as rec,
    ):
        url = rec.base_url + "/chat/completions"
        body = {"model": "lab-sim", "messages": [{"role": "user", "content": "hi"}],
                "stream": True, "max_tokens": 12}  # fmt: skip
        direct = httpx.post(server.base_url + "/chat/completions", json=body,
                            headers={"x-lab-fault": "500"})  # fmt: skip
        through = httpx.post(url, json=body, headers={"x-lab-fault": "500"})
        assert through.status_code == direct.status_code == 500
        assert through.json() == direct.json()
        with pytest.raises(httpx.HTTPError):  # a stream cut short is cut short
            _read_all(url, body, {"x-lab-fault": "reset"})
        ok = httpx.post(url, json=body, headers={"x-lab-fault": "none"})
        assert ok.status_code == 200 and ok.text.rstrip().endswith("data: [DONE]")
    traces = [s.trace for s in _samples(rec.db, rec.run_id)]
    assert [t.status for t in traces] == [500, 200, 200]
    assert traces[0].error is not None and traces[1].error is not None
    assert traces[2].ok


def _read_all(url: str, body: dict[str, object], headers: dict[str, str]) -> bytes:
    with httpx.stream("POST", url, json=body, headers=headers) as response:
        return b"".join(response.iter_raw())


def test_an_upstream_that_cannot_be_reached_is_answered_502(tmp_path: Path) -> None:
    upstream = f"http://127.0.0.1:{closed_port()}/v1"
    with recording(upstream, tmp_path / "r.db") as rec:
        answer = httpx.post(rec.base_url + "/chat/completions", json={"model": "m"})
    assert answer.status_code == 502
    assert "could not reach the upstream" in answer.json()["error"]["message"]
    (sample,) = _samples(rec.db, rec.run_id)
    assert sample.trace.error is not None and sample.trace.error.kind.value == "connect"


def _curl_loop(url: str, calls: int, body: dict[str, object]) -> list[bytes]:
    curl = shutil.which("curl")
    assert curl is not None
    return [
        subprocess.run(
            [curl, "-sS", "-N", "--fail-with-body", url, "-H", f"Authorization: Bearer {SECRET}",
             "-H", "Content-Type: application/json", "-d", json.dumps(body)],
            capture_output=True, check=True, timeout=30,
        ).stdout
        for _ in range(calls)
    ]  # fmt: skip


def test_curl_in_a_loop_against_a_server_that_closes_connections_is_told_keep_alive(
    lab: LabFactory, tmp_path: Path
) -> None:
    body = {"model": "lab-sim", "messages": [{"role": "user", "content": "the same"}],
            "stream": True, "max_tokens": 4}  # fmt: skip
    with lab(LabConfig(latency=FAST, keep_alive=False, seed=2), tls=True) as server:
        assert server.ca_file is not None
        with recording(server.base_url, tmp_path / "r.db", "--quiet",
                       "--cacert", server.ca_file) as rec:  # fmt: skip
            answers = _curl_loop(rec.base_url + "/chat/completions", 6, body)
    assert all(a.rstrip().endswith(b"data: [DONE]") for a in answers)
    said = "".join(rec.stderr)
    assert "opened a new connection for each of its 6 calls" in said
    assert "  1  200" not in said  # --quiet: no line per call
    with Store(rec.db) as store:
        run = diagnose_traffic(store, rec.run_id)
        kept = " ".join(n.text for n in store.run_info(rec.run_id).notes)
    assert "new connection for each of its 6 calls" in kept  # kept with the run
    assert "The gateway added" in kept
    assert all(s.trace.new_connection and s.trace.tls_ms for s in run.samples)
    assert run.diagnosis.network["server_closes_connections"] == 1.0
    setup = next(f for f in run.diagnosis.findings if f.kind is Kind.NETWORK_SETUP)
    assert setup.title == "Every request opens a new connection"
    assert "keep-alive" in " ".join(r.title.lower() for r in run.diagnosis.remedies)


def test_a_slow_prefill_behind_the_gateway_is_named_input_length(
    lab: LabFactory, tmp_path: Path
) -> None:
    slow = LatencyModel(prefill_base_ms=5.0, prefill_ms_per_token=1.0, decode_ms_per_token=2.0)
    with (
        lab(LabConfig(latency=slow, seed=4)) as server,
        recording(server.base_url, tmp_path / "r.db") as rec,
    ):

        async def traffic() -> None:
            client = _openai(rec.base_url)
            for words in (100, 400, 800, 1200, 100, 400, 800, 1200):
                await stream_chat(client, "word " * words, max_tokens=4)
            await client.close()

        asyncio.run(traffic())
    with Store(rec.db) as store:
        run = diagnose_traffic(store, rec.run_id)
    assert run.diagnosis.verdict.primary is Kind.INPUT_LENGTH


def test_node_openai_through_the_gateway(lab: LabFactory, tmp_path: Path) -> None:
    node = shutil.which("node")
    modules = ROOT / "tests" / "node" / "node_modules" / "openai"
    if node is None or not modules.exists():
        pytest.skip("Node's openai package is not installed (make tests/node/node_modules)")
    with (
        lab(LabConfig(latency=FAST, seed=6)) as server,
        recording(server.base_url, tmp_path / "r.db") as rec,
    ):
        done = subprocess.run(
            [node, "chat.js"], cwd=ROOT / "tests" / "node", capture_output=True, text=True,
            env={**os.environ, "KEY": SECRET, "BASE": rec.base_url}, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    texts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(texts) == 3 and texts[0] and texts[0] == texts[1] == texts[2]
    traces = [s.trace for s in _samples(rec.db, rec.run_id)]
    assert len(traces) == 3 and all(t.ok and t.dialect == "chat" for t in traces)
    assert [t.new_connection for t in traces] == [True, False, False]


def test_a_bind_beyond_this_machine_needs_a_token(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "latdoc", "record", "--upstream", "http://127.0.0.1:9/v1",
         "--listen", "0.0.0.0:0", "--db", str(tmp_path / "r.db")],
        capture_output=True, text=True, timeout=60, env={**os.environ, "LATDOC_LANG": "en"},
    )  # fmt: skip
    assert done.returncode != 0 and "--token" in done.stderr


def test_with_a_token_a_call_without_it_is_refused(lab: LabFactory, tmp_path: Path) -> None:
    with (
        lab(LabConfig(latency=FAST)) as server,
        recording(server.base_url, tmp_path / "r.db", "--token", "t0k") as rec,
    ):
        url = rec.base_url + "/chat/completions"
        body = {"model": "lab-sim", "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 2}  # fmt: skip
        assert httpx.post(url, json=body).status_code == 401
        assert httpx.post(url, json=body, headers={"x-latdoc-token": "t0k"}).status_code == 200
    assert len(_samples(rec.db, rec.run_id)) == 1
