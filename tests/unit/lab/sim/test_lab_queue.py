"""The model-service kinds of slow, measured by the real probe against the lab.

Slots and a queue, background load over a day, the prefix cache, KV-cache
pressure and a mid-stream stall: each must show in what the client measures,
where the mission says it shows, and agree with what the server reports.
Concurrency runs against a :class:`LabProcess` so that client and server do not
share an interpreter lock.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import time

import pytest

from latdoc.lab.sim import (
    LabConfig,
    LatencyModel,
)
from latdoc.lab.sim._app import create_app
from latdoc.lab.sim._slots import BackgroundLoad, SlotPool


def test_a_day_from_the_epoch_has_its_parts_where_the_clock_puts_them() -> None:
    """``day_origin=0``: the day's parts fall where the wall clock's do, whenever the lab
    started; without it the day starts with the lab."""
    profile = (0.0, 1.0, 0.5, 0.25)
    wall, mono = time.time(), time.monotonic()
    # Probe mid-part (half a second into some part of the clock), away from any boundary.
    shift = 0.5 - wall % 1.0
    day = BackgroundLoad(SlotPool(1), profile, 4.0, 100, random.Random(1), day_origin=0.0)
    for step in range(8):
        at = shift + step
        value, ends = day.part_at(mono + at)
        assert value == profile[int((wall + at) % 4.0)], step
        assert ends - (mono + at) == pytest.approx(0.5, abs=0.02)
    fresh = BackgroundLoad(SlotPool(1), profile, 4.0, 100, random.Random(1))
    assert [fresh.part_at(fresh.origin + s + 0.5)[0] for s in range(4)] == list(profile)


def test_a_lab_running_late_still_pauses_the_whole_stall_after_token_k() -> None:
    """The lab's loop held up 100 ms at token 2 (here, in the ASGI ``send`` it awaits)
    does not eat into the stall: the pause follows the token before in full."""
    latency = LatencyModel(prefill_base_ms=5, prefill_ms_per_token=0, decode_ms_per_token=5)
    app = create_app(LabConfig(latency=latency, stall_after_token=6, stall_ms=150))
    body = json.dumps({"model": "lab-sim", "max_tokens": 12, "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/v1/chat/completions",
             "raw_path": b"/v1/chat/completions", "query_string": b"", "root_path": "",
             "headers": [(b"content-type", b"application/json")],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2)}  # fmt: skip
    written: list[float] = []

    asked = asyncio.Event()

    async def receive() -> dict[str, object]:
        if asked.is_set():  # the client stays connected until the response ends
            await asyncio.Event().wait()
        asked.set()
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, object]) -> None:
        piece = message.get("body")
        if isinstance(piece, bytes) and b'"content"' in piece:
            written.append(time.perf_counter())
            if len(written) == 4:  # the opening (a role, no text), then token 2
                time.sleep(0.1)  # noqa: ASYNC251 - the lab's loop held up, on purpose

    asyncio.run(app(scope, receive, send))
    gaps = [(b - a) * 1000 for a, b in itertools.pairwise(written[1:])]
    assert len(gaps) == 11
    # The token after the late one came at once (the lab catching up) ...
    assert gaps[2] >= 100
    # ... but the stall is held in full after token 6, and the pace kept after it.
    assert gaps[5] >= 150, gaps
    assert max(gaps[6:]) < 50, gaps
