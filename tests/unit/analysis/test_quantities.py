"""What a user writes for a count, a number, a share or a duration: read, or refused in
one sentence saying what was expected (the command line's flags say the same)."""

from __future__ import annotations

import pytest

from latdoc.analysis.quantities import (
    duration,
    non_negative_float,
    positive_float,
    positive_int,
    share,
)
from latdoc.errors import UsageError


def test_each_reads_what_it_is_given() -> None:
    assert positive_int("3") == 3
    assert non_negative_float("0") == 0.0
    assert positive_float("0.25") == 0.25
    assert share("0.05") == 0.05 and share("5%") == 0.05 and share("100%") == 1.0
    assert duration("1.5h") == 5400.0 and duration(" 250us ") == pytest.approx(0.00025)


@pytest.mark.parametrize(
    ("read", "text", "said"),
    [
        (positive_int, "1.5", "not a whole number: '1.5'"),
        (positive_int, "0", "must be at least 1, got 0"),
        (non_negative_float, "x", "not a number: 'x'"),
        (non_negative_float, "-1", "must not be negative, got -1.0"),
        (positive_float, "0", "must be more than 0"),
        (share, "2", "a share between 0 and 1 (or a percentage): '2'"),
        (share, "150%", "a share between 0 and 1 (or a percentage): '150%'"),
        (share, "0%", "must be more than 0"),
        (duration, "5 minutes", "not a duration: '5 minutes' (give a number and a unit, "
                                "e.g. 30s, 5m, 1h, 24h)"),
        (duration, "0s", "must be more than 0, got '0s'"),
    ],
)  # fmt: skip
def test_each_refuses_in_one_sentence(read: object, text: str, said: str) -> None:
    assert callable(read)
    with pytest.raises(UsageError) as refused:
        read(text)
    assert str(refused.value) == said
