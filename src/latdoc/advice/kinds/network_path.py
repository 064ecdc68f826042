"""Remedies for ``network_path``: a lossy path gets where to look for the loss and a
congestion control that keeps its rate through it, a long round trip gets a nearer
region, a slow upload the client host's TCP settings and a shorter prompt, and a
gateway that says it adds time a lighter gateway or a direct route. A gateway that
does not say so gets how to measure it (the gateway against the upstream direct),
never a number. A proxy whose ``CONNECT`` is slow gets a bypass for the API's host, a
nearer proxy and connections kept alive through its tunnel, each with the ``latdoc
verify`` that measures it.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from latdoc.advice import keys
from latdoc.advice._common import TRIMMED_PROMPT_EFFECTS
from latdoc.advice._sizing import SELF_PACED, trim_window
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.advice.verify import (
    VERIFY_DIRECT,
    VERIFY_ENDPOINT,
    VERIFY_KEEPALIVE,
    VERIFY_PROXY,
    VERIFY_TRIM,
    checked,
    verify_command,
)
from latdoc.analysis.policy import HIGH_RTT_MS
from latdoc.i18n import N_, Message
from latdoc.model import Diagnosis, Effects, Finding, Kind, Remedy, RunContext

__all__ = ["BUILDER", "network_path_remedies"]


_PROXY_EVIDENCE = frozenset({"proxy_connect_ms", "proxy_tcp_ms"})


def network_path_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    shares = [f.evidence.get(k) for k in ("retransmit_share", "out_of_order_share")]
    if any(s is not None for s in shares):
        yield _lossy_path(f, max(s for s in shares if s is not None))
        if set(f.evidence) <= _LOSS_KEYS:
            return  # the loss alone: the path's other remedies address nothing here
    told = "gateway_ms" in f.evidence
    proxied = "proxy_connect_ms" in f.evidence
    if told:
        yield _gateway(f, ctx)
    if proxied:
        yield from _proxy(f, ctx)
    if (told or proxied) and set(f.evidence) <= {"gateway_ms", *_PROXY_EVIDENCE, *_LOSS_KEYS}:
        return  # a gateway or proxy alone: the path's other remedies address nothing here
    rtt = f.evidence.get("rtt_ms")
    if rtt is not None and rtt > HIGH_RTT_MS:
        yield Remedy(
            keys.NEARER_REGION,
            N_("Use the nearest region or endpoint"),
            f.kind,
            Message(
                "The round trip is {rtt:.0f} ms here. Set base_url to the endpoint nearest "
                "the client (openai.AsyncOpenAI(base_url=...)) or run the client next to the "
                "service.",
                rtt=rtt,
            ),
            None,
            verify_command=verify_command(ctx, VERIFY_ENDPOINT, alt="URL2"),
        )
    slow_start = ctx.tcp_settings.get("net.ipv4.tcp_slow_start_after_idle")
    self_paced = ctx.host is not None and ctx.host.congestion_control in SELF_PACED
    if slow_start != 0 and not self_paced:
        yield Remedy(
            keys.TCP_SETTINGS,
            N_("No TCP slow start after idle on the client host"),
            f.kind,
            N_(
                "A long prompt sent after a pause then goes out at the full rate:\n"
                "  sysctl -w net.ipv4.tcp_slow_start_after_idle=0"
            ),
            None,
            how_to_measure=N_(
                "run `latdoc diagnose` again after the change and compare the send time of "
                "the long prompts"
            ),
        )
    if f.evidence.get("long_prompt_send_ms") and d.length is not None:
        yield _send_less(f, ctx, d.length.points[-1].prompt_tokens)
    if not told and not proxied:
        yield _gateway(f, ctx)


BUILDER = RemedyBuilder(
    Kind.NETWORK_PATH,
    network_path_remedies,
    {
        keys.LOSSY_PATH: Effects(),
        keys.PROXY_BYPASS: Effects(),
        keys.PROXY_KEEP_ALIVE: Effects(),
        keys.NEARER_PROXY: Effects(),
        keys.NEARER_REGION: Effects(),
        keys.GATEWAY: Effects(),
        keys.TCP_SETTINGS: Effects(),
        keys.TRIM_WINDOW: TRIMMED_PROMPT_EFFECTS,
    },
)

_LOSS_KEYS = frozenset({
    "retransmitted_segments", "sent_segments", "out_of_order_segments", "received_segments",
    "losing_requests", "counted_requests", "path_stall_ms", "retransmit_share",
    "out_of_order_share", "rttvar_ms", "kernel_rtt_ms",
})  # fmt: skip


def _lossy_path(f: Finding, worst: float) -> Remedy:
    """Where to look for the path's loss, told with ``worst``, the larger of its
    retransmitted and out-of-order shares."""
    return Remedy(
        keys.LOSSY_PATH,
        N_("Find where the path loses packets"),
        f.kind,
        Message(
            "Up to {share:.1%} of the segments were lost or arrived behind a lost one. "
            "Loss is on the path, not the server: try a wired link instead of Wi-Fi, "
            "another network or without the VPN, and `mtr` to the host to see which hop "
            "drops; on the client host a congestion control that does not halve its rate "
            "at each loss helps the upload:\n"
            "  sysctl -w net.ipv4.tcp_congestion_control=bbr",
            share=worst,
        ),
        None,
        how_to_measure=N_(
            "run `latdoc diagnose` again on the other network: the shares "
            "(retransmit_share, out_of_order_share) of the network-path finding"
        ),
    )


def _send_less(f: Finding, ctx: RunContext, longest: int) -> Remedy:
    """A slow uplink sends a shorter prompt: the run's longest prompt trimmed to its
    window, verified as the input-length remedy is."""
    command = verify_command(ctx, VERIFY_TRIM, **{"from": longest, "to": trim_window(longest)})
    return Remedy(
        keys.TRIM_WINDOW,
        N_("Send less: trim the prompt to what the answer needs"),
        f.kind,
        checked(
            N_(
                "The uplink is slow for long prompts: keep the last turns only, or "
                "compress the history (see the input-length remedies)."
            ),
            command,
        ),
        None,
        verify_command=command,
    )


def _proxy(f: Finding, ctx: RunContext) -> Iterator[Remedy]:
    tunnel = f.evidence["proxy_connect_ms"]
    host = urlsplit(ctx.endpoint).hostname or "API_HOST"
    yield Remedy(
        keys.PROXY_BYPASS,
        N_("Reach the API's host direct: bypass the proxy for it"),
        f.kind,
        Message(
            "The proxy takes {ms:.0f} ms to open each tunnel. Where policy allows the host "
            "direct, list it in NO_PROXY:\n  export NO_PROXY={host}\n"
            "(httpx and the openai SDK read it, as curl does), or give this client no proxy: "
            "httpx.AsyncClient(trust_env=False).",
            ms=tunnel,
            host=host,
        ),
        None,
        verify_command=verify_command(ctx, VERIFY_DIRECT),
        how_to_measure=N_(
            "latdoc verify --remedy direct: the same requests through the proxy and direct, "
            "each on a new connection"
        ),
    )
    yield Remedy(
        keys.PROXY_KEEP_ALIVE,
        N_("Keep connections alive through the proxy's tunnel"),
        f.kind,
        N_(
            "A connection kept alive pays the CONNECT once: share one client "
            "(httpx.AsyncClient / openai.AsyncOpenAI) for the process, and keep its pool's "
            "idle connections longer than the gaps between requests "
            "(httpx.Limits(keepalive_expiry=...)), below the proxy's own idle timeout."
        ),
        None,
        verify_command=verify_command(ctx, VERIFY_KEEPALIVE),
    )
    yield Remedy(
        keys.NEARER_PROXY,
        N_("Use a proxy nearer the client, or a lighter one"),
        f.kind,
        N_(
            "A proxy on the client's own network or region opens its tunnel in a few "
            "milliseconds; one far away, or busy checking each CONNECT, adds its round trips "
            "to every new connection."
        ),
        None,
        verify_command=verify_command(ctx, VERIFY_PROXY, alt_proxy="PROXY_URL"),
    )


def _gateway(f: Finding, ctx: RunContext) -> Remedy:
    gateway = f.evidence.get("gateway_ms")
    measure = verify_command(ctx, VERIFY_ENDPOINT, alt="UPSTREAM_URL")
    if gateway is not None:
        return Remedy(
            keys.GATEWAY,
            N_("Lighten the gateway, or call the model direct on the hot path"),
            f.kind,
            Message(
                "The gateway says it adds {ms:.0f} ms before each request reaches the model. "
                "Turn off the pre-call hooks and callbacks the path does not need (logging, "
                "guardrails, budget and key checks done per request), run the gateway next "
                "to the client or the model, or send latency-critical requests to the "
                "upstream's URL direct.",
                ms=gateway,
            ),
            None,
            verify_command=measure,
            how_to_measure=N_(
                "the gateway's own x-litellm-overhead-duration-ms header, per request; the "
                "verify command times the gateway against the upstream direct"
            ),
        )
    return Remedy(
        keys.GATEWAY,
        N_("If a gateway or proxy stands before the model, measure what it adds"),
        f.kind,
        N_(
            "This endpoint does not say what a gateway in front of the model adds, so its "
            "time is not told apart from the rest of the path here. Time the gateway against "
            "the upstream it routes to, called direct, with the same model and prompt."
        ),
        None,
        verify_command=measure,
        how_to_measure=N_(
            "latdoc verify --remedy endpoint: the gateway's URL against the upstream's URL "
            "direct; the difference in time to first token is the gateway's"
        ),
    )
