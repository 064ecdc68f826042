"""What two experiments share: the options of http2 and pool and their arm A (today's
HTTP/1.1 pool), and the other model and the check that arm B answers, of endpoint and
model. Each experiment names these; the command adds a shared option once."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from latdoc.errors import UsageError
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.experiments._spec import Argument
from latdoc.features.verify.send import Arm
from latdoc.i18n import N_
from latdoc.model import DEFAULT_CONCURRENCY
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan

CONCURRENCY = Argument(
    "--concurrency",
    "the requests at once you expect in production, for http2 and pool: each trial sends "
    "them and the advised pool is sized for them (default %(default)s)",
    kind=int,
    default=DEFAULT_CONCURRENCY,
    metavar="N",
)
POOL_SIZE = Argument(
    "--pool-size",
    "your client's pool today (pool: required; http2: default N)",
    kind=int,
    metavar="P",
)
ALT_MODEL = Argument("--alt-model", "model: the model to try", metavar="NAME")


def check_pool_size(pool_size: int | None) -> None:
    if pool_size is not None and pool_size < 1:
        raise UsageError(N_("--pool-size must be at least 1"))


def today_pool(concurrency: int, pool_size: int | None) -> int:
    """The pool the client has today: the one given, else one connection a request."""
    return pool_size if pool_size is not None else concurrency


def http1_pool_arm(
    plan: Plan, calibration: TokenCalibration, concurrency: int, pool_size: int | None
) -> Arm:
    """Arm A of http2 and pool: ``concurrency`` requests at once on today's HTTP/1.1 pool."""
    n, today = concurrency, today_pool(concurrency, pool_size)
    return replace(
        base_arm(plan, calibration),
        label=f"HTTP/1.1, a pool of {today} connection{'s' if today != 1 else ''}, "
        f"{n} requests at once",
        connection=replace(plan.connection, http2=False),
        max_connections=today,
        concurrency=n,
        warmup_trials=1,
    )


async def unanswered(arm: Arm) -> str | None:
    """Why ``arm`` (another endpoint or model) cannot be measured: it does not answer."""
    async with arm.session() as session:
        trace = await session.request("Hello", 1)
    if trace.error is not None:
        where = arm.endpoint.base_url
        return f"arm B ({arm.endpoint.model} at {where}) does not answer: {trace.error}"
    return None
