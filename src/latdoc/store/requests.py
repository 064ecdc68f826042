"""Every request of a run as one row, for a team's own analysis: ``latdoc export``, and
``latdoc import`` of latdoc's own JSON Lines back into a store.

The table is schema ``latdoc-requests``, version :data:`VERSION`; every row of every
format carries both (the ``schema`` and ``version`` columns). One row per request:
the conditions it was sent under (step, level, worker, prompt length asked), its
ids and wall-clock start, its outcome, every phase in ms, the server's own timing as
latdoc reads it, its tokens, and what it cost at the price the run kept (version 2;
version 1 exports, without it, are read too). :data:`COLUMNS` is the one list of them.

Formats, all written as rows are read from the store, a batch at a time, so a run
of any size exports in bounded memory:

- ``jsonl``: a first line with the run (``{"schema": ..., "version": ..., "kind":
  "run", "run": {...}, "diagnosis": ...}``), then a line per request with its
  columns and its whole sample ``record``, so :func:`read_jsonl` restores the run
  with nothing lost;
- ``csv``: a header row, then the columns of each request;
- ``parquet`` (``pip install 'llm-latency-doctor[parquet]'``, through pyarrow):
  the columns, typed, with the schema and version also in the file's metadata.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from latdoc.analysis.servertime import server_timing_of
from latdoc.errors import UsageError, message_of, nesting_checked
from latdoc.i18n import N_, Message
from latdoc.model import Price, cost_of
from latdoc.records import Sample
from latdoc.store._fields import loads
from latdoc.store.codec import sample_from_record, sample_to_record
from latdoc.store.exchange import run_from_data, run_to_data
from latdoc.store.run import RunInfo

SCHEMA = "latdoc-requests"
VERSION = 2
READS = (1, 2)
"""The versions :func:`read_jsonl` reads: 2 added ``cost_usd``."""
FORMATS = ("jsonl", "csv", "parquet")
BATCH = 10_000
"""Rows held at once while writing Parquet, each batch a row group (the other formats
write each row): fewer row groups keep the file's footer, held until the end, small."""


@dataclass(frozen=True, slots=True)
class RowRun:
    """What a row reads of its run: its id, and the price it kept (``None``: none)."""

    run_id: str
    price: Price | None = None

    @classmethod
    def of(cls, run: RunInfo) -> RowRun:
        return cls(run.run_id, run.price)


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: str
    """``int``, ``float``, ``bool`` or ``str``."""
    value: Callable[[RowRun, Sample], Any]
    doc: str


def _t(attr: str) -> Callable[[RowRun, Sample], Any]:
    return lambda _run, s: getattr(s.trace, attr)


def _cost(run: RowRun, s: Sample) -> float | None:
    cost = None if run.price is None else cost_of(s.trace, run.price)
    return None if cost is None else cost.total


def _server(attr: str) -> Callable[[RowRun, Sample], Any]:
    def read(_run: RowRun, s: Sample) -> Any:
        timing = server_timing_of(s.trace)
        return None if timing is None else getattr(timing, attr)

    return read


def _error(attr: str) -> Callable[[RowRun, Sample], Any]:
    def read(_run: RowRun, s: Sample) -> Any:
        error = s.trace.error
        if error is None:
            return None
        value = getattr(error, attr)
        return value if attr in ("message", "status") else str(value)

    return read


def _phase(name: str) -> Column:
    return Column(name, "float", _t(name), f"RequestTrace.{name}")


