"""``latdoc lab serve``'s flags: every knob of the simulated endpoint, as tables.

Each group of ``--help`` is one table of options, in the order they are shown:
``server`` (where it listens, what it answers and how it streams), ``latency (ms)``,
``service`` (slots, background load, the prefix cache, stalls) and ``faults``. Every
default is the config's own, so no flags serve ``LabConfig()``;
:func:`add_serve_arguments` adds the tables to a parser.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from latdoc.errors import UsageError
from latdoc.lab.sim import Fault, LabConfig, LatencyModel, TimingForm, UsageShape
from latdoc.lab.tls import check_identity

LATENCY = LatencyModel()
CONFIG = LabConfig()

_Option = tuple[tuple[str, ...], dict[str, Any]]
"""A flag's names and :meth:`argparse.ArgumentParser.add_argument`'s keywords."""


def _option(*flags: str, **settings: Any) -> _Option:
    return flags, settings


def _header(text: str) -> tuple[str, str]:
    """``NAME: VALUE``, a header every response carries."""
    name, colon, value = text.partition(":")
    if not colon or not name.strip() or any(c in text for c in "\r\n"):
        raise argparse.ArgumentTypeError(f"expected NAME: VALUE, got {text!r}")
    return name.strip(), value.strip()


def _finite(text: str) -> float:
    """A finite number: ``serve`` refuses inf and nan as it parses them."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _tls_name(text: str) -> str:
    try:
        return check_identity(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _profile(text: str) -> tuple[float, ...]:
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"expected comma-separated fractions, got {text!r}")
    return tuple(_finite(part) for part in parts)


