"""Every command shows its result by one rule: ``--html FILE`` writes the page if the
result has one, ``--json`` prints the document instead of the blocks, a stored run
re-rendered to a page prints no blocks, and where the runs are kept goes to stderr."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

from latdoc.cli._output import emit


@dataclass
class _Result:
    has_page: bool = True

    @property
    def page_kind(self) -> str:
        return "report"

    def document(self) -> dict[str, Any]:
        return {"schema": "test/1", "value": 3}

    def shown(self) -> tuple[Text, ...]:
        return (Text("first block"), Text("second block"))

    def page(self) -> str | None:
        return "<html>page</html>" if self.has_page else None

    def kept(self) -> str:
        return "Runs kept in store.db"


def _args(html: Path | None = None, as_json: bool = False) -> argparse.Namespace:
    return argparse.Namespace(html=None if html is None else str(html), json=as_json)


def test_html_and_json_together_write_the_page_and_print_the_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "out.html"
    emit(_Result(), _args(page, as_json=True))
    out, err = capsys.readouterr()
    assert json.loads(out) == {"schema": "test/1", "value": 3}
    assert page.read_text() == "<html>page</html>"
    assert f"HTML report written to {page}" in err and "Runs kept in store.db" in err


def test_a_live_run_prints_its_blocks_beside_its_page_a_stored_one_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "out.html"
    emit(_Result(), _args(page))
    assert "first block" in capsys.readouterr().out
    emit(_Result(), _args(page), terminal=False)
    assert capsys.readouterr().out == ""
    emit(_Result(), _args(), terminal=False)
    out = capsys.readouterr().out
    assert "first block" in out and "second block" in out


def test_a_result_without_a_page_writes_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "out.html"
    emit(_Result(has_page=False), _args(page))
    assert not page.exists()
    assert "written" not in capsys.readouterr().err


def test_a_command_without_html_prints_its_blocks_or_its_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    emit(_Result(), argparse.Namespace(json=False))
    out, err = capsys.readouterr()
    assert "first block" in out and "Runs kept in store.db" in err
    emit(_Result(), argparse.Namespace(json=True))
    assert json.loads(capsys.readouterr().out) == {"schema": "test/1", "value": 3}
