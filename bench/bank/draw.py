"""Seeded draws of scenarios: a healthy endpoint, then none, one or two causes injected.

Each scenario starts from a healthy endpoint, then gets its causes, each ``clear``
(well beyond the healthy bound) or ``borderline`` (beyond it), and a noise level; the
realistic draw adds causes ``above`` the bound (just past it) and ``below`` it (just
short of it). Where the reference profile (``latdoc.reference``) defines the quantity,
the healthy endpoint's value is drawn from the spread of healthy endpoints it cites
(:func:`spread`: its typical value as the median, its slow edge as the 90th
percentile, never more than :data:`BEYOND` × the edge), and a cause's strengths are
multiples of the edge; elsewhere from MISSION.md's healthy ranges (fast DNS, a near
region, slots to spare). The label says what was drawn; the truth
(:mod:`bank.counterfactual`) is computed from the resulting model, not from it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from statistics import NormalDist

import numpy as np

from bank.scenario import TLS_WORK_MS, Scenario
from latdoc.reference import healthy_reference

PROFILE = healthy_reference()
BEYOND = 1.05
"""A healthy endpoint's value is drawn up to this many times the profile's slow edge:
the edge is the 90th percentile of healthy endpoints, not a wall."""
_Z90 = NormalDist().inv_cdf(0.9)

NOISE = {"low": 0.03, "mid": 0.10, "high": 0.25}
INTENSITIES = ("clear", "borderline")
"""The plain draw's strengths of a cause; the realistic draw adds ``below``."""
Inject = Callable[[Scenario, np.random.Generator, bool], Scenario]


def spread(rng: np.random.Generator, key: str) -> float:
    """A healthy endpoint's value of the profile's quantity ``key``: log-normal, with the
    typical value as its median and the slow edge as its 90th percentile (the 10th, for
    a rate), drawn no further than :data:`BEYOND` past the edge."""
    q = PROFILE[key]
    sigma = abs(math.log(q.slow_edge / q.typical)) / _Z90
    dist = NormalDist(math.log(q.typical), sigma)
    if q.slower == "higher":
        low, high = 0.0, dist.cdf(math.log(q.slow_edge * BEYOND))
    else:
        low, high = dist.cdf(math.log(q.slow_edge / BEYOND)), 1.0
    u = min(max(float(rng.uniform(low, high)), 1e-12), 1 - 1e-12)
    return math.exp(dist.inv_cdf(u))


def healthy(seed: int, rng: np.random.Generator, noise: str) -> Scenario:
    return Scenario(
        seed=seed,
        dns_ms=float(rng.uniform(2, 60)),
        rtt_ms=float(rng.uniform(5, 60)),
        tls=bool(rng.random() < 0.85),
        tls_extra_ms=float(rng.uniform(0, 40)),
        prefill_a_ms=float(rng.uniform(60, 300)),
        prefill_b_ms=spread(rng, "prefill_ms_per_1k") / 1000,
        prefill_c_ms=0.0,
        tpot_ms=spread(rng, "tpot_ms"),
        output_tokens=int(rng.choice([32, 32, 32, 64, 128])),
        slots=int(rng.choice([8, 16, 32, 64])),
        concurrency=int(rng.choice([4, 4, 4, 8])),
        jitter=NOISE[noise],
    )


def _between(
    rng: np.random.Generator, clear: bool, strong: tuple[float, float], near: tuple[float, float]
) -> float:
    return float(rng.uniform(*(strong if clear else near)))


