"""``--remedy model``: the model of today against another on the same endpoint. Only a
model the endpoint serves can show it; whether its answers are as good is the user's
to judge, by their own checks (``--check``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from latdoc.advice.verify import VERIFY_MODEL
from latdoc.errors import UsageError
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.experiments._shared import ALT_MODEL, unanswered
from latdoc.features.verify.experiments._spec import Argument, Before, Experiment
from latdoc.features.verify.send import Arm
from latdoc.i18n import N_
from latdoc.pricing import parse_price
from latdoc.workload import TokenCalibration

if TYPE_CHECKING:
    from latdoc.features.verify.arms import Plan


ALT_PRICE = Argument(
    "--alt-price",
    "model: the other model's price, in=X,out=Y[,cached=Z] dollars per million tokens "
    "(default: the price library's)",
    metavar="in=X,out=Y",
)


@dataclass(frozen=True)
class ModelOptions:
    alt_model: str | None = None
    """The model to try (required)."""
    alt_price: str | None = None
    """Its price, where the price library does not know it; ``None``: the library's."""


def _check(plan: Plan, options: ModelOptions) -> None:
    if not options.alt_model:
        raise UsageError(N_("--remedy model needs --alt-model NAME: the model to try"))
    if options.alt_model == plan.endpoint.model:
        raise UsageError(N_("--alt-model names the model under test: name another one"))
    if options.alt_price is not None:
        parse_price(options.alt_price, flag="--alt-price")


def _describe(plan: Plan, options: ModelOptions) -> tuple[str, str]:
    return f"model {plan.endpoint.model}", f"model {options.alt_model}"


def _arms(plan: Plan, options: ModelOptions, calibration: TokenCalibration) -> tuple[Arm, Arm]:
    assert options.alt_model is not None
    other = replace(plan.endpoint, model=options.alt_model)
    base = base_arm(plan, calibration)
    return (
        replace(base, label=f"model {plan.endpoint.model}", warmup_trials=1),
        replace(
            base,
            name="B",
            label=f"model {options.alt_model}",
            endpoint=other,
            warmup_trials=1,
            price=None
            if options.alt_price is None
            else parse_price(options.alt_price, flag="--alt-price"),
        ),
    )


async def _answers(before: Before, options: ModelOptions) -> ModelOptions | str:
    _, b = _arms(before.plan, options, before.calibration)
    why = await unanswered(b)
    return options if why is None else why


MODEL = Experiment(
    name=VERIFY_MODEL,
    summary="another model",
    options=ModelOptions,
    describe=_describe,
    arms=_arms,
    arguments=(ALT_MODEL, ALT_PRICE),
    check=_check,
    precondition=_answers,
    caveat="Speed is measured here; whether the answers are as good, by your own checks "
    "alone (--check FILE).",
)
