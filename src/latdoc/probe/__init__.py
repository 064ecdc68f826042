"""One request on the wire, timed phase by phase into a :class:`~latdoc.records.RequestTrace`.

The rooms behind this face, in the order a request passes through them:

- ``_endpoint``: where requests go (:class:`Endpoint`), how long they may take
  (:class:`Timeouts`), how TLS is trusted; ``_connection``: :class:`ConnectionOptions`.
- ``_session``: :class:`ProbeSession`, one pool and the requests sent through it;
  ``_freeze``: what was measured of one request frozen into a trace (also used by
  ``latdoc.client`` for an application's own requests).
- ``_backend``, ``_aiostream``: the timed network backend (DNS, connect, TLS, every read);
  ``_kstream`` and ``_arrivals``: reads stamped with the kernel's receive time, where
  :func:`kernel_stamps_possible` says the platform gives it.
- ``_recorder``: the per-request stopwatch the backend and httpcore's trace events feed.
- ``dialects``: one module per API dialect (its URL, key, body, events, end of
  stream …), listed once in ``dialects.DIALECTS``; ``_dialect_io``: :func:`Dialect` (a
  dialect named by a library user) and what every dialect does alike on the wire (a
  request's body built, an event read); ``_sse``, ``_jsonarray``,
  ``_framing``, ``_stream_state``: the stream decoded (server-sent events, or a
  streamed JSON array), each event read into one ``_events.EventInfo`` (answer and
  reasoning apart).
- ``providers``: the ``--provider`` presets (a host's dialect, base URL and key
  variables, and its chat API's quirks), listed once in ``providers.PROVIDERS``;
  ``_provider_spec``: what a preset is; ``_quirks``: what a provider does its own way
  (the usage fields of cached and reasoning tokens, a thinking switch), as data.
- ``_target``: the endpoint and connection a user's choices make (a provider, an
  API, a URL, a key, a proxy), as every sending command builds them.
- ``_proxy``: which proxy a URL goes through (``HTTPS_PROXY``, ``NO_PROXY`` …, or
  ``--proxy``), and httpcore's own pool for it (HTTP ``CONNECT`` and forwarding, SOCKS5).
- ``_tools``: the tools a request offers (``--tools FILE``), read from any API's shape.
- ``_failures``: every lower-level error mapped to a typed failure, once.
- ``_runner``: the event loop a load sends on (:func:`run_sending`: uvloop's, where it
  is installed).
- ``_tcpinfo``, ``_servertiming``, ``_looplag``: the kernel's, the server's and the
  client's own view of the time; ``_metrics``: an engine's ``/metrics`` page, read.

This package computes no statistics and prints nothing.
"""

from latdoc.probe._arrivals import READER_LAG, ReaderLag
from latdoc.probe._backend import Resolver, TimedBackend, TimedStream, system_resolver, warm_up
from latdoc.probe._connection import ConnectionOptions
from latdoc.probe._dialect_io import (
    Dialect,
    Prompt,
    check_extra_body,
    dialect_hint,
    error_message,
    merge_fields,
    parse_event,
    parse_extra_body,
    request_body,
)
from latdoc.probe._endpoint import Endpoint, Timeouts
from latdoc.probe._events import EventInfo, ToolPart
from latdoc.probe._failures import classify, http_error
from latdoc.probe._framing import EventDecoder, Framing
from latdoc.probe._freeze import Exchange, TraceTarget, freeze_trace
from latdoc.probe._jsonarray import JSONArrayDecoder
from latdoc.probe._kstream import kernel_stamps_possible
from latdoc.probe._looplag import LoopLagMonitor
from latdoc.probe._metrics import metrics_url, scrape_metrics
from latdoc.probe._proxy import (
    NoProxyEntry,
    Proxy,
    ProxyConfig,
    ProxyRoute,
    parse_no_proxy,
    parse_proxy,
)
from latdoc.probe._recorder import Recorder, now_ns
from latdoc.probe._runner import LOOP_ENV, loop_name, run_sending
from latdoc.probe._session import EventHook, InfoHook, ProbeSession, ResendHook
from latdoc.probe._sse import SSEDecoder, SSEEvent
from latdoc.probe._stream_state import StreamState
from latdoc.probe._target import (
    BASE_URL_VARIABLE,
    ApiChoice,
    choose_api,
    endpoint_and_connection,
    environment_key,
    proxy_secrets,
)
from latdoc.probe._tcpinfo import read_tcp_info
from latdoc.probe._tools import CalledTool, Tool, load_tools, parse_tools

__all__ = [
    "BASE_URL_VARIABLE",
    "LOOP_ENV",
    "READER_LAG",
    "ApiChoice",
    "CalledTool",
    "ConnectionOptions",
    "Dialect",
    "Endpoint",
    "EventDecoder",
    "EventHook",
    "EventInfo",
    "Exchange",
    "Framing",
    "InfoHook",
    "JSONArrayDecoder",
    "LoopLagMonitor",
    "NoProxyEntry",
    "ProbeSession",
    "Prompt",
    "Proxy",
    "ProxyConfig",
    "ProxyRoute",
    "ReaderLag",
    "Recorder",
    "ResendHook",
    "Resolver",
    "SSEDecoder",
    "SSEEvent",
    "StreamState",
    "TimedBackend",
    "TimedStream",
    "Timeouts",
    "Tool",
    "ToolPart",
    "TraceTarget",
    "check_extra_body",
    "choose_api",
    "classify",
    "dialect_hint",
    "endpoint_and_connection",
    "environment_key",
    "error_message",
    "freeze_trace",
    "http_error",
    "kernel_stamps_possible",
    "load_tools",
    "loop_name",
    "merge_fields",
    "metrics_url",
    "now_ns",
    "parse_event",
    "parse_extra_body",
    "parse_no_proxy",
    "parse_proxy",
    "parse_tools",
    "proxy_secrets",
    "read_tcp_info",
    "request_body",
    "run_sending",
    "scrape_metrics",
    "system_resolver",
    "warm_up",
]
