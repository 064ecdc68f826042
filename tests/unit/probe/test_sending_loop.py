"""The loop a load sends on, the reader's wake-ups of it, and each event's JSON read."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from latdoc.errors import ErrorKind, StreamFailure
from latdoc.probe import LOOP_ENV, loop_name, run_sending
from latdoc.probe._arrivals import _Waker
from latdoc.probe._recorder import Recorder
from latdoc.probe._sse import SSEEvent
from latdoc.probe._stream_state import StreamState


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_a_load_sends_on_uvloop_where_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop")
    monkeypatch.delenv(LOOP_ENV, raising=False)
    assert loop_name() == "uvloop"
    assert run_sending(_loop_module()).startswith("uvloop")


def test_the_environment_keeps_asyncios_own_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOOP_ENV, "asyncio")
    assert loop_name() == "asyncio"
    assert run_sending(_loop_module()).startswith("asyncio")


def test_run_sending_returns_and_raises_as_asyncio_run_does() -> None:
    async def fails() -> None:
        raise KeyError("x")

    async def answers() -> int:
        await asyncio.sleep(0)
        return 42

    assert run_sending(answers()) == 42
    with pytest.raises(KeyError):
        run_sending(fails())


def test_waiters_found_while_a_wake_is_queued_join_it() -> None:
    """The reader thread's second and third batch, found before the loop ran the first
    wake, ride on it: one thread-safe call for all three, every waiter woken."""
    loop = asyncio.new_event_loop()
    calls = 0
    call_soon_threadsafe = loop.call_soon_threadsafe

    def counted(*args: object) -> asyncio.Handle:
        nonlocal calls
        calls += 1
        return call_soon_threadsafe(*args)  # type: ignore[arg-type]

    loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    try:
        waker = _Waker(loop)
        waiters = [loop.create_future() for _ in range(4)]
        thread = threading.Thread(
            target=lambda: [waker.add([w]) for w in waiters[:3]], name="reader"
        )
        thread.start()
        thread.join()
        assert calls == 1
        loop.run_until_complete(asyncio.wait_for(asyncio.gather(*waiters[:3]), 5))
        # The loop ran that wake: the next waiter needs a wake of its own.
        waker.add([waiters[3]])
        assert calls == 2
        loop.run_until_complete(asyncio.wait_for(waiters[3], 5))
    finally:
        loop.close()
    # A closed loop takes no wake, and the waker does not raise for it.
    waker.add([loop.create_future()])


def _event(data: str) -> SSEEvent:
    return SSEEvent(data, None, None, 1_000)


def _chunk(content: str, **more: object) -> str:
    return json.dumps({"id": "c1", "choices": [{"delta": {"content": content}}], **more})


@pytest.mark.parametrize(
    "data",
    [
        _chunk("hi")[:-1] + ', "seed": 1e400}',  # past a double's range
        _chunk("hi").replace('"c1"', '"\\ud800"'),  # a lone surrogate escaped
        _chunk("hi")[:-1] + ', "score": NaN}',  # the standard library's NaN
    ],
)
def test_an_event_orjson_refuses_is_read_as_the_standard_library_reads_it(data: str) -> None:
    state = StreamState(0, None)
    state.on_event(_event(data), Recorder())
    assert [c.chars for c in state.chunks] == [2]


def test_an_event_that_is_no_json_fails_the_stream_as_malformed() -> None:
    state = StreamState(0, None)
    with pytest.raises(StreamFailure) as failed:
        state.on_event(_event('{"choices": [}'), Recorder())
    assert failed.value.error.kind is ErrorKind.MALFORMED


def test_a_request_is_never_sent_before_its_time_on_uvloop() -> None:
    """uvloop reads its clock once a turn, in milliseconds, so a sleep may end before
    the time it was asked for (asyncio's never does); ``sleep_until`` never does on
    either, on a loop kept busy between reading the clock and sleeping."""
    pytest.importorskip("uvloop")
    from latdoc.features.load.send.sweep import sleep_until
    from latdoc.probe import now_ns

    async def early(sleep: Any) -> int:
        found = 0
        for _ in range(200):
            due = now_ns() + 2_300_000
            sum(range(100_000))  # the loop's own work after it read its clock
            await sleep(due)
            found += now_ns() < due
        return found

    async def plain(due: int) -> None:
        await asyncio.sleep((due - now_ns()) / 1e9)

    async def both() -> tuple[int, int]:
        return await early(plain), await early(sleep_until)

    plain_early, fixed_early = run_sending(both())
    assert fixed_early == 0
    # The plain sleep's early wakes are why: where none came, the test proved nothing.
    if plain_early == 0:
        pytest.skip("no early wake of uvloop's sleep in this run")
