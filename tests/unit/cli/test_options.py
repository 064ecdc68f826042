"""The command line's option types: a duration in the usual units, anything else
refused in one line."""

from __future__ import annotations

import pytest

from latdoc.cli._options import duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("1h", 3600), ("24h", 86400), ("1.5h", 5400), ("500ms", 0.5),
     ("2d", 172800), ("90", 90)],
)  # fmt: skip
def test_duration_parses_the_usual_units(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["5 minutes", "h", "-5m", "0s", "1y"])
def test_duration_refuses_anything_else_in_one_line(text: str) -> None:
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match=r"duration|more than 0"):
        duration(text)