def slow_dns(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    return replace(s, dns_ms=_between(rng, clear, (400, 1500), (220, 320)))


def slow_tls(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    """A server whose handshake work is 7-21× (clear) or 2-4× (borderline) the most a
    healthy one spends beyond its round trips."""
    return replace(s, tls=True, tls_extra_ms=_tls_extra(rng, *((7, 21) if clear else (2, 4))))


def _tls_extra(rng: np.random.Generator, low: float, high: float) -> float:
    """The bank's ``tls_extra_ms`` at ``low`` to ``high`` times the profile's most a
    healthy handshake spends beyond its two round trips (the bank's own handshake work
    of :data:`~bank.scenario.TLS_WORK_MS` is part of it)."""
    return PROFILE.tls_work_edge_ms * float(rng.uniform(low, high)) - TLS_WORK_MS


def closes(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    dns = _between(rng, clear, (60, 180), (5, 30))
    return replace(s, server_closes=True, dns_ms=dns, tls=clear or s.tls)


def far(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    return replace(s, rtt_ms=_between(rng, clear, (160, 400), (110, 140)))


def _edge(key: str, rng: np.random.Generator, low: float, high: float) -> float:
    """Between ``low`` and ``high`` times the profile's slow edge of ``key``."""
    return PROFILE.edge(key) * float(rng.uniform(low, high))


ABOVE_EDGE, BELOW_EDGE = (1.0, 1.3), (0.7, 0.97)
"""A cause just past the profile's slow edge, and just short of it, as multiples of it."""


def _growing(s: Scenario, rng: np.random.Generator, per_1k: float) -> Scenario:
    """Prefill that grows from 128 to 2048 tokens as ``per_1k`` ms per 1K tokens would,
    part linear, part quadratic."""
    growth = per_1k * (2048 - 128) / 1000
    linear = float(rng.uniform(0, 1))
    b = linear * growth / (2048 - 128)
    c = (1 - linear) * growth / (2048**2 - 128**2)
    return replace(s, prefill_b_ms=b, prefill_c_ms=c)


def long_input(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    """Prefill that grows from 128 to 2048 tokens 8–40× (clear) or 2–4× (borderline) as
    fast as the profile's slow edge, part linear, part quadratic."""
    return _growing(s, rng, _edge("prefill_ms_per_1k", rng, *((8, 40) if clear else (2, 4))))


def burst_queue(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    slots = 1 if clear else max(1, s.concurrency // 2)
    return replace(s, slots=slots)


def busy(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    return replace(
        s,
        busy_share=_between(rng, clear, (0.2, 0.4), (0.08, 0.15)),
        busy_ms=_between(rng, clear, (1000, 4000), (250, 500)),
    )


def slow_decode(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    """Decode 2.6–6.6× (clear, 80–200 ms a token) or 1.3–2× (borderline) the profile's
    slow edge."""
    return replace(s, tpot_ms=_edge("tpot_ms", rng, *((2.6, 6.6) if clear else (1.3, 2.0))))


def stalls(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    return replace(
        s,
        stall_share=_between(rng, clear, (0.3, 0.8), (0.12, 0.25)),
        stall_ms=_between(rng, clear, (1000, 4000), (250, 500)),
    )


def errors(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    code = str(rng.choice(["http:429", "http:503", "timeout", "stream_broken"]))
    share = _between(rng, clear, (0.3, 0.5), (0.08, 0.15))
    return replace(s, error_share=share, error_code=code)


def slow_upload(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    """An uplink 16-54× (clear) or 2-4× (borderline) slower than the profile's slowest
    healthy one (slow start's round trips come on top of its bandwidth's time)."""
    return replace(s, uplink_bytes_per_ms=_uplink(rng, *((16, 54) if clear else (2, 4))))


def _uplink(rng: np.random.Generator, low: float, high: float) -> float:
    """An uplink (bytes per ms) ``low`` to ``high`` times slower than the profile's
    slowest healthy one (``upload_mbit_s``; 125 bytes per ms a Mbit/s)."""
    return PROFILE.edge("upload_mbit_s") * 125.0 / float(rng.uniform(low, high))


def server_timing(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    """A server that tells its own timing: clear, a ``Server-Timing`` header with its
    queue and prefill; borderline, llama.cpp's prompt and predicted times (no queue) or
    only the provider's processing time. It adds no latency."""
    told = "server-timing" if clear else str(rng.choice(["llama.cpp", "openai-processing"]))
    return replace(s, server_timing=told)


def reasoning(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    """A model that reasons ``think`` ms before its answer, its reasoning hidden (only
    counted in the usage) or streamed."""
    think = _between(rng, clear, (600, 4000), (130, 200))
    return replace(
        s,
        reasoning_tokens=max(1, round(think / s.tpot_ms)),
        reasoning_spread=float(rng.uniform(0.1, 0.4)),
        reasoning_shown=bool(rng.random() < 0.4),
    )


def buffering(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    """A hop that holds the stream: clear, the whole response or a 4-8 KB buffer (32-64
    events of ~120 bytes); borderline, the smallest buffer seen, 2 KB (16-20 events)."""
    if clear and rng.random() < 0.5:
        return replace(s, buffer_whole=True)
    events = rng.choice([32, 48, 64]) if clear else rng.integers(16, 21)
    return replace(s, buffer_events=int(events))


def client_delay(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    """A client whose busy event loop holds each request before it leaves: 2–5× (clear)
    or 1.3–2× (borderline) the profile's slow edge."""
    return replace(
        s, client_delay_ms=_edge("client_delay_ms", rng, *((2, 5) if clear else (1.3, 2.0)))
    )


CAUSES: dict[str, tuple[Inject, float]] = {
    "slow_dns": (slow_dns, 1.0),
    "slow_tls": (slow_tls, 0.7),
    "closes": (closes, 1.0),
    "far": (far, 1.5),
    "long_input": (long_input, 2.0),
    "burst_queue": (burst_queue, 1.0),
    "busy": (busy, 1.0),
    "slow_decode": (slow_decode, 1.5),
    "stalls": (stalls, 1.5),
    "errors": (errors, 0.5),
    "slow_upload": (slow_upload, 0.7),
    "server_timing": (server_timing, 1.0),
    "reasoning": (reasoning, 1.0),
    "buffering": (buffering, 1.0),
    "client_delay": (client_delay, 0.7),
}
"""Each cause and how often it is drawn, relative to the others."""
MIX = {0: 0.15, 1: 0.5, 2: 0.35}
"""How many causes a scenario gets: none, one or two."""


def _dns_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, dns_ms=float(rng.uniform(140, 195)))


def _tls_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, tls=True, tls_extra_ms=_tls_extra(rng, *BELOW_EDGE))


def _far_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, rtt_ms=float(rng.uniform(70, 97)))


def _length_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    """Prefill growing to 2,048 tokens just short of the profile's slow edge."""
    return _growing(s, rng, _edge("prefill_ms_per_1k", rng, *BELOW_EDGE))


def _busy_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(
        s, busy_share=float(rng.uniform(0.03, 0.06)), busy_ms=float(rng.uniform(150, 400))
    )


def _burst_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, slots=max(1, s.concurrency - 1))


def _decode_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, tpot_ms=_edge("tpot_ms", rng, *BELOW_EDGE))


def _stalls_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, stall_share=float(rng.uniform(0.1, 0.4)), stall_ms=float(rng.uniform(70, 97)))


def _errors_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    code = str(rng.choice(["http:429", "http:503", "timeout", "stream_broken"]))
    return replace(s, error_share=float(rng.uniform(0.01, 0.045)), error_code=code)


def _upload_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, uplink_bytes_per_ms=_uplink(rng, *BELOW_EDGE))


def _reasoning_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    think = float(rng.uniform(70, 97))
    return replace(
        s,
        reasoning_tokens=max(1, round(think / s.tpot_ms)),
        reasoning_spread=float(rng.uniform(0.1, 0.4)),
        reasoning_shown=bool(rng.random() < 0.4),
    )


def _buffering_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    """A buffer of a few events, holding the first token back less than 100 ms."""
    events = max(2, int(rng.uniform(0.7, 0.97) * 100 / s.tpot_ms) + 1)
    return replace(s, buffer_events=events)


def _client_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, client_delay_ms=_edge("client_delay_ms", rng, *BELOW_EDGE))


def _closes_below(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    """A server that closes connections on a quick path: the setup every request pays
    is small."""
    return replace(s, server_closes=True, dns_ms=float(rng.uniform(2, 10)), tls=False)


def _told_below(s: Scenario, rng: np.random.Generator, clear: bool) -> Scenario:
    return server_timing(s, rng, clear)


BELOW: dict[str, Inject] = {
    "slow_dns": _dns_below,
    "slow_tls": _tls_below,
    "far": _far_below,
    "long_input": _length_below,
    "busy": _busy_below,
    "burst_queue": _burst_below,
    "slow_decode": _decode_below,
    "stalls": _stalls_below,
    "errors": _errors_below,
    "slow_upload": _upload_below,
    "reasoning": _reasoning_below,
    "buffering": _buffering_below,
    "client_delay": _client_below,
    "closes": _closes_below,
    "server_timing": _told_below,
}
"""Each cause of degree just short of the bound the reference profile (its slow edge),
MISSION.md or its rule gives it (0.7 to 0.97 of it): the zone below a threshold, where
a rule must stay quiet unless the cause matters all the same."""


def _length_above(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return _growing(s, rng, _edge("prefill_ms_per_1k", rng, *ABOVE_EDGE))


def _decode_above(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, tpot_ms=_edge("tpot_ms", rng, *ABOVE_EDGE))


def _client_above(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, client_delay_ms=_edge("client_delay_ms", rng, *ABOVE_EDGE))


def _dns_above(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, dns_ms=_edge("dns_ms", rng, *ABOVE_EDGE))


def _tls_above(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, tls=True, tls_extra_ms=_tls_extra(rng, *ABOVE_EDGE))


def _upload_above(s: Scenario, rng: np.random.Generator, _: bool) -> Scenario:
    return replace(s, uplink_bytes_per_ms=_uplink(rng, *ABOVE_EDGE))


ABOVE: dict[str, Inject] = {
    "long_input": _length_above,
    "slow_decode": _decode_above,
    "client_delay": _client_above,
    "slow_dns": _dns_above,
    "slow_tls": _tls_above,
    "slow_upload": _upload_above,
}
"""Each cause whose bound is the reference profile's slow edge, just past it (1 to 1.3
times it): past healthy, material or not by what it costs the user's request. A cause
with no edge of the profile is drawn ``borderline`` instead."""


REALISTIC_INTENSITIES = {"clear": 0.4, "borderline": 0.25, "above": 0.15, "below": 0.2}
WORKLOAD_PROMPTS = {128: 0.25, 512: 0.2, 2048: 0.3, 8192: 0.25}
"""The user's typical prompt, drawn per scenario."""
QUIRK_ODDS = {
    "multi_token_events": 0.12,
    "rare_errors": 0.08,
    "keepalive_comments": 0.08,
    "busy_spells": 1.0,
    "drift": 0.08,
    "batch_slowdown": 0.1,
}
"""How often each quirk is drawn (busy spells: whenever there are busy periods)."""
HEAVY_TAIL_ODDS = 0.1


def _quirks(s: Scenario, rng: np.random.Generator) -> Scenario:
    """The realistic draw's quirks and heavy tail, on ``rng`` alone."""
    quirks = []
    for name, odds in QUIRK_ODDS.items():
        if rng.random() >= odds:
            continue
        if name == "multi_token_events":
            s = replace(s, tokens_per_event=int(rng.choice([4, 8, 0])))
        elif name == "rare_errors":
            if s.error_share > 0:
                continue
            code = str(rng.choice(["http:429", "http:503", "timeout", "stream_broken"]))
            s = replace(s, error_share=float(rng.uniform(0.005, 0.045)), error_code=code)
        elif name == "keepalive_comments":
            if s.buffer_whole:
                continue
            s = replace(s, keepalive_comments=True)
        elif name == "busy_spells":
            if s.busy_share <= 0:
                continue
            s = replace(s, spell_s=float(rng.uniform(2, 10)))
        elif name == "drift":
            s = replace(s, drift=float(rng.choice([-1, 1]) * rng.uniform(0.1, 0.3)))
        elif name == "batch_slowdown":
            s = replace(s, batch_slowdown=float(rng.uniform(0.02, 0.1)))
        quirks.append(name)
    if rng.random() < HEAVY_TAIL_ODDS:
        s = replace(
            s, tail_share=float(rng.uniform(0.02, 0.1)), tail_alpha=float(rng.uniform(1.8, 3))
        )
    return replace(s, quirks=tuple(quirks))


def draw(
    seed: int,
    causes: tuple[str, ...] | None = None,
    intensity: str | None = None,
    noise: str | None = None,
    *,
    realistic: bool = False,
) -> Scenario:
    """One scenario; what is not given is drawn from ``seed``.

    ``realistic``: also draw, on a stream of the seed's own (so the scenario's healthy
    endpoint and the names of its causes are those of the plain draw), the user's
    workload (their typical prompt), causes just past the profile's slow edge
    (:data:`ABOVE`) and just short of their thresholds (:data:`BELOW`) beside clear and
    borderline ones, the quirks of :data:`QUIRK_ODDS`
    and a heavy tail."""
    rng = np.random.default_rng([seed, 1])
    extra = np.random.default_rng([seed, 3])
    noise = noise or str(rng.choice(list(NOISE), p=[0.4, 0.4, 0.2]))
    if causes is None:
        count = int(rng.choice(list(MIX), p=list(MIX.values())))
        names = list(CAUSES)
        weights = np.array([w for _, w in CAUSES.values()])
        causes = tuple(
            str(c) for c in rng.choice(names, count, replace=False, p=weights / weights.sum())
        )
    s = healthy(seed, rng, noise)
    if realistic:
        # The world's uplinks, on a stream of their own (the plain draw's is 100 Mbit/s).
        world = np.random.default_rng([seed, 5])
        s = replace(s, uplink_bytes_per_ms=spread(world, "upload_mbit_s") * 125.0)
    words = []
    for cause in causes:
        strength = intensity or str(rng.choice(INTENSITIES, p=[0.7, 0.3]))
        if realistic and intensity is None:
            strength = str(
                extra.choice(list(REALISTIC_INTENSITIES), p=list(REALISTIC_INTENSITIES.values()))
            )
        if strength == "below":
            s = BELOW[cause](s, rng, False)
        elif strength == "above":
            s = ABOVE[cause](s, rng, False) if cause in ABOVE else CAUSES[cause][0](s, rng, False)
        else:
            s = CAUSES[cause][0](s, rng, strength == "clear")
        words.append(f"{cause}({strength})")
    if realistic:
        prompt = int(extra.choice(list(WORKLOAD_PROMPTS), p=list(WORKLOAD_PROMPTS.values())))
        s = _quirks(replace(s, prompt_tokens=prompt), extra)
    return replace(
        s,
        label=" + ".join(words) or "healthy",
    )


def draw_many(n: int, seed: int, *, realistic: bool = False) -> list[Scenario]:
    """``n`` scenarios of the default mix, reproducible from ``seed``."""
    return [draw(seed * 1_000_003 + i, realistic=realistic) for i in range(n)]
