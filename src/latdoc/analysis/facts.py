"""Step summaries computed once from a run's samples, for the attribution rules and the report.

The network step: medians of DNS, connect, TLS and setup over cold requests, and of
send, wait, TTFB and TTFT over warm ones; what keep-alive saves (the first byte of new
connections minus that of reused ones, of one prompt length and at least
``MIN_KEEPALIVE_N`` (the policy's) of each, else not measured and why; and the setup every new
connection pays) with 95% intervals from order statistics (from ``MIN_INTERVAL_N``
values a side). The load step: dispersion of same-length
TTFTs and the rise under concurrency, on server-side TTFT (from the request reaching the
wire: without the client's pool wait, its own delay and the connection's setup), and the
wait in the server's queue its ``: keep-alive`` comments tell, alone and together. The
length step: the fitted curve. And across all steps: stalls, failures, Retry-After, the client's
event-loop lag and its own delay before requests left, and what the path resent
(:mod:`.loss`): a stall on a connection that saw loss during the request is the path's,
kept apart from the server's, and on a lossy path the requests that saw loss are left
out of the load step's spread and rise. A stream's own pace (time per token, the first
event's tokens, the time spent reasoning) is read by :mod:`.pace`.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from latdoc.analysis.buffering import Burst, judged, stream_burst
from latdoc.analysis.length import fit_length_curve, length_points
from latdoc.analysis.loss import Loss, path_loss, request_counts
from latdoc.analysis.pace import WHOLE_TOKEN_SLACK as WHOLE_TOKEN_SLACK
from latdoc.analysis.pace import event_tokens as event_tokens
from latdoc.analysis.pace import first_event_decode_ms, thinking_ms
from latdoc.analysis.pace import steady_tpot_ms as steady_tpot_ms
from latdoc.analysis.pace import stream_tpot_ms as stream_tpot_ms
from latdoc.analysis.pace import streamed_tokens as streamed_tokens
from latdoc.analysis.pace import token_tpot_ms as token_tpot_ms
from latdoc.analysis.policy import MIN_KEEPALIVE_N
from latdoc.analysis.queue_comments import keepalive_facts
from latdoc.analysis.servertime import server_account
from latdoc.analysis.signals import dispersion, find_stalls
from latdoc.analysis.stats import difference_ci, median_interval, median_of
from latdoc.i18n import N_, Message
from latdoc.model import LengthCurve, ServerAccount
from latdoc.records import RequestTrace, Sample, Step
from latdoc.reference import ReferenceProfile, healthy_reference


@dataclass
class Facts:
    """Step summaries, computed once and shared by the rules and the report."""

    network: dict[str, float | None]
    load: dict[str, float | None]
    curve: LengthCurve | None
    stalls: list[tuple[int, float]]
    measured: list[RequestTrace]
    failed: Counter[str]
    retry_after_s: float | None
    long_reference_tokens: int | None
    """The "long prompt" of the input-length rule; None for the longest measured."""
    loop_lag_ms: float | None = None
    """Median over requests of the measuring client's worst event-loop lag."""
    client_delay_ms: float | None = None
    """Median over requests of the client's own delay before the request left."""
    bursts: list[Burst] = field(default_factory=list)
    """Streams that arrived held back by a buffering hop (:mod:`.buffering`)."""
    long_streams: int = 0
    """Successful streams long enough to tell whether they were held back."""
    server: ServerAccount | None = None
    """The requests as the server itself timed them (:mod:`.servertime`)."""
    reasoning: dict[str, float | None] = field(default_factory=dict)
    """The reasoning phase (:func:`reasoning_facts`); empty when no request reasoned."""
    keepalive_why: str | None = None
    """Why keep-alive's saving was not measured (:func:`keepalive_pairs`); None when it
    was, or when the network step has no request."""
    loss: Loss | None = None
    """What the path resent over the run's requests (:mod:`.loss`); None where the
    kernel's counters were not read."""
    path_stalls: list[tuple[int, float]] = field(default_factory=list)
    """Stalls in requests whose connection saw loss during them (a retransmission, a
    segment received out of order): the path's recovery from a lost segment, not the
    server's pause (not in :attr:`stalls`)."""
    concurrent: list[RequestTrace] = field(default_factory=list)
    """The load step's successful requests sent together at the run's concurrency (the
    user's): what their streams do when they decode side by side."""
    keepalive: dict[str, float | None] = field(default_factory=dict)
    """The server's queue as its ``: keep-alive`` comments tell it
    (:func:`~.queue_comments.keepalive_facts`); empty when no request carried one."""
    reference: ReferenceProfile = field(default_factory=healthy_reference)
    """What healthy is (:mod:`latdoc.reference`): a kind's excess is what the typical
    request would save were it at this profile's slow edge."""


