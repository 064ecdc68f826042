"""The language of what ``latdoc`` prints: ``--lang``, else ``LATDOC_LANG``, else a
Chinese locale; the ``Error:`` line in it; a run's JSON in English whatever it is."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from latdoc.i18n import language


def test_lang_zh_says_the_error_in_chinese(error_line: Callable[[list[str]], str]) -> None:
    said = error_line(["report", "--lang", "zh"])
    assert said == "错误：请给出 `latdoc runs` 中的运行 id，或使用 --watch NAME"
    assert language() == "en", "the command's language ends with it"


@pytest.mark.parametrize(
    ("environ", "prefix"),
    [
        ({}, "Error: "),
        ({"LATDOC_LANG": "zh"}, "错误："),
        ({"LANG": "zh_CN.UTF-8"}, "错误："),
        ({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, "Error: "),
        ({"LATDOC_LANG": "en", "LANG": "zh_CN.UTF-8"}, "Error: "),
    ],
)
def test_the_environment_chooses_the_language(
    environ: dict[str, str],
    prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    error_line: Callable[[list[str]], str],
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert error_line(["report"]).startswith(prefix)


def test_the_flag_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, error_line: Callable[[list[str]], str]
) -> None:
    monkeypatch.setenv("LATDOC_LANG", "zh")
    assert error_line(["report", "--lang=en"]).startswith("Error: give a run id")


def test_a_language_latdoc_does_not_speak_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, error_line: Callable[[list[str]], str]
) -> None:
    assert "invalid choice: 'fr'" in error_line(["report", "--lang", "fr"])
    monkeypatch.setenv("LATDOC_LANG", "fr")
    assert error_line(["report"]) == "Error: LATDOC_LANG is 'fr': latdoc speaks en, zh"
