"""Step 1 of the seed's method, the network rule, as one decision every report prints.

The rule compares a new connection's setup (DNS + TCP + TLS, medians over the network
step's new connections) with its first byte. A first byte at least
``SERVICE_RATIO`` times the setup ("first byte ≫ network time") puts the time in
the model service; a setup above ``SLOW_SETUP_MS`` (the policy's) with the first byte not that far
above it makes the network the main bottleneck. The rule names a bottleneck only where
the verdict agrees: the network only when the verdict is a network kind (its spec says
``network``), the model service only when it is not; otherwise the statement says what
the verdict found instead. Keep-alive's saving, when not measured, says why here too.
"""

from __future__ import annotations

from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds import spec_of
from latdoc.analysis.policy import SERVICE_RATIO, SLOW_SETUP_MS
from latdoc.i18n import N_, Message
from latdoc.model import NetworkBottleneck, NetworkCheck, Verdict

__all__ = ["network_check"]


def _ms(value: float) -> str:
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.1f} ms"


def network_check(facts: Facts, verdict: Verdict) -> NetworkCheck | None:
    """What the rule decided for this run and ``verdict``; None when the run had no
    network step."""
    n = facts.network
    if not (n["cold_n"] or n["warm_n"]):
        return None
    setup, first_byte = n["setup_ms"], n["cold_ttfb_ms"]
    bottleneck: NetworkBottleneck | None = None
    if setup is None or first_byte is None:
        statement = N_(
            "no request on a new connection was timed: the network rule cannot compare "
            "the setup with the first byte"
        )
    else:
        bottleneck, statement = _decision(setup, first_byte, verdict)
    return NetworkCheck(
        setup_ms=setup,
        first_byte_ms=first_byte,
        slow_setup_ms=SLOW_SETUP_MS,
        service_ratio=SERVICE_RATIO,
        bottleneck=bottleneck,
        statement=statement,
        keepalive_why=facts.keepalive_why,
    )


def _decision(
    setup: float, first_byte: float, verdict: Verdict
) -> tuple[NetworkBottleneck | None, str]:
    """The rule's comparison of a timed setup and first byte: the bottleneck it names
    (None where the verdict disagrees or neither limit is crossed), and the statement
    saying why, with the verdict's name where it decided against the rule."""
    network_verdict = spec_of(verdict.primary).network
    # The verdict's name, translated where the statement is shown (its spec marks it).
    verdict_name = Message(spec_of(verdict.primary).name)
    compared = Message(
        "first byte on a new connection {first_byte}, network setup {setup}",
        first_byte=_ms(first_byte),
        setup=_ms(setup),
    )
    limits = {"compared": compared, "ratio": SERVICE_RATIO, "slow": SLOW_SETUP_MS}
    if first_byte >= SERVICE_RATIO * setup:
        if network_verdict:
            return (
                None,
                Message(
                    "{compared}: the first byte is ≥ {ratio:.0f}× the setup, yet the "
                    "verdict, {verdict}, adds the most to a typical request",
                    verdict=verdict_name,
                    **limits,
                ),
            )
        return (
            "model service",
            Message(
                "{compared}: the first byte is ≥ {ratio:.0f}× the setup, so the time to "
                "the first byte is in the model service, not the network",
                **limits,
            ),
        )
    if setup > SLOW_SETUP_MS:
        if network_verdict:
            return (
                "network",
                Message(
                    "{compared}: the setup is > {slow:.0f} ms and the first byte "
                    "< {ratio:.0f}× it, so the network is the main bottleneck",
                    **limits,
                ),
            )
        return (
            None,
            Message(
                "{compared}: the setup is > {slow:.0f} ms and the first byte < {ratio:.0f}× "
                "it, but the verdict, {verdict}, adds more to a typical request, so the "
                "network is not the main bottleneck",
                verdict=verdict_name,
                **limits,
            ),
        )
    return (
        None,
        Message(
            "{compared}: the setup is ≤ {slow:.0f} ms and the first byte < {ratio:.0f}× "
            "it, so the rule names neither the network nor the model service",
            **limits,
        ),
    )
