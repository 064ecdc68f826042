"""Recorded application traffic seen through the steps of a diagnosis.

A diagnosis reads its samples by step: cold and warm requests (network), the same
request at several prompt lengths (length), same-length requests one after another
(load). Natural traffic was not sent that way, so :func:`traffic_views` labels
only what the traffic can stand in for, and says in notes what it cannot:

- network: a request that opened a connection while none of the earlier ones was
  idle is a cold request (the pool grew); one that opened a connection although an
  earlier connection had finished its last request is a warm request that could
  not reuse it (the server, a proxy or the application dropped it); requests on a
  reused connection are warm. Traces that do not know their connection are left out.
- length: successful requests with a time to first token and a prompt size,
  grouped into lengths within 25 % of each other, only when there are two or more
  such lengths. The size is the server's count where it reported usage, else the
  estimate from the prompt's characters the client kept (its notes say how many
  lengths are estimates).
- load: the largest group of requests whose prompt sizes lie within 5 % of each
  other, for the dispersion of their time to first token; no concurrency probe.

Every trace stays one sample of the run (errors, stalls and decode read those);
the views only feed the step summaries.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from latdoc.records import CHARS_PER_TOKEN, RequestTrace, Sample, Step, StepNote

SAME_LENGTH_SPREAD = 1.05
"""Prompt sizes within this ratio count as the same length for the dispersion of TTFT."""
LENGTH_BUCKET = 1.25
"""Prompt sizes within this ratio are one point of the length curve."""
MIN_SAME_LENGTH = 5
"""Fewer same-length requests than this say nothing about queueing."""
HIDDEN_PREFILL_GROWTH = 3.0
HIDDEN_PREFILL_MS = 50.0
"""When the time after the first chunk grows this many times more than the time to it
(and by at least this many ms) from the shortest prompts to the longest, at the same
output, the first chunk recorded may have come before the prefill."""


@dataclass(frozen=True)
class StepViews:
    """Traffic relabelled for the step summaries, and what it could not stand in for."""

    samples: tuple[Sample, ...]
    """Samples by step (network, length, load) over the same traces as the run."""
    identical: tuple[Sample, ...]
    """The same-length requests: the spread a user would not notice is measured on them."""
    notes: tuple[StepNote, ...]


def traffic_views(
    samples: Sequence[Sample], dialects: Collection[str], *, replayed: bool = False
) -> StepViews:
    """The step views of a run of recorded traffic (samples of step ``traffic``), over the
    requests in one of the model API ``dialects`` (not ``http``, ``embeddings`` …);
    ``replayed`` when latdoc sent them itself, replaying a trace of the traffic."""
    calls = [s.trace for s in samples if s.step is Step.TRAFFIC and s.trace.dialect in dialects]
    network, network_notes = _network(calls)
    length, length_notes = _length(calls)
    load, load_notes = _load(calls)
    notes = (
        StepNote(
            Step.RUN,
            f"diagnosed from {len(samples)} requests replayed from a trace of the traffic, "
            "read as recorded traffic"
            if replayed
            else f"diagnosed from {len(samples)} recorded requests of the application's own "
            "traffic; nothing was sent",
        ),
        *network_notes,
        *length_notes,
        *load_notes,
    )
    return StepViews(tuple(network + length + load), tuple(load), notes)


def recorded_prompt_tokens(samples: Sequence[Sample], dialects: Collection[str]) -> int | None:
    """The prompt of the user's typical request, from their recorded requests (samples of
    step ``traffic`` in one of the model API ``dialects``): the median of the prompt
    tokens the server counted (the usage's), over the requests that report one; None
    when none does. Estimates from the prompt's characters are not counts: left out."""
    counted = [
        t.prompt_tokens
        for s in samples
        if s.step is Step.TRAFFIC
        and (t := s.trace).dialect in dialects
        and t.prompt_tokens is not None
    ]
    return round(statistics.median(counted)) if counted else None


def _end(trace: RequestTrace) -> float:
    last = trace.done_ns or max((c.t_ns for c in trace.chunks), default=trace.first_byte_ns or 0)
    return (trace.started_at + timedelta(microseconds=last / 1000)).timestamp()


def _network(calls: Sequence[RequestTrace]) -> tuple[list[Sample], list[StepNote]]:
    known = sorted(
        (t for t in calls if t.new_connection is not None and t.ok),
        key=lambda t: t.started_at,
    )
    if not known and any(t.new_connection is not None for t in calls):
        return [], [StepNote(Step.NETWORK, "no request succeeded: the network cannot be judged")]
    if not known:
        return [], [
            StepNote(
                Step.NETWORK,
                "the recorded requests time each operation as a whole (as spans do): DNS, "
                "TCP connect, TLS, sending and the server's wait are not told apart, nor "
                "whether a request opened a connection, so network setup and reuse cannot "
                "be judged",
            )
        ]
    last_end: dict[tuple[int | None, str | None], float] = {}
    for t in known:
        key = (t.connection_id, t.remote_ip)
        last_end[key] = max(last_end.get(key, 0.0), _end(t))
    opened: list[tuple[float, float]] = sorted(
        (t.started_at.timestamp(), last_end[(t.connection_id, t.remote_ip)])
        for t in known
        if t.new_connection
    )
    opened_at = [o for o, _ in opened]
    earliest_idle = _running_min(e for _, e in opened)
    out: list[Sample] = []
    growth = dropped = reused = 0
    for t in known:
        if not t.new_connection:
            reused += 1
            out.append(Sample(Step.NETWORK, t, cold=False))
            continue
        start = t.started_at.timestamp()
        before = bisect.bisect_left(opened_at, start)
        if before > 0 and earliest_idle[before - 1] < start:
            dropped += 1
            out.append(Sample(Step.NETWORK, t, cold=False))
        else:
            growth += 1
            out.append(Sample(Step.NETWORK, t, cold=True))
    return out, [
        StepNote(
            Step.NETWORK,
            f"not paired on purpose: of {len(known)} successful requests, {reused} reused a "
            f"connection, {growth} opened one while every earlier one was busy (or none "
            f"existed), and {dropped} opened one although an earlier connection had gone "
            "idle and was never used again; what keep-alive saves is read only from new and "
            "reused connections that carried requests of the same prompt length, and the "
            "application's first request also carries its one-time start-up costs",
        )
    ]


def _running_min(values: Iterable[float]) -> list[float]:
    out: list[float] = []
    low = math.inf
    for v in values:
        low = min(low, v)
        out.append(low)
    return out


def _size(trace: RequestTrace) -> int | None:
    """The prompt's tokens: the server's count, else the client's estimate."""
    return trace.prompt_tokens or trace.prompt_tokens_estimated or None


def _sized(calls: Sequence[RequestTrace]) -> list[RequestTrace]:
    return sorted(
        (t for t in calls if t.ok and t.ttft_ms is not None and _size(t)),
        key=lambda t: _size(t) or 0,
    )


def _length(calls: Sequence[RequestTrace]) -> tuple[list[Sample], list[StepNote]]:
    sized = _sized(calls)
    notes = _count_notes(calls)
    buckets = {_bucket(_size(t) or 1) for t in sized}
    untimed = {_bucket(n) for t in calls if t.ok and (n := _size(t))}
    if len(buckets) < 2 and len(untimed) >= 2:
        notes.append(
            StepNote(
                Step.LENGTH,
                "prompt lengths varied, but the requests carry no time to first token: how "
                "the wait for the first token grows with the input cannot be told (the "
                "end-to-end time also holds the generation)",
            )
        )
        return [], notes
    if len(buckets) < 2:
        notes.append(
            StepNote(
                Step.LENGTH,
                "the traffic held fewer than two distinct prompt lengths: how time to first "
                "token grows with the input cannot be told without active probes "
                "(`latdoc diagnose URL`)",
            )
        )
        return [], notes
    by_bucket: dict[int, list[RequestTrace]] = {}
    for t in sized:
        by_bucket.setdefault(_bucket(_size(t) or 1), []).append(t)
    samples = []
    for members in by_bucket.values():
        # Each length stands at its requests' median size; a server's count, where the
        # requests have one, takes its place when the curve is read.
        target = round(statistics.median(_size(t) or 1 for t in members))
        samples += [Sample(Step.LENGTH, t, target_prompt_tokens=target) for t in members]
    notes += _fitted_notes(sized, buckets, by_bucket)
    return samples, notes


def _count_notes(calls: Sequence[RequestTrace]) -> list[StepNote]:
    """What the successful requests that carried no prompt count from the server say."""
    unreported = [t for t in calls if t.ok and t.prompt_tokens is None]
    estimated = sum(1 for t in unreported if t.prompt_tokens_estimated)
    notes: list[StepNote] = []
    if estimated:
        notes.append(
            StepNote(
                Step.LENGTH,
                f"{len(unreported)} successful requests carried no prompt count from the "
                "server (a streamed request reports usage only when asked: "
                "stream_options include_usage, which `instrument(..., ask_usage=True)` adds "
                "to an instrumented application's requests); the prompt tokens of "
                f"{estimated} are estimated from the characters of their prompts "
                f"({CHARS_PER_TOKEN} a token), not counted by the server's tokenizer",
            )
        )
    elif unreported:
        notes.append(
            StepNote(
                Step.LENGTH,
                f"{len(unreported)} successful requests reported no prompt size (a streamed "
                "request reports usage only when asked: stream_options include_usage)",
            )
        )
    return notes


def _fitted_notes(
    sized: Sequence[RequestTrace],
    buckets: set[int],
    by_bucket: Mapping[int, Sequence[RequestTrace]],
) -> list[StepNote]:
    """What the curve fitted on the lengths that occurred is, and where the first chunk
    may hide the prefill."""
    notes: list[StepNote] = []
    lo, hi = _size(sized[0]), _size(sized[-1])
    guessed = sum(1 for t in sized if t.prompt_tokens is None)
    how = (
        ""
        if not guessed
        else f", {'all' if guessed == len(sized) else guessed} of them estimated from the "
        "prompts' characters"
    )
    notes.append(
        StepNote(
            Step.LENGTH,
            f"the length curve is fitted on the prompt sizes that occurred ({len(buckets)} "
            f"lengths, {lo} to {hi} tokens{how}), not on controlled lengths: each length's "
            "requests also differ in timing, connection and concurrency",
        )
    )
    hidden = _prefill_after_first_chunk(by_bucket)
    if hidden is not None:
        notes.append(
            StepNote(
                Step.LENGTH,
                f"from the shortest prompts to the longest the time to first token changed "
                f"by {hidden[0]:+.0f} ms, but the time after it by {hidden[1]:+.0f} ms "
                + ("at the same output" if hidden[2] else "(the output's length unreported)")
                + ": the first chunk recorded may come before the prefill (a "
                "chunk without output, such as a role-only chunk sent with the headers), "
                "which then hides the prefill from the time to first token",
            )
        )
    return notes


def _prefill_after_first_chunk(
    by_bucket: Mapping[int, Sequence[RequestTrace]],
) -> tuple[float, float, bool] | None:
    """The growth of the median time to first token, and of the median time after it,
    from the shortest length to the longest, when the second outgrows the first by
    :data:`HIDDEN_PREFILL_GROWTH` (and :data:`HIDDEN_PREFILL_MS`) at the same output
    (the median output tokens within a quarter, where the requests report them), and
    whether the output tokens were known."""
    lo, hi = by_bucket[min(by_bucket)], by_bucket[max(by_bucket)]

    def medians(traces: Sequence[RequestTrace]) -> tuple[float, float, float | None] | None:
        timed = [t for t in traces if t.ttft_ms is not None and t.total_ms is not None]
        if not timed:
            return None
        outputs = [t.output_tokens for t in timed if t.output_tokens is not None]
        return (
            statistics.median(t.ttft_ms or 0.0 for t in timed),
            statistics.median((t.total_ms or 0.0) - (t.ttft_ms or 0.0) for t in timed),
            statistics.median(outputs) if len(outputs) == len(timed) else None,
        )

    short, long = medians(lo), medians(hi)
    if short is None or long is None:
        return None
    known = short[2] is not None and long[2] is not None
    if (
        known
        and not (short[2] or 0) / LENGTH_BUCKET <= (long[2] or 0) <= (short[2] or 0) * LENGTH_BUCKET
    ):
        return None
    first, after = long[0] - short[0], long[1] - short[1]
    if after < max(HIDDEN_PREFILL_MS, HIDDEN_PREFILL_GROWTH * max(first, 0.0)):
        return None
    return first, after, known


def _bucket(tokens: int) -> int:
    return round(math.log(max(1, tokens)) / math.log(LENGTH_BUCKET))


def _load(calls: Sequence[RequestTrace]) -> tuple[list[Sample], list[StepNote]]:
    sized = _sized(calls)
    best: tuple[int, int] = (0, 0)
    lo = 0
    for hi in range(len(sized)):
        while (_size(sized[hi]) or 0) > (_size(sized[lo]) or 0) * SAME_LENGTH_SPREAD:
            lo += 1
        if hi + 1 - lo > best[1] - best[0]:
            best = (lo, hi + 1)
    group = sized[best[0] : best[1]]
    no_probe = "no concurrency probe was sent, so the rise of TTFT under load is not measured"
    if len(group) < MIN_SAME_LENGTH:
        return [], [
            StepNote(
                Step.LOAD,
                f"fewer than {MIN_SAME_LENGTH} successful requests of one prompt length "
                f"(within {SAME_LENGTH_SPREAD - 1:.0%}): queueing cannot be judged from "
                f"dispersion; {no_probe}",
            )
        ]
    tokens = _size(group[len(group) // 2])
    samples = [Sample(Step.LOAD, t) for t in group]
    return samples, [
        StepNote(
            Step.LOAD,
            f"queueing is judged from the dispersion of TTFT over {len(group)} requests of "
            f"about {tokens} prompt tokens, sent whenever the application sent them; {no_probe}",
        )
    ]
