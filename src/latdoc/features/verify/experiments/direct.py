"""``--remedy direct``: requests through today's proxy (the environment's, or
``--proxy``) against the same requests sent direct, each on a new connection, where
a proxy's ``CONNECT`` is paid. Only an endpoint reached through a proxy, and that
answers direct, can show the remedy (bypassing the proxy for the API's host:
``NO_PROXY``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_DIRECT
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.experiments._shared import unanswered
from latdoc.features.verify.experiments._spec import Before, Experiment, NoOptions
from latdoc.features.verify.send import Arm
from latdoc.probe import ProxyConfig
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


def proxy_arm_label(plan: Plan) -> str:
    """How arm A reaches the endpoint today: ``through http://proxy:3128 (HTTPS_PROXY)``."""
    route = plan.connection.proxy.route(plan.endpoint.url)
    return "direct" if route.proxy is None else f"through {route.shown}"


def _describe(plan: Plan, options: NoOptions) -> tuple[str, str]:
    return (
        f"{proxy_arm_label(plan)}, a new connection per request",
        "direct, a new connection per request",
    )


def _arms(plan: Plan, options: NoOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    a, b = _describe(plan, options)
    base = replace(base_arm(plan, calibration), reuse=False, warmup_trials=0)
    direct = replace(plan.connection, proxy=ProxyConfig(direct=True))
    return (
        replace(base, label=a),
        replace(base, name="B", label=b, connection=direct),
    )


async def _proxied_and_reachable(before: Before, options: NoOptions) -> NoOptions | str:
    plan = before.plan
    route = plan.connection.proxy.route(plan.endpoint.url)
    if route.proxy is None:
        return (
            f"requests to this endpoint go direct already ({route.why}): no proxy to "
            "bypass; name one with --proxy URL to measure what it would add"
        )
    _, b = _arms(plan, options, before.calibration)
    why = await unanswered(b)
    return options if why is None else f"the endpoint cannot be reached direct: {why}"


DIRECT = Experiment(
    name=VERIFY_DIRECT,
    summary="bypass the proxy: connect direct",
    options=NoOptions,
    describe=_describe,
    arms=_arms,
    precondition=_proxied_and_reachable,
    caveat="each request opens a new connection, where the proxy's CONNECT is paid; on a "
    "connection kept alive through the tunnel the proxy adds only its forwarding",
)