def _alt_model(text: str) -> tuple[str, float, float]:
    """``NAME:PREFILL_BASE_MS:DECODE_MS_PER_TOKEN``; the name may itself hold colons."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise argparse.ArgumentTypeError(
            f"expected NAME:PREFILL_BASE_MS:DECODE_MS_PER_TOKEN, e.g. lab-big:200:25, got {text!r}"
        )
    name, prefill, decode = parts
    numbers = (_finite(prefill), _finite(decode))
    if min(numbers) < 0:
        raise argparse.ArgumentTypeError(f"milliseconds must be >= 0, got {text!r}")
    return name, *numbers


_LISTEN: tuple[_Option, ...] = (
    _option("--host", default="127.0.0.1"),
    _option("--port", type=_whole, default=8000),
    _option("--tls", action="store_true", help="HTTPS with a fresh trustme CA"),
    _option("--http2", action="store_true", help="offer HTTP/2 (needs --tls)"),
    _option(
        "--tls-name", dest="tls_names", action="append", type=_tls_name, default=[],
        metavar="NAME",
        help="a host name or IP address the certificate is also valid for (repeatable)",
    ),
)  # fmt: skip
"""Where the endpoint listens, and its TLS."""

_ANSWERS: tuple[_Option, ...] = (
    _option("--model", default=CONFIG.model),
    _option(
        "--alt-model", dest="alt_models", action="append", type=_alt_model, default=[],
        metavar="NAME:PREFILL_BASE_MS:DECODE_MS_PER_TOKEN",
        help="another model on the same endpoint, timed like --model but with this prefill "
        "base and decode time, and no reasoning (repeatable)",
    ),
    _option(
        "--wrong-model", dest="wrong_models", action="append", default=[], metavar="NAME",
        help="a model served (--model or an --alt-model) that answers a prompt starting "
        "'Repeat exactly:' with the text reversed, where the others repeat it (repeatable)",
    ),
    _option("--api-key-env", metavar="VAR", help="require the key in this variable"),
    _option("--seed", type=_whole, help="seed jitter, stalls, faults and load"),
    _option(
        "--default-max-tokens", type=_whole, default=CONFIG.default_max_tokens,
        help="output tokens when a request names none",
    ),
    _option(
        "--answer-tokens", type=_whole, metavar="N",
        help="answers end by themselves (finish_reason stop) after N tokens when "
        "max_tokens allows it",
    ),
)  # fmt: skip
"""The models it serves, the key it asks for, and how long its answers are."""

_STREAM: tuple[_Option, ...] = (
    _option(
        "--headers-after-prefill", action="store_true", help="send headers with the first token"
    ),
    _option("--reject-stream-options", action="store_true", help="answer 400 to stream_options"),
    _option(
        "--stamp-chunks", action="store_true", help="stamp every chunk with the server's clock"
    ),
    _option(
        "--no-keep-alive", dest="keep_alive", action="store_false",
        help="close the connection after every response (Connection: close)",
    ),
    _option(
        "--header", dest="extra_headers", type=_header, action="append", default=[],
        metavar="'NAME: VALUE'",
        help="a header every response carries, e.g. 'X-Accel-Buffering: no' (repeatable)",
    ),
    _option(
        "--tokens-per-event", type=_whole, default=CONFIG.tokens_per_event, metavar="N",
        help="output tokens each streamed event carries, written when the last is due",
    ),
    _option(
        "--tokens-per-event-max", type=_whole, metavar="M",
        help="each event carries a seeded draw from --tokens-per-event to M tokens",
    ),
    _option(
        "--keepalive-comment-ms", type=_finite, default=CONFIG.keepalive_comment_ms,
        metavar="MS",
        help="send headers at once, then an SSE ': keep-alive' comment every MS ms while "
        "the request waits for a slot (0: none)",
    ),
    _option(
        "--reasoning-in-text", action="store_true",
        help="stream chat's and completions' reasoning as answer text between <think> "
        "tags, as MiniMax and a vLLM without a reasoning parser do",
    ),
    _option(
        "--timing-form", dest="timing_forms", choices=[str(form) for form in TimingForm],
        action="append", default=None,
        help="tell the server's own timing this way: the Server-Timing header (the "
        "default), llama.cpp's timings, vLLM's metrics or Groq's x_groq.usage in the last "
        "chat event (repeatable; each given replaces the default)",
    ),
    _option(
        "--usage-shape", choices=[str(shape) for shape in UsageShape],
        default=str(CONFIG.usage_shape),
        help="word the chat usage as this provider does: OpenAI's (the default), "
        "DeepSeek's prompt_cache_hit_tokens, or Moonshot's choices[0].usage with "
        "cached_tokens",
    ),
)  # fmt: skip
"""How the response is written: headers, events, keep-alive, the server's own timing."""

_LATENCY_OPTIONS: tuple[_Option, ...] = (
    _option("--prefill-base-ms", type=_finite, default=LATENCY.prefill_base_ms),
    _option("--prefill-ms-per-token", type=_finite, default=LATENCY.prefill_ms_per_token),
    _option(
        "--prefill-ms-per-token2", type=_finite, default=LATENCY.prefill_ms_per_token2,
        help="quadratic prefill term, ms per token²",
    ),
    _option("--decode-ms-per-token", type=_finite, default=LATENCY.decode_ms_per_token),
    _option("--jitter-ms", type=_finite, default=LATENCY.jitter_ms),
    _option(
        "--reserve-ms-per-1k-max-tokens", type=_finite,
        default=LATENCY.reserve_ms_per_1k_max_tokens, metavar="MS",
        help="time before the prefill per 1000 tokens of the max_tokens asked for",
    ),
    _option(
        "--reasoning-tokens", type=_whole, default=LATENCY.reasoning_tokens, metavar="N",
        help="the model thinks N tokens (at medium effort; low ¼, high 2×) before its "
        "answer, streamed as reasoning at the decode rate; --alt-model models do not think",
    ),
    _option(
        "--batch-slowdown", type=_finite, default=LATENCY.batch_slowdown, metavar="X",
        help="each token gap is decode × (1 + X × (streams decoding − 1)): continuous "
        "batching (default 0: none)",
    ),
    _option(
        "--kv-threshold-tokens", type=_whole, metavar="N",
        help="context length past which prefill and decode get --kv-penalty times slower",
    ),
    _option(
        "--kv-penalty", type=_finite, default=LATENCY.kv_penalty, metavar="X",
        help="slowdown factor past --kv-threshold-tokens (default 1: none)",
    ),
    _option(
        "--max-context-tokens", type=_whole, metavar="N",
        help="prompt + output past N fails with 400 context_length_exceeded",
    ),
)  # fmt: skip
"""The latency model: prefill, decode, jitter, reasoning, batching, the KV cliff."""

