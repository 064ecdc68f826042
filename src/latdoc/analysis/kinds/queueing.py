"""``queueing``: a server-side wait that follows load, not length.

The client's numbers fire the rule when the time to first token of same-length
requests rises under concurrency (≥ :data:`QUEUE_LOAD_RATIO`× and
+:data:`QUEUE_MIN_MS`) at the run's ``--concurrency``, the user's own, or swings
between identical requests (CV ≥ :data:`QUEUE_CV` or p95/p50 ≥ :data:`QUEUE_P95_P50`,
read from :data:`MIN_SWING_N` requests sent alone or more). TTFT here counts from the
request reaching the wire. Under concurrency it reads the burst's mean TTFT where it
is above its median: with one slot fewer than requests, three of four start at once
and the median sees no queue, while the fourth waits a whole answer (the bank's
counterfactual truth found a quarter of a request's time there, unnamed). Its share is
the rise under concurrency (what a request sent among that many waits on average), or
what the swings add to the mean of identical requests' TTFT over a quiet one's.

On a lossy path the swing is not read, and a rise under concurrency counts only above
one retransmission timeout (:attr:`~latdoc.analysis.loss.Loss.recovery_ms`): the burst's
requests that counted a loss are left out, but a loss no counter saw costs one such
timeout, and in a burst of four one such request lifts the median.

Where the server tells its prefill, :func:`with_server_queueing` completes the rule:
the rise under concurrency is split into the server's prefill and the wait its
prefill does not explain, so a queue on one slot is named queueing, not prefill; and
a queue the server reports itself fires the rule when the client's numbers alone did
not (a wait it did not tell is read from the client's first token, so on a lossy path
its rise counts only above one retransmission timeout, as the client's does). Where
it keeps a waiting stream open with ``: keep-alive`` comments (DeepSeek's),
:func:`with_keepalive` reads them alike: the wait they tell is cited beside the
finding, and fires the rule from :data:`SERVER_QUEUE_MIN_MS` when nothing else did,
as its rise under concurrency over a request sent alone, or as the wait of requests
sent alone.
"""

from __future__ import annotations

from dataclasses import replace

from latdoc.analysis._rule import confidence
from latdoc.analysis.facts import Facts
from latdoc.analysis.kinds._spec import KindSpec
from latdoc.analysis.kinds.input_length import length_check
from latdoc.analysis.policy import KNEE_MIN_RISE_MS, KNEE_RATIO, queues_under_load
from latdoc.i18n import N_, Message
from latdoc.model import Finding, Kind, LengthCheck

__all__ = [
    "MIN_SWING_N",
    "QUEUE_CV",
    "QUEUE_LOAD_RATIO",
    "QUEUE_MIN_MS",
    "QUEUE_P95_P50",
    "SERVER_QUEUE_MIN_MS",
    "SPEC",
    "queueing",
    "slot_scale",
    "with_keepalive",
    "with_server_queueing",
]

QUEUE_CV = 0.5
QUEUE_P95_P50 = 2.0
QUEUE_LOAD_RATIO = KNEE_RATIO
"""The statistics policy's knee ratio: the load sweep's knee reads it too."""
QUEUE_MIN_MS = KNEE_MIN_RISE_MS
"""The policy's least rise of a queue, for the rise under load and the p95 − p50 swing."""
MIN_SWING_N = 6
"""The fewest requests sent alone the swing is read from: with fewer, their p95 is
their slowest one, and the bank's swing findings read from five or fewer were wrong
(2 of 2, against 94% right from six to nine)."""
SERVER_QUEUE_MIN_MS = 100.0
"""A queue the server reports (its own queue time, a wait its prefill does not explain,
or the wait its keep-alive comments tell) counts from here."""


def queueing(f: Facts) -> Finding | None:
    return with_keepalive(with_server_queueing(_client_queueing(f), f), f)


def slot_scale(f: Facts, check: LengthCheck | None = None) -> float:
    """How many times as long a request of the user's prompt holds a server slot as one
    of the load step's (:data:`~latdoc.analysis.facts.Facts` ``load["slot_ms"]``): the
    user's prompt adds the fitted length curve's growth to it. 1 where the curve adds
    nothing or the slot's time is unknown. ``check``: the length rule's comparison where
    the caller has it already (else it is read from ``f``)."""
    check = length_check(f) if check is None else check
    growth = 0.0 if check is None else max(0.0, check.growth_ms)
    slot = f.load.get("slot_ms")
    return (slot + growth) / slot if growth > 0 and slot else 1.0


