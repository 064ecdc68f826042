"""latdoc: which kind of slow is your LLM API call?

Time every phase of a real streaming request (DNS, TCP, TLS, send, server wait,
first token, every chunk) into one :class:`RequestTrace` record; run the
three-step diagnosis (:func:`run_diagnosis`, :func:`build_diagnosis`) and get a
:class:`Diagnosis`: the kind of slow, its evidence and the ranked remedies.
"""

from latdoc.analysis.attribution import RunContext
from latdoc.analysis.model import Diagnosis, Finding, Kind, Remedy, Scenario, Verdict
from latdoc.analysis.stats import Distribution
from latdoc.diagnose import build_diagnosis, run_diagnosis
from latdoc.errors import LabError, LatdocError, RequestFailed, SSEError, UsageError
from latdoc.measure import ConnectionOptions, ProbePlan, ProbeRun, run_probe
from latdoc.probe.dialects import Dialect
from latdoc.probe.session import Endpoint, ProbeSession, Timeouts
from latdoc.probe.trace import Chunk, ErrorKind, Phase, RequestTrace, TcpInfo, TraceError
from latdoc.steps import DiagnosisPlan
from latdoc.store import Store
from latdoc.workload.budget import Budget
from latdoc.workload.sample import Sample

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "Chunk",
    "ConnectionOptions",
    "Diagnosis",
    "DiagnosisPlan",
    "Dialect",
    "Distribution",
    "Endpoint",
    "ErrorKind",
    "Finding",
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
    "Store",
    "TcpInfo",
    "Timeouts",
    "TraceError",
    "UsageError",
    "Verdict",
    "__version__",
    "build_diagnosis",
    "run_diagnosis",
    "run_probe",
]
