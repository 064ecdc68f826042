"""latdoc: which kind of slow is your LLM API call?

Time every phase of a real streaming request (DNS, TCP, TLS, send, server wait,
first token, every chunk) into one :class:`RequestTrace` record; measure, keep
and diagnose an endpoint with :func:`diagnose_endpoint` (or diagnose a stored run
again with :func:`rediagnose`) and get a :class:`Diagnosis`: the kind of slow,
its evidence and the ranked remedies. :func:`checklist` of :func:`read_host` is the
client host as ``latdoc system`` shows it.
"""

from latdoc.advice.system import checklist
from latdoc.analysis.attribution import RunContext
from latdoc.analysis.diagnosis import Diagnosis, Finding, Kind, Remedy, Scenario, Verdict
from latdoc.analysis.host import HostFacts, SystemItem
from latdoc.analysis.stats import Distribution
from latdoc.errors import (
    CalibrationError,
    ErrorKind,
    LabError,
    LatdocError,
    Phase,
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

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "CalibrationError",
    "Chunk",
    "ConnectionOptions",
    "Diagnosis",
    "DiagnosisPlan",
    "DiagnosisRun",
    "Dialect",
    "Distribution",
    "Endpoint",
    "ErrorKind",
    "Finding",
    "HostFacts",
    "Kind",
    "LabError",
    "LatdocError",
    "Phase",
    "ProbePlan",
    "ProbeRun",
    "ProbeSession",
    "Remedy",
    "RequestFailed",
    "RequestTrace",
    "RunContext",
    "SSEError",
    "Sample",
    "Scenario",
    "Step",
    "StepNote",
    "Store",
    "SystemItem",
    "TcpInfo",
    "Timeouts",
    "TraceError",
    "UsageError",
    "Verdict",
    "__version__",
    "build_diagnosis",
    "checklist",
    "diagnose_endpoint",
    "read_host",
    "rediagnose",
    "run_diagnosis",
    "run_probe",
]
