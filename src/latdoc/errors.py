"""How things fail in latdoc: the typed failure of a request, and one exception tree.

A failed request is data, not an exception: its :class:`TraceError` (a closed
:class:`ErrorKind`, the :class:`Phase` it failed in, a message) rides on the
trace. Exceptions are for what a caller must handle, all rooted at
:class:`LatdocError`::

    LatdocError
    ├── UsageError          bad input from the user (a flag, a file, a URL)
    │   ├── NotFound            a run or a watch asked for by name that is not there
    │   └── StoreUnusable       a store's file that cannot be used
    ├── RequestFailed       a measured request failed; carries its TraceError
    ├── CalibrationError    the endpoint's token count could not be learned
    ├── LabError            the lab could not start what it was asked to
    ├── ClientError         raised by ``latdoc.client``, the remedies in production
    │   ├── PolicyError         a client, policy or limit that cannot work as given
    │   ├── ContextTooLong      the messages that must be sent exceed the token budget
    │   ├── ClientTimeout       a phase of a request took longer than its limit
    │   │   ├── FirstTokenTimeout   no output token within ``first_token``
    │   │   ├── StreamStalled       no body bytes within ``between_chunks``
    │   │   └── TotalTimeout        the whole request took longer than ``total``
    │   └── ClientStreamError   a response stream ended wrongly
    │       └── StreamTruncated     an event stream ended cleanly without ``[DONE]``
    └── ProbeFault          inside the probe only, mapped to a TraceError
        ├── SSEError            bytes that are not a valid event stream or JSON array
        ├── StreamFailure       the stream ended in a typed failure
        ├── DnsFailure          the name did not resolve
        └── DnsTimeout          the resolver did not answer in time

The three timeouts and :class:`StreamTruncated` are defined in ``latdoc.client``
as subclasses of these and of httpx's own ``ReadTimeout`` and
``RemoteProtocolError``, so code (and SDKs) that handle httpx's errors handle them.

Lower-level errors (httpcore, ssl, socket) and the :class:`ProbeFault` family
are mapped to a :class:`TraceError` in one place, ``latdoc.probe._failures``,
which always names the phase that failed.
"""

from __future__ import annotations

import contextlib
import enum
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from latdoc.i18n import N_, Message


class Phase(enum.StrEnum):
    """Where a request is, in the order it passes through."""

    QUEUE = "queue"
    DNS = "dns"
    CONNECT = "connect"
    PROXY_CONNECT = "proxy_connect"
    """Through a proxy: its ``CONNECT`` round trip, or the SOCKS5 handshake."""
    TLS = "tls"
    SEND = "send"
    WAIT = "wait"
    FIRST_TOKEN = "first_token"
    STREAM = "stream"


class ErrorKind(enum.StrEnum):
    """The closed set of ways a request can fail."""

    DNS = "dns"
    CONNECT = "connect"
    TLS = "tls"
    TIMEOUT = "timeout"
    HTTP = "http"
    STREAM_BROKEN = "stream_broken"
    MALFORMED = "malformed"
    PROXY = "proxy"
    """The proxy refused the tunnel (``CONNECT`` answered 403, 407 …, SOCKS5 auth or
    connect refused), closed it, or answered what is not its protocol; the message
    names the proxy, never its credentials."""


@dataclass(frozen=True, slots=True)
class TraceError:
    """A failed request: what went wrong, in which phase, and why."""

    kind: ErrorKind
    phase: Phase
    message: str
    status: int | None = None
    retry_after_s: float | None = None
    """The wait the server asked for before another attempt, from its ``Retry-After``
    header (see :func:`parse_retry_after`); ``None`` when it named none."""

    @property
    def code(self) -> str:
        """Short machine form: ``dns``, ``timeout:wait``, ``http:429`` ..."""
        if self.kind is ErrorKind.HTTP and self.status is not None:
            return f"http:{self.status}"
        if self.kind is ErrorKind.TIMEOUT:
            return f"timeout:{self.phase}"
        if self.kind is ErrorKind.PROXY and self.status is not None:
            return f"proxy:{self.status}"
        return str(self.kind)

    def __str__(self) -> str:
        return f"{self.code} during {self.phase}: {self.message}"

    @property
    def refused_as_sent(self) -> bool:
        """The endpoint refused the request as it was sent (HTTP 400, 413 or 422: a
        prompt beyond the context window, a body it cannot take), not a failure of the
        service: the length step stops there, and the errors rule does not count it."""
        return self.kind is ErrorKind.HTTP and self.status in REFUSED_AS_SENT

    @property
    def cannot_answer(self) -> str | None:
        """What to check when every request like this one will fail the same way (see
        :func:`cannot_answer`); ``None`` for a failure that may pass."""
        return cannot_answer(self.code)


