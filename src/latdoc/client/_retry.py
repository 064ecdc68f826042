"""When a failed request is tried again, and after how long: :class:`RetryPolicy`.

Every failure falls in one :class:`FailureClass`; the policy's :meth:`~RetryPolicy.decide`
turns it into a :class:`RetryDecision` (retry or not, the wait, the reason):

- ``connection`` (connect errors, a connection lost before any response) and
  ``timeout``: a short exponential backoff with full jitter,
  ``uniform(0, min(connect_cap_s, connect_base_s · 2^(n−1)))`` before retry ``n``;
- ``server`` (5xx but 501 and 505, and 529 "overloaded"): the same with the
  longer ``server_base_s`` and ``server_cap_s``, unless the server says when;
  an ``error`` event inside a stream is classed by the status of its type
  (:func:`classify_error_type`: Anthropic's ``overloaded_error`` is a 529), and so
  is an error sent with HTTP 200 in MiniMax's ``base_resp`` (:func:`classify_base_resp`:
  1002, its rate limit, is a 429);
- ``rate_limit`` (429): the server's own wait: ``retry-after-ms``, then
  ``Retry-After`` in seconds or as an HTTP date, then the ``x-ratelimit-reset-*``
  headers; the server backoff when it names none. A wait longer than
  ``max_retry_after_s`` is not waited: the 429 goes back to the caller;
- ``client`` (any other 4xx): never retried, the request itself is wrong;
- ``stream``: the response had begun, so it is never replayed.

``max_attempts``, a ``deadline_s`` over all attempts and a shared
:class:`RetryBudget` bound it. The decision is pure: the transports in
:mod:`latdoc.client._retry_transport` act on it.
"""

from __future__ import annotations

import enum
import math
import random
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import httpx

from latdoc.errors import BaseResp, PolicyError, parse_retry_after, status_of_error_type
from latdoc.i18n import N_, Message

__all__ = [
    "FailureClass",
    "RetryBudget",
    "RetryDecision",
    "RetryPolicy",
    "classify_base_resp",
    "classify_error_type",
    "classify_exception",
    "classify_status",
    "server_wait",
]


class FailureClass(enum.StrEnum):
    """What kind of failure ended an attempt."""

    CONNECTION = "connection"
    TIMEOUT = "timeout"
    SERVER = "server"
    RATE_LIMIT = "rate_limit"
    CLIENT = "client"
    STREAM = "stream"
    OTHER = "other"


_NOT_RETRIED = frozenset({FailureClass.CLIENT, FailureClass.STREAM, FailureClass.OTHER})
_SHORT = frozenset({FailureClass.CONNECTION, FailureClass.TIMEOUT})


def classify_status(status: int) -> FailureClass | None:
    """The failure a response status is, or ``None`` for a response to hand back as is."""
    if status == 429:
        return FailureClass.RATE_LIMIT
    if status >= 500 and status not in (501, 505):
        return FailureClass.SERVER
    if 400 <= status < 500:
        return FailureClass.CLIENT
    return None


def classify_error_type(error_type: str) -> FailureClass | None:
    """The failure a provider's error type is (Anthropic's ``error.type`` such as
    ``overloaded_error`` or ``rate_limit_error``, in an error body or an ``error``
    event), as the HTTP status it stands for; ``None`` for a type not known."""
    status = status_of_error_type(error_type)
    return None if status is None else classify_status(status)


def classify_base_resp(failed: BaseResp) -> FailureClass:
    """The failure an error in MiniMax's ``base_resp`` is, as the HTTP status its code
    stands for; a code not known is not retried."""
    status = failed.status
    return (None if status is None else classify_status(status)) or FailureClass.OTHER


