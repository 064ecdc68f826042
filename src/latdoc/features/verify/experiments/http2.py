"""``--remedy http2``: requests at once on today's HTTP/1.1 pool, against the same
requests multiplexed on one HTTP/2 connection. Only an endpoint that answers in
HTTP/2 when offered it (ALPN) can show the remedy."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_HTTP2
from latdoc.analysis.compare import TRIAL_MEAN
from latdoc.features.verify.experiments._shared import (
    CONCURRENCY,
    POOL_SIZE,
    check_pool_size,
    http1_pool_arm,
    today_pool,
)
from latdoc.features.verify.experiments._spec import Before, Experiment
from latdoc.features.verify.send import Arm
from latdoc.model import DEFAULT_CONCURRENCY
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


@dataclass(frozen=True)
class Http2Options:
    concurrency: int = DEFAULT_CONCURRENCY
    """Requests at once per trial."""
    pool_size: int | None = None
    """Arm A's pool (default: ``concurrency``)."""


def _check(plan: Plan, options: Http2Options) -> None:
    check_pool_size(options.pool_size)


def _describe(plan: Plan, options: Http2Options) -> tuple[str, str]:
    n = options.concurrency
    return (
        f"HTTP/1.1, a pool of {today_pool(n, options.pool_size)}, {n} requests at once",
        f"HTTP/2, {n} requests multiplexed on one connection",
    )


def _arms(plan: Plan, options: Http2Options, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    a = http1_pool_arm(plan, calibration, options.concurrency, options.pool_size)
    b = replace(
        a,
        name="B",
        label=f"HTTP/2, {options.concurrency} requests multiplexed on one connection",
        connection=replace(plan.connection, http2=True),
        max_connections=1,
    )
    return a, b


async def _offered(before: Before, options: Http2Options) -> Http2Options | str:
    plan = before.plan
    connection = replace(plan.connection, http2=True)
    async with connection.session(plan.endpoint, max_connections=1) as session:
        trace = (await session.request("Hello", 1)).raise_for_error()
    if trace.http_version != "HTTP/2":
        return (
            f"the endpoint answered over {trace.http_version or 'HTTP/1.1'} when offered "
            "HTTP/2 (ALPN): it does not serve HTTP/2 to this client"
        )
    return options


HTTP2 = Experiment(
    name=VERIFY_HTTP2,
    summary="multiplex on one HTTP/2 connection",
    options=Http2Options,
    describe=_describe,
    arms=_arms,
    arguments=(CONCURRENCY, POOL_SIZE),
    check=_check,
    statistic=TRIAL_MEAN,
    precondition=_offered,
    builtin_http2=True,
)
