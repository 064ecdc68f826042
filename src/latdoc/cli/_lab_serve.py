"""``latdoc lab serve``'s options: every knob of the simulated endpoint as a flag.

:func:`add_serve_arguments` adds them to a parser; :func:`config_from_args` turns
the parsed namespace into a :class:`~latdoc.lab.LabConfig` and raises
:class:`~latdoc.errors.UsageError` naming the flag for a bad value or a bad
combination. Every default is the config's own, so no flags serve ``LabConfig()``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os

from latdoc.errors import UsageError
from latdoc.lab.sim import Fault, LabConfig, LatencyModel, TimingForm
from latdoc.lab.tls import check_identity

_LATENCY = LatencyModel()
_CONFIG = LabConfig()


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


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the server, latency, queueing, cache, stall and fault options to ``parser``."""
    server = parser.add_argument_group("server")
    server.add_argument("--host", default="127.0.0.1")
    server.add_argument("--port", type=_whole, default=8000)
    server.add_argument("--tls", action="store_true", help="HTTPS with a fresh trustme CA")
    server.add_argument("--http2", action="store_true", help="offer HTTP/2 (needs --tls)")
    server.add_argument(
        "--tls-name",
        dest="tls_names",
        action="append",
        type=_tls_name,
        default=[],
        metavar="NAME",
        help="a host name or IP address the certificate is also valid for (repeatable)",
    )
    server.add_argument("--model", default=_CONFIG.model)
    server.add_argument(
        "--alt-model",
        dest="alt_models",
        action="append",
        type=_alt_model,
        default=[],
        metavar="NAME:PREFILL_BASE_MS:DECODE_MS_PER_TOKEN",
        help="another model on the same endpoint, timed like --model but with this prefill "
        "base and decode time, and no reasoning (repeatable)",
    )
    server.add_argument("--api-key-env", metavar="VAR", help="require the key in this variable")
    server.add_argument("--seed", type=_whole, help="seed jitter, stalls, faults and load")
    server.add_argument(
        "--default-max-tokens",
        type=_whole,
        default=_CONFIG.default_max_tokens,
        help="output tokens when a request names none",
    )
    server.add_argument(
        "--answer-tokens",
        type=_whole,
        metavar="N",
        help="answers end by themselves (finish_reason stop) after N tokens when "
        "max_tokens allows it",
    )
    server.add_argument(
        "--headers-after-prefill", action="store_true", help="send headers with the first token"
    )
    server.add_argument(
        "--reject-stream-options", action="store_true", help="answer 400 to stream_options"
    )
    server.add_argument(
        "--stamp-chunks", action="store_true", help="stamp every chunk with the server's clock"
    )
    server.add_argument(
        "--no-keep-alive",
        dest="keep_alive",
        action="store_false",
        help="close the connection after every response (Connection: close)",
    )
    server.add_argument(
        "--header",
        dest="extra_headers",
        type=_header,
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a header every response carries, e.g. 'X-Accel-Buffering: no' (repeatable)",
    )
    server.add_argument(
        "--tokens-per-event",
        type=_whole,
        default=_CONFIG.tokens_per_event,
        metavar="N",
        help="output tokens each streamed event carries, written when the last is due",
    )
    server.add_argument(
        "--tokens-per-event-max",
        type=_whole,
        metavar="M",
        help="each event carries a seeded draw from --tokens-per-event to M tokens",
    )
    server.add_argument(
        "--keepalive-comment-ms",
        type=_finite,
        default=_CONFIG.keepalive_comment_ms,
        metavar="MS",
        help="send headers at once, then an SSE ': keep-alive' comment every MS ms until "
        "the first token (while queued and in prefill; 0: none)",
    )
    server.add_argument(
        "--timing-form",
        dest="timing_forms",
        choices=[str(form) for form in TimingForm],
        action="append",
        default=None,
        help="tell the server's own timing this way: the Server-Timing header (the "
        "default), llama.cpp's timings, vLLM's metrics or Groq's x_groq.usage in the last "
        "chat event (repeatable; each given replaces the default)",
    )

    latency = parser.add_argument_group("latency (ms)")
    latency.add_argument("--prefill-base-ms", type=_finite, default=_LATENCY.prefill_base_ms)
    latency.add_argument(
        "--prefill-ms-per-token", type=_finite, default=_LATENCY.prefill_ms_per_token
    )
    latency.add_argument(
        "--prefill-ms-per-token2",
        type=_finite,
        default=_LATENCY.prefill_ms_per_token2,
        help="quadratic prefill term, ms per token²",
    )
    latency.add_argument(
        "--decode-ms-per-token", type=_finite, default=_LATENCY.decode_ms_per_token
    )
    latency.add_argument("--jitter-ms", type=_finite, default=_LATENCY.jitter_ms)
    latency.add_argument(
        "--reserve-ms-per-1k-max-tokens",
        type=_finite,
        default=_LATENCY.reserve_ms_per_1k_max_tokens,
        metavar="MS",
        help="time before the prefill per 1000 tokens of the max_tokens asked for",
    )
    latency.add_argument(
        "--reasoning-tokens",
        type=_whole,
        default=_LATENCY.reasoning_tokens,
        metavar="N",
        help="the model thinks N tokens (at medium effort; low ¼, high 2×) before its "
        "answer, streamed as reasoning at the decode rate; --alt-model models do not think",
    )
    latency.add_argument(
        "--batch-slowdown",
        type=_finite,
        default=_LATENCY.batch_slowdown,
        metavar="X",
        help="each token gap is decode × (1 + X × (streams decoding − 1)): continuous "
        "batching (default 0: none)",
    )
    latency.add_argument(
        "--kv-threshold-tokens",
        type=_whole,
        metavar="N",
        help="context length past which prefill and decode get --kv-penalty times slower",
    )
    latency.add_argument(
        "--kv-penalty",
        type=_finite,
        default=_LATENCY.kv_penalty,
        metavar="X",
        help="slowdown factor past --kv-threshold-tokens (default 1: none)",
    )
    latency.add_argument(
        "--max-context-tokens",
        type=_whole,
        metavar="N",
        help="prompt + output past N fails with 400 context_length_exceeded",
    )

    service = parser.add_argument_group("service: slots, load, cache, stalls")
    service.add_argument(
        "--slots", type=_whole, metavar="K", help="requests served at once; the rest queue"
    )
    service.add_argument(
        "--load-profile",
        type=_profile,
        default=_CONFIG.load_profile,
        metavar="F,F,...",
        help="fraction of slots busy with background requests in each part of the day "
        "(needs --slots), e.g. 0.1,0.9",
    )
    service.add_argument(
        "--day-seconds",
        type=_finite,
        default=_CONFIG.day_seconds,
        help="length of the simulated day that --load-profile spans",
    )
    service.add_argument(
        "--background-request-ms",
        type=_finite,
        default=_CONFIG.background_request_ms,
        help="mean time a background request holds its slot",
    )
    service.add_argument(
        "--prefix-cache", action="store_true", help="repeated prompt prefixes skip prefill"
    )
    service.add_argument("--prefix-block-tokens", type=_whole, default=_CONFIG.prefix_block_tokens)
    service.add_argument(
        "--prefix-cache-blocks",
        type=_whole,
        default=_CONFIG.prefix_cache_blocks,
        help="blocks the prefix cache keeps (LRU)",
    )
    service.add_argument(
        "--stall-after-token", type=_whole, metavar="K", help="pause the stream after token K"
    )
    service.add_argument("--stall-ms", type=_finite, default=_CONFIG.stall_ms)
    service.add_argument(
        "--stall-rate",
        type=_finite,
        default=_CONFIG.stall_rate,
        help="probability that a request stalls (0..1)",
    )

    faults = parser.add_argument_group("faults")
    faults.add_argument(
        "--fault",
        choices=[str(fault) for fault in Fault],
        help="inject this failure (a request header x-lab-fault overrides it)",
    )
    faults.add_argument(
        "--fault-rate",
        type=_finite,
        default=_CONFIG.fault_rate,
        help="probability that a request gets --fault (0..1)",
    )
    faults.add_argument(
        "--fault-after-tokens",
        type=_whole,
        default=_CONFIG.fault_after_tokens,
        help="tokens sent before reset, truncate or malformed strike",
    )
    faults.add_argument("--retry-after-s", type=_whole, default=_CONFIG.retry_after_s)
    faults.add_argument("--drip-interval-ms", type=_finite, default=_CONFIG.drip_interval_ms)
    faults.add_argument(
        "--hang-s",
        type=_finite,
        default=_CONFIG.hang_s,
        help="how long a hang holds the connection before a 504",
    )


