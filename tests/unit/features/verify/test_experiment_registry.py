"""A new ``latdoc verify`` experiment is one module and one line of the registry.

The toy below is what such a module holds: one frozen :class:`Experiment` with its
own options record and argument. Added to a copy of
:data:`~latdoc.features.verify.experiments.EXPERIMENTS`, it gets its ``--remedy``
choice and its option in the real parser, builds its arms, and runs against the
lab to a verdict, with nothing else changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import pytest

from latdoc import Endpoint, UsageError, VerifyPlan, VerifyRemedy
from latdoc.cli import EXIT_USAGE, build_parser, main
from latdoc.features.verify import arm_summaries, experiments
from latdoc.features.verify.arms import base_arm
from latdoc.features.verify.experiments import Argument, Experiment
from latdoc.features.verify.plan import build_arms
from latdoc.features.verify.send import Arm
from latdoc.workload import ASSUMED, TokenCalibration


@dataclass(frozen=True)
class ShorterOutputOptions:
    output_tokens: int = 4
    """Arm B's output limit."""


def _read(values: Mapping[str, object]) -> ShorterOutputOptions:
    tokens = values["shorter_output_tokens"]
    assert isinstance(tokens, int)
    return ShorterOutputOptions(output_tokens=tokens)


def _check(plan: VerifyPlan, options: ShorterOutputOptions) -> None:
    if options.output_tokens >= plan.max_tokens:
        raise UsageError("--shorter-output-tokens must be fewer than --max-tokens")


def _describe(plan: VerifyPlan, options: ShorterOutputOptions) -> tuple[str, str]:
    return f"{plan.max_tokens} output tokens", f"{options.output_tokens} output tokens"


def _arms(
    plan: VerifyPlan, options: ShorterOutputOptions, calibration: TokenCalibration
) -> tuple[Arm, Arm]:
    label_a, label_b = _describe(plan, options)
    a = replace(base_arm(plan, calibration), label=label_a)
    return a, replace(a, name="B", label=label_b, max_tokens=options.output_tokens)


SHORTER_OUTPUT = Experiment(
    name="shorter-output",
    summary="fewer output tokens",
    options=ShorterOutputOptions,
    describe=_describe,
    arms=_arms,
    arguments=(
        Argument(
            "--shorter-output-tokens",
            "shorter-output: B's output limit (default 4)",
            kind=int,
            default=4,
            metavar="N",
        ),
    ),
    read_options=_read,
    check=_check,
    headline="total",
)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry with the toy's one line added."""
    monkeypatch.setattr(experiments, "EXPERIMENTS", (*experiments.EXPERIMENTS, SHORTER_OUTPUT))


VERIFY_TOY = ["verify", "http://127.0.0.1:9/v1", "-m", "m", "--remedy", "shorter-output"]


def test_without_its_line_the_remedy_does_not_exist(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*VERIFY_TOY, "--shorter-output-tokens", "3"]) == EXIT_USAGE
    assert "invalid choice: 'shorter-output'" in capsys.readouterr().err


@pytest.mark.usefixtures("registered")
def test_the_parser_offers_its_choice_and_its_own_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser()
    args = parser.parse_args([*VERIFY_TOY, "--shorter-output-tokens", "3"])
    assert args.remedy == "shorter-output" and args.shorter_output_tokens == 3
    assert parser.parse_args(VERIFY_TOY).shorter_output_tokens == 4
    assert SHORTER_OUTPUT.read(vars(args)) == ShorterOutputOptions(3)
    # The options of the experiments already there are unchanged beside it.
    assert parser.parse_args([*VERIFY_TOY, "--pool-size", "5"]).pool_size == 5
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "shorter-output: fewer output tokens" in text
    assert "--shorter-output-tokens N shorter-output: B's output limit (default 4)" in text


@pytest.mark.usefixtures("registered")
def test_it_builds_its_arms_from_the_shared_plan_and_its_options() -> None:
    plan = VerifyPlan(
        Endpoint("http://127.0.0.1:9/v1", "m"),
        "shorter-output",
        max_tokens=48,
        options=ShorterOutputOptions(6),
    )
    a, b = build_arms(plan, ASSUMED)
    assert (a.name, a.max_tokens, a.label) == ("A", 48, "48 output tokens")
    assert (b.name, b.max_tokens, b.label) == ("B", 6, "6 output tokens")
    assert a.prompt_cost == b.prompt_cost and a.endpoint == b.endpoint == plan.endpoint
    assert arm_summaries(plan) == ("48 output tokens", "6 output tokens")
    with pytest.raises(UsageError, match="fewer than --max-tokens"):
        VerifyPlan(plan.endpoint, "shorter-output", max_tokens=4, options=ShorterOutputOptions(6))
    with pytest.raises(TypeError, match="takes ShorterOutputOptions"):
        VerifyPlan(plan.endpoint, "shorter-output", options=ShorterOutputOptions)


def test_the_registry_names_each_experiment_once_and_a_plan_holds_it() -> None:
    names = experiments.names()
    assert len(set(names)) == len(names)
    for name in names:
        spec = experiments.experiment(name)
        assert VerifyRemedy(name) is spec and VerifyRemedy(spec) is spec
        assert isinstance(spec.options(), spec.options)
    with pytest.raises(UsageError, match="no remedy 'shorter-output'"):
        experiments.experiment("shorter-output")
