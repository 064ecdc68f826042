"""Every finished trace as Prometheus metrics, served over HTTP: :class:`PrometheusMetrics`.

One histogram per phase of a request, in seconds, and counters of requests and of
errors by kind, each labelled with the endpoint (its URL without credentials, query
or fragment) and the model; the API key is never a label. Names follow Prometheus'
conventions (``_seconds``, ``_total``); where the OpenTelemetry GenAI semantic
conventions define the same measurement, the help text names that metric.

``prometheus-client`` is an optional extra (``pip install 'llm-latency-doctor[metrics]'``);
it is imported when a :class:`PrometheusMetrics` is made, and its absence is a
:class:`~latdoc.errors.UsageError` saying how to install it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.records import RequestTrace

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["INSTALL_HINT", "PHASE_METRICS", "PrometheusMetrics", "endpoint_label"]

INSTALL_HINT = N_(
    "--metrics-port needs prometheus-client: pip install 'llm-latency-doctor[metrics]'"
)

_NETWORK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5)
"""DNS, TCP, TLS and send: a millisecond on loopback to the seed's 200 ms rule and past it."""
_WAIT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
"""Server wait and time to first token: tens of ms to a minute of queueing and prefill."""
_TPOT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.25, 0.5)
"""Time per output token: fast decode (1 ms) to a struggling server (0.5 s)."""
_TOTAL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0)

PHASE_METRICS: tuple[tuple[str, str, tuple[float, ...], Callable[[RequestTrace], Any]], ...] = (
    ("latdoc_dns_seconds", "DNS lookup (curl time_namelookup).", _NETWORK_BUCKETS,
     lambda t: t.dns_ms),
    ("latdoc_connect_seconds", "TCP handshake (curl time_connect minus the lookup).",
     _NETWORK_BUCKETS, lambda t: t.connect_ms),
    ("latdoc_tls_seconds", "TLS handshake (curl time_appconnect minus time_connect).",
     _NETWORK_BUCKETS, lambda t: t.tls_ms),
    ("latdoc_client_delay_seconds", "The client's own delay before the request left "
     "(event-loop lateness; never the server's time).", _NETWORK_BUCKETS,
     lambda t: t.client_delay_ms),
    ("latdoc_send_seconds", "Sending the request body.", _NETWORK_BUCKETS, lambda t: t.send_ms),
    ("latdoc_wait_seconds", "From the request sent to the first response byte (server time).",
     _WAIT_BUCKETS, lambda t: t.wait_ms),
    ("latdoc_ttft_seconds", "Time to first token from the start of the request; "
     "OpenTelemetry GenAI: gen_ai.client.operation.time_to_first_chunk.",
     _WAIT_BUCKETS, lambda t: t.ttft_ms),
    ("latdoc_server_ttft_seconds", "Time to first token from the request reaching the wire: "
     "the server's time, without the client's own delay.", _WAIT_BUCKETS,
     lambda t: t.server_ttft_ms),
    ("latdoc_tpot_seconds", "Time per output token after the first; "
     "OpenTelemetry GenAI: gen_ai.client.operation.time_per_output_chunk.",
     _TPOT_BUCKETS, lambda t: t.tpot_ms),
    ("latdoc_request_duration_seconds", "Whole request, to the last byte; "
     "OpenTelemetry GenAI: gen_ai.client.operation.duration.",
     _TOTAL_BUCKETS, lambda t: t.total_ms),
)  # fmt: skip
"""Name, help, buckets (seconds) and the trace's value in ms, for each phase histogram."""


def endpoint_label(url: str) -> str:
    """The URL as a label: scheme, host, port and path; no user, password, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class PrometheusMetrics:
    """Histograms and counters of traces on a registry of their own; ``start`` serves them.

    ``observe`` is cheap (no trace is kept) and may be called from any thread.
    """

    def __init__(self) -> None:
        try:
            import prometheus_client as prom
        except ImportError:
            raise UsageError(INSTALL_HINT) from None
        self.registry: CollectorRegistry = prom.CollectorRegistry(auto_describe=True)
        labels = ("endpoint", "model")
        self._histograms: list[tuple[Histogram, Callable[[RequestTrace], Any]]] = [
            (
                prom.Histogram(name, doc, labels, buckets=buckets, registry=self.registry, unit=""),
                value,
            )
            for name, doc, buckets, value in PHASE_METRICS
        ]
        self._requests: Counter = prom.Counter(
            "latdoc_requests", "Requests finished, failed or not.", labels, registry=self.registry
        )
        self._errors: Counter = prom.Counter(
            "latdoc_errors",
            "Failed requests by kind (dns, connect, tls, timeout, http, protocol ...) and phase.",
            (*labels, "kind", "phase"),
            registry=self.registry,
        )
        self._server: Any = None
        self._thread: Any = None

    def observe(self, trace: RequestTrace) -> None:
        endpoint, model = endpoint_label(trace.url), trace.model
        self._requests.labels(endpoint, model).inc()
        if trace.error is not None:
            error = trace.error
            self._errors.labels(endpoint, model, str(error.kind), str(error.phase)).inc()
        for histogram, value in self._histograms:
            ms = value(trace)
            if ms is not None:
                histogram.labels(endpoint, model).observe(ms / 1000)

    def start(self, port: int, addr: str = "127.0.0.1") -> int:
        """Serve ``/metrics`` on ``addr:port`` (0: a free port) in a thread; return the port."""
        import prometheus_client as prom

        try:
            self._server, self._thread = prom.start_http_server(
                port, addr=addr, registry=self.registry
            )
        except OSError as exc:
            raise UsageError(
                Message(
                    "--metrics-port {port}: cannot listen: {strerror}",
                    port=port,
                    strerror=exc.strerror,
                )
            ) from None
        return int(self._server.server_port)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
