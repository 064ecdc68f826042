"""``errors``: requests fail (refused, rate-limited, timed out or cut off).

The rule fires when :data:`ERROR_RATE` or more of the requests failed. Its share is
the failed fraction of a typical request's end-to-end time (or of the wait a
``Retry-After`` asked for, when longer). A user notices a failure whatever its share,
so it is never negligible; and when :data:`ERRORS_FIRST` or more failed it is the
verdict, whatever the other kinds add: nothing else matters until the requests succeed.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.stats import median_of
from latdoc.model import Finding, Kind

__all__ = ["ERRORS_FIRST", "ERROR_RATE", "SPEC", "errors", "most_failed"]

ERROR_RATE = 0.05
ERRORS_FIRST = 0.25


def errors(f: Facts) -> Finding | None:
    total = len(f.measured)
    failed = sum(f.failed.values())
    if total == 0 or failed / total < ERROR_RATE:
        return None
    rate = failed / total
    typical = median_of(t.total_ms for t in f.measured if t.ok) or 0.0
    evidence: dict[str, float] = {"failed": float(failed), "requests": float(total)}
    evidence.update({code: float(count) for code, count in f.failed.most_common()})
    if f.retry_after_s is not None:
        evidence["retry_after_s"] = f.retry_after_s
    codes = ", ".join(f"{code} ×{count}" for code, count in f.failed.most_common())
    return Finding(
        Kind.ERRORS,
        "Requests fail",
        f"{failed} of {total} requests failed ({rate:.0%} ≥ {ERROR_RATE:.0%}): {codes}",
        evidence,
        share_ms=rate * max(typical, (f.retry_after_s or 0.0) * 1000),
        n=total,
        confidence=confidence(total, rate / ERROR_RATE - 1),
    )


def most_failed(f: Facts) -> bool:
    """A quarter or more of the requests failed: the verdict is errors."""
    total = len(f.measured)
    return bool(total) and sum(f.failed.values()) / total >= ERRORS_FIRST


SPEC = KindSpec(
    Kind.ERRORS,
    "Errors",
    "requests fail: refused, rate-limited, timed out or cut off",
    colour="#d64545",
    rule=errors,
    always_noticeable=True,
    first_when=most_failed,
)
