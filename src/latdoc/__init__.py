"""latdoc: which kind of slow is your LLM API call?

Time every phase of a real streaming request (DNS, TCP, TLS, send, server wait,
first token, every chunk) into one :class:`RequestTrace` record.
"""

from latdoc.analysis.stats import Distribution
from latdoc.errors import LabError, LatdocError, RequestFailed, SSEError, UsageError
from latdoc.measure import ConnectionOptions, ProbePlan, ProbeRun, run_probe
from latdoc.probe.dialects import Dialect
from latdoc.probe.session import Endpoint, ProbeSession, Timeouts
from latdoc.probe.trace import Chunk, ErrorKind, Phase, RequestTrace, TcpInfo, TraceError

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "ConnectionOptions",
    "Dialect",
    "Distribution",
    "Endpoint",
    "ErrorKind",
    "LabError",
    "LatdocError",
    "Phase",
    "ProbePlan",
    "ProbeRun",
    "ProbeSession",
    "RequestFailed",
    "RequestTrace",
    "SSEError",
    "TcpInfo",
    "Timeouts",
    "TraceError",
    "UsageError",
    "__version__",
    "run_probe",
]
