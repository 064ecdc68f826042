""":class:`RetryPolicy` as an httpx transport wrapper, sync and async.

The wrapper retries only before it hands a response back: a failure raised by
the inner transport (no response yet), or a response whose status the policy
retries (its small error body is read and dropped first). Once a response goes
back to the caller its body is the caller's; a failure while it streams is
reported as a ``stream`` decision and raised, never replayed.

Every decision goes to ``on_decision`` and to the ``latdoc.client`` logger (a
retry at INFO, giving up at WARNING). Clock, sleep, wall clock and jitter draw
are parameters, so tests can be exact.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import anyio
import httpx

from latdoc.client._retry import (
    FailureClass,
    RetryDecision,
    RetryPolicy,
    classify_exception,
    classify_status,
)

__all__ = ["AsyncRetryTransport", "RetryTransport"]

logger = logging.getLogger("latdoc.client")

DecisionHook = Callable[[RetryDecision], None]


@dataclass
class _Seams:
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], float] = time.time
    draw: Callable[[], float] = random.random


def _report(decision: RetryDecision, hook: DecisionHook | None) -> None:
    logger.log(logging.INFO if decision.retry else logging.WARNING, "%s", decision)
    if hook is not None:
        hook(decision)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _Attempts:
    """One request's attempts: the decisions between them, sync or async alike."""

    def __init__(self, policy: RetryPolicy, seams: _Seams, hook: DecisionHook | None) -> None:
        self.policy = policy
        self.seams = seams
        self.hook = hook
        self.started = seams.clock()
        self.attempt = 0
        if policy.budget is not None:
            policy.budget.deposit()

    def after_error(self, exc: BaseException) -> RetryDecision:
        return self._decide(classify_exception(exc), None, None, _error_text(exc))

    def after_response(self, response: httpx.Response) -> RetryDecision | None:
        failure = classify_status(response.status_code)
        if failure is None:
            return None
        return self._decide(failure, response.headers, response.status_code, None)

    def _decide(
        self,
        failure: FailureClass,
        headers: httpx.Headers | None,
        status: int | None,
        error: str | None,
    ) -> RetryDecision:
        seams = self.seams
        decision = self.policy.decide(
            self.attempt,
            failure,
            elapsed_s=seams.clock() - self.started,
            headers=headers,
            status=status,
            error=error,
            now_wall=seams.wall_clock(),
            draw=seams.draw,
        )
        _report(decision, self.hook)
        return decision

    def stream_failed(self, exc: BaseException, status: int) -> None:
        decision = self.policy.decide(
            self.attempt, FailureClass.STREAM, elapsed_s=0.0, status=status, error=_error_text(exc)
        )
        _report(decision, self.hook)


class _ReportingStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, attempts: _Attempts, status: int) -> None:
        self.inner, self.attempts, self.status = inner, attempts, status

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self.inner
        except httpx.TransportError as exc:
            self.attempts.stream_failed(exc, self.status)
            raise

    def close(self) -> None:
        self.inner.close()


class _AsyncReportingStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, attempts: _Attempts, status: int) -> None:
        self.inner, self.attempts, self.status = inner, attempts, status

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.inner:
                yield chunk
        except httpx.TransportError as exc:
            self.attempts.stream_failed(exc, self.status)
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()


class RetryTransport(httpx.BaseTransport):
    """Retries what ``policy`` says to retry, around the transport ``inner``.

    ``on_decision`` is called with every :class:`RetryDecision`; ``sleep``,
    ``clock`` (monotonic), ``wall_clock`` (for HTTP-date ``Retry-After``) and
    ``draw`` (the jitter's uniform in [0, 1)) are seams for tests.
    """

    def __init__(
        self,
        inner: httpx.BaseTransport,
        policy: RetryPolicy,
        *,
        on_decision: DecisionHook | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.on_decision = on_decision
        self.sleep = sleep
        self.seams = _Seams(clock, wall_clock, draw)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        attempts = _Attempts(self.policy, self.seams, self.on_decision)
        while True:
            attempts.attempt += 1
            try:
                response = self.inner.handle_request(request)
            except httpx.TransportError as exc:
                decision = attempts.after_error(exc)
                if not decision.retry or decision.wait_s is None:
                    raise
                self.sleep(decision.wait_s)
                continue
            decision_or_none = attempts.after_response(response)
            if decision_or_none is None or not decision_or_none.retry:
                assert isinstance(response.stream, httpx.SyncByteStream)
                response.stream = _ReportingStream(response.stream, attempts, response.status_code)
                return response
            try:
                response.read()
            except httpx.TransportError:
                pass  # the error body is dropped anyway; the retry goes on
            finally:
                response.close()
            assert decision_or_none.wait_s is not None
            self.sleep(decision_or_none.wait_s)

    def close(self) -> None:
        self.inner.close()


class AsyncRetryTransport(httpx.AsyncBaseTransport):
    """The async :class:`RetryTransport`; ``sleep`` is awaited."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        policy: RetryPolicy,
        *,
        on_decision: DecisionHook | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.on_decision = on_decision
        self.sleep = sleep
        self.seams = _Seams(clock, wall_clock, draw)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        attempts = _Attempts(self.policy, self.seams, self.on_decision)
        while True:
            attempts.attempt += 1
            try:
                response = await self.inner.handle_async_request(request)
            except httpx.TransportError as exc:
                decision = attempts.after_error(exc)
                if not decision.retry or decision.wait_s is None:
                    raise
                await self.sleep(decision.wait_s)
                continue
            decision_or_none = attempts.after_response(response)
            if decision_or_none is None or not decision_or_none.retry:
                assert isinstance(response.stream, httpx.AsyncByteStream)
                response.stream = _AsyncReportingStream(
                    response.stream, attempts, response.status_code
                )
                return response
            try:
                await response.aread()
            except httpx.TransportError:
                pass  # the error body is dropped anyway; the retry goes on
            finally:
                await response.aclose()
            assert decision_or_none.wait_s is not None
            await self.sleep(decision_or_none.wait_s)

    async def aclose(self) -> None:
        await self.inner.aclose()