COLUMNS: tuple[Column, ...] = (
    Column("schema", "str", lambda _r, _s: SCHEMA, "always latdoc-requests"),
    Column("version", "int", lambda _r, _s: VERSION, "the schema's version"),
    Column("run_id", "str", lambda run, _s: run.run_id, "the run"),
    Column("index", "int", lambda _r, s: s.index, "order within the run"),
    Column("step", "str", lambda _r, s: str(s.step), "the step that sent it"),
    Column("concurrency", "int", lambda _r, s: s.concurrency, "requests in flight (the level)"),
    Column("target_prompt_tokens", "int", lambda _r, s: s.target_prompt_tokens, "length asked"),
    Column("cold", "bool", lambda _r, s: s.cold, "sent on a new connection on purpose"),
    Column("worker", "int", lambda _r, s: s.worker, "the load worker that sent it"),
    Column("attempt", "int", _t("attempt"), "1, or the retry's number"),
    Column("request_id", "str", _t("request_id"), "X-Request-ID sent"),
    Column("response_id", "str", _t("response_id"), "the response's own id"),
    Column("started_at", "str", lambda _r, s: s.trace.started_at.isoformat(), "wall clock, UTC"),
    Column("started_ns", "int", _t("started_ns"), "wall clock, ns since the epoch"),
    Column("model", "str", _t("model"), "model asked for"),
    Column("dialect", "str", _t("dialect"), "API dialect"),
    Column("ok", "bool", lambda _r, s: s.trace.error is None, "no error"),
    Column("error_kind", "str", _error("kind"), "what went wrong"),
    Column("error_phase", "str", _error("phase"), "in which phase"),
    Column("error_status", "int", _error("status"), "HTTP status of the error"),
    Column("error_message", "str", _error("message"), "the error's message"),
    Column("status", "int", _t("status"), "HTTP status"),
    Column("http_version", "str", _t("http_version"), "HTTP/1.1 or HTTP/2"),
    Column("remote_ip", "str", _t("remote_ip"), "address connected to"),
    Column("connection_id", "int", _t("connection_id"), "connection, within the process"),
    Column("new_connection", "bool", _t("new_connection"), "opened for this request"),
    Column("proxy", "str", _t("proxy"), "the proxy it went through, credentials masked"),
    Column("tls_resumed", "bool", _t("tls_resumed"), "its TLS session was resumed"),
    *(
        _phase(name)
        for name in (
            "queue_ms",
            "client_delay_ms",
            "dns_ms",
            "connect_ms",
            "proxy_connect_ms",
            "tls_ms",
            "setup_ms",
            "send_ms",
            "wait_ms",
            "ttfb_ms",
            "first_event_ms",
            "ttft_ms",
            "server_ttft_ms",
            "ttfr_ms",
            "ttfa_ms",
            "first_tool_call_ms",
            "reasoning_ms",
            "tpot_ms",
            "stream_ms",
            "total_ms",
            "rtt_ms",
        )
    ),
    Column("loop_lag_ms", "float", lambda _r, s: s.loop_lag_ms, "the client's worst loop lag"),
    Column("server_queue_ms", "float", _server("queue_ms"), "the server's own queue time"),
    Column("server_prefill_ms", "float", _server("prefill_ms"), "the server's own prefill"),
    Column("server_decode_ms", "float", _server("decode_ms"), "the server's own decode"),
    Column("server_processing_ms", "float", _server("processing_ms"), "the provider's total"),
    Column("gateway_ms", "float", _server("gateway_ms"), "what a gateway says it added"),
    Column("server_timing_source", "str", _server("source"), "where the server timing came from"),
    Column("prompt_tokens", "int", _t("prompt_tokens"), "as the endpoint counted"),
    Column("prompt_chars", "int", _t("prompt_chars"), "characters of the prompt sent"),
    Column("prompt_tokens_estimated", "int", _t("prompt_tokens_estimated"), "from its chars"),
    Column("cached_prompt_tokens", "int", _t("cached_prompt_tokens"), "served from a cache"),
    Column("output_tokens", "int", _t("output_tokens"), "output tokens"),
    Column("reasoning_tokens", "int", _t("reasoning_tokens"), "reasoning tokens"),
    Column("chunks", "int", lambda _r, s: len(s.trace.chunks), "streamed chunks with output"),
    Column("request_bytes", "int", _t("request_bytes"), "request body size"),
    Column("response_bytes", "int", _t("response_bytes"), "response body size"),
    Column("finish_reason", "str", _t("finish_reason"), "why generation stopped"),
    Column("cost_usd", "float", _cost, "dollars at the run's price, from the reported usage"),
)
"""Every column, in order."""


def row(run: RowRun, sample: Sample) -> dict[str, Any]:
    """One request's columns."""
    return {c.name: c.value(run, sample) for c in COLUMNS}


# -- writing -------------------------------------------------------------------


def write(
    fmt: str,
    run: RunInfo,
    diagnosis: Mapping[str, Any] | None,
    samples: Iterable[Sample],
    out: IO[str] | Path,
) -> int:
    """Write the run's requests in ``fmt`` to ``out`` (a text stream, or a path for
    Parquet); return the rows written."""
    if fmt == "jsonl":
        return _write_jsonl(run, diagnosis, samples, _text(out))
    if fmt == "csv":
        return _write_csv(run, samples, _text(out))
    if fmt == "parquet":
        if not isinstance(out, Path):
            raise UsageError(N_("--format parquet writes a file: give --output FILE"))
        return _write_parquet(run, samples, out)
    raise UsageError(
        Message("--format {fmt}: use one of {formats}", fmt=fmt, formats=", ".join(FORMATS))
    )


def _text(out: IO[str] | Path) -> IO[str]:
    if isinstance(out, Path):
        raise TypeError("a text stream is needed")
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _write_jsonl(
    run: RunInfo, diagnosis: Mapping[str, Any] | None, samples: Iterable[Sample], out: IO[str]
) -> int:
    head = {"schema": SCHEMA, "version": VERSION, "kind": "run", "run": run_to_data(run)}
    head["diagnosis"] = None if diagnosis is None else dict(diagnosis)
    of = RowRun.of(run)
    out.write(_dumps(head) + "\n")
    n = 0
    for sample in samples:
        line = {"kind": "request", **row(of, sample), "record": sample_to_record(sample)}
        out.write(_dumps(line) + "\n")
        n += 1
    return n


def _write_csv(run: RunInfo, samples: Iterable[Sample], out: IO[str]) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in COLUMNS])
    of = RowRun.of(run)
    n = 0
    for sample in samples:
        writer.writerow(["" if v is None else v for v in row(of, sample).values()])
        n += 1
    return n


