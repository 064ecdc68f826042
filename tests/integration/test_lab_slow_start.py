"""Slow start after idle, shown on the lab network: what ``latdoc system`` asks to turn off.

Two namespaces joined by the lab link with 25 ms of delay each way (a 50 ms round trip).
On one kept-alive connection a client fetches (or sends) 400 KB until two transfers in a
row take the same time (the congestion window open), then pauses 1.5 s (far longer than
the ~250 ms retransmission timeout) before each timed transfer. With
``net.ipv4.tcp_slow_start_after_idle=1`` in the sending namespace, the window falls back
to 10 packets and the transfer pays ~4 more round trips; with 0 it goes out as fast as
back to back. The sysctl is set per network namespace, so the host's own stays
untouched.

Both ends use cubic, Linux's default congestion control: bbr paces itself and the
kernel skips the restart for it (``latdoc system`` says so when the host runs bbr).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Iterator

import pytest

from latdoc import LabError
from latdoc.lab.net import SERVER_IP, LabNet, LinkSettings, NetSettings, require_root
from machine_noise import MachineNoise, spread_ms

try:
    require_root()
    ROOT_PROBLEM = ""
except LabError as exc:
    ROOT_PROBLEM = str(exc)

NAME = "latdoc-sys"
PORT = 9100
ONE_WAY_MS = 25.0
RTT_MS = 2 * ONE_WAY_MS
SIZE = 400_000
IDLE_S = 1.5
ROUNDS = 3

SERVER = r"""
import socket, sys
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
listener.bind((sys.argv[1], int(sys.argv[2])))
listener.listen(4)
listener.settimeout(120)
print("ready", flush=True)
for _ in range(8):
    conn, _ = listener.accept()
    conn.settimeout(30)
    stream = conn.makefile("rb")
    for line in stream:
        verb, size = line.split()
        if verb == b"GET":
            conn.sendall(b"x" * int(size))
        else:
            left = int(size)
            while left > 0:
                left -= len(stream.read1(min(left, 1 << 20)))
            conn.sendall(b"ok\n")
    conn.close()
"""

CLIENT = r"""
import json, socket, sys, time
host, port, verb, size, idle, rounds = sys.argv[1:7]
port, size, idle, rounds = int(port), int(size), float(idle), int(rounds)
conn = socket.socket()
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
conn.settimeout(30)
conn.connect((host, port))
body = b"x" * size

def transfer():
    start = time.perf_counter()
    if verb == "GET":
        conn.sendall(b"GET %d\n" % size)
        expected = size
    else:
        conn.sendall(b"PUT %d\n" % size + body)
        expected = 3
    got = 0
    while got < expected:
        chunk = conn.recv(1 << 20)
        if not chunk:
            raise SystemExit("the server closed the connection")
        got += len(chunk)
    return (time.perf_counter() - start) * 1000

# Until the window is open: two transfers in a row within 10 ms of each other (at most
# 8). Two alone left it still growing at times (355, then 253 ms, then 152 after the
# pause with the restart turned off), and the pause was charged for the growth.
warm = [transfer(), transfer()]
while len(warm) < 8 and abs(warm[-1] - warm[-2]) > 10:
    warm.append(transfer())
after_idle = []
for _ in range(rounds):
    time.sleep(idle)
    after_idle.append(transfer())
back_to_back = [transfer() for _ in range(rounds)]
print(json.dumps({"warm": warm, "after_idle": after_idle, "back_to_back": back_to_back}))
"""


@pytest.fixture(scope="module")
def network() -> Iterator[LabNet]:
    if ROOT_PROBLEM:
        pytest.skip(f"needs root for network namespaces: {ROOT_PROBLEM}")
    with LabNet(NetSettings(LinkSettings(delay_ms=ONE_WAY_MS)), name=NAME) as net:
        server = net.spawn_server(
            [sys.executable, "-c", SERVER, SERVER_IP, str(PORT)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        assert server.stdout.readline().strip() == "ready"
        yield net


def _timed(net: LabNet, verb: str, sender_ns: str, slow_start: int) -> dict[str, list[float]]:
    subprocess.run(
        ["ip", "netns", "exec", sender_ns, "sysctl", "-qw",
         f"net.ipv4.tcp_slow_start_after_idle={slow_start}"],
        check=True, timeout=10,
    )  # fmt: skip
    argv = [sys.executable, "-c", CLIENT, SERVER_IP, str(PORT), verb, str(SIZE)]
    argv += [str(IDLE_S), str(ROUNDS)]
    done = net.run_client(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    times: dict[str, list[float]] = json.loads(done.stdout)
    return times


@pytest.mark.parametrize(
    ("verb", "sender"),
    [("GET", "server"), ("PUT", "client")],
    ids=["long-response", "long-prompt"],
)
def test_slow_start_after_idle_costs_round_trips_after_a_pause(
    network: LabNet, verb: str, sender: str, machine_noise: MachineNoise
) -> None:
    sender_ns = network.server_ns if sender == "server" else network.client_ns
    on = _timed(network, verb, sender_ns, 1)
    off = _timed(network, verb, sender_ns, 0)
    idle_on = statistics.median(on["after_idle"])
    idle_off = statistics.median(off["after_idle"])
    back_on = statistics.median(on["back_to_back"])
    numbers = (
        f"{SIZE // 1000} KB {verb} after {IDLE_S:g} s idle, RTT {RTT_MS:g} ms: "
        f"slow_start_after_idle=1 {idle_on:.1f} ms (back to back {back_on:.1f} ms), "
        f"=0 {idle_off:.1f} ms; runs {json.dumps({'1': on, '0': off})}"
    )
    print(numbers)
    # The restart costs at least a round trip, and only after a pause. Each setting's
    # pause is costed against its own back-to-back transfers, so a machine busier during
    # one setting's runs than the other's slows both of that setting's kinds alike.
    cost_on = idle_on - back_on
    cost_off = idle_off - statistics.median(off["back_to_back"])
    assert cost_on - cost_off >= RTT_MS, numbers
    assert cost_on >= RTT_MS, numbers
    # Turned off, a transfer after a pause is as fast as back to back: within a round
    # trip on a quiet machine, widened by the noise and the spread of its own transfers,
    # never to two.
    spread = max(spread_ms(off["after_idle"]), spread_ms(off["back_to_back"]))
    assert cost_off < machine_noise.bound_ms(RTT_MS, 2 * RTT_MS, extra_ms=spread), numbers
