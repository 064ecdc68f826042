"""``network_path``: the way to the endpoint itself, the round trip and the upload of
long prompts, each with its threshold. Its share is one round trip plus the time to
upload a long prompt.
"""

from __future__ import annotations

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.policy import HIGH_RTT_MS
from latdoc.analysis.stats import median_of
from latdoc.model import Finding, Kind

__all__ = ["HIGH_RTT_MS", "SLOW_UPLOAD_MS", "SPEC", "network_path"]

SLOW_UPLOAD_MS = 200.0


def network_path(f: Facts) -> Finding | None:
    n = f.network
    rtt = n["rtt_ms"]
    upload = median_of(t.send_ms for t in f.measured if t.ok and (t.request_bytes or 0) > 20_000)
    cold_n = int(n["cold_n"] or 0)
    evidence = {k: v for k, v in n.items() if v is not None and k in {"rtt_ms", "connect_ms"}}
    if upload is not None:
        evidence["long_prompt_send_ms"] = upload
    if rtt is not None and rtt > HIGH_RTT_MS:
        return Finding(
            Kind.NETWORK_PATH,
            "High round-trip time to the endpoint",
            f"TCP connect (one round trip) {rtt:.0f} ms > {HIGH_RTT_MS:.0f} ms: far region "
            "or a slow path",
            evidence,
            share_ms=rtt + (upload or 0.0),
            confidence=confidence(cold_n, rtt / HIGH_RTT_MS - 1),
        )
    if upload is not None and upload > SLOW_UPLOAD_MS:
        return Finding(
            Kind.NETWORK_PATH,
            "Slow upload of long prompts",
            f"sending a long prompt took {upload:.0f} ms > {SLOW_UPLOAD_MS:.0f} ms "
            "(until the server acknowledged it): the uplink's bandwidth",
            evidence,
            share_ms=upload + (rtt or 0.0),
            confidence=confidence(3, upload / SLOW_UPLOAD_MS - 1),
        )
    return None


SPEC = KindSpec(
    Kind.NETWORK_PATH,
    "Network path",
    "round-trip time and bandwidth to the server",
    colour="#e6843f",
    rule=network_path,
    before_first_token=True,
    network=True,
)
