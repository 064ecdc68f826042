"""``--remedy proxy --alt-proxy URL``: requests through today's route (the
environment's proxy, ``--proxy``, or direct) against the same requests through
another proxy, each on a new connection, where a proxy's ``CONNECT`` is paid. Only
another proxy that answers can show it. Its credentials, if any, are masked wherever
the run is written."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_PROXY
from latdoc.errors import UsageError
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.experiments._shared import unanswered
from latdoc.features.verify.experiments._spec import Argument, Before, Experiment
from latdoc.features.verify.experiments.direct import proxy_arm_label
from latdoc.features.verify.send import Arm
from latdoc.i18n import N_
from latdoc.probe import ProxyConfig, parse_proxy
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


@dataclass(frozen=True)
class ProxyOptions:
    alt_proxy: str | None = field(default=None, repr=False)
    """The other proxy's URL (required)."""


def _check(plan: Plan, options: ProxyOptions) -> None:
    if not options.alt_proxy:
        raise UsageError(N_("--remedy proxy needs --alt-proxy URL: the proxy to try"))
    parse_proxy(options.alt_proxy, "--alt-proxy")


def _describe(plan: Plan, options: ProxyOptions) -> tuple[str, str]:
    assert options.alt_proxy is not None
    alt = parse_proxy(options.alt_proxy, "--alt-proxy").shown
    return (
        f"{proxy_arm_label(plan)}, a new connection per request",
        f"through {alt}, a new connection per request",
    )


def _arms(plan: Plan, options: ProxyOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    a, b = _describe(plan, options)
    base = replace(base_arm(plan, calibration), reuse=False, warmup_trials=0)
    other = replace(plan.connection, proxy=ProxyConfig(url=options.alt_proxy, environ={}))
    return (
        replace(base, label=a),
        replace(base, name="B", label=b, connection=other),
    )


async def _answers(before: Before, options: ProxyOptions) -> ProxyOptions | str:
    _, b = _arms(before.plan, options, before.calibration)
    why = await unanswered(b)
    return options if why is None else why


def _secrets(options: ProxyOptions) -> tuple[str, ...]:
    if not options.alt_proxy:
        return ()
    return parse_proxy(options.alt_proxy, "--alt-proxy").secrets


PROXY = Experiment(
    name=VERIFY_PROXY,
    summary="another proxy, e.g. a nearer one",
    options=ProxyOptions,
    describe=_describe,
    arms=_arms,
    arguments=(
        Argument(
            "--alt-proxy",
            "proxy: the other proxy's URL, http://[USER:PASSWORD@]HOST:PORT or socks5h://HOST:PORT",
            metavar="URL",
        ),
    ),
    check=_check,
    precondition=_answers,
    secrets=_secrets,
    caveat="each request opens a new connection, where a proxy's CONNECT is paid",
)
