"""A run as one self-describing JSON document, for ``latdoc export`` and ``import``.

::

    {"format": "latdoc-run", "version": 1,
     "run": {"run_id": ..., "started_at": ..., "status": ..., "meta": {...}, ...},
     "samples": [<sample record>, ...],
     "diagnosis": {...} | null}

Each document version has its own loader (as pyperf keeps one per result-file
version); a document of an unknown format or a newer version is refused with
a :class:`~latdoc.errors.UsageError`. :class:`Exchange` is the part of a
:class:`~latdoc.store.Store` that writes a run out as such a document and adds one
read back, or a run read as it comes from any other source.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from latdoc.errors import UsageError, message_of, nesting_checked
from latdoc.i18n import Message
from latdoc.records import Sample
from latdoc.store._connection import Connection
from latdoc.store._fields import loads
from latdoc.store.codec import sample_from_record, sample_to_record
from latdoc.store.run import (
    DIAGNOSE_KIND,
    RUN_KINDS,
    RUN_STATUSES,
    RunInfo,
    notes_from_data,
    notes_to_data,
    parse_utc,
    utc_text,
)
from latdoc.store.samples import Samples

FORMAT = "latdoc-run"
VERSION = 1
IMPORT_BATCH = 5000
"""Samples inserted at once while importing."""


@dataclass(frozen=True)
class RunDocument:
    """What an export holds: the run, its samples in order, and its diagnosis."""

    run: RunInfo
    samples: tuple[Sample, ...]
    diagnosis: Mapping[str, Any] | None


def dump_run(run: RunInfo, samples: Sequence[Sample], diagnosis: Mapping[str, Any] | None) -> str:
    """The export document for one run, as JSON text."""
    document = {
        "format": FORMAT,
        "version": VERSION,
        "run": run_to_data(run),
        "samples": [sample_to_record(s) for s in samples],
        "diagnosis": None if diagnosis is None else dict(diagnosis),
    }
    return json.dumps(document, separators=(",", ":")) + "\n"


def run_to_data(run: RunInfo) -> dict[str, Any]:
    """A run's row as the ``run`` object of an export."""
    return {
        "run_id": run.run_id,
        "started_at": utc_text(run.started_at),
        "finished_at": None if run.finished_at is None else utc_text(run.finished_at),
        "status": run.status,
        "endpoint": run.endpoint,
        "model": run.model,
        "scenario": run.scenario,
        "verdict": run.verdict,
        "meta": dict(run.meta),
        "notes": notes_to_data(run.notes),
        "kind": run.kind,
    }


def load_document(text: str) -> RunDocument:
    """Read an export of any known version; raise :class:`UsageError` for anything else."""
    try:
        document = loads(text)
    except ValueError as exc:
        raise UsageError(
            Message("not a latdoc run export: invalid JSON ({exc})", exc=exc)
        ) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else None
        raise UsageError(
            Message(
                "not a latdoc run export: format is {found!r}, expected {expected!r}",
                found=found,
                expected=FORMAT,
            )
        )
    version = document.get("version")
    loader = _LOADERS.get(version) if type(version) is int else None
    if loader is None:
        known = ", ".join(str(v) for v in sorted(_LOADERS))
        raise UsageError(
            Message(
                "latdoc run export version {version!r} is not one this latdoc reads ({known}); a "
                "newer latdoc may read it",
                version=version,
                known=known,
            )
        )
    try:
        return loader(document)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(
            Message(
                "broken latdoc run export (version {version}): {exc}",
                version=version,
                exc=_said(exc),
            )
        ) from None


def _said(exc: Exception) -> str:
    """What went wrong, a missing key said as such (a ``KeyError`` prints only the key)."""
    if type(exc) is KeyError and exc.args:
        return Message("missing {key!r}", key=exc.args[0])
    return message_of(exc)


def _sample(index: int, record: Any) -> Sample:
    try:
        return sample_from_record(record)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"samples[{index}]: {_said(exc)}") from None


def _load_v1(document: Mapping[str, Any]) -> RunDocument:
    run = document["run"]
    samples = tuple(_sample(i, r) for i, r in enumerate(_list(document["samples"], "samples")))
    diagnosis = document["diagnosis"]
    if diagnosis is not None and not isinstance(diagnosis, dict):
        raise ValueError("diagnosis: expected an object or null")
    info = run_from_data(run, diagnosis)
    failed = sum(1 for s in samples if s.trace.error is not None)
    return RunDocument(replace(info, requests=len(samples), failed=failed), samples, diagnosis)


