"""The core the commands' features share: the three steps measured and diagnosed, what
a run records about its host and itself, the engine's metrics page, Ray.

- :func:`measure_steps` measures the network, input-length and load steps;
  :func:`build_diagnosis` is the pure diagnosis of a run's samples;
  :func:`run_meta` is what a run records about itself and :func:`run_context` what the
  analysis reads back from it;
- :func:`send_probes` sends a series of probes, each request a sample as it finishes,
  for a probe run and a vantage point's probes alike;
- :func:`metrics_target` and :class:`MetricsReading`: the engine's Prometheus page a
  run reads before and after it sends;
- :func:`host_meta` is what every run records about its host, read by
  :func:`cpu_count`, :func:`tcp_settings` and the readers beside them, which
  ``latdoc system`` reads its checklist's facts with too.
- :func:`listen_on` and :func:`http_address`: the listening socket of a command that
  serves (``serve``, ``record``), bound before its server starts.
- :func:`watch_note` is what the newest watch of an endpoint tells a diagnosis, from
  the verdict by hour of day the watch keeps (:func:`keep_hourly_verdict`).
- Ray, joined only when ``--ray`` is used: :func:`connect` to a cluster,
  :func:`run_at_vantages` to measure on the nodes labelled as vantage points, and
  :func:`first_line` to say a remote error in one line.

The commands' features (diagnose, probe, compare, system, load, watch, vantage points,
verify) are in :mod:`latdoc.features`, above this package.

Progress and each finished sample reach the caller through hooks; nothing here
prints.
"""

from latdoc.pipeline._clock import (
    HOURLY_VERDICT,
    keep_hourly_verdict,
    latest_watch,
    watch_note,
)
from latdoc.pipeline._diagnose import (
    build_diagnosis,
    measure_steps,
    run_context,
    run_diagnosis,
    run_meta,
)
from latdoc.pipeline._host import (
    PROC_SYS,
    TCP_SYSCTLS,
    congestion_control,
    cpu_count,
    h2_version,
    has_tls13,
    host_facts_from_meta,
    host_meta,
    open_files,
    openssl_version,
    port_range,
    tcp_settings,
)
from latdoc.pipeline._listen import http_address, listen_on
from latdoc.pipeline._probes import probe_options, send_probes
from latdoc.pipeline._ray import connect, first_line, run_at_vantages
from latdoc.pipeline._server_metrics import (
    AUTO,
    MetricsReading,
    metrics_target,
    named_metrics_url,
)
from latdoc.store import WATCH_KIND

__all__ = [
    "AUTO",
    "HOURLY_VERDICT",
    "PROC_SYS",
    "TCP_SYSCTLS",
    "WATCH_KIND",
    "MetricsReading",
    "build_diagnosis",
    "congestion_control",
    "connect",
    "cpu_count",
    "first_line",
    "h2_version",
    "has_tls13",
    "host_facts_from_meta",
    "host_meta",
    "http_address",
    "keep_hourly_verdict",
    "latest_watch",
    "listen_on",
    "measure_steps",
    "metrics_target",
    "named_metrics_url",
    "open_files",
    "openssl_version",
    "port_range",
    "probe_options",
    "run_at_vantages",
    "run_context",
    "run_diagnosis",
    "run_meta",
    "send_probes",
    "tcp_settings",
    "watch_note",
]