CANNOT_ANSWER = {
    "dns": N_("the host name does not resolve: check the URL's host, and this machine's DNS"),
    "connect": N_(
        "nothing accepts connections there: check the URL's host and port, and that the server runs"
    ),
    "tls": N_(
        "the TLS handshake failed: check the server's certificate, or name a private CA "
        "with --cacert FILE"
    ),
    "http:401": N_(
        "the endpoint refused the credentials: check the API key (OPENAI_API_KEY, "
        "ANTHROPIC_API_KEY for --api anthropic, or --api-key-env VAR)"
    ),
    "http:403": N_(
        "the endpoint refused the credentials: check the API key and what it is allowed to use"
    ),
    "http:404": N_(
        "no such path or model: check the base URL (the part before "
        "/chat/completions, e.g. https://api.openai.com/v1), --api and --model"
    ),
    "http:405": N_("the endpoint does not take this request there: check the base URL and --api"),
    "proxy": N_(
        "the proxy would not open a tunnel to the endpoint: check the proxy URL "
        "(HTTPS_PROXY, ALL_PROXY or --proxy), that it runs and speaks that protocol, its "
        "credentials, or reach the host direct (NO_PROXY=HOST or --no-proxy)"
    ),
    "proxy:403": N_(
        "the proxy refuses to connect to this host or port: ask for it to be "
        "allowed, or reach the host direct (NO_PROXY=HOST or --no-proxy)"
    ),
    "proxy:401": N_(
        "the proxy refused the credentials: check the user and password in the "
        "proxy URL (http://USER:PASSWORD@proxy:port)"
    ),
    "proxy:407": N_(
        "the proxy asks for credentials: give them in the proxy URL "
        "(http://USER:PASSWORD@proxy:port)"
    ),
}
"""For each failure that every request to the same URL, model and key meets alike (a
name that does not resolve, a port nobody listens on, a certificate the client
refuses, a key or path the server refuses), what to check. A timeout, a rate limit,
a server error or a broken stream may pass, and is not here."""


REFUSED_AS_SENT = (400, 413, 422)
"""HTTP statuses that refuse a request as sent (:attr:`TraceError.refused_as_sent`)."""


def cannot_answer(code: str) -> str | None:
    """What to check for a :attr:`TraceError.code` that every like request meets alike,
    ``None`` for a failure that may pass."""
    return CANNOT_ANSWER.get(code)


ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "api_error": 500,
    "server_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status a provider answers with for each error type it names (Anthropic's
``error.type``, OpenAI's Responses ``code``): an ``error`` event inside a stream is
classed as its status would be (``overloaded_error`` is 529, retried as a 5xx)."""


def status_of_error_type(error_type: str) -> int | None:
    """The HTTP status of a provider's error type, ``None`` for one not known."""
    return ERROR_TYPE_STATUS.get(error_type)


BASE_RESP_STATUS = {
    1000: 500,
    1001: 504,
    1002: 429,
    1004: 401,
    1008: 402,
    1024: 500,
    1026: 400,
    1033: 500,
    1039: 429,
    2013: 400,
    2049: 401,
}
"""The HTTP status each of MiniMax's ``base_resp.status_code`` s stands for, an error it
sends with HTTP 200 (its error codes page): 1000 unknown error, 1024 internal error and
1033 a downstream one are server errors, 1001 a timeout; 1002 its rate limit and 1039
its token-per-minute limit are 429; 1004 (not authorised) and 2049 (an invalid key)
401; 1008, insufficient balance, 402; 1026 (input flagged as sensitive) and 2013
(invalid parameters) refuse the request as sent. So the retry policy classes each as
its status."""


def status_of_base_resp(code: int) -> int | None:
    """The HTTP status of a ``base_resp.status_code``, ``None`` for one not known."""
    return BASE_RESP_STATUS.get(code)


@dataclass(frozen=True)
class BaseResp:
    """An error MiniMax sent with HTTP 200, in its ``base_resp``: read once here, so the
    probe's traces and the production client's retries class it alike."""

    code: int
    """Its ``status_code``."""
    text: str
    """``base_resp 1002: rate limit``: the code, and its ``status_msg`` where it has one."""

    @property
    def status(self) -> int | None:
        """The HTTP status its code stands for (:data:`BASE_RESP_STATUS`), ``None`` for a
        code not known."""
        return status_of_base_resp(self.code)


