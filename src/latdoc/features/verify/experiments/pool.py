"""``--remedy pool``: requests at once on today's pool, against the pool the advice
gives, ``2 × cores + concurrency``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from latdoc.advice import advised_pool
from latdoc.advice.verify import VERIFY_POOL
from latdoc.analysis.compare import TRIAL_MEAN
from latdoc.errors import UsageError
from latdoc.features.verify.experiments._shared import (
    CONCURRENCY,
    POOL_SIZE,
    check_pool_size,
    http1_pool_arm,
)
from latdoc.features.verify.experiments._spec import Experiment, options_from
from latdoc.features.verify.send import Arm
from latdoc.i18n import N_
from latdoc.model import DEFAULT_CONCURRENCY
from latdoc.pipeline import cpu_count
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


ARGUMENTS = (CONCURRENCY, POOL_SIZE)


@dataclass(frozen=True)
class PoolOptions:
    concurrency: int = DEFAULT_CONCURRENCY
    """Requests at once per trial."""
    pool_size: int | None = None
    """Arm A's pool: the one the client has today (required)."""
    cpu_count: int = 1
    """Cores of this host, for the advised pool."""

    @property
    def advised_pool(self) -> int:
        """The pool the advice gives: ``2 × cores + concurrency``."""
        return advised_pool(self.cpu_count, self.concurrency)


def _read(values: Mapping[str, object]) -> PoolOptions:
    """The given options, and this host's cores."""
    return replace(options_from(PoolOptions, ARGUMENTS, values), cpu_count=cpu_count())


def _check(plan: Plan, options: PoolOptions) -> None:
    if options.pool_size is None:
        raise UsageError(N_("--remedy pool needs --pool-size: the pool your client has today"))
    check_pool_size(options.pool_size)


def _describe(plan: Plan, options: PoolOptions) -> tuple[str, str]:
    n = options.concurrency
    return (
        f"a pool of {options.pool_size} (today), {n} requests at once",
        f"a pool of {options.advised_pool} (2 × {options.cpu_count} cores + {n}), "
        f"{n} requests at once",
    )


def _arms(plan: Plan, options: PoolOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    n, size = options.concurrency, options.advised_pool
    a = http1_pool_arm(plan, calibration, n, options.pool_size)
    b = replace(
        a,
        name="B",
        label=f"HTTP/1.1, a pool of {size} connections (2 × {options.cpu_count} cores + "
        f"{n}), {n} requests at once",
        max_connections=size,
    )
    return a, b


POOL = Experiment(
    name=VERIFY_POOL,
    summary="a pool of 2 × cores + concurrency",
    options=PoolOptions,
    describe=_describe,
    arms=_arms,
    arguments=ARGUMENTS,
    read_options=_read,
    check=_check,
    statistic=TRIAL_MEAN,
)