def _network_facts(
    samples: Sequence[Sample], new_ttfb: Sequence[float], reused_ttfb: Sequence[float]
) -> dict[str, float | None]:
    every_cold = [s.trace for s in samples if s.step == Step.NETWORK and s.cold and s.trace.ok]
    # A cold request that offered an earlier TLS session measures resumption, beside the
    # full handshakes a client that keeps no session pays.
    cold = [t for t in every_cold if not t.tls_session_offered]
    resumed = [t for t in every_cold if t.tls_session_offered and t.tls_resumed]
    warm = [s.trace for s in samples if s.step == Step.NETWORK and not s.cold and s.trace.ok]
    closes = [t for t in warm if t.new_connection]
    saving_ci = difference_ci(new_ttfb, reused_ttfb)
    setups = [v for t in cold + closes if (v := t.setup_ms) is not None]
    setup_ci = median_interval(setups)
    rtt = median_of(t.handshake_ms for t in cold) or median_of(
        t.tcp_info.rtt_us / 1000 if t.tcp_info else None for t in warm
    )
    return {
        "dns_ms": median_of(t.dns_ms for t in cold),
        "connect_ms": median_of(t.connect_ms for t in cold),
        "tls_ms": median_of(t.tls_ms for t in cold),
        "proxy_connect_ms": median_of(t.proxy_connect_ms for t in cold),
        "setup_ms": median_of(t.setup_ms for t in cold),
        "rtt_ms": rtt,
        "send_ms": median_of(t.send_ms for t in warm),
        "wait_ms": median_of(t.wait_ms for t in warm),
        "ttfb_ms": median_of(t.ttfb_ms for t in warm),
        "ttft_ms": median_of(t.ttft_ms for t in warm),
        "first_event_ms": median_of(t.first_event_ms for t in warm),
        "first_tool_call_ms": median_of(t.first_tool_call_ms for t in warm),
        "tpot_ms": median_of(t.tpot_ms for t in warm),
        "total_ms": median_of(t.total_ms for t in warm),
        "cold_ttfb_ms": median_of(t.ttfb_ms for t in cold),
        "keepalive_saving_ms": _diff(median_of(new_ttfb), median_of(reused_ttfb)),
        "keepalive_saving_low_ms": saving_ci[0] if saving_ci else None,
        "keepalive_saving_high_ms": saving_ci[1] if saving_ci else None,
        "keepalive_new_n": float(len(new_ttfb)) if new_ttfb else None,
        "keepalive_reused_n": float(len(reused_ttfb)) if reused_ttfb else None,
        "new_connection_setup_ms": median_of(setups),
        "new_connection_setup_low_ms": setup_ci[0] if setup_ci else None,
        "new_connection_setup_high_ms": setup_ci[1] if setup_ci else None,
        "server_closes_connections": float(len(closes)) / len(warm) if warm else None,
        "queue_ms": median_of(t.queue_ms for t in warm),
        "cold_n": float(len(cold)),
        "tls_resumed_ms": median_of(t.tls_ms for t in resumed),
        "tls_resumed_n": float(len(resumed)) if resumed else None,
        "tls_resumption_refused_n": float(
            sum(1 for t in every_cold if t.tls_session_offered and t.tls_resumed is False)
        )
        or None,
        "warm_n": float(len(warm)),
    }


