"""The cost table every command shows: each row's cost, per request, per 1,000 and per
success, the price it was read at, a difference row for two arms; no figure at all
without a price; in Chinese, no English but names and figures."""

from __future__ import annotations

import io
import re

import pytest

from english import english_runs
from latdoc.i18n import speaking, translate
from latdoc.model import Price, Rates, summarise_costs
from latdoc.report import make_console
from latdoc.report.costs import CostRow, cost_block, cost_rows_to_dict, cost_sentences
from unit.model.test_cost import trace

PRICE = Price(Rates(input=2.0, output=8.0), source="genai-prices 0.2.3", priced_as="p/m")


def _shown(block: object) -> str:
    out = io.StringIO()
    make_console(out, width=100).print(block)
    return out.getvalue()


def test_two_arms_side_by_side_with_their_difference() -> None:
    a = CostRow("A", summarise_costs([trace(1_000, 100)] * 4, PRICE), succeeded=4)
    b = CostRow("B", summarise_costs([trace(1_000, 50)] * 4, PRICE), succeeded=2)
    text = _shown(cost_block("Cost by arm", [a, b], "m", difference=True))
    assert "at the price of p/m from genai-prices 0.2.3" in text
    # A: $0.0028 a request ($2.80 per 1,000); B: $0.0024 ($2.40), a success $0.0048.
    assert "$0.0028" in text and "$2.80" in text and "$0.0048" in text
    assert "-$0.40 (-14%)" in text and "+$0.002 (+71%)" in text
    rows = cost_rows_to_dict([a, b])
    assert rows[1]["per_success"] == 2 * rows[1]["cost"]["per_request"]


def test_rows_at_different_prices_say_each_price() -> None:
    user = Price(Rates(input=0.5, output=2.0), source="--alt-price")
    a = CostRow("A", summarise_costs([trace(1_000, 100)], PRICE), succeeded=1)
    b = CostRow("B", summarise_costs([trace(1_000, 100)], user), succeeded=1)
    text = " ".join(_shown(cost_block("Cost by arm", [a, b], "m")).split())
    assert "(A at the price of p/m from genai-prices 0.2.3; B at the price from --alt-price)" in (
        text
    )


def test_without_a_price_the_block_is_one_sentence_and_no_figure() -> None:
    text = _shown(cost_block("Cost by level", [CostRow("1", None, 3)], "lab-sim"))
    assert "unknown" in text and "lab-sim" in text and "$" not in text
    assert cost_rows_to_dict([CostRow("1", None, 3)]) == [
        {"label": "1", "cost": None, "per_success": None}
    ]


def test_a_set_with_requests_that_reported_no_usage_has_no_cost_per_success() -> None:
    partly = CostRow("1", summarise_costs([trace(1_000, 100), trace(None, None)], PRICE), 2)
    assert partly.per_success is None
    assert "1 request reported no usage: not counted" in _shown(cost_block("Cost", [partly], "m"))


def test_a_page_says_the_same_in_sentences() -> None:
    a = CostRow("A", summarise_costs([trace(1_000, 100)] * 4, PRICE), succeeded=4)
    b = CostRow("B", summarise_costs([trace(1_000, 50)] * 4, PRICE), succeeded=2)
    lines = cost_sentences([a, b], "m", difference=True)
    assert lines[0] == "A: $0.0112 for 4 requests ($2.80 per 1,000, $0.0028 per success)"
    assert lines[2] == "B − A: -$0.40 (-14%) per 1,000, +$0.002 (+71%) per success"
    assert lines[3] == "In US dollars, at the price of p/m from genai-prices 0.2.3."
    assert cost_sentences([CostRow("1", None, 1)], "lab-sim") == [
        "Cost: unknown: latdoc has no price for model lab-sim at this endpoint; "
        "--price in=X,out=Y (dollars per million tokens) counts it"
    ]


@pytest.mark.parametrize("heading", ["Cost by arm", "Cost by level", "Cost by run"])
def test_the_block_and_the_sentences_in_chinese_leave_no_english(heading: str) -> None:
    """Every word of the table and of its sentences is said in Chinese: not even two
    English words in a row are left (a column's ``per success``)."""
    user = Price(Rates(input=0.5, output=2.0), source="--alt-price")
    a = CostRow("A", summarise_costs([trace(1_000, 100), trace(None, None)], PRICE), 1)
    b = CostRow("B", summarise_costs([trace(1_000, 50)] * 4, user), succeeded=2)
    english = _shown(cost_block(heading, [a, b], "m", difference=True))
    with speaking("zh"):
        text = _shown(cost_block(heading, [a, b], "m", difference=True))
        sentences = [translate(s) for s in cost_sentences([a, b], "m", difference=True)]
        sentences += [translate(s) for s in cost_sentences([CostRow("A", None, 1)], "m")]
    assert english_runs(text, run=2) == [], text
    assert english_runs("\n".join(sentences), run=2) == [], sentences
    assert "单位为美元" in text and "每次成功" in text and "未计入" in text
    assert _figures(text) == _figures(english) != []
    assert "p/m" in text and "--alt-price" in text


def _figures(text: str) -> list[str]:
    return re.findall(r"[-+]?\$[\d.,]+(?: \([-+]\d+%\))?", text)
