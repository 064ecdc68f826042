"""Broken IPv6, a lossy link and TLS resumption, through the lab's impaired network.

Three scenarios, each in its own pair of network namespaces (needs root and dnslib):

- **black-holed IPv6**: DNS answers AAAA first and the link drops every IPv6 packet.
  It prints each new connection's connect time and attempts (happy eyeballs falls
  back to IPv4 after the 250 ms attempt delay; one after another, a connection waited
  the whole connect timeout on the IPv6 address), and what ``latdoc diagnose`` names.
- **lossy link**: the link loses a share of the packets each way; it prints the
  retransmitted and out-of-order shares ``diagnose`` read and the kinds it named
  (loss, not stalls or queueing).
- **TLS resumption**: pairs of new connections, the second offering the first one's
  session, over TLS 1.3 and 1.2; it prints the median full and resumed handshakes.

Run: ``sudo .venv/bin/python bench/real_networks.py [--delay-ms 10] [--loss 0.05]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from latdoc.lab.net import LabNet, LinkSettings, NetSettings

FAST = ["--prefill-base-ms", "1", "--prefill-ms-per-token", "0", "--decode-ms-per-token", "10"]

PROBE = """
import asyncio, json, ssl, sys
from latdoc.probe import Endpoint, ProbeSession, Timeouts
from latdoc.report.json_out import trace_to_dict

url, cacert, n, tls_max = sys.argv[1], sys.argv[2] or None, int(sys.argv[3]), sys.argv[5]
resume = sys.argv[4] == "1"

async def main():
    session = ProbeSession(Endpoint(url, "lab-sim"), cacert=cacert, reuse_connections=False,
                           timeouts=Timeouts(connect=10.0))
    if tls_max == "1.2":
        session._ssl.maximum_version = ssl.TLSVersion.TLSv1_2
    async with session:
        for k in range(n):
            trace = await session.request("Hello", 2, resume_tls=resume and k % 2 == 1)
            print(json.dumps(trace_to_dict(trace)), flush=True)

asyncio.run(main())
"""


def _probe(net: LabNet, url: str, n: int, *, cacert: str = "", resume: bool = False,
           tls_max: str = "") -> list[dict[str, Any]]:  # fmt: skip
    argv = [sys.executable, "-c", PROBE, url, cacert, str(n), "1" if resume else "0", tls_max]
    result = net.run_client(argv, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    return [json.loads(line) for line in result.stdout.splitlines()]


def _diagnose(net: LabNet, url: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "latdoc", "diagnose", url, "-m", "lab-sim", "--json",
            "--db", ":memory:", "--max-seconds", "40", "--context-window", "2048",
            "--max-tokens", "32"]  # fmt: skip
    result = net.run_client(argv, capture_output=True, text=True, timeout=180)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _findings(doc: dict[str, Any]) -> str:
    return "; ".join(f"{f['kind']}: {f['title']}" for f in doc["findings"]) or "none"


def black_holed_ipv6(delay_ms: float) -> None:
    settings = NetSettings(LinkSettings(delay_ms=delay_ms, drop_ipv6=True), aaaa=True)
    with LabNet(settings, name="bench-v6") as net:
        endpoint = net.start_endpoint(FAST)
        traces = _probe(net, endpoint.base_url, 5)
        print(f"black-holed IPv6, RTT {2 * delay_ms:g} ms:")
        for t in traces:
            first = t["connect_attempts"][0]["start_ms"]
            tried = ", ".join(
                f"{a['address']} {a['outcome']} at +{a['start_ms'] - first:.0f} ms"
                for a in t["connect_attempts"]
            )
            print(f"  connect {t['connect_ms']:7.1f} ms  rtt {t['rtt_ms']:5.1f} ms  ({tried})")
        doc = _diagnose(net, endpoint.base_url)
        setup = [f for f in doc["findings"] if f["kind"] == "network_setup"]
        print(f"  diagnose: primary {doc['verdict']['primary']}; {_findings(doc)}")
        if setup:
            print(f"  cost per new connection {setup[0]['evidence']['dead_family_cost_ms']:.0f} ms")


def lossy_link(delay_ms: float, loss: float) -> None:
    with LabNet(NetSettings(LinkSettings(delay_ms=delay_ms, loss=loss)), name="bench-loss") as net:
        endpoint = net.start_endpoint(FAST)
        doc = _diagnose(net, endpoint.ip_url)
        stats = net.stats()
        print(f"lossy link, {loss:.0%} each way, RTT {2 * delay_ms:g} ms:")
        print(f"  link lost {stats.up.lost} up, {stats.down.lost} down")
        print(f"  diagnose: primary {doc['verdict']['primary']}; {_findings(doc)}")
        for f in doc["findings"]:
            if f["kind"] == "network_path":
                e = f["evidence"]
                shares = {k: round(e[k], 4) for k in ("retransmit_share", "out_of_order_share")
                          if k in e}  # fmt: skip
                print(f"  {shares}, rttvar {e.get('rttvar_ms', 0):.1f} ms")


def tls_resumption(delay_ms: float) -> None:
    with LabNet(NetSettings(LinkSettings(delay_ms=delay_ms)), name="bench-tls") as net:
        endpoint = net.start_endpoint(FAST, tls=True)
        print(f"TLS resumption, RTT {2 * delay_ms:g} ms:")
        for version in ("1.3", "1.2"):
            ca = endpoint.ca_file or ""
            traces = _probe(net, endpoint.base_url, 20, cacert=ca, resume=True, tls_max=version)
            full = statistics.median(t["tls_ms"] for t in traces[0::2])
            resumed = statistics.median(t["tls_ms"] for t in traces[1::2])
            taken = sum(1 for t in traces[1::2] if t["tls_resumed"])
            print(f"  TLS {version}: full {full:.1f} ms, resumed {resumed:.1f} ms ({taken}/10)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, default=10.0, help="one-way delay")
    parser.add_argument("--loss", type=float, default=0.05, help="loss each way")
    args = parser.parse_args()
    black_holed_ipv6(args.delay_ms)
    lossy_link(args.delay_ms, args.loss)
    tls_resumption(args.delay_ms)


if __name__ == "__main__":
    main()
