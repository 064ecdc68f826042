"""What the command-line tests share: no language asked of the process's environment
unless a test asks for one, and the one ``Error:`` line a mistake prints."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from latdoc.cli import EXIT_USAGE, main


@pytest.fixture(autouse=True)
def _no_language(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LATDOC_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def error_line(capsys: pytest.CaptureFixture[str]) -> Callable[[list[str]], str]:
    """The one line ``latdoc ARGV`` prints for a mistake (exit 2)."""

    def said(argv: list[str]) -> str:
        assert main(argv) == EXIT_USAGE
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1
        return err.strip()

    return said
