"""latdoc: which kind of slow is your LLM API call?

Time every phase of a real streaming request (DNS, TCP, TLS, send, server wait,
first token, every chunk) into one :class:`RequestTrace` record. The verbs:

- :func:`diagnose_endpoint` measures, keeps and diagnoses an endpoint into a
  :class:`Diagnosis` (the kind of slow, its evidence and the ranked remedies);
  :func:`rediagnose` diagnoses a stored run again; :func:`diagnose_traffic` and
  :func:`diagnose_otlp` diagnose an application's own requests, recorded by
  :func:`instrument` or as OpenTelemetry spans; :func:`measure_steps` only measures.
- :func:`verify_remedy` measures one remedy as an A/B experiment on the endpoint.
- :func:`compare_runs` compares two stored runs like with like.
- :func:`load_endpoint` sweeps concurrency or arrival rates; :func:`watch_endpoint`
  measures on a schedule and :func:`watch_clock` reads a watch back by the clock.
- :func:`probe_endpoint` and :func:`run_probe` time single requests.

The renderers are pure: :func:`render_diagnosis`, :func:`render_comparison`,
:func:`render_load`, :func:`render_summary` and :func:`render_waterfall` return
terminal renderables (:func:`render_text` makes them text), :func:`render_html` and its
siblings return pages, and :func:`diagnosis_to_dict` and its siblings JSON documents.

The remedies in production code are :mod:`latdoc.client`: :func:`make_client` and
:func:`make_async_client` (tuned httpx clients for the openai SDK, with a
:class:`RetryPolicy` and :class:`PhaseTimeouts`) and :func:`trim_messages`,
:func:`summarize_history` and :class:`ResetPolicy` for long conversations.
:func:`checklist` of :func:`read_host` is the client host as ``latdoc system``
shows it.

Importing ``latdoc`` imports none of these: each name is imported from the module
it lives in (``_EXPORTS``) the first time it is used, so the libraries behind a
diagnosis (numpy, scipy, httpx, rich, jinja2, matplotlib) load only when needed.
"""

from __future__ import annotations

from latdoc._version import __version__

TYPE_CHECKING = False
"""``typing.TYPE_CHECKING``, without importing typing, which ``import latdoc`` does not need."""
if TYPE_CHECKING:
    from latdoc.advice.system import checklist
    from latdoc.analysis.stats import Distribution
    from latdoc.client import (
        FailureClass,
        FirstTokenTimeout,
        Instrumentation,
        PhaseTimeouts,
        ResetPolicy,
        RetryBudget,
        RetryDecision,
        RetryPolicy,
        StreamStalled,
        StreamTruncated,
        TcpKeepalive,
        TokenEstimate,
        TotalTimeout,
        asummarize_history,
        instrument,
        make_async_client,
        make_client,
        pool_size,
        summarize_history,
        summary_prompt,
        trim_messages,
    )
    from latdoc.errors import (
        CalibrationError,
        ClientError,
        ClientStreamError,
        ClientTimeout,
        ContextTooLong,
        ErrorKind,
        LabError,
        LatdocError,
        Phase,
        PolicyError,
        RequestFailed,
        SSEError,
        TraceError,
        UsageError,
    )
    from latdoc.features.compare import RunComparison, compare_runs
    from latdoc.features.diagnose import (
        DiagnosisRun,
        diagnose_endpoint,
        diagnose_otlp,
        diagnose_traffic,
        rediagnose,
    )
    from latdoc.features.load import (
        LoadPlan,
        LoadRun,
        Slo,
        Workers,
        load_endpoint,
        load_to_dict,
        reload_load,
        render_load,
        render_load_html,
    )
    from latdoc.features.probe import StoredProbe, probe_endpoint
    from latdoc.features.system import read_host
    from latdoc.features.verify import VerifyPlan, VerifyRemedy, VerifyResult, verify_remedy
    from latdoc.features.watch import WatchClock, WatchPlan, WatchRun, watch_clock, watch_endpoint
    from latdoc.model import (
        Diagnosis,
        Finding,
        HostFacts,
        Kind,
        Priorities,
        Remedy,
        RunContext,
        Scenario,
        SystemItem,
        Verdict,
        parse_priorities,
    )
    from latdoc.pipeline import (
        build_diagnosis,
        measure_steps,
        run_diagnosis,
    )
    from latdoc.probe import ConnectionOptions, Dialect, Endpoint, ProbeSession, Timeouts
    from latdoc.records import Chunk, RequestTrace, Sample, Step
    from latdoc.reference import ReferenceProfile, healthy_reference, load_reference
    from latdoc.report import (
        comparison_to_dict,
        diagnosis_to_dict,
        make_console,
        render_comparison,
        render_comparison_html,
        render_diagnosis,
        render_html,
        render_summary,
        render_text,
        render_waterfall,
        trace_to_dict,
    )
    from latdoc.store import Store
    from latdoc.workload import Budget, DiagnosisPlan, ProbePlan, ProbeRun, run_probe