def _at_user_prompt(found: Finding, f: Facts, rise_ms: float) -> Finding:
    """``found``, whose share is the burst's rise under concurrency (``rise_ms``, at the
    load step's prompt), read as the wait of the user's request.

    The burst shows the slots: the requests that waited about a slot's time or more
    waited for one. Where some did and some did not, the server serves ``c × (1 − w)``
    at once (``w`` the share that waited), and an application that keeps ``c`` requests
    in flight all the time waits ``w / (1 − w)`` slot times a request (Little's law: it
    is served ``c`` at a time by fewer slots); a single burst's mean shows only part of
    it (a quarter of a request among four on three slots, half of three on one).
    At the user's prompt each request holds its slot longer (:func:`slot_scale`).
    Where every request of the burst waited, the slots were held by others' requests (a
    busy server): the wait is theirs, the burst's own rise, at any prompt."""
    ld = f.load
    slot, waited = ld.get("slot_ms"), ld.get("concurrent_waited_share")
    if slot is None or waited is None or not 0 < waited < 1:
        return found
    check = length_check(f)
    scale = slot_scale(f, check)
    per_request = waited / (1 - waited)
    wait = slot * scale * per_request
    prompt = Message(
        "{rule}; {waited:.0%} of the requests sent together waited a slot's time "
        "({slot:.0f} ms) or more: kept {n:.0f} in flight, a request waits {per:.2f} "
        "slot times",
        rule=Message.of(found.rule),
        waited=waited,
        slot=slot,
        n=ld["concurrency"],
        per=per_request,
    )
    if scale > 1.0 and check is not None:
        prompt = Message(
            "{rule}; a request of {tokens:,} prompt tokens holds its slot {scale:.1f}× as long "
            "as one of {short:,}",
            rule=Message.of(prompt),
            tokens=check.long_tokens,
            scale=scale,
            short=check.short_tokens,
        )
    return replace(
        found,
        rule=Message("{rule}: {ms:.0f} ms a request", rule=Message.of(prompt), ms=wait),
        evidence={
            **found.evidence,
            "slot_scale": scale,
            "burst_rise_ms": rise_ms,
            "slot_times_waited": per_request,
            "wait_at_user_request_ms": wait,
        },
        share_ms=wait,
        excess_ms=wait,
        beyond_alone_ms=wait,
    )


def _client_queueing(f: Facts) -> Finding | None:
    ld = f.load
    cv, spread, p50 = ld["ttft_cv"], ld["ttft_p95_over_p50"], ld["ttft_p50_ms"]
    ratio, conc = ld["concurrent_over_sequential"], ld["concurrent_ttft_p50_ms"]
    n = int(ld["sequential_n"] or 0)
    evidence = {k: v for k, v in ld.items() if v is not None}
    mean = ld.get("concurrent_ttft_mean_ms")
    lossy = f.loss is not None and f.loss.lossy
    recovery_ms = f.loss.recovery_ms if f.loss is not None and lossy else 0.0
    if mean is not None and p50 and conc is not None and mean > conc and not lossy:
        # A request among them waits this on average: where fewer slots than requests
        # leave most to start at once, the median of the burst sees no queue at all. On
        # a lossy path one request's recovery lifts the mean: the path's, not a queue.
        conc, ratio = mean, mean / p50
    if ratio is not None and conc is not None and p50 is not None:
        rise = conc - p50
        # On a lossy path a burst's few requests can meet a loss no counter saw (one
        # retransmission timeout each): a rise no larger than that timeout is the path's
        # (``recovery_ms`` is 0 on a clean path).
        if queues_under_load(ratio, rise) and rise > recovery_ms:
            found = Finding(
                Kind.QUEUEING,
                N_("Requests queue on the server under load"),
                Message(
                    "TTFT with {n:.0f} concurrent requests (the run's --concurrency: what your "
                    "application runs at) is {ratio:.1f}× the sequential TTFT (≥ {limit}×) at "
                    "the same prompt length; its share is the wait a request among {n:.0f} adds",
                    n=ld["concurrency"],
                    ratio=ratio,
                    limit=QUEUE_LOAD_RATIO,
                ),
                evidence,
                share_ms=rise,
                n=n,
                confidence=confidence(n, ratio / QUEUE_LOAD_RATIO - 1),
                beyond_alone_ms=rise,
            )
            return _at_user_prompt(found, f, rise)
    # On a lossy path the swing is not read: the requests that counted a loss are left
    # out of it, but a lost segment with nothing sent behind it (a stream's first event
    # often travels alone) is recovered by a retransmission timeout no counter on the
    # client's side sees, and those waits swing the first token as a queue would.
    if lossy:
        return None
    if cv is not None and spread is not None and p50 is not None and n >= MIN_SWING_N:
        varying = (cv >= QUEUE_CV or spread >= QUEUE_P95_P50) and p50 * (spread - 1) >= QUEUE_MIN_MS
        if varying:
            swing = _swing_share(ld.get("ttft_mean_ms"), ld.get("ttft_quiet_ms"), p50, spread)
            return Finding(
                Kind.QUEUEING,
                N_("Time to first token swings between identical requests"),
                Message(
                    "TTFT of same-length requests varies: CV {cv:.2f} (≥ {cv_limit}) or "
                    "p95/p50 {spread:.1f} (≥ {spread_limit}); not explained by length: "
                    "server-side queueing or background load",
                    cv=cv,
                    cv_limit=QUEUE_CV,
                    spread=spread,
                    spread_limit=QUEUE_P95_P50,
                ),
                evidence,
                share_ms=swing,
                n=n,
                confidence=confidence(n, max(cv / QUEUE_CV, spread / QUEUE_P95_P50) - 1),
                # The median request holds the swings up to the median; the rest is
                # what they add to the mean.
                beyond_alone_ms=_beyond_median(swing, ld.get("ttft_mean_ms"), p50),
            )
    return None