def classify_exception(exc: BaseException) -> FailureClass:
    """The failure an exception raised before any response is."""
    if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
        return FailureClass.TIMEOUT
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.NetworkError):
        return FailureClass.CONNECTION
    if isinstance(exc, httpx.RemoteProtocolError):
        # "Server disconnected without sending a response": the connection died.
        return FailureClass.CONNECTION
    return FailureClass.OTHER


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _seconds(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _duration(value: str) -> float | None:
    """``6m0s``, ``20ms``, ``1.5s`` (OpenAI's reset headers) or a bare number of seconds."""
    value = value.strip()
    plain = _seconds(value)
    if plain is not None:
        return plain
    parts = _DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def server_wait(headers: Mapping[str, str], now_wall: float) -> float | None:
    """The wait the server asks for, in seconds, or ``None`` when it names none.

    ``retry-after-ms`` first (OpenAI's), then ``Retry-After`` (seconds or an HTTP
    date, measured against the wall clock ``now_wall``), then the
    ``x-ratelimit-reset-requests`` / ``-tokens`` durations: of those whose
    ``x-ratelimit-remaining-*`` is 0, else of all present, the longest.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None and (value := _seconds(ms)) is not None:
        return value / 1000
    after = lower.get("retry-after")
    if after is not None and (value := parse_retry_after(after, now_wall)) is not None:
        return value
    resets: dict[str, float] = {}
    for kind in ("requests", "tokens"):
        raw = lower.get(f"x-ratelimit-reset-{kind}")
        if raw is not None and (value := _duration(raw)) is not None:
            resets[kind] = value
    exhausted = [v for k, v in resets.items() if lower.get(f"x-ratelimit-remaining-{k}") == "0"]
    chosen = exhausted or list(resets.values())
    return max(chosen) if chosen else None


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """What the policy decided after a failed attempt, and why.

    ``attempt`` counts from 1 (the attempt that just failed); ``wait_s`` is the
    sleep before the next attempt, ``None`` when there is none; ``status`` is the
    response's status when the failure was one.
    """

    attempt: int
    failure: FailureClass
    retry: bool
    wait_s: float | None
    reason: str
    status: int | None = None
    error: str | None = None

    def __str__(self) -> str:
        what = f"http {self.status}" if self.status is not None else self.error or ""
        action = f"retry in {self.wait_s:.3f} s" if self.retry else "no retry"
        return f"attempt {self.attempt}: {self.failure} ({what}): {action}: {self.reason}"


class RetryBudget:
    """Retries allowed as a share of requests, so a failing endpoint is not stormed.

    A balance starts at ``reserve`` retries; every request adds ``ratio`` (up to
    ``reserve``) and every retry takes one. With the defaults, over time at most
    20 % of requests are retries, with a reserve of 10 for a quiet start. Share one
    budget between the clients that call the same endpoint. Thread-safe.
    """

    def __init__(self, ratio: float = 0.2, reserve: float = 10.0) -> None:
        for name, value in (("ratio", ratio), ("reserve", reserve)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise PolicyError(
                    Message(
                        "RetryBudget {name} must be a number, got {value!r}", name=name, value=value
                    )
                )
            if not (math.isfinite(value) and value >= 0):
                raise PolicyError(
                    Message(
                        "RetryBudget {name} must be a finite number >= 0, got {value!r}",
                        name=name,
                        value=value,
                    )
                )
        self.ratio = float(ratio)
        self.reserve = float(reserve)
        self._balance = float(reserve)
        self._lock = threading.Lock()

    @property
    def balance(self) -> float:
        """Retries available now."""
        return self._balance

    def deposit(self) -> None:
        """A new request: it earns ``ratio`` of a retry."""
        with self._lock:
            self._balance = min(self.reserve, self._balance + self.ratio)

    def withdraw(self) -> bool:
        """Take one retry; ``False`` when none is left."""
        with self._lock:
            if self._balance < 1:
                return False
            self._balance -= 1
            return True

    def __repr__(self) -> str:
        return f"RetryBudget(ratio={self.ratio:g}, reserve={self.reserve:g})"


def _positive(name: str, value: float, *, zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(
            Message(
                "RetryPolicy {name} must be a number of seconds, got {value!r}",
                name=name,
                value=value,
            )
        )
    ok = math.isfinite(value) and (value >= 0 if zero else value > 0)
    if not ok:
        bound = ">= 0" if zero else "> 0"
        raise PolicyError(
            Message(
                "RetryPolicy {name} must be a finite number {bound}, got {value!r}",
                name=name,
                bound=bound,
                value=value,
            )
        )


@dataclass(frozen=True)
class RetryPolicy:
    """Which failures are retried, how long to wait, and what bounds it all.

    - ``max_attempts``: attempts in all, the first included (1: never retry);
      ``None`` only with a ``deadline_s``;
    - ``deadline_s``: no attempt starts, and no wait runs, past this many seconds
      from the first attempt; ``None`` for no deadline;
    - ``connect_base_s``, ``connect_cap_s``: backoff of connection errors and
      timeouts; ``server_base_s``, ``server_cap_s``: of 5xx, 529 and a 429 that
      names no wait;
    - ``max_retry_after_s``: the longest wait a server may ask for; a longer one
      is not waited and the response goes back to the caller;
    - ``budget``: a :class:`RetryBudget` shared by every request the policy
      serves, or ``None``.

    A policy that could retry forever (no attempt limit, no deadline), or with a
    negative, infinite or zero limit, is a :class:`~latdoc.errors.PolicyError`
    when it is built.
    """

    max_attempts: int | None = 4
    deadline_s: float | None = 60.0
    connect_base_s: float = 0.1
    connect_cap_s: float = 2.0
    server_base_s: float = 0.5
    server_cap_s: float = 8.0
    max_retry_after_s: float = 60.0
    budget: RetryBudget | None = field(default_factory=RetryBudget)

    def __post_init__(self) -> None:
        attempts = self.max_attempts
        if attempts is None:
            if self.deadline_s is None:
                raise PolicyError(
                    N_("RetryPolicy could retry forever: give max_attempts or deadline_s")
                )
        elif isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise PolicyError(
                Message(
                    "RetryPolicy max_attempts must be an integer >= 1, got {attempts!r}",
                    attempts=attempts,
                )
            )
        if self.deadline_s is not None:
            _positive("deadline_s", self.deadline_s)
        for name in ("connect_base_s", "connect_cap_s", "server_base_s", "server_cap_s"):
            _positive(name, getattr(self, name))
        _positive("max_retry_after_s", self.max_retry_after_s, zero=True)
        if self.connect_cap_s < self.connect_base_s or self.server_cap_s < self.server_base_s:
            raise PolicyError(N_("RetryPolicy caps must be at least their base"))
        if self.budget is not None and not isinstance(self.budget, RetryBudget):
            raise PolicyError(
                Message(
                    "RetryPolicy budget must be a RetryBudget, got {budget!r}", budget=self.budget
                )
            )

    def backoff(self, failure: FailureClass, retry: int, draw: Callable[[], float]) -> float:
        """Full jitter before retry ``retry`` (from 1); ``draw`` gives a uniform in [0, 1)."""
        if failure in _SHORT:
            base, cap = self.connect_base_s, self.connect_cap_s
        else:
            base, cap = self.server_base_s, self.server_cap_s
        ceiling = cap if retry > 60 else min(cap, base * 2 ** (retry - 1))
        return draw() * ceiling

    def decide(
        self,
        attempt: int,
        failure: FailureClass,
        *,
        elapsed_s: float,
        headers: Mapping[str, str] | None = None,
        status: int | None = None,
        error: str | None = None,
        now_wall: float = 0.0,
        draw: Callable[[], float] = random.random,
        asked_wait_s: float | None = None,
    ) -> RetryDecision:
        """Whether attempt ``attempt`` (from 1), which failed as ``failure``, is retried.

        ``elapsed_s`` is the time since the first attempt started; ``headers`` the
        failed response's; ``now_wall`` the wall clock (for an HTTP-date
        ``Retry-After``); ``draw`` the jitter's uniform draw. ``asked_wait_s`` is the
        wait the server asked for when it was already read from the headers (a
        recorded :attr:`~latdoc.errors.TraceError.retry_after_s`); it stands for them.
        """

        def decision(retry: bool, wait: float | None, reason: str) -> RetryDecision:
            return RetryDecision(attempt, failure, retry, wait, reason, status, error)

        if failure is FailureClass.STREAM:
            return decision(False, None, "the response had begun: it is never replayed")
        if failure is FailureClass.CLIENT:
            return decision(False, None, "a 4xx other than 429: the request itself is wrong")
        if failure in _NOT_RETRIED:
            return decision(False, None, "not a failure that a retry can mend")
        if self.max_attempts is not None and attempt >= self.max_attempts:
            return decision(False, None, f"max_attempts={self.max_attempts} reached")
        asked = None
        if failure not in _SHORT:
            if asked_wait_s is not None:
                asked = asked_wait_s
            elif headers is not None:
                asked = server_wait(headers, now_wall)
        if asked is not None:
            if asked > self.max_retry_after_s:
                return decision(
                    False,
                    None,
                    f"the server asks to wait {asked:g} s, "
                    f"more than max_retry_after_s={self.max_retry_after_s:g}",
                )
            wait, how = asked, "the wait the server asked for"
        else:
            wait, how = self.backoff(failure, attempt, draw), "backoff with full jitter"
        if self.deadline_s is not None and elapsed_s + wait >= self.deadline_s:
            return decision(
                False, None, f"waiting {wait:.3f} s would pass deadline_s={self.deadline_s:g}"
            )
        if self.budget is not None and not self.budget.withdraw():
            return decision(False, None, "the retry budget is spent")
        return decision(True, wait, how)
