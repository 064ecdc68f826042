""":class:`RetryPolicy` as an httpx transport wrapper, sync and async.

The wrapper retries only before it hands a response back: a failure raised by
the inner transport (no response yet), or a response whose status the policy
retries (its small error body is read and dropped first). A JSON body sent with a
2xx status is read before it goes back (its caller reads it whole anyway): where it
is MiniMax's error in ``base_resp``, it is classed as the status its code stands for
(:func:`~latdoc.client._retry.classify_base_resp`), retried as that status would be,
and raised as :class:`BaseRespError` where it is not retried. Once a response goes
back to the caller its body is the caller's; a failure while it streams is
reported as a ``stream`` decision and raised, never replayed.

Every decision goes to ``on_decision`` and to the ``latdoc.client`` logger (a
retry at INFO, giving up at WARNING). Clock, sleep, wall clock and jitter draw
are parameters, so tests can be exact.
"""

from __future__ import annotations

import json
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
    classify_base_resp,
    classify_exception,
    classify_status,
)
from latdoc.errors import BaseResp, ClientError, read_base_resp

__all__ = ["AsyncRetryTransport", "BaseRespError", "RetryTransport"]

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


class BaseRespError(ClientError, httpx.HTTPError):
    """MiniMax refused the request with HTTP 200 and an error in ``base_resp`` that the
    policy does not retry (a key refused, a balance spent) or gave up retrying."""

    def __init__(self, failed: BaseResp) -> None:
        super().__init__(failed.text)
        self.code = failed.code
        """The ``base_resp.status_code``."""
        self.status = failed.status
        """The HTTP status it stands for, ``None`` for a code not known."""


def _read_whole(response: httpx.Response) -> bool:
    """Whether the body is read before the response goes back: JSON with a 2xx status,
    where MiniMax puts its errors."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return response.is_success and kind == "application/json"


def _refusal(response: httpx.Response, raw: bytes) -> BaseResp | None:
    """The error in ``base_resp`` of the JSON body ``raw`` (as sent: decoded here),
    ``None`` for a body without one."""
    decoded = httpx.Response(response.status_code, headers=response.headers, content=raw)
    try:
        body = json.loads(decoded.read())
    except (httpx.DecodingError, ValueError):
        return None
    return read_base_resp(body.get("base_resp")) if isinstance(body, dict) else None


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

    def after_refusal(self, failed: BaseResp, headers: httpx.Headers) -> RetryDecision:
        return self._decide(classify_base_resp(failed), headers, failed.status, failed.text)

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
            if decision_or_none is None and _read_whole(response):
                failed = self._read_refusal(response, attempts)
                if failed is not None:
                    decision = attempts.after_refusal(failed, response.headers)
                    if not decision.retry or decision.wait_s is None:
                        raise BaseRespError(failed)
                    self.sleep(decision.wait_s)
                    continue
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

    @staticmethod
    def _read_refusal(response: httpx.Response, attempts: _Attempts) -> BaseResp | None:
        """The body read whole, and put back to be read again; its ``base_resp`` error."""
        assert isinstance(response.stream, httpx.SyncByteStream)
        try:
            raw = b"".join(response.stream)
        except httpx.TransportError as exc:
            attempts.stream_failed(exc, response.status_code)
            raise
        finally:
            response.stream.close()
        response.stream = httpx.ByteStream(raw)
        return _refusal(response, raw)

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
            if decision_or_none is None and _read_whole(response):
                failed = await self._read_refusal(response, attempts)
                if failed is not None:
                    decision = attempts.after_refusal(failed, response.headers)
                    if not decision.retry or decision.wait_s is None:
                        raise BaseRespError(failed)
                    await self.sleep(decision.wait_s)
                    continue
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

    @staticmethod
    async def _read_refusal(response: httpx.Response, attempts: _Attempts) -> BaseResp | None:
        """The body read whole, and put back to be read again; its ``base_resp`` error."""
        assert isinstance(response.stream, httpx.AsyncByteStream)
        try:
            raw = b"".join([chunk async for chunk in response.stream])
        except httpx.TransportError as exc:
            attempts.stream_failed(exc, response.status_code)
            raise
        finally:
            await response.stream.aclose()
        response.stream = httpx.ByteStream(raw)
        return _refusal(response, raw)

    async def aclose(self) -> None:
        await self.inner.aclose()