_SERVICE: tuple[_Option, ...] = (
    _option("--slots", type=_whole, metavar="K", help="requests served at once; the rest queue"),
    _option(
        "--load-profile", type=_profile, default=CONFIG.load_profile, metavar="F,F,...",
        help="fraction of slots busy with background requests in each part of the day "
        "(needs --slots), e.g. 0.1,0.9",
    ),
    _option(
        "--day-seconds", type=_finite, default=CONFIG.day_seconds,
        help="length of the simulated day that --load-profile spans",
    ),
    _option(
        "--background-request-ms", type=_finite, default=CONFIG.background_request_ms,
        help="mean time a background request holds its slot",
    ),
    _option("--prefix-cache", action="store_true", help="repeated prompt prefixes skip prefill"),
    _option("--prefix-block-tokens", type=_whole, default=CONFIG.prefix_block_tokens),
    _option(
        "--prefix-cache-blocks", type=_whole, default=CONFIG.prefix_cache_blocks,
        help="blocks the prefix cache keeps (LRU)",
    ),
    _option(
        "--stall-after-token", type=_whole, metavar="K", help="pause the stream after token K"
    ),
    _option("--stall-ms", type=_finite, default=CONFIG.stall_ms),
    _option(
        "--stall-rate", type=_finite, default=CONFIG.stall_rate,
        help="probability that a request stalls (0..1)",
    ),
)  # fmt: skip
"""Slots and the background load that takes them, the prefix cache, and stalls."""

_FAULTS: tuple[_Option, ...] = (
    _option(
        "--fault", choices=[str(fault) for fault in Fault],
        help="inject this failure (a request header x-lab-fault overrides it)",
    ),
    _option(
        "--fault-rate", type=_finite, default=CONFIG.fault_rate,
        help="probability that a request gets --fault (0..1)",
    ),
    _option(
        "--fault-after-tokens", type=_whole, default=CONFIG.fault_after_tokens,
        help="tokens sent before reset, truncate or malformed strike",
    ),
    _option("--retry-after-s", type=_whole, default=CONFIG.retry_after_s),
    _option(
        "--base-resp-code", type=_whole, default=CONFIG.base_resp_code, metavar="CODE",
        help="base_resp.status_code of a base-resp fault (1002 rate limit, 1004 key "
        "refused, 1008 balance, 1000 unknown error)",
    ),
    _option("--drip-interval-ms", type=_finite, default=CONFIG.drip_interval_ms),
    _option(
        "--hang-s", type=_finite, default=CONFIG.hang_s,
        help="how long a hang holds the connection before a 504",
    ),
)  # fmt: skip
"""The failure to inject, how often, and its timing."""

GROUPS: tuple[tuple[str, tuple[_Option, ...]], ...] = (
    ("server", _LISTEN + _ANSWERS + _STREAM),
    ("latency (ms)", _LATENCY_OPTIONS),
    ("service: slots, load, cache, stalls", _SERVICE),
    ("faults", _FAULTS),
)
"""``serve``'s option groups, titled as ``--help`` shows them, in its order."""


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the server, latency, queueing, cache, stall and fault options to ``parser``."""
    for title, options in GROUPS:
        group = parser.add_argument_group(title)
        for flags, settings in options:
            group.add_argument(*flags, **settings)
