"""The diagnosis core's runs: measure, keep, diagnose, compare.

- :func:`diagnose_endpoint` runs the three measured steps against an endpoint,
  keeps every sample in the :class:`~latdoc.store.Store` as it finishes, and
  diagnoses them, also when the run is interrupted; :func:`rediagnose` diagnoses
  a stored run again, sending nothing; :func:`diagnose_traffic` diagnoses an
  application's recorded traffic (``latdoc.instrument``) and :func:`diagnose_otlp`
  the GenAI spans of an OTLP JSON file; :func:`build_diagnosis` is the pure part;
  :func:`measure_steps` only measures.
- :func:`send_probes` sends a series of probes, each request a sample as it finishes,
  for a probe run and a vantage point's probes alike.
- :func:`host_meta` is what every run records about its host, read by
  :func:`cpu_count`, :func:`tcp_settings` and the readers beside them, which
  ``latdoc system`` reads its checklist's facts with too.
- :func:`watch_note` is what the newest watch of an endpoint tells a diagnosis, from
  the verdict by hour of day the watch keeps (:func:`keep_hourly_verdict`).

The commands' features (load, watch, vantage points, verify) are in
:mod:`latdoc.features`, above this package.

Progress and each finished sample reach the caller through hooks; nothing here
prints.
"""

from latdoc.pipeline._clock import (
    HOURLY_VERDICT,
    WATCH_KIND,
    keep_hourly_verdict,
    latest_watch,
    watch_note,
)
from latdoc.pipeline._diagnose import (
    DiagnosisRun,
    build_diagnosis,
    diagnose_endpoint,
    measure_steps,
    rediagnose,
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
from latdoc.pipeline._probes import probe_options, send_probes
from latdoc.pipeline._server_metrics import metrics_target, named_metrics_url
from latdoc.pipeline._traffic import diagnose_otlp, diagnose_traffic

__all__ = [
    "HOURLY_VERDICT",
    "PROC_SYS",
    "TCP_SYSCTLS",
    "WATCH_KIND",
    "DiagnosisRun",
    "build_diagnosis",
    "congestion_control",
    "cpu_count",
    "diagnose_endpoint",
    "diagnose_otlp",
    "diagnose_traffic",
    "h2_version",
    "has_tls13",
    "host_facts_from_meta",
    "host_meta",
    "keep_hourly_verdict",
    "latest_watch",
    "measure_steps",
    "metrics_target",
    "named_metrics_url",
    "open_files",
    "openssl_version",
    "port_range",
    "probe_options",
    "rediagnose",
    "run_context",
    "run_diagnosis",
    "run_meta",
    "send_probes",
    "tcp_settings",
    "watch_note",
]