def keepalive_pairs(samples: Sequence[Sample]) -> tuple[list[float], list[float], str | None]:
    """The first bytes keep-alive's saving compares: of the successful requests sent alone
    (the network step's but the one that offered a TLS session, and the load step's
    sequential ones a run asked a length for) on a new connection and on a reused one,
    those of the one prompt length (asked for, else as counted) with the most of both,
    when it has at least ``MIN_KEEPALIVE_N`` (the policy's) of each; else two empty
    lists and why, in words."""
    timed = [
        s
        for s in samples
        if (
            s.step == Step.NETWORK
            or (s.step == Step.LOAD and s.concurrency == 1 and s.target_prompt_tokens is not None)
        )
        and s.trace.ok
        and s.trace.ttfb_ms is not None
        and not s.trace.tls_session_offered
    ]
    known = [s for s in timed if s.trace.new_connection is not None]
    if not timed:
        return [], [], None
    if not known:
        return [], [], N_("no request told whether it opened a connection")
    if all(s.trace.new_connection for s in known):
        if any(not s.cold for s in known):
            return [], [], N_("the server closed every connection: no request reused one")
        return [], [], N_("every request opened a new connection: none reused one")
    if not any(s.trace.new_connection for s in known):
        return [], [], N_("no request opened a new connection")
    by_length: dict[int, tuple[list[float], list[float]]] = {}
    for s in known:
        length = s.target_prompt_tokens or s.trace.prompt_tokens
        if length is not None and s.trace.ttfb_ms is not None:
            new, reused = by_length.setdefault(length, ([], []))
            (new if s.trace.new_connection else reused).append(s.trace.ttfb_ms)
    pairs = [(new, reused) for new, reused in by_length.values() if new and reused]
    if not pairs:
        return (
            [],
            [],
            N_("no new and reused connections carried requests of the same prompt length"),
        )
    new, reused = max(pairs, key=lambda p: (min(len(p[0]), len(p[1])), len(p[0]) + len(p[1])))
    if min(len(new), len(reused)) < MIN_KEEPALIVE_N:
        return (
            [],
            [],
            Message(
                "only {new} new and {reused} reused connections carried requests of the same "
                "prompt length (at least {least} of each are needed)",
                new=len(new),
                reused=len(reused),
                least=MIN_KEEPALIVE_N,
            ),
        )
    return new, reused, None


def server_ttft_ms(trace: RequestTrace) -> float | None:
    """What the server took to the first token: from the request reaching the wire
    (:attr:`RequestTrace.server_ttft_ms`), so neither the client's pool wait, its own
    delay nor the connection's setup is in it; without a wire mark, TTFT minus the
    pool wait and the setup."""
    server = trace.server_ttft_ms
    if server is not None:
        return server
    if trace.ttft_ms is None:
        return None
    return trace.ttft_ms - (trace.queue_ms or 0.0) - (trace.setup_ms or 0.0)


def alone_at_one_length(samples: Sequence[Sample]) -> list[Sample]:
    """The successful requests sent one at a time at the load step's prompt length: its
    sequential ones, and the network step's (cold and warm) where they asked for the same
    length. Alike but for the moment each was sent, their spread is the endpoint's own:
    pooled, a busy moment met by a few of them is an outlier among many rather than half
    of four. Requests that asked for no length (recorded traffic) pool nothing."""
    ok = [s for s in samples if s.trace.ok]
    seq = [s for s in ok if s.step == Step.LOAD and s.concurrency == 1]
    network = [s for s in ok if s.step == Step.NETWORK]
    asked = Counter(s.target_prompt_tokens for s in seq or network)
    if not asked:
        return []
    length = asked.most_common(1)[0][0]
    if length is None:
        return seq
    same = [s for s in network if s.target_prompt_tokens == length]
    return same + [s for s in seq if s.target_prompt_tokens == length]


