"""A stored run written out as rows, and an export read back into a store.

:func:`open_export` finds the run (an id or a unique prefix) and refuses a format that
cannot go where it is asked to (Parquet is a file, never a stream) before anything is
written; :meth:`RunExport.write` streams its requests out, so a run of any size exports
in bounded memory. :func:`import_export` adds the run of a JSON Lines export, gzipped or
not, with every request, or nothing when a line is broken.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from latdoc.errors import UsageError, nesting_checked
from latdoc.i18n import N_, Message
from latdoc.records import Sample
from latdoc.store import RunInfo, Store
from latdoc.store.requests import FORMATS, open_text, read_jsonl, write

PARQUET = "parquet"


@dataclass(frozen=True)
class RunExport:
    """A stored run about to be written out in ``format``."""

    store: Store
    info: RunInfo
    format: str
    diagnosis: Mapping[str, Any] | None
    """The run's stored diagnosis document, which a JSON Lines export carries."""

    @property
    def writes_a_file(self) -> bool:
        """The format is written to a file (a path), not to a text stream."""
        return self.format == PARQUET

    def samples(self) -> Iterator[Sample]:
        """The run's requests, read from the store a few at a time."""
        return self.store.iter_samples(self.info.run_id)

    def write(self, out: IO[str] | Path, samples: Iterable[Sample] | None = None) -> int:
        """Write the run's requests (or ``samples``, the same ones passed through a
        progress bar) to ``out``: a path when :attr:`writes_a_file`, else a text stream;
        return the rows written."""
        rows = self.samples() if samples is None else samples
        return write(self.format, self.info, self.diagnosis, rows, out)


def open_export(
    store: Store, run_id: str, *, format: str = "jsonl", to_file: bool = True
) -> RunExport:
    """The run ``run_id`` (an id or a unique prefix) to export in ``format``; a
    :class:`UsageError` for an unknown run, or for Parquet when ``to_file`` is false."""
    if format not in FORMATS:
        raise UsageError(
            Message(
                "--format {format}: use one of {formats}", format=format, formats=", ".join(FORMATS)
            )
        )
    info = store.run_info(run_id)
    diagnosis = store.diagnosis_document(info.run_id)
    if format == PARQUET and not to_file:
        raise UsageError(N_("--format parquet writes a file: give --output FILE"))
    return RunExport(store, info, format, diagnosis)


@dataclass(frozen=True)
class Imported:
    """The run an export added to a store: its id there, its requests and the store."""

    run_id: str
    requests: int
    store_path: str


def import_export(path: str | Path, *, db: str | Path | None = None) -> Imported:
    """Add the run of the JSON Lines export at ``path`` to the store ``db`` (default: the
    default store); a broken line is a :class:`UsageError` naming the line, and nothing is
    added. The store is opened only once the file is open."""
    path = Path(path)
    with nesting_checked(str(path)), open_text(path) as lines, Store(db) as store:
        found = read_jsonl(lines, str(path))
        run_id, added = store.import_run(found.run, found.diagnosis, found.samples)
        return Imported(run_id, added, store.path)
