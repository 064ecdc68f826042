"""Another run's measured values as the reference of healthy (``diagnose --reference-run``).

A user who knows an endpoint they are content with (another region, another model,
yesterday's run of this one) can hold a run against it instead of the profile latdoc
ships: each quantity that run measured becomes both the slow edge and the typical value
of a reference laid over the shipped profile, so every kind of degree is named by what
this run's typical request would save were it as fast as that run, and the quantities
that run did not measure stay the profile's. What is read:

- the DNS lookup, the round trip (TCP connect) and the TLS handshake of its new
  connections (the network step's medians);
- the time per output token of its streams (the median of :func:`token_tpot_ms`);
- the prefill's growth per 1K prompt tokens, from the fitted length curve between its
  shortest length and the seed's long prompt (or its longest, if shorter);
- the swing of identical requests' first tokens (p95 / p50);
- the client's own delay before a request left (median).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from latdoc.analysis.facts import gather_facts
from latdoc.analysis.kinds.input_length import LONG_REFERENCE_TOKENS
from latdoc.analysis.pace import token_tpot_ms
from latdoc.analysis.stats import median_of
from latdoc.errors import UsageError
from latdoc.i18n import Message
from latdoc.model import LengthCurve
from latdoc.records import Sample
from latdoc.reference import ReferenceProfile, healthy_reference, parse

__all__ = ["measured_reference"]


def measured_reference(
    samples: Sequence[Sample],
    *,
    run_id: str,
    date: str = "",
    base: ReferenceProfile | None = None,
) -> ReferenceProfile:
    """The reference run ``run_id``'s ``samples`` measured, laid over ``base`` (the
    shipped profile by default). A run that measured none of the quantities is a
    :class:`~latdoc.errors.UsageError`."""
    facts = gather_facts(samples, None, samples)
    ok = [t for t in facts.measured if t.ok]
    values: dict[str, float | None] = {
        "dns_ms": facts.network["dns_ms"],
        "rtt_ms": facts.network["rtt_ms"],
        "tls_handshake_ms": facts.network["tls_ms"],
        "tpot_ms": median_of(token_tpot_ms(t) for t in ok),
        "prefill_ms_per_1k": _prefill_per_1k(facts.curve),
        "ttft_p95_over_p50": facts.load["ttft_p95_over_p50"],
        "client_delay_ms": facts.client_delay_ms,
    }
    origin = f"run {run_id}"
    quantities: dict[str, Any] = {
        key: {
            "slow_edge": max(0.0, value),
            "typical": max(0.0, value),
            "why": f"measured by {origin}",
            "sources": [
                {
                    "cite": f"{origin}'s own measurement",
                    "by": origin,
                    "url": f"run:{run_id}",
                    "date": date,
                    "supports": "both",
                }
            ],
        }
        for key, value in values.items()
        if value is not None
    }
    if not quantities:
        raise UsageError(
            Message(
                "run {run_id} measured nothing a reference holds (no successful request): "
                "choose another with `latdoc runs`",
                run_id=run_id,
            )
        )
    data = {
        "profile": {
            "name": origin,
            "scope": f"the endpoint {origin} measured",
            "compiled": date,
        },
        "quantity": quantities,
    }
    return parse(data, origin=origin, base=base or healthy_reference())


def _prefill_per_1k(curve: LengthCurve | None) -> float | None:
    """The fitted growth per 1K prompt tokens from the shortest length measured to the
    seed's long prompt (or the longest, if shorter); None without two lengths."""
    if curve is None or len(curve.points) < 2:
        return None
    short = curve.points[0].prompt_tokens
    long = min(LONG_REFERENCE_TOKENS, curve.points[-1].prompt_tokens)
    if long <= short:
        return None
    growth = curve.predict_ms(long) - curve.predict_ms(short)
    return max(0.0, growth) / (long - short) * 1000