def _check_serve(args: argparse.Namespace) -> None:
    if args.http2 and not args.tls:
        raise UsageError("--http2 needs --tls (HTTP/2 is negotiated with ALPN)")
    if args.tls_names and not args.tls:
        raise UsageError("--tls-name needs --tls: it names the TLS certificate")
    if args.load_profile and args.slots is None:
        raise UsageError("--load-profile needs --slots: background requests take slots")
    for flag, value in (("--stall-rate", args.stall_rate), ("--fault-rate", args.fault_rate)):
        if not 0 <= value <= 1:
            raise UsageError(f"{flag} must be between 0 and 1, got {value:g}")
    for value in args.load_profile:
        if not 0 <= value <= 1:
            raise UsageError(f"--load-profile fractions must be between 0 and 1, got {value:g}")
    if args.fault is None and args.fault_rate != _CONFIG.fault_rate:
        raise UsageError("--fault-rate needs --fault: the failure to inject")
    if args.stall_ms > 0 and args.stall_after_token is None:
        raise UsageError("--stall-ms needs --stall-after-token: the token the stall follows")
    if args.keepalive_comment_ms > 0 and args.headers_after_prefill:
        raise UsageError(
            "--keepalive-comment-ms needs the headers at once, not --headers-after-prefill"
        )
    if args.kv_threshold_tokens is None and args.kv_penalty != _LATENCY.kv_penalty:
        raise UsageError("--kv-penalty needs --kv-threshold-tokens")
    names = [name for name, _, _ in args.alt_models]
    for name in names:
        if name == args.model:
            raise UsageError(f"--alt-model {name}: that is the --model already served")
        if names.count(name) > 1:
            raise UsageError(f"--alt-model {name}: given more than once")


