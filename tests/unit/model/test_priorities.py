"""``--priorities``: an order of latency, cost and quality, or weights; a bad one is one
line naming what is wrong; the scenarios are presets of it."""

from __future__ import annotations

import pytest

from latdoc import Priorities, Scenario, UsageError, parse_priorities
from latdoc.model import Corner, CostChange, Effects, QualityRisk

L, C, Q = Corner.LATENCY, Corner.COST, Corner.QUALITY


@pytest.mark.parametrize(
    ("text", "order", "weights"),
    [
        ("latency,cost,quality", (L, C, Q), None),
        (" quality , latency,cost ", (Q, L, C), None),
        ("latency=3,cost=1,quality=2", (L, Q, C), (3.0, 2.0, 1.0)),
        ("cost=0.5,quality=0,latency=2", (L, C), (2.0, 0.5)),
        ("latency=0,cost=0,quality=1e3", (Q,), (1000.0,)),
    ],
)
def test_an_order_or_weights_order_the_corners(
    text: str, order: tuple[Corner, ...], weights: tuple[float, ...] | None
) -> None:
    priorities = parse_priorities(text)
    assert priorities.order == order
    assert priorities.weights == weights
    assert priorities.scenario is None
    assert parse_priorities(priorities.spec()) == priorities


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("latency,speed,quality", "unknown corner 'speed'"),
        ("", "unknown corner ''"),
        ("latency,,cost,quality", "unknown corner ''"),
        ("latency,cost,latency", "latency is named twice"),
        ("latency,cost", "leaves out quality"),
        ("latency=1,cost,quality=2", "weights to some corners only"),
        ("latency=-1,cost=1,quality=2", "latency='-1' is not a weight"),
        ("latency=fast,cost=1,quality=2", "latency='fast' is not a weight"),
        ("latency=nan,cost=1,quality=2", "latency='nan' is not a weight"),
        ("latency=inf,cost=1,quality=2", "latency='inf' is not a weight"),
        ("latency=,cost=1,quality=2", "latency='' is not a weight"),
        ("latency=0,cost=0,quality=0", "every weight is 0"),
        ("latency=2,cost=1,quality=1", "cost and quality weigh the same (1)"),
    ],
)
def test_a_bad_priorities_string_is_one_line_naming_what_is_wrong(text: str, said: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_priorities(text)
    message = str(caught.value)
    assert message.startswith("--priorities")
    assert said in message
    assert "\n" not in message


def test_each_scenario_is_a_preset_said_with_where_it_came_from() -> None:
    assert [Priorities.preset(s).order for s in Scenario] == [(L, C, Q), (C, L, Q), (Q, L, C)]
    assert Priorities.preset(Scenario.CHAT).text() == "latency > cost > quality (--scenario chat)"
    weighed = parse_priorities("latency=3,cost=0,quality=1.5")
    assert weighed.text() == "latency (3) > quality (1.5); cost not read (--priorities)"
    assert weighed.spec() == "latency=3,cost=0,quality=1.5"


def test_priorities_that_do_not_order_the_corners_are_refused() -> None:
    with pytest.raises(ValueError, match="distinct"):
        Priorities((L, L))
    with pytest.raises(ValueError, match="do not order"):
        Priorities((L, C), (1.0, 1.0))


def test_an_effect_says_why_exactly_when_there_is_one() -> None:
    assert Effects().text() is None
    capped = Effects(CostChange.LOWER, QualityRisk.MAY_CHANGE, "fewer tokens", "cut off")
    assert capped.text() == "cost lower: fewer tokens; may change answers: cut off"
    with pytest.raises(ValueError, match="says why"):
        Effects(CostChange.LOWER)
    with pytest.raises(ValueError, match="says how"):
        Effects(quality_why="unchanged")
