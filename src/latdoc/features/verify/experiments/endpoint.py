"""``--remedy endpoint``: the endpoint of today against another region, provider or route
(the same model unless ``--alt-model`` names another). Only another endpoint that
answers can show it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_ENDPOINT
from latdoc.errors import UsageError
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.experiments._shared import ALT_MODEL, unanswered
from latdoc.features.verify.experiments._spec import Argument, Before, Experiment
from latdoc.features.verify.send import Arm
from latdoc.probe import Endpoint
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    import argparse

    from latdoc.features.verify.plan import VerifyPlan


@dataclass(frozen=True)
class EndpointOptions:
    alt_url: str | None = None
    """The other endpoint (required)."""
    alt_model: str | None = None
    """The model there, if not the same name."""


def _read(args: argparse.Namespace) -> EndpointOptions:
    return EndpointOptions(alt_url=args.alt_url, alt_model=args.alt_model)


def _check(plan: VerifyPlan, options: EndpointOptions) -> None:
    if not options.alt_url:
        raise UsageError("--remedy endpoint needs --alt URL2: the endpoint to try")


def _describe(plan: VerifyPlan, options: EndpointOptions) -> tuple[str, str]:
    return plan.endpoint.base_url, str(options.alt_url)


def _arms(
    plan: VerifyPlan, options: EndpointOptions, calibration: TokenCalibration
) -> tuple[Arm, Arm]:
    assert options.alt_url is not None
    here = plan.endpoint
    alt = Endpoint(
        options.alt_url, options.alt_model or here.model, here.dialect, api_key=here.api_key
    )
    base = base_arm(plan, calibration)
    return (
        replace(base, label=f"{here.base_url}", warmup_trials=1),
        replace(base, name="B", label=f"{options.alt_url}", endpoint=alt, warmup_trials=1),
    )


async def _answers(before: Before, options: EndpointOptions) -> EndpointOptions | str:
    _, b = _arms(before.plan, options, before.calibration)
    why = await unanswered(b)
    return options if why is None else why


ENDPOINT = Experiment(
    name=VERIFY_ENDPOINT,
    summary="another region, provider or route",
    options=EndpointOptions,
    describe=_describe,
    arms=_arms,
    arguments=(
        Argument("--alt", "endpoint: the other region or provider", dest="alt_url", metavar="URL2"),
        ALT_MODEL,
    ),
    read_options=_read,
    check=_check,
    precondition=_answers,
)
