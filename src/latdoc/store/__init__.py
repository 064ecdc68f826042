"""Keep every trace of a diagnosis run, so it can be listed and re-rendered later.

A run's ``kind`` says what made it: ``diagnose``, ``probe``, ``verify`` (one arm of
an experiment) or ``instrument`` (an application's own requests, recorded by
``latdoc.instrument`` or read from OTLP spans, each a sample of step ``traffic``).
The kind is a column, not part of the schema version: a new kind needs no migration.

:class:`Store` is the SQLite file (:func:`default_path`), in parts a caller can
reach alone: ``store.runs`` (:mod:`.runs`), ``store.samples`` (:mod:`.samples`),
``store.exchange`` and ``store.queries``; :mod:`.codec` turns
traces and samples into lossless, versioned JSON records, :mod:`.diagnosis_codec` a
diagnosis into the ``latdoc.diagnosis/2`` document a run keeps and back; :mod:`.rows` stores
each sample as a narrow summary row beside its record, which :mod:`.aggregate`
summarises per time bucket (:class:`BucketStats`) without reading a record;
:class:`SampleWriter` batches the commits of a busy writer; :mod:`.exchange`
writes and reads a whole run as one document; :mod:`.redact` keeps credentials
out of all of it.
"""

from latdoc.store.aggregate import BucketStats
from latdoc.store.codec import (
    sample_from_record,
    sample_to_record,
    trace_from_record,
    trace_to_record,
)
from latdoc.store.db import BUSY_TIMEOUT_MS, SCHEMA_VERSION, Store, default_path
from latdoc.store.diagnosis_codec import diagnosis_from_record, diagnosis_to_record
from latdoc.store.redact import redact_url
from latdoc.store.run import (
    DIAGNOSE_KIND,
    INSTRUMENT_KIND,
    LOAD_KIND,
    PROBE_KIND,
    RUN_KINDS,
    VERIFY_KIND,
    WATCH_KIND,
    RunInfo,
)
from latdoc.store.runs import RunFilter, RunProgress
from latdoc.store.writer import SampleWriter

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DIAGNOSE_KIND",
    "INSTRUMENT_KIND",
    "LOAD_KIND",
    "PROBE_KIND",
    "RUN_KINDS",
    "SCHEMA_VERSION",
    "VERIFY_KIND",
    "WATCH_KIND",
    "BucketStats",
    "RunFilter",
    "RunInfo",
    "RunProgress",
    "SampleWriter",
    "Store",
    "default_path",
    "diagnosis_from_record",
    "diagnosis_to_record",
    "redact_url",
    "sample_from_record",
    "sample_to_record",
    "trace_from_record",
    "trace_to_record",
]
