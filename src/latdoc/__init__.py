"""latdoc: which kind of slow is your LLM API call?

Time every phase of a real streaming request (DNS, TCP, TLS, send, server wait,
first token, every chunk) into one :class:`RequestTrace` record; measure, keep
and diagnose an endpoint with :func:`diagnose_endpoint` (or diagnose a stored run
again with :func:`rediagnose`; time an application's own requests with
:func:`instrument`) and get a :class:`Diagnosis`: the kind of slow,
its evidence and the ranked remedies.
"""

from latdoc.analysis.attribution import RunContext
from latdoc.analysis.diagnosis import Diagnosis, Finding, Kind, Remedy, Scenario, Verdict
from latdoc.analysis.stats import Distribution
from latdoc.client import Instrumentation, instrument
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
    "Instrumentation",
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
    "TcpInfo",
    "Timeouts",
    "TraceError",
    "UsageError",
    "Verdict",
    "__version__",
    "build_diagnosis",
    "diagnose_endpoint",
    "instrument",
    "rediagnose",
    "run_diagnosis",
    "run_probe",
]
