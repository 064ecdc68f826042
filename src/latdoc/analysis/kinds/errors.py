"""``errors``: requests fail (refused, rate-limited, timed out or cut off).

The rule fires when :data:`ERROR_RATE` or more of the requests failed, and at least the
policy's ``MIN_N`` of them, or a single one among so few requests that it is
:data:`SINGLE_FAILURE_SHARE` of them (one of six recorded, an endpoint that answers
nothing). Its share is
what the failures cost a typical request that is retried until it succeeds, at the low
end of the failure rate's 95% interval (Wilson's: a run of twenty that met two
failures may come from an endpoint failing one request in fifty): each
failure's own time (from the request's start to its failure, the median of those that
failed) and the wait before the next try (the ``Retry-After`` asked for, or
:data:`RETRY_WAIT_MS`), ``rate / (1 − rate)`` times a request. Like any kind's, it
counts when a user would notice it: one failure in twenty costs a retried request a
few percent of its time, and a run of twenty requests meets one failure a third of the
time where one in fifty fail. (The failed fraction of a typical request, which the
share was, with failures never negligible, named ``errors`` five times in fifteen
where a healthy endpoint failed 1–4% of its requests.) When :data:`ERRORS_FIRST` or
more failed it is the verdict, whatever the other kinds add: nothing else matters
until the requests succeed.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.policy import MIN_N
from latdoc.analysis.stats import median_of, proportion_interval
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind
from latdoc.records import RequestTrace

__all__ = [
    "ERRORS_FIRST",
    "ERROR_RATE",
    "RETRY_WAIT_MS",
    "SINGLE_FAILURE_SHARE",
    "SPEC",
    "errors",
    "most_failed",
]

ERROR_RATE = 0.05
ERRORS_FIRST = 0.25
SINGLE_FAILURE_SHARE = 2 * ERROR_RATE
"""A single failed request counts alone where it is this share of the requests or more:
none among the twenty of a diagnosis run, where one failure is what an endpoint failing
2-4% of its requests shows a third of the time."""
RETRY_WAIT_MS = 500.0
"""The wait before a failed request is tried again when the server names none: the
OpenAI and Anthropic SDKs' first backoff, and the base of ``latdoc.client``'s
``RetryPolicy`` for server errors."""


def errors(f: Facts) -> Finding | None:
    total = len(f.measured)
    failed = sum(f.failed.values())
    if total == 0 or failed / total < ERROR_RATE:
        return None
    if failed < MIN_N and failed / total < SINGLE_FAILURE_SHARE:
        # One failure in a run of twenty says no more than that failures happen: an
        # endpoint failing 1-4% of requests meets one in a third of runs.
        return None
    rate = failed / total
    failing = median_of(_failed_after_ms(t) for t in f.measured if not t.ok) or 0.0
    wait = max(RETRY_WAIT_MS, (f.retry_after_s or 0.0) * 1000)
    # The share is read at the low end of the failure rate's interval: a run of twenty
    # that met two failures may come from an endpoint failing one in fifty.
    interval = proportion_interval(failed, total)
    assert interval is not None  # total > 0
    low = interval[0]
    # Where every request failed, as if the next would have succeeded: the share stays finite.
    retries = low / max(1 - low, 1 / (total + 1))
    evidence: dict[str, float] = {
        "failed": float(failed),
        "requests": float(total),
        "failed_after_ms": failing,
        "retry_wait_ms": wait,
        "failed_share_low": low,
    }
    evidence.update({code: float(count) for code, count in f.failed.most_common()})
    if f.retry_after_s is not None:
        evidence["retry_after_s"] = f.retry_after_s
    codes = ", ".join(f"{code} ×{count}" for code, count in f.failed.most_common())
    return Finding(
        Kind.ERRORS,
        N_("Requests fail"),
        Message(
            "{failed} of {total} requests failed ({rate:.0%} ≥ {limit:.0%}): {codes}; "
            "retried, each failure costs {failing:.0f} ms and a wait of {wait:.0f} ms",
            failed=failed,
            total=total,
            rate=rate,
            limit=ERROR_RATE,
            codes=codes,
            failing=failing,
            wait=wait,
        ),
        evidence,
        share_ms=retries * (failing + wait),
        n=total,
        confidence=confidence(total, rate / ERROR_RATE - 1),
    )


def _failed_after_ms(t: RequestTrace) -> float | None:
    """When a failed request failed, in ms from its start: its last mark."""
    marks = [t.sent_ns, t.first_byte_ns, t.first_token_ns, *(c.t_ns for c in t.chunks[-1:])]
    known = [m for m in marks if m is not None]
    return max(known) / 1e6 if known else None


def most_failed(f: Facts) -> bool:
    """A quarter or more of the requests failed: the verdict is errors."""
    total = len(f.measured)
    return bool(total) and sum(f.failed.values()) / total >= ERRORS_FIRST


SPEC = KindSpec(
    Kind.ERRORS,
    N_("Errors"),
    N_("requests fail: refused, rate-limited, timed out or cut off"),
    colour="#d64545",
    rule=errors,
    first_when=most_failed,
)
