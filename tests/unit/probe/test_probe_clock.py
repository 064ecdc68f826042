"""The client's own delay is a phase of its own, and arrivals carry the kernel's stamps.

A busy event loop is simulated by blocking it on purpose: right after a request
starts (on a kept connection it has left by then: no client delay, and never in the
server's TTFT), while it waits for a connection another request holds (the delay
lands in ``client_delay``), and while the first token arrives (the kernel's stamp
must be the arrival, not the moment the loop got round to the read).
"""

from __future__ import annotations

import time

import pytest
from hyperframe.frame import DataFrame, Frame, HeadersFrame, SettingsFrame

from latdoc.probe._arrivals import RealtimeToMonotonic
from latdoc.probe._h2frames import FrameClock


def test_the_kernels_realtime_stamps_convert_to_the_probes_clock() -> None:
    convert = RealtimeToMonotonic()
    now = time.perf_counter_ns()
    real = time.clock_gettime_ns(time.CLOCK_REALTIME)
    after = time.perf_counter_ns()
    converted = convert(real, after)
    assert now - 1_000_000 <= converted <= after
    assert convert(real + 10**9, after) == after  # never later than the loop's own stamp
    assert convert(real - 5_000_000, after) == pytest.approx(converted - 5_000_000, abs=10)


def _frames(*frames: Frame) -> bytes:
    return b"".join(f.serialize() for f in frames)


def _data(stream_id: int, payload: bytes) -> DataFrame:
    frame = DataFrame(stream_id)
    frame.data = payload
    return frame


def test_each_http2_data_frame_keeps_the_arrival_of_the_read_that_completed_it() -> None:
    headers = HeadersFrame(3)
    headers.data = b"\x88"
    wire = _frames(
        SettingsFrame(0),
        headers,
        _data(3, b"one"),
        _data(5, b"other stream"),
        _data(3, b"two" * 30),
        _data(3, b""),
    )
    # Split at every byte: a frame's stamp is the read that brought its last byte.
    for cut in range(1, len(wire)):
        clock = FrameClock()
        clock.feed(wire[:cut], 100)
        clock.feed(wire[cut:], 200)
        stamps = [clock.data_ns(3), clock.data_ns(3), clock.data_ns(3), clock.data_ns(3)]
        assert stamps[3] is None, "three DATA frames, then nothing"
        frame_ends = _frame_ends(wire)
        want = [100 if cut >= end else 200 for end in (frame_ends[2], frame_ends[4], frame_ends[5])]
        assert stamps[:3] == want, cut
        assert clock.headers_ns(3) == (100 if cut >= frame_ends[1] else 200)
        assert clock.data_ns(5) == (100 if cut >= frame_ends[3] else 200)
        clock.forget(3)
        assert clock.headers_ns(3) is None and clock.data_ns(3) is None


def test_bytes_that_are_no_http2_frame_end_the_following_without_failing_the_read() -> None:
    clock = FrameClock()
    clock.feed(_frames(_data(3, b"one")), 100)
    settings_on_a_stream = bytes.fromhex("000000040000000001")
    clock.feed(settings_on_a_stream + _frames(_data(3, b"two")), 200)
    assert clock.data_ns(3) is None and clock.headers_ns(3) is None


def _frame_ends(wire: bytes) -> list[int]:
    ends, at = [], 0
    while at < len(wire):
        at += 9 + int.from_bytes(wire[at : at + 3], "big")
        ends.append(at)
    return ends
