"""``latdoc export`` and ``latdoc import``: every request of a stored run out as one row
(JSON Lines, CSV or Parquet), and latdoc's own JSON Lines back into a store. Send
nothing."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from latdoc.cli._options import EXIT_OK, add_store_argument
from latdoc.cli._output import output_path
from latdoc.features.export import import_export, open_export
from latdoc.records import Sample
from latdoc.store import Store
from latdoc.store.requests import FORMATS


def add_parsers(sub: argparse._SubParsersAction[Any]) -> None:
    e = sub.add_parser(
        "export",
        help="every request of a stored run as one row: JSON Lines, CSV or Parquet",
        description="Write one row per request of a stored run: the step and level, worker, "
        "ids and wall-clock start, every phase in ms, the server's own timing, tokens. "
        "Every format carries the schema's name and version (latdoc-requests, 1). "
        "JSON Lines keeps each request's whole record, so `latdoc import` restores the "
        "run elsewhere with nothing lost. Rows are read and written a few at a time: "
        "a run of any size exports in bounded memory.",
    )
    e.add_argument("run_id", metavar="RUN_ID", help="the run (an id or a unique prefix)")
    e.add_argument("--format", choices=FORMATS, default="jsonl", help="default: jsonl")
    e.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        help="write here (default: standard output; Parquet needs a file)",
    )
    add_store_argument(e)
    i = sub.add_parser(
        "import",
        help="add a run exported by `latdoc export --format jsonl` to a store",
        description="Read a JSON Lines export of latdoc (gzipped or not) and add its run, "
        "with every request, to the store. A broken line is an error naming the line, "
        "and nothing is added.",
    )
    i.add_argument("file", metavar="FILE", help="the export (.jsonl or .jsonl.gz)")
    add_store_argument(i)


def run_export(args: argparse.Namespace) -> int:
    with Store(args.db) as store:
        export = open_export(
            store, args.run_id, format=args.format, to_file=args.output is not None
        )
        samples = _progress(export.samples(), export.info.requests, "exporting")
        with _open_out(args.output, export.writes_a_file) as out:
            rows = export.write(out, samples)
    where = "standard output" if args.output is None else args.output
    print(f"Exported {rows} requests of run {export.info.run_id} to {where}.", file=sys.stderr)
    return EXIT_OK


def run_import(args: argparse.Namespace) -> int:
    found = import_export(args.file, db=args.db)
    print(
        f"Imported run {found.run_id} ({found.requests} requests) into {found.store_path}.",
        file=sys.stderr,
    )
    return EXIT_OK


@contextlib.contextmanager
def _open_out(output: str | None, file: bool) -> Iterator[IO[str] | Path]:
    """Where the rows go: standard output, or ``output`` written whole (as a path when the
    format writes a file itself)."""
    if output is None:
        yield sys.stdout
        return
    with output_path(output) as path:
        if file:
            yield path
            return
        with path.open("w", encoding="utf-8", newline="") as out:
            yield out


def _progress(samples: Iterable[Sample], total: int, what: str) -> Iterator[Sample]:
    """The samples, with a progress bar on a terminal's standard error."""
    if not sys.stderr.isatty() or total < 10_000:
        yield from samples
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task(what, total=total)
        for n, sample in enumerate(samples, start=1):
            yield sample
            if n % 1000 == 0:
                bar.update(task, completed=n)