def _load_facts(
    samples: Sequence[Sample], lost: frozenset[int] = frozenset()
) -> dict[str, float | None]:
    """``lost``: the ids of traces that saw loss on a lossy path, left out: their spread
    and their rise are the path's recovery, not the server's queue."""
    seq = [s.trace for s in alone_at_one_length(samples) if id(s.trace) not in lost]
    conc = [
        s
        for s in samples
        if s.step == Step.LOAD and s.concurrency > 1 and s.trace.ok and id(s.trace) not in lost
    ]
    seq_ttft = [v for t in seq if (v := _unthought_ttft_ms(t)) is not None]
    disp = dispersion(seq_ttft)
    seq_median = statistics.median(seq_ttft) if seq_ttft else None
    conc_ttft = [v for s in conc if (v := _unthought_ttft_ms(s.trace)) is not None]
    conc_median = statistics.median(conc_ttft) if conc_ttft else None
    conc_mean = statistics.fmean(conc_ttft) if conc_ttft else None
    slot = median_of(_slot_ms(t) for t in seq)
    waited = (
        sum(1 for v in conc_ttft if v - seq_median >= slot / 2) / len(conc_ttft)
        if conc_ttft and seq_median is not None and slot
        else None
    )
    return {
        "sequential_n": float(len(seq_ttft)),
        "ttft_p50_ms": disp.median if disp else seq_median,
        "ttft_cv": disp.cv if disp else None,
        "ttft_p95_over_p50": disp.p95_over_p50 if disp else None,
        "concurrency": float(max((s.concurrency for s in conc), default=0)) or None,
        "concurrent_ttft_p50_ms": conc_median,
        "concurrent_over_sequential": conc_median / seq_median
        if conc_median is not None and seq_median
        else None,
        "concurrent_ttft_mean_ms": conc_mean,
        "ttft_mean_ms": statistics.fmean(seq_ttft) if seq_ttft else None,
        "ttft_quiet_ms": statistics.median(sorted(seq_ttft)[: max(1, len(seq_ttft) // 2)])
        if seq_ttft
        else None,
        "client_queue_ms": median_of(s.trace.queue_ms for s in conc),
        "slot_ms": slot,
        "concurrent_waited_share": waited,
    }


def _slot_ms(trace: RequestTrace) -> float | None:
    """How long the server held ``trace``'s request: from its arrival to its last token,
    the request's time less what came before it reached the wire, its sending and a
    round trip (half on the way there, half on the way back)."""
    total = trace.total_ms
    if total is None:
        return None
    before = (trace.queue_ms or 0.0) + (trace.client_delay_ms or 0.0) + (trace.setup_ms or 0.0)
    held = total - before - (trace.send_ms or 0.0) - (trace.rtt_ms or 0.0)
    return held if held > 0 else None


def _unthought_ttft_ms(trace: RequestTrace) -> float | None:
    """Server-side TTFT to the first *token*: less the reasoning decoded unseen before it
    (hidden reasoning of varying length is the reasoning's spread, not a queue's) and
    less the decode of the tokens the first event carried beyond its first
    (:func:`first_event_decode_ms`: a server writing 1 to 8 tokens an event sends its
    first when the last of them is decoded, up to seven token times late)."""
    ttft = server_ttft_ms(trace)
    if ttft is None:
        return None
    ttft -= first_event_decode_ms(trace)
    thought = thinking_ms(trace)
    if thought is None or thought[1]:
        return max(0.0, ttft)
    return max(0.0, ttft - thought[0])


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def gather_facts(
    samples: Sequence[Sample],
    long_reference_tokens: int | None,
    by_step: Sequence[Sample] | None = None,
    server_metrics: Mapping[str, float | None] | None = None,
    server_metrics_source: str | None = None,
    reference: ReferenceProfile | None = None,
) -> Facts:
    """``by_step``, when given, holds the samples the network, length and load summaries
    read (recorded traffic relabelled by step); ``samples`` are the run's requests.
    ``server_metrics`` are the engine's counters over the run, read beside the server's
    own timing (:func:`~.servertime.server_account`). ``reference`` is what healthy is
    (the profile latdoc ships by default)."""
    steps = samples if by_step is None else by_step
    # A calibration request's latency is not the run's (it asks for one token), but its
    # failure is one: a run whose first request already failed is judged by it.
    measured = [s for s in samples if s.step != Step.CALIBRATION or not s.trace.ok]
    ok = [s.trace for s in measured if s.trace.ok]
    one_token = one_token_wait_ms(samples)
    bursts = {i: b for i, t in enumerate(ok) if (b := stream_burst(t, one_token)) is not None}
    # A held-back stream's gaps are the hop's flushes, not the server's pauses.
    every_stall = [
        (i, st.gap_ms) for i, t in enumerate(ok) if i not in bursts for st in find_stalls(t.itl_ms)
    ]
    lossy = {i for i, c in enumerate(request_counts(ok)) if c is not None and c.saw_loss}
    loss = path_loss(ok)
    lost = frozenset(id(ok[i]) for i in lossy) if loss is not None and loss.lossy else frozenset()
    curve = fit_length_curve(length_points(_length_pairs(steps, lost)))
    lengths = [s.trace for s in steps if s.step == Step.LENGTH and s.trace.ok]
    if curve is not None and lengths and all(t.prompt_tokens is None for t in lengths):
        curve = replace(curve, tokens_estimated=True)
    # On a lossy path a pause within one retransmission timeout is the path's too, where
    # its request counted no loss: a segment lost with nothing behind it was resent.
    recovery_ms = loss.recovery_ms if loss is not None and loss.lossy else 0.0
    on_path = [s for s in every_stall if s[0] in lossy or s[1] <= recovery_ms]
    stalls = [s for s in every_stall if s not in on_path]
    # A length the endpoint refused as sent (beyond its context window) is the probe's
    # own request over the limit, not a failure a user's request meets.
    failed = Counter(
        s.trace.error.code
        for s in measured
        if s.trace.error is not None
        and not (s.step == Step.LENGTH and s.trace.error.refused_as_sent)
    )
    retry = [_retry_after(s.trace) for s in measured]
    retry_after = max((r for r in retry if r is not None), default=None)
    new_ttfb, reused_ttfb, keepalive_why = keepalive_pairs(steps)
    return Facts(
        network=_network_facts(steps, new_ttfb, reused_ttfb),
        load=_load_facts(steps, lost),
        curve=curve,
        stalls=stalls,
        measured=[s.trace for s in measured],
        failed=failed,
        retry_after_s=retry_after,
        long_reference_tokens=long_reference_tokens,
        loop_lag_ms=median_of(s.loop_lag_ms for s in measured),
        client_delay_ms=median_of(s.trace.client_delay_ms for s in measured),
        bursts=list(bursts.values()),
        long_streams=sum(1 for t in ok if judged(t)),
        server=server_account(samples, server_metrics, server_metrics_source),
        reasoning=reasoning_facts(ok),
        keepalive_why=keepalive_why,
        loss=loss,
        path_stalls=on_path,
        concurrent=[
            s.trace for s in steps if s.step == Step.LOAD and s.concurrency > 1 and s.trace.ok
        ],
        keepalive=keepalive_facts(steps, alone_at_one_length(steps), lost),
        reference=reference or healthy_reference(),
    )


def one_token_wait_ms(samples: Sequence[Sample]) -> float | None:
    """The median wait from the end of sending to the first token of the calibration's
    requests, which ask for one token: the prefill and the way back, no stream to hold."""
    return median_of(
        (t.first_token_ns - t.sent_ns) / 1e6
        for s in samples
        if s.step == Step.CALIBRATION
        and (t := s.trace).ok
        and t.first_token_ns is not None
        and t.sent_ns is not None
    )


def _length_pairs(
    samples: Sequence[Sample], lost: frozenset[int] = frozenset()
) -> list[tuple[int, float]]:
    """(prompt tokens, TTFT from the wire) of the length step, one length per
    requested length (the endpoint's count of a calibrated prompt can differ by a token
    or two), and of the requests sent alone at the other steps' length: the curve's
    shortest point, with many requests. ``lost``: the ids of traces that saw loss on a
    lossy path, left out: a longer prompt crosses more segments, so on such a path it
    meets more losses, and their recovery would read as a prefill that grows."""
    by_target: dict[int, list[RequestTrace]] = {}
    for s in samples:
        t = s.trace
        if id(t) in lost:
            continue
        if s.step == Step.LENGTH and t.ok and t.ttft_ms is not None:
            target = s.target_prompt_tokens or t.prompt_tokens
            if target is not None:
                by_target.setdefault(target, []).append(t)
    if by_target:
        for s in alone_at_one_length(samples):
            target = s.target_prompt_tokens
            if target is not None and s.trace.ttft_ms is not None and id(s.trace) not in lost:
                by_target.setdefault(target, []).append(s.trace)
    pairs = []
    for target, traces in by_target.items():
        counted = [t.prompt_tokens for t in traces if t.prompt_tokens is not None]
        tokens = round(statistics.median(counted)) if counted else target
        pairs += [(tokens, v) for t in traces if (v := server_ttft_ms(t)) is not None]
    return pairs


def _retry_after(trace: RequestTrace) -> float | None:
    return None if trace.error is None else trace.error.retry_after_s


def reasoning_facts(traces: Sequence[RequestTrace]) -> dict[str, float | None]:
    """Medians of the reasoning phase over successful requests; empty when none reasoned.

    ``reasoning_ms`` is the median over every request (0 for one that did not think),
    so it is what thinking adds to a typical request; ``hidden_n`` counts requests whose
    thinking was not streamed, timed as tokens × steady time per token."""
    thought = [(t, thinking_ms(t)) for t in traces]
    reasoned = [(t, v) for t, v in thought if v is not None]
    if not reasoned:
        return {}
    return {
        "reasoning_n": float(len(reasoned)),
        "requests_n": float(len(traces)),
        "hidden_n": float(sum(1 for _, (_, seen) in reasoned if not seen)),
        "reasoning_ms": statistics.median(v[0] if v else 0.0 for _, v in thought),
        "ttfr_ms": median_of(t.ttfr_ms for t, _ in reasoned),
        "ttfa_ms": median_of(t.ttfa_ms for t, _ in reasoned),
        "ttft_ms": median_of(t.ttft_ms for t, _ in reasoned),
        "reasoning_tokens": median_of(
            float(t.reasoning_tokens) for t, _ in reasoned if t.reasoning_tokens is not None
        ),
        "answer_tokens": median_of(
            float(t.answer_tokens) for t, _ in reasoned if t.answer_tokens is not None
        ),
    }
