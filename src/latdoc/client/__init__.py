"""The remedies as a library: the client and policies latdoc's advice recommends.

- ``_factory``: :func:`make_client` and :func:`make_async_client`, plain httpx
  clients for the openai SDK with a sized pool (:func:`pool_size`), keep-alive,
  :class:`TcpKeepalive`, HTTP/2, timeouts per phase and retries.
- ``_timeouts``: :class:`PhaseTimeouts` and the transports that enforce them,
  raising :class:`FirstTokenTimeout`, :class:`StreamStalled`, :class:`TotalTimeout`
  and :class:`StreamTruncated`.
- ``_retry``: :class:`RetryPolicy`, :class:`RetryBudget` and the
  :class:`RetryDecision` each failure gets; ``_retry_transport`` acts on them,
  raising :class:`BaseRespError` for an error sent with HTTP 200 that is not retried.
- ``_conversation``: :func:`trim_messages`, :func:`summarize_history`,
  :class:`ResetPolicy` and :class:`TokenEstimate`.
- ``_instrument``, ``_timed_pool`` (with ``_request_watch`` and ``_request_facts``),
  ``_otel``: :func:`instrument` times an application's own requests with the probe's
  definitions and keeps them as a run that ``latdoc diagnose --from-run`` reads (and,
  with ``otel=True``, emits them as OpenTelemetry GenAI spans and metrics).

Runtime code here needs httpx only, not the openai SDK.
"""

from __future__ import annotations

from latdoc.client._conversation import (
    SUMMARY_INSTRUCTION,
    Message,
    ResetPolicy,
    TokenEstimate,
    asummarize_history,
    message_text,
    summarize_history,
    summary_prompt,
    trim_messages,
)
from latdoc.client._factory import (
    DEFAULT_KEEPALIVE,
    TcpKeepalive,
    make_async_client,
    make_client,
    pool_limits,
    pool_size,
)
from latdoc.client._instrument import Instrumentation, instrument
from latdoc.client._retry import (
    FailureClass,
    RetryBudget,
    RetryDecision,
    RetryPolicy,
    classify_base_resp,
    classify_error_type,
    classify_exception,
    classify_status,
    server_wait,
)
from latdoc.client._retry_transport import AsyncRetryTransport, BaseRespError, RetryTransport
from latdoc.client._timeouts import (
    AsyncTimeoutTransport,
    FirstTokenTimeout,
    PhaseTimeouts,
    StreamStalled,
    StreamTruncated,
    TimeoutTransport,
    TotalTimeout,
)

__all__ = [
    "DEFAULT_KEEPALIVE",
    "SUMMARY_INSTRUCTION",
    "AsyncRetryTransport",
    "AsyncTimeoutTransport",
    "BaseRespError",
    "FailureClass",
    "FirstTokenTimeout",
    "Instrumentation",
    "Message",
    "PhaseTimeouts",
    "ResetPolicy",
    "RetryBudget",
    "RetryDecision",
    "RetryPolicy",
    "RetryTransport",
    "StreamStalled",
    "StreamTruncated",
    "TcpKeepalive",
    "TimeoutTransport",
    "TokenEstimate",
    "TotalTimeout",
    "asummarize_history",
    "classify_base_resp",
    "classify_error_type",
    "classify_exception",
    "classify_status",
    "instrument",
    "make_async_client",
    "make_client",
    "message_text",
    "pool_limits",
    "pool_size",
    "server_wait",
    "summarize_history",
    "summary_prompt",
    "trim_messages",
]
