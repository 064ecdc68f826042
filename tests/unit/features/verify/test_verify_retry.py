"""``latdoc verify --remedy retry`` against the lab's own errors, with known rates."""

from __future__ import annotations

import pytest

from latdoc import (
    ErrorKind,
    Phase,
    RequestTrace,
    TraceError,
)
from latdoc.client import FailureClass
from latdoc.features.verify.retry.send import failure_class


def _failed(
    kind: ErrorKind, status: int | None = None, *, first_byte: bool = False
) -> RequestTrace:
    from datetime import UTC, datetime

    return RequestTrace(
        started_at=datetime(2026, 11, 30, tzinfo=UTC), t0_ns=0, url="u", model="m",
        dialect="chat", first_byte_ns=1000 if first_byte else None,
        error=TraceError(kind, Phase.WAIT, "x", status),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("trace", "expected"),
    [
        (_failed(ErrorKind.HTTP, 429), FailureClass.RATE_LIMIT),
        (_failed(ErrorKind.HTTP, 503), FailureClass.SERVER),
        (_failed(ErrorKind.HTTP, 404), FailureClass.CLIENT),
        (_failed(ErrorKind.CONNECT), FailureClass.CONNECTION),
        (_failed(ErrorKind.TIMEOUT), FailureClass.TIMEOUT),
        (_failed(ErrorKind.STREAM_BROKEN), FailureClass.CONNECTION),
        (_failed(ErrorKind.STREAM_BROKEN, first_byte=True), FailureClass.STREAM),
        (_failed(ErrorKind.MALFORMED), FailureClass.OTHER),
    ],
)
def test_probe_failures_get_the_policys_classes(
    trace: RequestTrace, expected: FailureClass
) -> None:
    assert failure_class(trace) == expected