_EXPORTS: dict[str, tuple[str, ...]] = {
    "latdoc.advice.system": ("checklist",),
    "latdoc.analysis.stats": ("Distribution",),
    "latdoc.client": (
        "FailureClass",
        "FirstTokenTimeout",
        "Instrumentation",
        "PhaseTimeouts",
        "ResetPolicy",
        "RetryBudget",
        "RetryDecision",
        "RetryPolicy",
        "StreamStalled",
        "StreamTruncated",
        "TcpKeepalive",
        "TokenEstimate",
        "TotalTimeout",
        "asummarize_history",
        "instrument",
        "make_async_client",
        "make_client",
        "pool_size",
        "summarize_history",
        "summary_prompt",
        "trim_messages",
    ),
    "latdoc.errors": (
        "CalibrationError",
        "ClientError",
        "ClientStreamError",
        "ClientTimeout",
        "ContextTooLong",
        "ErrorKind",
        "LabError",
        "LatdocError",
        "Phase",
        "PolicyError",
        "RequestFailed",
        "SSEError",
        "TraceError",
        "UsageError",
    ),
    "latdoc.features.compare": ("RunComparison", "compare_runs"),
    "latdoc.features.diagnose": (
        "DiagnosisRun",
        "diagnose_endpoint",
        "diagnose_otlp",
        "diagnose_traffic",
        "rediagnose",
    ),
    "latdoc.features.load": (
        "LoadPlan",
        "LoadRun",
        "Slo",
        "Workers",
        "load_endpoint",
        "load_to_dict",
        "reload_load",
        "render_load",
        "render_load_html",
    ),
    "latdoc.features.probe": ("StoredProbe", "probe_endpoint"),
    "latdoc.features.system": ("read_host",),
    "latdoc.features.verify": ("VerifyPlan", "VerifyRemedy", "VerifyResult", "verify_remedy"),
    "latdoc.features.watch": (
        "WatchClock",
        "WatchPlan",
        "WatchRun",
        "watch_clock",
        "watch_endpoint",
    ),
    "latdoc.model": (
        "Diagnosis",
        "Finding",
        "HostFacts",
        "Kind",
        "Priorities",
        "Remedy",
        "RunContext",
        "Scenario",
        "SystemItem",
        "Verdict",
        "parse_priorities",
    ),
    "latdoc.pipeline": (
        "build_diagnosis",
        "measure_steps",
        "run_diagnosis",
    ),
    "latdoc.probe": ("ConnectionOptions", "Dialect", "Endpoint", "ProbeSession", "Timeouts"),
    "latdoc.records": ("Chunk", "RequestTrace", "Sample", "Step"),
    "latdoc.reference": ("ReferenceProfile", "healthy_reference", "load_reference"),
    "latdoc.report": (
        "comparison_to_dict",
        "diagnosis_to_dict",
        "make_console",
        "render_comparison",
        "render_comparison_html",
        "render_diagnosis",
        "render_html",
        "render_summary",
        "render_text",
        "render_waterfall",
        "trace_to_dict",
    ),
    "latdoc.store": ("Store",),
    "latdoc.workload": ("Budget", "DiagnosisPlan", "ProbePlan", "ProbeRun", "run_probe"),
}
"""Each module behind the public namespace and the names imported from it, on first use."""

_HOME = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "Budget",
    "CalibrationError",
    "Chunk",
    "ClientError",
    "ClientStreamError",
    "ClientTimeout",
    "ConnectionOptions",
    "ContextTooLong",
    "Diagnosis",
    "DiagnosisPlan",
    "DiagnosisRun",
    "Dialect",
    "Distribution",
    "Endpoint",
    "ErrorKind",
    "FailureClass",
    "Finding",
    "FirstTokenTimeout",
    "HostFacts",
    "Instrumentation",
    "Kind",
    "LabError",
    "LatdocError",
    "LoadPlan",
    "LoadRun",
    "Phase",
    "PhaseTimeouts",
    "PolicyError",
    "Priorities",
    "ProbePlan",
    "ProbeRun",
    "ProbeSession",
    "ReferenceProfile",
    "Remedy",
    "RequestFailed",
    "RequestTrace",
    "ResetPolicy",
    "RetryBudget",
    "RetryDecision",
    "RetryPolicy",
    "RunComparison",
    "RunContext",
    "SSEError",
    "Sample",
    "Scenario",
    "Slo",
    "Step",
    "Store",
    "StoredProbe",
    "StreamStalled",
    "StreamTruncated",
    "SystemItem",
    "TcpKeepalive",
    "Timeouts",
    "TokenEstimate",
    "TotalTimeout",
    "TraceError",
    "UsageError",
    "Verdict",
    "VerifyPlan",
    "VerifyRemedy",
    "VerifyResult",
    "WatchClock",
    "WatchPlan",
    "WatchRun",
    "Workers",
    "__version__",
    "asummarize_history",
    "build_diagnosis",
    "checklist",
    "compare_runs",
    "comparison_to_dict",
    "diagnose_endpoint",
    "diagnose_otlp",
    "diagnose_traffic",
    "diagnosis_to_dict",
    "healthy_reference",
    "instrument",
    "load_endpoint",
    "load_reference",
    "load_to_dict",
    "make_async_client",
    "make_client",
    "make_console",
    "measure_steps",
    "parse_priorities",
    "pool_size",
    "probe_endpoint",
    "read_host",
    "rediagnose",
    "reload_load",
    "render_comparison",
    "render_comparison_html",
    "render_diagnosis",
    "render_html",
    "render_load",
    "render_load_html",
    "render_summary",
    "render_text",
    "render_waterfall",
    "run_diagnosis",
    "run_probe",
    "summarize_history",
    "summary_prompt",
    "trace_to_dict",
    "trim_messages",
    "verify_remedy",
    "watch_clock",
    "watch_endpoint",
]

if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        """A public name, imported from its module the first time it is asked for."""
        module = _HOME.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