def _beyond_median(swing: float, mean: float | None, p50: float) -> float:
    """What the swings add to identical requests' mean TTFT over their median, at most
    their share."""
    return swing if mean is None else min(swing, max(0.0, mean - p50))


def _swing_share(mean: float | None, quiet: float | None, p50: float, spread: float) -> float:
    """What the swings cost a request on average: the mean TTFT of identical requests
    above a quiet one's (the median of their faster half). Their p95 − p50, the share
    before, is what the slowest twentieth wait: where one request in ten met a busy
    server it charged every request that request's whole wait (ten times what removing
    the busy periods saves, by the bank's truth); and against the median, half the
    requests busy would add nothing."""
    if mean is None or quiet is None:
        return p50 * (spread - 1)
    return max(0.0, mean - quiet)


def with_server_queueing(found: Finding | None, f: Facts) -> Finding | None:
    """The queueing finding with the server's split of it, or one from the server's own
    queue when the client's numbers did not fire the rule."""
    account = f.server
    if account is None:
        return found
    n = account.numbers
    alone_wait, conc_wait = n.get("alone_wait_ms"), n.get("concurrent_wait_ms")
    conc_prefill = n.get("concurrent_prefill_ms")
    evidence = {
        f"server_{key}": value
        for key in (
            "alone_prefill_ms",
            "concurrent_prefill_ms",
            "alone_wait_ms",
            "concurrent_wait_ms",
        )
        if (value := n.get(key)) is not None
    }
    if found is not None:
        if not evidence:
            return found
        rule = found.rule
        if conc_wait is not None and conc_prefill is not None:
            rule = Message(
                "{rule}; by the server's own timing ({source}) its prefill took "
                "{prefill:.0f} ms under concurrency and {wait:.0f} ms more was waiting: "
                "queueing, not prefill",
                rule=Message.of(rule),
                source=account.source,
                prefill=conc_prefill,
                wait=conc_wait,
            )
        return replace(found, rule=rule, evidence={**found.evidence, **evidence})
    told = n.get("queue_ms")
    rise = None if conc_wait is None or alone_wait is None else conc_wait - alone_wait
    requests = int(n.get("requests") or 0)
    if told is not None and told >= SERVER_QUEUE_MIN_MS:
        return Finding(
            Kind.QUEUEING,
            N_("The server reports requests waiting in its queue"),
            Message(
                "the server's own queue time ({source}) is {ms:.0f} ms at the median "
                "(≥ {limit:.0f} ms)",
                source=account.source,
                ms=told,
                limit=SERVER_QUEUE_MIN_MS,
            ),
            {"server_queue_ms": told, **evidence},
            share_ms=told,
            n=requests,
            confidence=confidence(requests, told / SERVER_QUEUE_MIN_MS - 1),
        )
    # Untold, the wait is what the client's first token leaves after the network and the
    # server's prefill: on a lossy path a loss no counter saw is in it, as in the
    # client's own rise, and a rise no larger than one retransmission timeout is the
    # path's.
    lossy = f.loss is not None and f.loss.lossy
    recovery_ms = f.loss.recovery_ms if f.loss is not None and lossy else 0.0
    if rise is not None and rise >= SERVER_QUEUE_MIN_MS and rise > recovery_ms:
        found = Finding(
            Kind.QUEUEING,
            N_("Requests wait on the server beyond their prefill under load"),
            Message(
                "with concurrent requests the wait the server's prefill does not explain "
                "({source}) rose {ms:.0f} ms (≥ {limit:.0f} ms) over a request sent alone: "
                "queueing, not prefill",
                source=account.source,
                ms=rise,
                limit=SERVER_QUEUE_MIN_MS,
            ),
            evidence,
            share_ms=rise,
            n=requests,
            confidence=confidence(requests, rise / SERVER_QUEUE_MIN_MS - 1),
            beyond_alone_ms=rise,
        )
        return _at_user_prompt(found, f, rise)
    return None


