"""The records every layer reads: a measured request and why it was sent.

:class:`RequestTrace` is the one record of a measured request; a :class:`Sample`
labels it with the :class:`Step` of a diagnosis that sent it and the conditions
it was sent under; a :class:`StepNote` says what a step left out. How a request
failed (:class:`~latdoc.errors.TraceError`) lives with the exceptions in
:mod:`latdoc.errors`.

The trace and its derived metrics are defined in :mod:`._trace`, what it is made of
(chunks, the kernel's view of the connection, connect attempts, tool calls) in :mod:`._parts`, and
the labels of why it was sent in :mod:`._sample`.
"""

from latdoc.records._parts import (
    CHARS_PER_TOKEN,
    Chunk,
    ConnectAttempt,
    TcpInfo,
    ToolCall,
    estimate_tokens,
)
from latdoc.records._sample import Sample, Step, StepNote
from latdoc.records._trace import RequestTrace

__all__ = [
    "CHARS_PER_TOKEN",
    "Chunk",
    "ConnectAttempt",
    "RequestTrace",
    "Sample",
    "Step",
    "StepNote",
    "TcpInfo",
    "ToolCall",
    "estimate_tokens",
]
