"""``--remedy retry``: no retries against the retry policy, on the endpoint's own
failures; run by :mod:`latdoc.features.verify.retry`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_RETRY
from latdoc.features.verify.experiments._spec import Argument, Experiment
from latdoc.features.verify.retry import verify_retry
from latdoc.features.verify.retry.run import NO_RETRIES, UNDER_POLICY, retry_arms
from latdoc.features.verify.retry.send import RetryOptions

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


def _describe(plan: Plan, options: RetryOptions) -> tuple[str, str]:
    return NO_RETRIES, UNDER_POLICY


RETRY = Experiment(
    name=VERIFY_RETRY,
    summary="retry by latdoc.client.RetryPolicy",
    options=RetryOptions,
    describe=_describe,
    arms=retry_arms,
    arguments=(
        Argument(
            "--trials",
            "retry: logical requests per arm (default %(default)s)",
            kind=int,
            default=RetryOptions.trials,
            metavar="N",
        ),
    ),
    headline="total",
    calibration=False,
    runner=verify_retry,
)
