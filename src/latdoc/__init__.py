"""latdoc: which kind of slow is your LLM API call?

Time every phase of a real streaming request (DNS, TCP, TLS, send, server wait,
first token, every chunk) into one :class:`RequestTrace` record; measure, keep
and diagnose an endpoint with :func:`diagnose_endpoint` (or diagnose a stored run
again with :func:`rediagnose`; time an application's own requests with
:func:`instrument`) and get a :class:`Diagnosis`: the kind of slow,
its evidence and the ranked remedies.

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
    from latdoc.model import (
        Diagnosis,
        Finding,
        HostFacts,
        Kind,
        Remedy,
        RunContext,
        Scenario,
        SystemItem,
        Verdict,
    )
    from latdoc.pipeline import (
        DiagnosisRun,
        build_diagnosis,
        diagnose_endpoint,
        read_host,
        rediagnose,
        run_diagnosis,
    )
    from latdoc.probe import ConnectionOptions, Dialect, Endpoint, ProbeSession, Timeouts
    from latdoc.records import Chunk, RequestTrace, Sample, Step, StepNote, TcpInfo
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
    "latdoc.model": (
        "Diagnosis",
        "Finding",
        "HostFacts",
        "Kind",
        "Remedy",
        "RunContext",
        "Scenario",
        "SystemItem",
        "Verdict",
    ),
    "latdoc.pipeline": (
        "DiagnosisRun",
        "build_diagnosis",
        "diagnose_endpoint",
        "read_host",
        "rediagnose",
        "run_diagnosis",
    ),
    "latdoc.probe": ("ConnectionOptions", "Dialect", "Endpoint", "ProbeSession", "Timeouts"),
    "latdoc.records": ("Chunk", "RequestTrace", "Sample", "Step", "StepNote", "TcpInfo"),
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
    "Phase",
    "PhaseTimeouts",
    "PolicyError",
    "ProbePlan",
    "ProbeRun",
    "ProbeSession",
    "Remedy",
    "RequestFailed",
    "RequestTrace",
    "ResetPolicy",
    "RetryBudget",
    "RetryDecision",
    "RetryPolicy",
    "RunContext",
    "SSEError",
    "Sample",
    "Scenario",
    "Step",
    "StepNote",
    "Store",
    "StreamStalled",
    "StreamTruncated",
    "SystemItem",
    "TcpInfo",
    "TcpKeepalive",
    "Timeouts",
    "TokenEstimate",
    "TotalTimeout",
    "TraceError",
    "UsageError",
    "Verdict",
    "__version__",
    "asummarize_history",
    "build_diagnosis",
    "checklist",
    "diagnose_endpoint",
    "instrument",
    "make_async_client",
    "make_client",
    "pool_size",
    "read_host",
    "rediagnose",
    "run_diagnosis",
    "run_probe",
    "summarize_history",
    "summary_prompt",
    "trim_messages",
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
