"""Low-level exceptions mapped, once, to the typed error of the phase they happened in."""

from __future__ import annotations

import ssl
import time
from dataclasses import replace

import httpcore

from latdoc.errors import (
    DnsFailure,
    DnsTimeout,
    ErrorKind,
    Phase,
    SSEError,
    StreamFailure,
    TraceError,
    parse_retry_after,
)
from latdoc.probe._dialect_io import error_in_body
from latdoc.probe._endpoint import Timeouts
from latdoc.probe._recorder import Recorder
from latdoc.probe.dialects import DialectSpec
from latdoc.records import RequestTrace

_ERROR_BODY_LIMIT = 64 * 1024


def closed_before_answering(trace: RequestTrace) -> bool:
    """A reused connection the server had already closed: nothing was answered, so
    the request is sent again on a new connection (curl does the same)."""
    return (
        trace.error is not None
        and trace.error.kind is ErrorKind.STREAM_BROKEN
        and trace.new_connection is False
        and trace.first_byte_ns is None
    )


def redact(error: TraceError, secret: str | None) -> TraceError:
    if not secret or secret not in error.message:
        return error
    return replace(error, message=error.message.replace(secret, "***"))


def http_error(status: int, message: str, retry_after: str | None) -> TraceError:
    """An error status, with the wait its ``Retry-After`` header asks for (an HTTP date
    counted from now, when the response came). The header's text stays in the message,
    for people; code reads :attr:`TraceError.retry_after_s`."""
    if retry_after:
        message += f" (Retry-After: {retry_after})"
    wait = None if not retry_after else parse_retry_after(retry_after, time.time())
    return TraceError(ErrorKind.HTTP, Phase.WAIT, f"HTTP {status}: {message}", status, wait)


async def read_error_body(response: httpcore.Response) -> bytes:
    """The start of a body that is not a stream (an error's), as much as arrives of it."""
    body = bytearray()
    try:
        async for piece in response.aiter_stream():
            body += piece
            if len(body) >= _ERROR_BODY_LIMIT:
                break
    except (httpcore.ReadError, httpcore.RemoteProtocolError, httpcore.ReadTimeout):
        pass
    return bytes(body)


def unframed(body: bytes, content_type: str, spec: DialectSpec, phase: Phase) -> TraceError:
    """A 200 answer that is not framed as a stream: the error its JSON ``body`` carries
    as the dialect reads an error event (MiniMax's ``base_resp``), typed by the status it
    stands for, so a rate limit is retried as a 429 is; else an answer that is not a
    stream."""
    failed = error_in_body(body, spec) if body else None
    if failed is not None:
        message = f"HTTP 200 with an error in its body: {failed.error}"
        return TraceError(ErrorKind.HTTP, phase, message, failed.error_status)
    expected = " or ".join(f.described for f in spec.framings)
    return TraceError(
        ErrorKind.MALFORMED,
        phase,
        f"response is not {expected} (content-type: {content_type or 'none'})",
    )


def classify(
    exc: BaseException, rec: Recorder, timeouts: Timeouts, proxy: str | None = None
) -> TraceError:
    """Map a low-level exception to the typed error of the phase it happened in. Through
    a proxy (``proxy``, its URL as shown), a failure of its handshake is the kind
    ``proxy`` and every failure of the connection names the proxy."""
    if proxy is None:
        return _classify(exc, rec, timeouts)
    if isinstance(exc, httpcore.ProxyError) or (
        rec.phase is Phase.PROXY_CONNECT
        and not isinstance(exc, StreamFailure | TimeoutError | httpcore.TimeoutException)
    ):
        return _proxy_failure(exc, proxy, rec.proxy_closed)
    error = _classify(exc, rec, timeouts)
    if error.kind in _NAMES_THE_PROXY or (
        error.kind is ErrorKind.TIMEOUT and error.phase in _SETUP_PHASES
    ):
        error = replace(error, message=f"{error.message} (through proxy {proxy})")
    return error


_SETUP_PHASES = (Phase.DNS, Phase.CONNECT, Phase.PROXY_CONNECT, Phase.TLS)
_NAMES_THE_PROXY = (ErrorKind.DNS, ErrorKind.CONNECT, ErrorKind.TLS, ErrorKind.STREAM_BROKEN)
"""Failures of the connection, which through a proxy is the proxy's: their message
says which proxy."""


