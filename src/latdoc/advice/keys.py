"""Every remedy's key, once: the name a :class:`~latdoc.model.Remedy` carries in the
diagnosis document (``remedies[].key``), by which its kind declares its effects and
scripts find it. Keys are added, never renamed: stored runs hold them."""

from __future__ import annotations

__all__ = [
    "ADDRESS_FAMILY",
    "ASYNC_CLIENT",
    "CLIENT_CPU",
    "DNS_CACHE",
    "FIX_ENDPOINT",
    "GATEWAY",
    "HTTP2",
    "KEEP_ALIVE",
    "LONG_CONTEXT_MODEL",
    "LOSSY_PATH",
    "MAX_TOKENS",
    "NEARER_PROXY",
    "NEARER_REGION",
    "NON_REASONING_MODEL",
    "POOL_SIZE",
    "PROMPT_CACHE",
    "PROXY_BYPASS",
    "PROXY_KEEP_ALIVE",
    "REASONING_EFFORT",
    "RETRIES",
    "SMALLER_MODEL",
    "SPREAD_REQUESTS",
    "STALL_TIMEOUT",
    "SUMMARIZE_HISTORY",
    "TCP_SETTINGS",
    "TLS_RESUMPTION",
    "TRIM_WINDOW",
    "UNBUFFER_STREAM",
]

ADDRESS_FAMILY = "address_family"
ASYNC_CLIENT = "async_client"
CLIENT_CPU = "client_cpu"
DNS_CACHE = "dns_cache"
FIX_ENDPOINT = "fix_endpoint"
HTTP2 = "http2"
GATEWAY = "gateway"
KEEP_ALIVE = "keep_alive"
LOSSY_PATH = "lossy_path"
LONG_CONTEXT_MODEL = "long_context_model"
MAX_TOKENS = "max_tokens"
NEARER_PROXY = "nearer_proxy"
NEARER_REGION = "nearer_region"
NON_REASONING_MODEL = "non_reasoning_model"
POOL_SIZE = "pool_size"
PROMPT_CACHE = "prompt_cache"
PROXY_BYPASS = "proxy_bypass"
PROXY_KEEP_ALIVE = "proxy_keep_alive"
REASONING_EFFORT = "reasoning_effort"
RETRIES = "retries"
SMALLER_MODEL = "smaller_model"
SPREAD_REQUESTS = "spread_requests"
STALL_TIMEOUT = "stall_timeout"
SUMMARIZE_HISTORY = "summarize_history"
TCP_SETTINGS = "tcp_settings"
TLS_RESUMPTION = "tls_resumption"
TRIM_WINDOW = "trim_window"
UNBUFFER_STREAM = "unbuffer_stream"
