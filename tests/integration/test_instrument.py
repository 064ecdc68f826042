"""latdoc.instrument on real clients against the lab: what the application receives is
unchanged, every request becomes a trace with the probe's phases, and the recorded
traffic is diagnosed for what it can tell."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import openai
import pytest

from conftest import FAST, LabFactory, closed_port, micros_since_epoch
from latdoc import Kind, Step, Store, diagnose_traffic, instrument, rediagnose
from latdoc.analysis.kinds.input_length import long_tokens
from latdoc.lab.sim import LabConfig
from latdoc.probe import kernel_stamps_possible

SECRET = "sk-test-secret"


def _openai(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=SECRET, base_url=base_url, max_retries=0)


async def _chat(
    client: openai.AsyncOpenAI, text: str, *, fault: str | None = None, max_tokens: int = 8
) -> str:
    stream = await client.chat.completions.create(
        model="lab-sim",
        messages=[{"role": "user", "content": text}],
        max_tokens=max_tokens,
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={"x-lab-fault": fault} if fault else None,
    )
    parts = []
    async for chunk in stream:
        for choice in chunk.choices:
            parts.append(choice.delta.content or "")
    return "".join(parts)


def _record(
    base_url: str, path: Path, traffic: Callable[[openai.AsyncOpenAI], Awaitable[None]]
) -> str:
    """Run ``traffic`` through an instrumented openai client; return the run id."""

    async def go() -> str:
        client = _openai(base_url)
        with Store(path) as store, instrument(client, store=store) as inst:
            await traffic(client)
            run_id = inst.run_id
        await client.close()
        return run_id

    return asyncio.run(go())


def test_openai_stream_becomes_a_trace_and_the_answer_is_unchanged(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=FAST, seed=1)) as server:
        answers: list[str] = []

        async def traffic(client: openai.AsyncOpenAI) -> None:
            answers.append(await _chat(client, "hello there"))
            answers.append(await _chat(client, "hello there"))
            plain = _openai(server.base_url)
            answers.append(await _chat(plain, "hello there"))
            await plain.close()

        run_id = _record(server.base_url, db, traffic)
    assert answers[0] and answers[0] == answers[1] == answers[2]
    with Store(db) as store:
        info, samples, _ = store.load_run(run_id)
    assert info.kind == "instrument"
    assert info.status == "recorded"
    assert [s.step for s in samples] == [Step.TRAFFIC, Step.TRAFFIC]
    cold, warm = (s.trace for s in samples)
    assert cold.ok and warm.ok
    assert cold.new_connection is True and warm.new_connection is False
    assert cold.connect_ms is not None and cold.connect_ms > 0 and cold.dns_ms is not None
    assert warm.connect_ms == 0 and warm.connection_id == cold.connection_id
    assert cold.sent_ns is not None and cold.first_byte_ns is not None
    assert cold.first_token_ns is not None and cold.first_token_ns >= cold.first_byte_ns
    assert cold.done_ns is not None and cold.done_ns >= cold.first_token_ns
    assert len(cold.chunks) == 8 and cold.output_tokens == 8 and cold.output_tokens_exact
    assert cold.prompt_tokens and cold.model == "lab-sim" and cold.dialect == "chat"
    assert SECRET not in str(samples)
    assert cold.response_id and cold.response_id.startswith("chatcmpl-lab")
    assert warm.response_id != cold.response_id
    assert cold.started_ns is not None
    assert micros_since_epoch(cold.started_at) == cold.started_ns // 1000


def test_httpx_client_body_passes_through_byte_for_byte(lab: LabFactory, tmp_path: Path) -> None:
    body = {
        "model": "lab-sim",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 5,
        "stream": True,
    }

    async def fetch(client: httpx.AsyncClient, url: str) -> tuple[list[bytes], bytes]:
        pieces = []
        async with client.stream("POST", url, json=body) as response:
            async for raw in response.aiter_raw():
                pieces.append(raw)
        return pieces, b"".join(pieces)

    with lab(LabConfig(latency=FAST, seed=3)) as server:
        url = server.base_url + "/chat/completions"

        async def go() -> tuple[bytes, bytes, int]:
            async with httpx.AsyncClient() as plain, httpx.AsyncClient() as timed:
                with Store(tmp_path / "s.db") as store, instrument(timed, store=store) as inst:
                    _, expected = await fetch(plain, url)
                    _, got = await fetch(timed, url)
                return expected, got, inst.requests

        expected, got, recorded = asyncio.run(go())
    assert _stable(got) == _stable(expected) and b"[DONE]" in got
    assert recorded == 1


def _stable(body: bytes) -> bytes:
    """The body without what differs between two identical requests (id, time)."""
    body = re.sub(rb'"id": ?"[^"]*"', b'"id":""', body)
    return re.sub(rb'"created": ?\d+', b'"created":0', body)


def test_errors_reach_the_application_as_without_instrument_and_are_counted_by_class(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    seen: dict[str, list[str]] = {"plain": [], "timed": []}

    async def outcomes(client: openai.AsyncOpenAI, into: list[str]) -> None:
        for fault in ("none", "429", "500", "none", "reset", "none", "429", "none"):
            try:
                await _chat(client, "one two three", fault=fault)
                into.append("ok")
            except openai.APIError as exc:
                into.append(type(exc).__name__)

    with lab(LabConfig(latency=FAST, seed=5)) as server:

        async def traffic(client: openai.AsyncOpenAI) -> None:
            await outcomes(client, seen["timed"])
            plain = _openai(server.base_url)
            await outcomes(plain, seen["plain"])
            await plain.close()

        run_id = _record(server.base_url, db, traffic)
        with Store(db) as store:
            run = diagnose_traffic(store, run_id)
    assert seen["timed"] == seen["plain"]
    assert seen["timed"].count("RateLimitError") == 2
    codes = [s.trace.error.code for s in run.samples if s.trace.error is not None]
    assert sorted(codes) == ["http:429", "http:429", "http:500", "stream_broken"]
    errors = next(f for f in run.diagnosis.findings if f.kind is Kind.ERRORS)
    assert errors.evidence["http:429"] == 2
    assert errors.evidence["http:500"] == 1
    assert (
        "Retry-After" in next(c for c in run.samples if c.trace.status == 429).trace.error.message
    )  # type: ignore[union-attr]


def test_a_server_that_closes_connections_is_noticed_from_traffic(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=FAST, keep_alive=False, seed=2)) as server:

        async def traffic(client: openai.AsyncOpenAI) -> None:
            for _ in range(6):
                await _chat(client, "the same short question")

        run_id = _record(server.base_url, db, traffic)
    with Store(db) as store:
        run = diagnose_traffic(store, run_id)
    assert all(s.trace.new_connection for s in run.samples)
    assert run.diagnosis.network["server_closes_connections"] == 1.0
    setup = next(f for f in run.diagnosis.findings if f.kind is Kind.NETWORK_SETUP)
    assert setup.title == "Every request opens a new connection"
    notes = " ".join(n.text for n in run.diagnosis.notes)
    assert "nothing was sent" in notes and "no concurrency probe" in notes


def test_prompt_sizes_that_occurred_show_the_length_curve(lab: LabFactory, tmp_path: Path) -> None:
    quadratic = dataclasses.replace(FAST, prefill_base_ms=20.0, prefill_ms_per_token2=0.00005)
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=quadratic, seed=4)) as server:

        async def traffic(client: openai.AsyncOpenAI) -> None:
            for words in (100, 2000, 500, 1000, 100, 2000, 500, 1000):
                await _chat(client, "word " * words, max_tokens=4)

        run_id = _record(server.base_url, db, traffic)
    with Store(db) as store:
        run = diagnose_traffic(store, run_id)
        told = diagnose_traffic(store, run_id, prompt_tokens=2000)
        again = rediagnose(store, run_id)
    diagnosis = run.diagnosis
    assert diagnosis.length is not None and len(diagnosis.length.points) == 4
    notes = " ".join(n.text for n in diagnosis.notes)
    assert "prompt sizes that occurred" in notes
    assert "queueing cannot be judged" in notes
    counted = sorted(t for s in run.samples if (t := s.trace.prompt_tokens) is not None)
    median = round((counted[3] + counted[4]) / 2)
    assert len(counted) == 8 and counted[0] < median < counted[-1]
    check = diagnosis.length_check
    assert check is not None and check.long_tokens == median, "the rule reads the median"
    at_told = long_tokens(diagnosis.length, 2000)[0]
    assert at_told > median
    for at_2k in (told.diagnosis, again.diagnosis):
        assert at_2k.length_check is not None and at_2k.length_check.long_tokens == at_told
        assert at_2k.verdict.primary is Kind.INPUT_LENGTH


def test_one_prompt_length_tells_no_length_curve(lab: LabFactory, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=FAST, seed=6)) as server:

        async def traffic(client: openai.AsyncOpenAI) -> None:
            await asyncio.gather(*(_chat(client, "same words here") for _ in range(6)))

        run_id = _record(server.base_url, db, traffic)
    with Store(db) as store:
        run = diagnose_traffic(store, run_id)
    assert run.diagnosis.length is None
    assert Kind.INPUT_LENGTH not in {f.kind for f in run.diagnosis.findings}
    assert max(s.concurrency for s in run.samples) > 1
    notes = " ".join(n.text for n in run.diagnosis.notes)
    assert "fewer than two distinct prompt lengths" in notes
    assert "dispersion of TTFT over 6 requests" in notes


def test_a_refused_connection_fails_as_it_would_and_is_kept_as_a_connect_error(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1/chat/completions"

    async def raised(client: httpx.AsyncClient) -> type[BaseException]:
        with pytest.raises(httpx.HTTPError) as caught:
            await client.post(url, json={"model": "m"})
        return caught.type

    async def go() -> tuple[type[BaseException], type[BaseException], str]:
        async with httpx.AsyncClient() as plain, httpx.AsyncClient() as timed:
            with Store(tmp_path / "s.db") as store, instrument(timed, store=store) as inst:
                expected = await raised(plain)
                got = await raised(timed)
                run_id = inst.run_id
        return expected, got, run_id

    expected, got, run_id = asyncio.run(go())
    assert got is expected is httpx.ConnectError
    with Store(tmp_path / "s.db") as store:
        _, samples, _ = store.load_run(run_id)
    (sample,) = samples
    assert sample.trace.error is not None and sample.trace.error.code == "connect"
    assert sample.trace.model == "m"


@pytest.mark.parametrize("http2", [False, True])
def test_tls_and_http2_phases_are_timed_like_the_probe(
    lab: LabFactory, tmp_path: Path, http2: bool
) -> None:
    with lab(LabConfig(latency=FAST, seed=9), tls=True, http2=http2) as server:
        assert server.ca_file is not None
        context = ssl.create_default_context(cafile=server.ca_file)

        async def go() -> str:
            async with httpx.AsyncClient(verify=context, http2=http2) as http:
                with Store(tmp_path / "s.db") as store, instrument(http, store=store) as inst:
                    for _ in range(2):
                        async with http.stream(
                            "POST",
                            server.base_url + "/chat/completions",
                            json={
                                "model": "lab-sim",
                                "messages": [{"role": "user", "content": "hi"}],
                                "max_tokens": 4,
                                "stream": True,
                            },
                        ) as response:
                            async for _ in response.aiter_bytes():
                                pass
                    return inst.run_id

        run_id = asyncio.run(go())
    with Store(tmp_path / "s.db") as store:
        _, samples, _ = store.load_run(run_id)
    cold, warm = (s.trace for s in samples)
    assert cold.ok and warm.ok
    assert cold.http_version == ("HTTP/2" if http2 else "HTTP/1.1")
    assert cold.tls_ms is not None and cold.tls_ms > 0
    assert warm.tls_ms == 0 and warm.new_connection is False
    assert cold.first_token_ns is not None and len(cold.chunks) == 4


def test_the_request_id_the_application_sends_is_kept(lab: LabFactory, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=FAST, seed=1)) as server:

        async def traffic(client: openai.AsyncOpenAI) -> None:
            stream = await client.chat.completions.create(
                model="lab-sim",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=2,
                stream=True,
                extra_headers={"X-Request-ID": "app-req-1"},
            )
            async for _ in stream:
                pass
            await _chat(client, "hi")

        run_id = _record(server.base_url, db, traffic)
    with Store(db) as store:
        _, samples, _ = store.load_run(run_id)
    assert [s.trace.request_id for s in samples] == ["app-req-1", None]


@pytest.mark.parametrize(("kernel_stamps", "clock"), [(False, "loop"), (True, "kernel")])
def test_arrivals_are_stamped_by_the_loop_unless_kernel_stamps_are_asked_for(
    lab: LabFactory, tmp_path: Path, kernel_stamps: bool, clock: str
) -> None:
    if kernel_stamps and not kernel_stamps_possible():
        pytest.skip("this platform gives no kernel receive stamps")
    db = tmp_path / "s.db"

    async def go(base_url: str) -> str:
        client = _openai(base_url)
        with (
            Store(db) as store,
            instrument(client, store=store, kernel_stamps=kernel_stamps) as inst,
        ):
            await _chat(client, "hello there")
            run_id = inst.run_id
        await client.close()
        return run_id

    with lab(LabConfig(latency=FAST, seed=1)) as server:
        run_id = asyncio.run(go(server.base_url))
    with Store(db) as store:
        _, samples, _ = store.load_run(run_id)
    assert [s.trace.arrival_clock for s in samples] == [clock]