def read_base_resp(raw: Any) -> BaseResp | None:
    """MiniMax's ``base_resp`` (``{"status_code": 1002, "status_msg": "rate limit"}``) as
    the error it is; ``None`` for none, or for its success (code 0)."""
    if not isinstance(raw, Mapping):
        return None
    code = raw.get("status_code")
    if not isinstance(code, int) or isinstance(code, bool) or not code:
        return None
    message = raw.get("status_msg")
    said = f": {message}" if isinstance(message, str) and message else ""
    return BaseResp(code, f"base_resp {code}{said}")


def parse_retry_after(value: str, now_wall: float) -> float | None:
    """A ``Retry-After`` header's wait in seconds: a number of seconds, or an HTTP date
    counted from the wall clock ``now_wall`` (a date past is 0); ``None`` for anything else."""
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(when.timestamp() - now_wall, 0.0)


class LatdocError(Exception):
    """Base of every error latdoc raises on purpose."""


def message_of(exc: BaseException) -> str:
    """What ``exc`` says, to be shown in the language spoken: its one argument where that
    is its message (a :class:`~latdoc.i18n.Message`, or a constant found in the catalogue
    by its text), else its text (``str(exc)``, English)."""
    if type(exc).__str__ is BaseException.__str__ and len(exc.args) == 1:
        (message,) = exc.args
        if isinstance(message, str):
            return message
    return str(exc)


class UsageError(LatdocError):
    """The user asked for something that cannot be done as asked."""


class NotFound(UsageError):
    """What was asked for by its name is not there: a run id, a watch's name."""


class StoreUnusable(UsageError):
    """The store's file cannot be used: missing, not SQLite, not a latdoc store, or of
    a schema this reader cannot read."""


@contextlib.contextmanager
def nesting_checked(where: str) -> Iterator[None]:
    """Parsing a file (JSON, TOML) nested deeper than Python's parsers recurse is a
    :class:`UsageError` naming ``where`` (the file, or its line), not a ``RecursionError``."""
    try:
        yield
    except RecursionError:
        raise UsageError(Message("{where}: nested too deeply", where=where)) from None


class RequestFailed(LatdocError):
    """A measured request failed; ``error`` says how and in which phase."""

    def __init__(self, error: TraceError) -> None:
        super().__init__(
            Message(
                "{code} during {phase}: {message}",
                code=error.code,
                phase=str(error.phase),
                message=error.message,
            )
        )
        self.error = error


class CalibrationError(LatdocError):
    """The endpoint's token count could not be learned (it reports no usage)."""


class LabError(LatdocError):
    """A lab component (endpoint, network, engine) could not be started or used."""


class ClientError(LatdocError):
    """Raised by ``latdoc.client``: a tuned client, a retry policy, a trimmed history."""


class PolicyError(ClientError, ValueError):
    """A client or policy was built with values that cannot work (negative, unbounded)."""


class ContextTooLong(ClientError):
    """The messages that must be kept do not fit the token budget."""

    def __init__(self, needed_tokens: int, budget_tokens: int, what: str) -> None:
        super().__init__(
            Message(
                "{what} need {needed} tokens, more than the budget of {budget}",
                what=Message.of(what),
                needed=needed_tokens,
                budget=budget_tokens,
            )
        )
        self.needed_tokens = needed_tokens
        self.budget_tokens = budget_tokens


class ClientTimeout(ClientError):
    """A phase of a request took longer than the client allows."""


class ClientStreamError(ClientError):
    """A response stream ended in a way the client reports as a failure."""


class ProbeFault(LatdocError):
    """Raised inside the probe and turned into a :class:`TraceError` before it leaves."""


class SSEError(ProbeFault):
    """The response body is not a valid ``text/event-stream``, or not the streamed JSON
    array its dialect may answer with instead (Google's ``streamGenerateContent``)."""


class StreamFailure(ProbeFault):
    """The stream ended in a failure that is already typed."""

    def __init__(self, error: TraceError) -> None:
        super().__init__(str(error))
        self.error = error


class DnsFailure(ProbeFault):
    """Name resolution failed; raised through httpcore unchanged."""

    def __init__(self, host: str, reason: str) -> None:
        super().__init__(f"could not resolve {host!r}: {reason}")
        self.host = host


class DnsTimeout(ProbeFault):
    """Name resolution took longer than the connect timeout."""

    def __init__(self, host: str, timeout: float) -> None:
        super().__init__(f"resolving {host!r} took longer than {timeout:g} s")
