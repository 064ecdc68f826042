"""An engine's own metrics, read before and after a run and kept with it.

The page is ``/metrics`` on the endpoint's host unless the user names another
(``--server-metrics URL``) or turns it off (``off``). What could not be read is a
one-line note of the run, never an error: most hosted APIs serve no metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from latdoc.analysis.engine_metrics import engine_delta, parse_exposition
from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.probe import ConnectionOptions, metrics_url, scrape_metrics

__all__ = [
    "AUTO",
    "OFF",
    "MetricsReading",
    "metrics_from_meta",
    "metrics_target",
    "named_metrics_url",
]

AUTO = "auto"
"""``/metrics`` on the endpoint's own host."""
OFF = "off"

_HINT = "pip install 'llm-latency-doctor[metrics]'"


def metrics_target(option: str | None, base_url: str) -> str | None:
    """The URL to read, or ``None`` when turned off; a bad URL is a usage error."""
    if option == AUTO:
        return metrics_url(base_url)
    return named_metrics_url(option)


def named_metrics_url(option: str | None) -> str | None:
    """The URL ``--server-metrics`` names itself, ``None`` for ``auto`` or ``off``; a bad
    URL is a usage error (checked before anything is sent or started)."""
    if option is None or option in (OFF, AUTO):
        return None
    parts = urlsplit(option)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            Message(
                "--server-metrics {option!r}: expected http(s)://host[:port]/metrics, or off",
                option=option,
            )
        )
    return option


class MetricsReading:
    """The page read once before a run; :meth:`finish` reads it again and says what changed."""

    def __init__(self, url: str, connection: ConnectionOptions) -> None:
        self.url = url
        self.connection = connection
        self.note: str | None = None
        self.before = self._read()

    def _read(self) -> dict[str, float] | None:
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            self.note = Message(
                "server metrics not read: prometheus-client is missing ({hint})", hint=_HINT
            )
            return None
        text, why = scrape_metrics(
            self.url, cacert=self.connection.cacert, insecure=self.connection.insecure
        )
        if text is None:
            self.note = Message(
                "server metrics not read at {url} ({why})", url=self.url, why=str(why)
            )
            return None
        try:
            return parse_exposition(text)
        except ValueError:
            self.note = Message(
                "server metrics not read: {url} is not in the Prometheus text format", url=self.url
            )
            return None

    def finish(self) -> dict[str, Any] | None:
        """The run's record (``url``, ``engine``, ``numbers``), or ``None`` with :attr:`note`."""
        if self.before is None:
            return None
        after = self._read()
        if after is None:
            return None
        found = engine_delta(self.before, after)
        if found is None:
            self.note = Message(
                "server metrics at {url} are not llama.cpp's or vLLM's: not used", url=self.url
            )
            return None
        engine, numbers = found
        return {"url": self.url, "engine": engine, "numbers": numbers}


def metrics_from_meta(
    meta: Mapping[str, Any],
) -> tuple[dict[str, float | None], str | None]:
    """The run's engine metrics and where they were read, from its stored metadata."""
    record = meta.get("server_metrics")
    if not isinstance(record, Mapping) or not isinstance(record.get("numbers"), Mapping):
        return {}, None
    numbers = {str(k): None if v is None else float(v) for k, v in dict(record["numbers"]).items()}
    return numbers, f"{record.get('engine')} /metrics at {record.get('url')}"