def _api_key(var: str | None) -> str | None:
    if var is None:
        return None
    value = os.environ.get(var)
    if not value:
        raise UsageError(f"--api-key-env {var}: the variable is not set")
    return value


def _flag(message: str) -> str:
    name = message.split(" ", 1)[0]
    return "--" + name.replace("_", "-") + message[len(name) :]


def config_from_args(args: argparse.Namespace) -> LabConfig:
    """The :class:`LabConfig` the parsed ``lab serve`` options describe."""
    _check_serve(args)
    try:
        latency = LatencyModel(
            prefill_base_ms=args.prefill_base_ms,
            prefill_ms_per_token=args.prefill_ms_per_token,
            prefill_ms_per_token2=args.prefill_ms_per_token2,
            decode_ms_per_token=args.decode_ms_per_token,
            jitter_ms=args.jitter_ms,
            kv_threshold_tokens=args.kv_threshold_tokens,
            kv_penalty=args.kv_penalty,
            reserve_ms_per_1k_max_tokens=args.reserve_ms_per_1k_max_tokens,
            reasoning_tokens=args.reasoning_tokens,
            batch_slowdown=args.batch_slowdown,
        )
        alt_models = {
            name: dataclasses.replace(
                latency, prefill_base_ms=prefill, decode_ms_per_token=decode, reasoning_tokens=0
            )
            for name, prefill, decode in args.alt_models
        }
        return LabConfig(
            model=args.model,
            latency=latency,
            alt_models=alt_models,
            default_max_tokens=args.default_max_tokens,
            answer_tokens=args.answer_tokens,
            headers_after_prefill=args.headers_after_prefill,
            reject_stream_options=args.reject_stream_options,
            stamp_chunks=args.stamp_chunks,
            keep_alive=args.keep_alive,
            extra_headers=tuple(args.extra_headers),
            timing_forms=_CONFIG.timing_forms
            if args.timing_forms is None
            else tuple(TimingForm(form) for form in args.timing_forms),
            api_key=_api_key(args.api_key_env),
            seed=args.seed,
            tokens_per_event=args.tokens_per_event,
            tokens_per_event_max=args.tokens_per_event_max,
            keepalive_comment_ms=args.keepalive_comment_ms,
            max_context_tokens=args.max_context_tokens,
            slots=args.slots,
            load_profile=tuple(args.load_profile),
            day_seconds=args.day_seconds,
            background_request_ms=args.background_request_ms,
            prefix_cache=args.prefix_cache,
            prefix_block_tokens=args.prefix_block_tokens,
            prefix_cache_blocks=args.prefix_cache_blocks,
            stall_after_token=args.stall_after_token,
            stall_ms=args.stall_ms,
            stall_rate=args.stall_rate,
            fault=None if args.fault is None else Fault(args.fault),
            fault_rate=args.fault_rate,
            fault_after_tokens=args.fault_after_tokens,
            retry_after_s=args.retry_after_s,
            drip_interval_ms=args.drip_interval_ms,
            hang_s=args.hang_s,
        )
    except ValueError as exc:
        raise UsageError(_flag(str(exc))) from None