def _proxy_failure(exc: BaseException, proxy: str, closed: bool) -> TraceError:
    """A proxy that would not open the tunnel: refused (an HTTP status, a SOCKS5 reply),
    closed the connection, or answered outside its protocol."""
    text = str(exc).strip()
    if isinstance(exc, httpcore.ProxyError):
        status, _, reason = text.partition(" ")
        if status.isdigit():
            return TraceError(
                ErrorKind.PROXY,
                Phase.PROXY_CONNECT,
                f"proxy {proxy} refused CONNECT: HTTP {status} {reason}".rstrip(),
                int(status),
            )
        return TraceError(
            ErrorKind.PROXY, Phase.PROXY_CONNECT, f"proxy {proxy} {_socks_refusal(text)}"
        )
    if closed or (
        isinstance(exc, httpcore.RemoteProtocolError | httpcore.ReadError | OSError)
        and ("disconnect" in text.lower() or not text or isinstance(exc, OSError))
    ):
        what = _describe(exc) or "closed"
        return TraceError(
            ErrorKind.PROXY,
            Phase.PROXY_CONNECT,
            f"proxy {proxy} closed the connection before the tunnel was open ({what})",
        )
    what = "" if isinstance(exc, AssertionError) else _describe(exc)
    return TraceError(
        ErrorKind.PROXY,
        Phase.PROXY_CONNECT,
        f"proxy {proxy} answered outside its protocol"
        + (f": {what}"[:300] if what else " (an answer it could not have meant)"),
    )


def _socks_refusal(text: str) -> str:
    """httpcore's words for a SOCKS5 refusal, as the user's: what the proxy refused."""
    if text == "Invalid username/password":
        return "refused the credentials (SOCKS5 username/password)"
    if text.startswith("Requested ") and "but got" in text:
        asked, _, got = text.removeprefix("Requested ").partition(" from proxy server, but got ")
        return f"refused the authentication offered ({asked.lower()}; it answered " + (
            f"{got.rstrip('.').lower()})"
        )
    if text.startswith("Proxy Server could not connect: "):
        return f"could not connect to the endpoint: {text.split(': ', 1)[1].rstrip('.').lower()}"
    return f"refused the tunnel: {text}"


def _classify(exc: BaseException, rec: Recorder, timeouts: Timeouts) -> TraceError:
    phase = rec.phase
    if isinstance(exc, StreamFailure):
        return exc.error
    if isinstance(exc, DnsFailure):
        return TraceError(ErrorKind.DNS, Phase.DNS, str(exc))
    if isinstance(exc, DnsTimeout):
        return TraceError(ErrorKind.TIMEOUT, Phase.DNS, str(exc))
    if isinstance(exc, httpcore.PoolTimeout):
        return TraceError(
            ErrorKind.TIMEOUT, Phase.QUEUE, f"no free connection within {timeouts.pool:g} s"
        )
    if isinstance(exc, httpcore.TimeoutException):
        limit = timeouts.connect if phase in _SETUP_PHASES else None
        if isinstance(exc, httpcore.WriteTimeout):
            limit = timeouts.write
        elif isinstance(exc, httpcore.ReadTimeout):
            limit = timeouts.read
        detail = f"no progress within {limit:g} s" if limit is not None else "timed out"
        return TraceError(ErrorKind.TIMEOUT, phase, detail)
    if isinstance(exc, TimeoutError):
        return TraceError(
            ErrorKind.TIMEOUT, phase, f"no complete response within {timeouts.total:g} s"
        )
    if isinstance(exc, httpcore.ConnectError | ssl.SSLError):
        if phase is Phase.TLS or isinstance(exc, ssl.SSLError):
            return TraceError(ErrorKind.TLS, Phase.TLS, _describe(exc) or "TLS handshake failed")
        return TraceError(ErrorKind.CONNECT, Phase.CONNECT, _describe(exc) or "connect failed")
    if isinstance(exc, httpcore.NetworkError | httpcore.RemoteProtocolError | OSError):
        what = _describe(exc) or type(exc).__name__
        return TraceError(ErrorKind.STREAM_BROKEN, phase, f"connection broken: {what}")
    if isinstance(exc, httpcore.ProtocolError):
        return TraceError(ErrorKind.MALFORMED, phase, _describe(exc) or "protocol error")
    if isinstance(exc, SSEError):
        return TraceError(ErrorKind.MALFORMED, phase, str(exc))
    raise exc


def _describe(exc: BaseException) -> str:
    """The most specific message in the exception's cause chain."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for link in reversed(chain):
        if isinstance(link, ConnectionRefusedError):
            return "connection refused"
        if isinstance(link, OSError) and link.errno is not None and link.strerror:
            return link.strerror.lower()
    for link in chain:
        text = str(link).strip()
        if text:
            return text
    return ""