def with_keepalive(found: Finding | None, f: Facts) -> Finding | None:
    """The queueing finding with the wait the server's ``: keep-alive`` comments tell
    (:mod:`~latdoc.analysis.queue_comments`), or one from that wait when nothing else
    fired the rule: its rise under concurrency over a request sent alone, else the
    wait of requests sent alone, from :data:`SERVER_QUEUE_MIN_MS`."""
    told = f.keepalive
    if not told:
        return found
    alone, together = told.get("keepalive_alone_ms"), told.get("keepalive_concurrent_ms")
    evidence = {key: value for key, value in told.items() if value is not None}
    n = int(told.get("keepalive_n") or 0)
    concurrency = f.load.get("concurrency")
    among: Message | str = (
        Message("a request among {n:.0f}", n=concurrency)
        if concurrency
        else N_("a request sent together")
    )
    if found is not None:
        said: Message
        if together:
            beside: Message | str = (
                Message(" (one sent alone {ms:.0f} ms)", ms=alone) if alone is not None else ""
            )
            said = Message(
                "{among} waited {ms:.0f} ms on average in its queue{beside}",
                among=among,
                ms=together,
                beside=beside,
            )
        elif alone:
            said = Message("a request sent alone waited {ms:.0f} ms in its queue", ms=alone)
        else:
            return found
        rule = Message(
            "{rule}; by the server's ': keep-alive' comments, {said}", rule=found.rule, said=said
        )
        return replace(found, rule=rule, evidence={**found.evidence, **evidence})
    rise = None if together is None or alone is None else together - alone
    if rise is not None and rise >= SERVER_QUEUE_MIN_MS:
        return Finding(
            Kind.QUEUEING,
            N_("The server kept requests waiting in its queue under load"),
            Message(
                "the server's ': keep-alive' comments kept {among} waiting {ms:.0f} ms on "
                "average before its first event, {rise:.0f} ms (≥ {limit:.0f} ms) more than "
                "one sent alone",
                among=among,
                ms=together,
                rise=rise,
                limit=SERVER_QUEUE_MIN_MS,
            ),
            evidence,
            share_ms=rise,
            n=n,
            confidence=confidence(n, rise / SERVER_QUEUE_MIN_MS - 1),
            beyond_alone_ms=rise,
        )
    if alone is not None and alone >= SERVER_QUEUE_MIN_MS:
        return Finding(
            Kind.QUEUEING,
            N_("The server keeps requests waiting in its queue"),
            Message(
                "the server's ': keep-alive' comments kept requests sent alone waiting "
                "{ms:.0f} ms at the median before their first event (≥ {limit:.0f} ms)",
                ms=alone,
                limit=SERVER_QUEUE_MIN_MS,
            ),
            evidence,
            share_ms=alone,
            n=n,
            confidence=confidence(n, alone / SERVER_QUEUE_MIN_MS - 1),
        )
    return None


SPEC = KindSpec(
    Kind.QUEUEING,
    N_("Server queueing"),
    N_("server-side wait that follows load, not length"),
    colour="#d9a521",
    rule=queueing,
    before_first_token=True,
)
