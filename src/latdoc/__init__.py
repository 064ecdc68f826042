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
"""

from latdoc._version import __version__
from latdoc.advice.system import checklist
from latdoc.analysis.attribution import RunContext
from latdoc.analysis.diagnosis import Diagnosis, Finding, Kind, Remedy, Scenario, Verdict
from latdoc.analysis.host import HostFacts, SystemItem
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
