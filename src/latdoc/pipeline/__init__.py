"""What the command line and library users call: measure, keep, diagnose, compare, verify.

- :func:`diagnose_endpoint` runs the three measured steps against an endpoint,
  keeps every sample in the :class:`~latdoc.store.Store` as it finishes, and
  diagnoses them, also when the run is interrupted; :func:`rediagnose` diagnoses
  a stored run again, sending nothing; :func:`diagnose_traffic` diagnoses an
  application's recorded traffic (``latdoc.instrument``) and :func:`diagnose_otlp`
  the GenAI spans of an OTLP JSON file; :func:`build_diagnosis` is the pure part.
- :func:`probe_endpoint` sends a series of probes and keeps them as a run;
  :func:`compare_runs` compares two stored runs like with like, sending nothing.
- :func:`read_host` reads the client host's facts for the checklist of
  ``latdoc system``; :func:`host_meta` is what every run records about its host.
- :func:`load_endpoint` runs a load sweep and keeps it as a run, from this process or
  from :class:`Workers` (local processes or Ray actors) merged into one run;
  :func:`reload_load` analyses a stored sweep again.
- :func:`probe_vantages` and :func:`diagnose_vantages` measure from Ray nodes labelled
  as vantage points, keep a run per vantage and compare them (:class:`VantageRuns`).
- :func:`verify_remedy` measures one remedy as an A/B experiment on the endpoint.
- :func:`watch_endpoint` runs or resumes a named watch; :func:`watch_clock` reads it
  back by the clock (the peak against the rest), sending nothing.

Progress and each finished sample reach the caller through hooks; nothing here
prints.
"""

from latdoc.pipeline._conversation import ConversationVerdict, verify_conversation
from latdoc.pipeline._diagnose import (
    DEFAULT_CONCURRENCY,
    DiagnosisRun,
    build_diagnosis,
    diagnose_endpoint,
    rediagnose,
    run_context,
    run_diagnosis,
    run_meta,
)
from latdoc.pipeline._host import (
    PROC_SYS,
    TCP_SYSCTLS,
    cpu_count,
    host_facts_from_meta,
    host_meta,
    read_host,
    tcp_settings,
)
from latdoc.pipeline._load import (
    MAX_REMOTE_STREAMS,
    LoadRun,
    Workers,
    check_load_target,
    is_loopback,
    load_endpoint,
    reload_load,
)
from latdoc.pipeline._retry import RetryVerdict, verify_retry
from latdoc.pipeline._runs import RunComparison, StoredProbe, compare_runs, probe_endpoint
from latdoc.pipeline._server_metrics import metrics_target, named_metrics_url
from latdoc.pipeline._traffic import diagnose_otlp, diagnose_traffic
from latdoc.pipeline._vantage import VantageRuns, diagnose_vantages, probe_vantages
from latdoc.pipeline._verify import NOT_APPLICABLE, VerifyResult, verify_remedy
from latdoc.pipeline._watch import WatchClock, WatchRun, latest_watch, watch_clock, watch_endpoint

__all__ = [
    "DEFAULT_CONCURRENCY",
    "MAX_REMOTE_STREAMS",
    "NOT_APPLICABLE",
    "PROC_SYS",
    "TCP_SYSCTLS",
    "ConversationVerdict",
    "DiagnosisRun",
    "LoadRun",
    "RetryVerdict",
    "RunComparison",
    "StoredProbe",
    "VantageRuns",
    "VerifyResult",
    "WatchClock",
    "WatchRun",
    "Workers",
    "build_diagnosis",
    "check_load_target",
    "compare_runs",
    "cpu_count",
    "diagnose_endpoint",
    "diagnose_otlp",
    "diagnose_traffic",
    "diagnose_vantages",
    "host_facts_from_meta",
    "host_meta",
    "is_loopback",
    "latest_watch",
    "load_endpoint",
    "metrics_target",
    "named_metrics_url",
    "probe_endpoint",
    "probe_vantages",
    "read_host",
    "rediagnose",
    "reload_load",
    "run_context",
    "run_diagnosis",
    "run_meta",
    "tcp_settings",
    "verify_conversation",
    "verify_remedy",
    "verify_retry",
    "watch_clock",
    "watch_endpoint",
]
