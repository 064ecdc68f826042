"""A command that fails writes no output file: an export (any format) and an HTML report
are written whole under their name, or not at all, and an earlier file of that name is
left as it was. In process, from a store of spans diagnosed with ``--from-otlp``:
nothing is sent."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from latdoc.cli import EXIT_INTERRUPTED, EXIT_USAGE, main
from latdoc.store import Store
from paths import DATA

_OTLP = DATA / "otlp_openai_v2.json"


_EARLIER = "an earlier file, kept\n"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A store with two runs: the same spans diagnosed twice."""
    db = tmp_path_factory.mktemp("output") / "runs.db"
    for _ in range(2):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["diagnose", "--from-otlp", str(_OTLP), "--db", str(db), "--json"]) == 0
    with Store(db) as store:
        first, second = (info.run_id for info in store.list_runs())
    return db, first, second


def _only(directory: Path, *names: str) -> None:
    assert sorted(p.name for p in directory.iterdir()) == sorted(names)


def test_parquet_without_pyarrow_leaves_no_file(
    stored: tuple[Path, str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db, run_id, _ = stored
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    fresh, earlier = tmp_path / "run.parquet", tmp_path / "earlier.parquet"
    earlier.write_text(_EARLIER)
    for out in (fresh, earlier):
        argv = ["export", run_id, "--db", str(db), "--format", "parquet", "-o", str(out)]
        assert main(argv) == EXIT_USAGE
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith("Error: --format parquet needs pyarrow")
    _only(tmp_path, "earlier.parquet")
    assert earlier.read_text() == _EARLIER


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_interrupted_export_leaves_no_file(
    stored: tuple[Path, str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
) -> None:
    """Ctrl-C after two rows are written."""
    from latdoc.store import requests

    db, run_id, _ = stored
    row = requests.row

    def rows_then_ctrl_c(run: object, sample: object) -> dict[str, object]:
        if sample.index >= 2:  # type: ignore[attr-defined]
            raise KeyboardInterrupt
        return row(run, sample)  # type: ignore[arg-type]

    monkeypatch.setattr(requests, "row", rows_then_ctrl_c)
    fresh, earlier = tmp_path / f"run.{fmt}", tmp_path / f"earlier.{fmt}"
    earlier.write_text(_EARLIER)
    for out in (fresh, earlier):
        assert main(["export", run_id, "--db", str(db), "--format", fmt, "-o", str(out)]) == (
            EXIT_INTERRUPTED
        )
    capsys.readouterr()
    _only(tmp_path, earlier.name)
    assert earlier.read_text() == _EARLIER


def test_an_export_replaces_a_file_whole_and_keeps_its_mode(
    stored: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, run_id, _ = stored
    out = tmp_path / "run.csv"
    out.write_text(_EARLIER)
    out.chmod(0o640)
    assert main(["export", run_id, "--db", str(db), "--format", "csv", "-o", str(out)]) == 0
    assert out.read_text().startswith("schema,version,run_id,")
    assert out.stat().st_mode & 0o777 == 0o640
    _only(tmp_path, "run.csv")
    assert main(["export", run_id, "--db", str(db), "-o", os.devnull]) == 0
    assert f"to {os.devnull}" in capsys.readouterr().err


@contextlib.contextmanager
def _disk_fills_half_way(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Writing a text file stops half way with "No space left on device"."""

    def half_then_full(path: Path, text: str, *args: object, **kwargs: object) -> int:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text[: len(text) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(Path, "write_text", half_then_full)
        yield


@pytest.mark.parametrize("command", ["report", "diagnose", "compare"])
def test_an_html_report_that_cannot_be_finished_leaves_the_earlier_one(
    stored: tuple[Path, str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    db, first, second = stored
    page = tmp_path / "report.html"
    page.write_text(_EARLIER)
    shown = {
        "report": ["report", first],
        "diagnose": ["diagnose", "--from-otlp", str(_OTLP)],
        "compare": ["compare", first, second],
    }[command]
    argv = [*shown, "--db", str(db), "--html", str(page)]
    capsys.readouterr()
    with _disk_fills_half_way(monkeypatch):
        assert main(argv) == EXIT_USAGE
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"Error: cannot write {page}: No space left on device"
    _only(tmp_path, "report.html")
    assert page.read_text() == _EARLIER
    assert main(argv) == 0
    assert page.read_text().startswith("<!")
