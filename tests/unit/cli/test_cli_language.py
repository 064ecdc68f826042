"""The language of what ``latdoc`` prints: ``--lang``, else ``LATDOC_LANG``, else a
Chinese locale; the ``Error:`` line in it; a run's JSON in English whatever it is."""

from __future__ import annotations

import pytest

from latdoc.cli import EXIT_USAGE, main
from latdoc.i18n import language


@pytest.fixture(autouse=True)
def _no_language(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LATDOC_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    return err.strip()


def test_lang_zh_says_the_error_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    said = _error(["report", "--lang", "zh"], capsys)
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
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert _error(["report"], capsys).startswith(prefix)


def test_the_flag_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LATDOC_LANG", "zh")
    assert _error(["report", "--lang=en"], capsys).startswith("Error: give a run id")


def test_a_language_latdoc_does_not_speak_is_one_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "invalid choice: 'fr'" in _error(["report", "--lang", "fr"], capsys)
    monkeypatch.setenv("LATDOC_LANG", "fr")
    assert _error(["report"], capsys) == "Error: LATDOC_LANG is 'fr': latdoc speaks en, zh"
