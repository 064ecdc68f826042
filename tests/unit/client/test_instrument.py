"""latdoc.instrument on real clients against the lab: what the application receives is
unchanged, every request becomes a trace with the probe's phases, and the recorded
traffic is diagnosed for what it can tell."""

from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest

from latdoc import Store, UsageError, diagnose_traffic, instrument


def test_a_client_that_is_not_httpx_is_refused_at_once() -> None:
    with pytest.raises(UsageError, match=r"httpx\.AsyncClient or an openai\.AsyncOpenAI, not dict"):
        instrument({})
    with pytest.raises(UsageError, match="asynchronous clients only"):
        instrument(httpx.Client())
    with pytest.raises(UsageError, match="asynchronous clients only"):
        instrument(openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1"))


def test_instrumenting_twice_is_refused(tmp_path: Path) -> None:
    client = httpx.AsyncClient()
    with (
        Store(tmp_path / "s.db") as store,
        instrument(client, store=store),
        pytest.raises(UsageError, match="instrumented already"),
    ):
        instrument(client, store=store)


def test_from_run_refuses_a_run_that_is_not_traffic(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        run_id = store.new_run(endpoint="x", model="m", scenario="chat", meta={}, kind="probe")
        with pytest.raises(UsageError, match="not recorded traffic"):
            diagnose_traffic(store, run_id)