def run_from_data(run: Any, diagnosis: Mapping[str, Any] | None = None) -> RunInfo:
    """The ``run`` object of an export (its counts left at 0); ``ValueError``,
    ``KeyError`` or ``TypeError`` name what is wrong."""
    if not isinstance(run, dict):
        raise ValueError("run: expected an object")
    status = _str(run["status"], "run.status")
    if status not in RUN_STATUSES:
        raise ValueError(f"run.status: {status!r} is not one of {sorted(RUN_STATUSES)}")
    run_id = _str(run["run_id"], "run.run_id")
    if not run_id:
        raise ValueError("run.run_id is empty")
    meta = run["meta"]
    if not isinstance(meta, dict):
        raise ValueError("run.meta: expected an object")
    finished_at = run["finished_at"]
    verdict = run["verdict"]
    return RunInfo(
        run_id=run_id,
        started_at=parse_utc(_str(run["started_at"], "run.started_at")),
        finished_at=None if finished_at is None else parse_utc(_str(finished_at, "finished_at")),
        status=status,
        endpoint=_str(run["endpoint"], "run.endpoint"),
        model=_str(run["model"], "run.model"),
        scenario=_str(run["scenario"], "run.scenario"),
        requests=0,
        failed=0,
        verdict=None if verdict is None else _str(verdict, "run.verdict"),
        meta=meta,
        notes=notes_from_data(run["notes"] if "notes" in run else (diagnosis or {}).get("notes")),
        kind=_kind(run.get("kind", DIAGNOSE_KIND)),
    )


def _kind(value: Any) -> str:
    kind = _str(value, "run.kind")
    if kind not in RUN_KINDS:
        raise ValueError(f"run.kind: {kind!r} is not one of {sorted(RUN_KINDS)}")
    return kind


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected a string, got {value!r}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{where}: expected a list")
    return value


_LOADERS: dict[int, Callable[[Mapping[str, Any]], RunDocument]] = {1: _load_v1}


class Exchange:
    """Whole runs in and out of one store's connection."""

    def __init__(self, connection: Connection, samples: Samples) -> None:
        self._db = connection
        self._samples = samples

    def export_json(self, run_id: str) -> str:
        """The run as one self-describing JSON document (``{"format": "latdoc-run", ...}``)."""
        info, samples, diagnosis = self._samples.load_run(run_id)
        return dump_run(info, samples, diagnosis)

    def import_json(self, text: str) -> str:
        """Add the run in an export document; return its id."""
        with nesting_checked("the run export"):
            document = load_document(text)
            run_id = document.run.run_id
            try:
                with self._db.transaction():
                    if self._db.exists(run_id):
                        raise UsageError(
                            Message(
                                "run {run_id} is already in {path}",
                                run_id=run_id,
                                path=self._db.path,
                            )
                        )
                    self._db.insert_run(document.run, document.run.meta, document.diagnosis)
                    self._db.insert_samples(run_id, document.samples)
            except UnicodeEncodeError:
                # JSON's \ud800 escapes read as lone surrogates, which no store can keep.
                raise UsageError(
                    Message(
                        "not a latdoc run export: it holds text that is not Unicode (a lone "
                        "surrogate); nothing was imported"
                    )
                ) from None
        return run_id

    def import_run(
        self, run: RunInfo, diagnosis: Mapping[str, Any] | None, samples: Iterable[Sample]
    ) -> tuple[str, int]:
        """Add ``run`` and its samples, read as they come (any number, in bounded
        memory), in one transaction: a sample that fails to arrive (its reader raises)
        leaves the store as it was. Return the run's id and the samples added."""
        added = 0
        with self._db.transaction():
            if self._db.exists(run.run_id):
                raise UsageError(
                    Message(
                        "run {run_id} is already in {path}", run_id=run.run_id, path=self._db.path
                    )
                )
            self._db.insert_run(run, run.meta, diagnosis)
            batch: list[Sample] = []
            for sample in samples:
                batch.append(sample)
                if len(batch) >= IMPORT_BATCH:
                    self._db.insert_samples(run.run_id, batch)
                    added += len(batch)
                    batch = []
            self._db.insert_samples(run.run_id, batch)
            added += len(batch)
        return run.run_id, added
