"""``latdoc lab serve``'s configuration: the :class:`~latdoc.lab.LabConfig` its flags describe.

:func:`config_from_args` turns the namespace of :mod:`._serve_options`' flags into a
config and raises :class:`~latdoc.errors.UsageError` naming the flag for a bad value
or a bad combination.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.lab.command._serve_options import CONFIG as _CONFIG
from latdoc.lab.command._serve_options import LATENCY as _LATENCY
from latdoc.lab.sim import Fault, LabConfig, LatencyModel, TimingForm, UsageShape


def _check_serve(args: argparse.Namespace) -> None:
    if args.http2 and not args.tls:
        raise UsageError(N_("--http2 needs --tls (HTTP/2 is negotiated with ALPN)"))
    if args.tls_names and not args.tls:
        raise UsageError(N_("--tls-name needs --tls: it names the TLS certificate"))
    if args.load_profile and args.slots is None:
        raise UsageError(N_("--load-profile needs --slots: background requests take slots"))
    for flag, value in (("--stall-rate", args.stall_rate), ("--fault-rate", args.fault_rate)):
        if not 0 <= value <= 1:
            raise UsageError(
                Message("{flag} must be between 0 and 1, got {value:g}", flag=flag, value=value)
            )
    for value in args.load_profile:
        if not 0 <= value <= 1:
            raise UsageError(
                Message(
                    "--load-profile fractions must be between 0 and 1, got {value:g}", value=value
                )
            )
    if args.fault is None and args.fault_rate != _CONFIG.fault_rate:
        raise UsageError(N_("--fault-rate needs --fault: the failure to inject"))
    if args.stall_ms > 0 and args.stall_after_token is None:
        raise UsageError(N_("--stall-ms needs --stall-after-token: the token the stall follows"))
    if args.keepalive_comment_ms > 0 and args.headers_after_prefill:
        raise UsageError(
            N_("--keepalive-comment-ms needs the headers at once, not --headers-after-prefill")
        )
    if args.kv_threshold_tokens is None and args.kv_penalty != _LATENCY.kv_penalty:
        raise UsageError(N_("--kv-penalty needs --kv-threshold-tokens"))
    names = [name for name, _, _ in args.alt_models]
    for name in names:
        if name == args.model:
            raise UsageError(
                Message("--alt-model {name}: that is the --model already served", name=name)
            )
        if names.count(name) > 1:
            raise UsageError(Message("--alt-model {name}: given more than once", name=name))
    for name in args.wrong_models:
        if name != args.model and name not in names:
            raise UsageError(
                Message(
                    "--wrong-model {name}: not a model served (--model, --alt-model)", name=name
                )
            )


def _api_key(var: str | None) -> str | None:
    if var is None:
        return None
    value = os.environ.get(var)
    if not value:
        raise UsageError(Message("--api-key-env {var}: the variable is not set", var=var))
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
            wrong_models=tuple(args.wrong_models),
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
            usage_shape=UsageShape(args.usage_shape),
            api_key=_api_key(args.api_key_env),
            seed=args.seed,
            tokens_per_event=args.tokens_per_event,
            tokens_per_event_max=args.tokens_per_event_max,
            keepalive_comment_ms=args.keepalive_comment_ms,
            reasoning_in_text=args.reasoning_in_text,
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
            base_resp_code=args.base_resp_code,
            drip_interval_ms=args.drip_interval_ms,
            hang_s=args.hang_s,
        )
    except ValueError as exc:
        raise UsageError(_flag(str(exc))) from None