def _write_parquet(run: RunInfo, samples: Iterable[Sample], path: Path) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError(
            N_("--format parquet needs pyarrow: pip install 'llm-latency-doctor[parquet]'")
        ) from None
    types = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}
    schema = pa.schema(
        [pa.field(c.name, types[c.kind]) for c in COLUMNS],
        metadata={"schema": SCHEMA, "version": str(VERSION)},
    )
    n, of = 0, RowRun.of(run)
    with pq.ParquetWriter(path, schema) as writer:
        batch: list[dict[str, Any]] = []
        for sample in samples:
            batch.append(row(of, sample))
            if len(batch) >= BATCH:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                n += len(batch)
                batch = []
        if batch or n == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            n += len(batch)
    return n


# -- reading latdoc's own JSON Lines back ----------------------------------------


@dataclass(frozen=True)
class JsonlRun:
    """The first line of an export, and a reader of its requests (read once, lazily)."""

    run: RunInfo
    diagnosis: Mapping[str, Any] | None
    samples: Iterator[Sample]


def open_text(path: Path) -> IO[str]:
    """A file to read as UTF-8 text, gunzipped when it is gzip."""
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise UsageError(
            Message("cannot read {path}: {strerror}", path=path, strerror=exc.strerror)
        ) from None
    magic = raw.peek(2)[:2] if isinstance(raw, io.BufferedReader) else b""
    stream: Any = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw
    return io.TextIOWrapper(stream, encoding="utf-8-sig")


def read_jsonl(lines: IO[str], source: str) -> JsonlRun:
    """The run of a ``jsonl`` export; each request is read as it is asked for, and a
    broken line is a :class:`UsageError` naming the file and the line."""
    first = _line(lines, source, 1)
    if first is None:
        raise UsageError(Message("{source}: empty, not a latdoc requests export", source=source))
    head = _object(first, source, 1)
    _check_schema(head, source, 1)
    if head.get("kind") != "run" or not isinstance(head.get("run"), dict):
        raise UsageError(
            Message("{source}:1: the first line is not the run (kind 'run')", source=source)
        )
    try:
        diagnosis = head.get("diagnosis")
        if diagnosis is not None and not isinstance(diagnosis, dict):
            raise ValueError("diagnosis: expected an object or null")
        run = run_from_data(head["run"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(Message("{source}:1: {exc}", source=source, exc=_said(exc))) from None
    return JsonlRun(run, diagnosis, _samples(lines, source))


def _samples(lines: IO[str], source: str) -> Iterator[Sample]:
    number = 1
    while True:
        number += 1
        text = _line(lines, source, number)
        if text is None:
            return
        if not text.strip():
            continue
        obj = _object(text, source, number)
        _check_schema(obj, source, number)
        if obj.get("kind") != "request":
            raise UsageError(
                Message(
                    "{source}:{number}: expected a request line (kind 'request')",
                    source=source,
                    number=number,
                )
            )
        try:
            yield sample_from_record(obj["record"])
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(
                Message(
                    "{source}:{number}: record: {exc}", source=source, number=number, exc=_said(exc)
                )
            ) from None


def _line(lines: IO[str], source: str, number: int) -> str | None:
    try:
        text = lines.readline()
    except (UnicodeDecodeError, OSError, EOFError) as exc:
        raise UsageError(
            Message(
                "{source}:{number}: cannot be read: {exc}", source=source, number=number, exc=exc
            )
        ) from None
    return text or None


def _object(text: str, source: str, number: int) -> dict[str, Any]:
    try:
        with nesting_checked(f"{source}:{number}"):
            obj = loads(text)
    except ValueError as exc:
        raise UsageError(
            Message(
                "{source}:{number}: invalid JSON ({exc})", source=source, number=number, exc=exc
            )
        ) from None
    if not isinstance(obj, dict):
        raise UsageError(
            Message("{source}:{number}: expected a JSON object", source=source, number=number)
        )
    return obj


def _check_schema(obj: Mapping[str, Any], source: str, number: int) -> None:
    if obj.get("schema") != SCHEMA:
        raise UsageError(
            Message(
                "{source}:{number}: schema is {found!r}, expected {expected!r} (latdoc import "
                "reads what latdoc export --format jsonl writes)",
                source=source,
                number=number,
                found=obj.get("schema"),
                expected=SCHEMA,
            )
        )
    if obj.get("version") not in READS:
        raise UsageError(
            Message(
                "{source}:{number}: {schema} version {version!r} is not one this latdoc reads "
                "({versions}); a newer latdoc may read it",
                source=source,
                number=number,
                schema=SCHEMA,
                version=obj.get("version"),
                versions=", ".join(map(str, READS)),
            )
        )


def _said(exc: Exception) -> str:
    if type(exc) is KeyError and exc.args:
        return Message("missing {key!r}", key=exc.args[0])
    return message_of(exc)
