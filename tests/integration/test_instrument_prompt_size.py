"""latdoc.instrument keeps every request's prompt size, so an application whose streams
ask for no usage still shows its length curve; ``ask_usage=True`` asks the stream for
the server's own counts, and a server that refuses the field never fails the
application's request for it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import openai
import pytest

from conftest import FAST, LabFactory
from latdoc import Kind, Step, Store, diagnose_traffic, instrument
from latdoc.cli import main
from latdoc.lab.sim import LabConfig, chat_prompt_tokens
from latdoc.records import RequestTrace
from streamed_chat import stream_chat

WORDS = (120, 2100, 600, 1200, 120, 2100, 600, 1200)


"""Four prompt lengths, each sent twice, as an application's traffic might hold them."""


PREFILL = dataclasses.replace(FAST, prefill_base_ms=10.0, prefill_ms_per_token=0.2)


"""0.2 ms a prompt token: 420 ms at the longest, the rest well under it."""


def _prompt(words: int) -> str:
    return "word " * words


def _record(base_url: str, db: Path, *, ask_usage: bool) -> tuple[str, list[str]]:
    async def go() -> tuple[str, list[str]]:
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=base_url, max_retries=0)
        with Store(db) as store, instrument(client, store=store, ask_usage=ask_usage) as inst:
            answers = [await stream_chat(client, _prompt(words), max_tokens=4) for words in WORDS]
            run_id = inst.run_id
        await client.close()
        return run_id, answers

    return asyncio.run(go())


def _traces(db: Path, run_id: str) -> list[RequestTrace]:
    with Store(db) as store:
        _, samples, _ = store.load_run(run_id)
    assert all(s.step is Step.TRAFFIC for s in samples)
    return [s.trace for s in samples]


def test_a_stream_without_usage_still_shows_the_length_curve(
    lab: LabFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=PREFILL, seed=21)) as server:
        run_id, answers = _record(server.base_url, db, ask_usage=False)
    assert all(answers)
    traces = _traces(db, run_id)
    assert len(traces) == len(WORDS)
    for trace, words in zip(traces, WORDS, strict=True):
        assert trace.ok and trace.prompt_tokens is None
        assert trace.prompt_chars == len(_prompt(words))
        assert trace.prompt_tokens_estimated == -(-len(_prompt(words)) // 4)
    with Store(db) as store:
        run = diagnose_traffic(store, run_id)
    diagnosis = run.diagnosis
    assert diagnosis.length is not None and len(diagnosis.length.points) == 4
    assert diagnosis.length.tokens_estimated
    assert diagnosis.verdict.primary is Kind.INPUT_LENGTH
    notes = " ".join(n.text for n in diagnosis.notes)
    assert "reported no prompt size" not in notes
    assert "estimated from the characters of their prompts" in notes
    assert "all of them estimated from the prompts' characters" in notes
    points = [p.prompt_tokens for p in diagnosis.length.points]
    estimates = sorted({t.prompt_tokens_estimated for t in traces})
    assert points == estimates
    assert main(["diagnose", "--from-run", run_id, "--db", str(db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["traffic_source"] == {"kind": "instrument", "recorded_by": "latdoc.instrument"}
    assert report["verdict"]["primary"] == Kind.INPUT_LENGTH.value
    assert report["steps"]["length"]["tokens_estimated"] is True
    assert main(["diagnose", "--from-run", run_id, "--db", str(db)]) == 0
    terminal = " ".join(capsys.readouterr().out.split())
    assert "TTFT by prompt tokens (estimated from the prompts' characters):" in terminal
    assert "per 1K estimated tokens" in terminal


def test_ask_usage_keeps_the_servers_own_counts(lab: LabFactory, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with lab(LabConfig(latency=PREFILL, seed=22)) as server:
        run_id, answers = _record(server.base_url, db, ask_usage=True)
    assert all(answers)
    traces = _traces(db, run_id)
    assert len(traces) == len(WORDS)
    for trace, words in zip(traces, WORDS, strict=True):
        truth = chat_prompt_tokens([{"role": "user", "content": _prompt(words)}])
        assert trace.ok and trace.prompt_tokens == truth
        assert trace.output_tokens == 4 and trace.output_tokens_exact
        assert trace.prompt_chars == len(_prompt(words))
    with Store(db) as store:
        diagnosis = diagnose_traffic(store, run_id).diagnosis
    assert diagnosis.length is not None and not diagnosis.length.tokens_estimated
    assert "estimated" not in " ".join(n.text for n in diagnosis.notes)


def test_a_server_that_refuses_the_usage_field_never_fails_the_application(
    lab: LabFactory, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    config = LabConfig(latency=FAST, reject_stream_options=True, seed=23)
    with lab(config) as server:
        run_id, answers = _record(server.base_url, db, ask_usage=True)
    assert all(answers)
    traces = _traces(db, run_id)
    assert len(traces) == len(WORDS)
    assert all(t.ok and t.prompt_tokens is None and t.prompt_tokens_estimated for t in traces)
