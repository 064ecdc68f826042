"""Remedies for ``errors``: failures that meet every request alike (a wrong address or
key) get fixed at the endpoint; the rest get retries by error class, and a rate kept
under the limit.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice._common import retries
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.errors import cannot_answer
from latdoc.i18n import N_, Message
from latdoc.model import Diagnosis, Effects, Finding, Kind, Remedy, RunContext

__all__ = ["BUILDER", "errors_remedies"]

_NOT_CODES = frozenset(
    {"failed", "requests", "retry_after_s", "failed_after_ms", "retry_wait_ms", "failed_share_low"}
)
"""The errors finding's evidence that counts no error code."""


def errors_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    codes = [code for code in f.evidence if code not in _NOT_CODES]
    checks = {code: hint for code in codes if (hint := cannot_answer(code)) is not None}
    if checks:
        yield Remedy(
            keys.FIX_ENDPOINT,
            N_("Fix the endpoint's address or credentials"),
            f.kind,
            Message.joined(
                "\n",
                [
                    N_("These failures meet every request alike, and no retry passes them:"),
                    *(
                        Message("  {code}: {hint}", code=code, hint=Message.of(hint))
                        for code, hint in checks.items()
                    ),
                ],
            ),
            None,
            how_to_measure=N_("run `latdoc probe` on the corrected URL, model and key: it answers"),
        )
    if len(checks) == len(codes):
        return
    yield retries(f.kind, f.evidence.get("retry_after_s"), ctx)
    if any(code == "http:429" for code in f.evidence):
        yield Remedy(
            keys.SPREAD_REQUESTS,
            N_("Stay under the rate limit"),
            f.kind,
            N_(
                "Limit concurrency with an asyncio.Semaphore and honour Retry-After; ask "
                "the provider for a higher limit if the load is steady."
            ),
            None,
        )


BUILDER = RemedyBuilder(
    Kind.ERRORS,
    errors_remedies,
    {keys.RETRIES: Effects(), keys.SPREAD_REQUESTS: Effects(), keys.FIX_ENDPOINT: Effects()},
)
