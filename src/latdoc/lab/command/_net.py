"""``latdoc lab net``: the impaired network, created, changed and removed by name.

``up`` creates it (and, with ``--serve``, the simulated endpoint in the server
namespace) and returns, leaving the link process running; ``set`` changes its
delay, jitter, rate, loss or DNS delay; ``exec -- CMD`` runs a command in the client
namespace; ``down`` removes everything. The running network is found through its
state file, ``/run/latdoc-net/<name>.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
from typing import Any

from latdoc.errors import UsageError
from latdoc.i18n import N_, Message
from latdoc.lab.net import LabNet, LinkSettings, NetSettings, teardown

_KEEP: Any = argparse.SUPPRESS


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


def add_net_parser(lab_subparsers: argparse._SubParsersAction[Any]) -> None:
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


def run_net(args: argparse.Namespace) -> int:
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
            raise UsageError(N_("exec needs a command: latdoc lab net exec -- CMD [ARG...]"))
        net = LabNet.attach(args.name)
        code = subprocess.run(net.client_argv(argv), check=False).returncode
        return code if code >= 0 else 128 - code
    raise UsageError(Message("unknown command {command!r}", command=command))


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
        raise UsageError(N_("--lifetime-h must be more than 0"))
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
