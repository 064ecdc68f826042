"""The samples a real diagnosis run would record from a scenario's endpoint.

:func:`generate` follows :mod:`latdoc.workload._steps` request by request, with its
own counts (read from that module, so a change of plan changes the bank too):
calibration (two requests of one output token, a new connection then a reused one);
the network step (one cold request and the warm ones on one connection, then the
extra cold ones each on its own when the first does not settle the network rules);
the length step (each length of ``LENGTH_ORDER`` once on one connection, the
reference again when it does not settle the length rule, cut as the real step cuts
it);
the load step (sequential repeats on one connection, then ``concurrency`` at once on
as many new connections, queueing on the server's slots). A simulated clock stands
for the run's time budget. Each trace has every field the analysis reads: cumulative
phase marks in ns, one chunk per token with its arrival, usage, ``new_connection``,
request bytes, and a typed error for a failed request.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import numpy as np

from bank.scenario import Draws, Scenario, burst_queue_ms, draw_requests, request_bytes
from latdoc.analysis.kinds.input_length import LONG_REFERENCE_TOKENS
from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.model import RunContext
from latdoc.records import Chunk, RequestTrace, Sample, Step
from latdoc.workload._settle import length_unsettled, network_unsettled
from latdoc.workload._steps import (
    EXTRA_COLD,
    LENGTH_ORDER,
    LENGTH_TIME_SHARE,
    REFERENCE_REPEATS,
    SAFETY,
    SEQUENTIAL_REPEATS,
    SHORT_TOKENS,
    WARM_REQUESTS,
    DiagnosisPlan,
)

NS = 1_000_000
ENDPOINT = "https://bank.invalid/v1/chat/completions"
MODEL = "bank-model"
CALIBRATION_TOKENS = (24, 340)
"""What an endpoint counts for the calibration's 16- and 256-word prompts."""
MAX_SECONDS = DiagnosisPlan.__dataclass_fields__["max_seconds"].default
BETWEEN_MS = 2.0
"""The client's own time between two requests."""
STARTED = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def context(s: Scenario) -> RunContext:
    """What a run of ``s`` tells the analysis besides its samples."""
    return RunContext(f"bank-{s.seed}", ENDPOINT, MODEL, concurrency=s.concurrency, cpu_count=4)


@dataclass
class _Run:
    s: Scenario
    rng: np.random.Generator
    samples: list[Sample] = field(default_factory=list)
    clock_ms: float = 0.0
    over: bool = False
    """The time budget ran out: the real run abandons the request in flight and stops."""

    @property
    def seconds_left(self) -> float:
        return MAX_SECONDS - self.clock_ms / 1000

    def send(
        self,
        step: Step,
        tokens: int,
        *,
        count: int = 1,
        new: bool,
        cold: bool = False,
        output: int | None = None,
        target: int | None = None,
        concurrency: int = 1,
    ) -> list[RequestTrace]:
        """``count`` requests one after another on one connection, or at once on as
        many new ones when ``concurrency`` > 1 (a server that closes connections makes
        every request open one)."""
        if self.over:
            return []
        out = self.s.output_tokens if output is None else output
        fresh = new or self.s.server_closes
        firsts = draw_requests(
            self.s, self.rng, size=1, prompt_tokens=tokens, output_tokens=out, new_connection=fresh
        )
        rest = None
        if count > 1:
            rest = draw_requests(
                self.s,
                self.rng,
                size=count - 1,
                prompt_tokens=tokens,
                output_tokens=out,
                new_connection=fresh,
            )
        draws = _join(firsts, rest)
        if concurrency > 1:
            arrivals = draws.ttft - draws.wait - draws.prefill
            service = draws.prefill + draws.gaps.sum(axis=1)
            queue = burst_queue_ms(self.s, arrivals, service)
            draws = _with_queue(draws, queue)
        traces = []
        start = self.clock_ms
        for i in range(count):
            if concurrency == 1:
                start = self.clock_ms
            trace = self._trace(draws, i, tokens, out, fresh, start)
            end = start + (trace.done_ns or trace.first_byte_ns or 0) / NS
            if end / 1000 > MAX_SECONDS:
                self.over = True
                break
            traces.append(trace)
            self.clock_ms = max(self.clock_ms, end + BETWEEN_MS)
        for t in traces:
            self.samples.append(Sample(step, t, target, concurrency, cold, index=len(self.samples)))
        return traces

    def _trace(
        self, d: Draws, i: int, tokens: int, out: int, new: bool, start_ms: float
    ) -> RequestTrace:
        queue_done = 120_000
        marks = [queue_done]
        for part in (d.dns[i], d.connect[i], d.tls[i] if self.s.tls else None):
            marks.append(marks[-1] + round(float(part) * NS) if part is not None else None)
        ready = next(m for m in reversed(marks) if m is not None)
        dns_done, connect_done, tls_done = (m if new else None for m in marks[1:])
        if new and not self.s.tls:
            tls_done = None
        if not new:
            ready = queue_done
        write_start = ready + 40_000
        sent = write_start + round(float(d.send[i]) * NS)
        first_byte = sent + round(float(d.wait[i]) * NS)
        first_token = first_byte + round(float(d.prefill[i]) * NS)
        arrivals = [first_token]
        for gap in d.gaps[i][: max(0, out - 1)]:
            arrivals.append(arrivals[-1] + max(1, round(float(gap) * NS)))
        chunks = tuple(Chunk(t, 4, 1) for t in arrivals)
        done = arrivals[-1] + 300_000
        error = self._error()
        fields: dict[str, object] = {}
        if error is not None:
            fields = _failed(error, first_byte, first_token, chunks)
        t0 = round(start_ms * NS)
        base = RequestTrace(
            started_at=STARTED + timedelta(milliseconds=start_ms),
            t0_ns=10_000_000_000 + t0,
            url=ENDPOINT,
            model=MODEL,
            dialect="openai-chat",
            http_version="HTTP/1.1",
            remote_ip="198.51.100.7",
            connection_id=len(self.samples) + i,
            new_connection=new,
            queue_done_ns=queue_done,
            dns_done_ns=dns_done,
            connect_done_ns=connect_done,
            tls_done_ns=tls_done,
            sent_ns=sent,
            first_byte_ns=first_byte,
            first_token_ns=first_token,
            done_ns=done,
            status=200,
            chunks=chunks,
            chunk_tokens_exact=True,
            prompt_tokens=tokens,
            output_tokens=out,
            output_tokens_exact=True,
            finish_reason="length",
            request_bytes=request_bytes(tokens),
            response_bytes=200 + 120 * out,
            write_start_ns=write_start,
            arrival_clock="kernel",
        )
        return replace(base, **fields) if fields else base

    def _error(self) -> TraceError | None:
        if self.s.error_share <= 0 or self.rng.random() >= self.s.error_share:
            return None
        code = self.s.error_code
        if code.startswith("http:"):
            status = int(code.removeprefix("http:"))
            retry = 1.0 if status == 429 else None
            return TraceError(ErrorKind.HTTP, Phase.WAIT, f"status {status}", status, retry)
        if code == "timeout":
            return TraceError(ErrorKind.TIMEOUT, Phase.FIRST_TOKEN, "no first token in time")
        return TraceError(ErrorKind.STREAM_BROKEN, Phase.STREAM, "the stream broke off")


def _failed(
    error: TraceError, first_byte: int, first_token: int, chunks: tuple[Chunk, ...]
) -> dict[str, object]:
    """The fields a failed request records instead of a full answer."""
    nothing: dict[str, object] = {
        "chunks": (),
        "first_token_ns": None,
        "output_tokens": None,
        "output_tokens_exact": False,
        "finish_reason": None,
        "error": error,
    }
    if error.kind is ErrorKind.HTTP:
        return {**nothing, "status": error.status, "done_ns": first_byte + 200_000}
    if error.kind is ErrorKind.TIMEOUT:
        return {**nothing, "status": 200, "done_ns": first_token}
    half = chunks[: max(1, len(chunks) // 2)]
    return {
        **nothing,
        "chunks": half,
        "first_token_ns": first_token,
        "done_ns": half[-1].t_ns + 100_000,
    }


def _join(a: Draws, b: Draws | None) -> Draws:
    if b is None:
        return a
    return Draws(
        *(np.concatenate([getattr(a, f), getattr(b, f)]) for f in Draws.__dataclass_fields__)
    )


def _with_queue(d: Draws, queue: np.ndarray) -> Draws:
    return Draws(d.dns, d.connect, d.tls, d.send, d.wait + queue, d.prefill, d.gaps)


def generate(s: Scenario) -> list[Sample]:
    """The samples of one diagnosis run of ``s``'s endpoint, seeded by ``s.seed``."""
    run = _Run(s, np.random.default_rng(s.seed))
    _calibration(run)
    _network(run)
    _length(run)
    _load(run)
    return run.samples


def _calibration(run: _Run) -> None:
    for i, tokens in enumerate(CALIBRATION_TOKENS):
        run.send(Step.CALIBRATION, tokens, new=i == 0, output=1, target=tokens)


def _network(run: _Run) -> None:
    traces = run.send(Step.NETWORK, SHORT_TOKENS, new=True, cold=True, target=SHORT_TOKENS)
    traces += run.send(
        Step.NETWORK,
        SHORT_TOKENS,
        count=WARM_REQUESTS,
        new=False,
        target=SHORT_TOKENS,
    )
    if not traces or network_unsettled(traces[0], traces[1:]) is None:
        return
    for _ in range(EXTRA_COLD):
        run.send(Step.NETWORK, SHORT_TOKENS, new=True, cold=True, target=SHORT_TOKENS)


def _short_ttft_s(run: _Run) -> float:
    ttfts = sorted(
        t.ttft_ms / 1000
        for s in run.samples
        if s.step == Step.NETWORK and (t := s.trace).ttft_ms is not None
    )
    return ttfts[len(ttfts) // 2] if ttfts else 1.0


def _decode_s(run: _Run) -> float:
    decodes = [
        (t.total_ms - t.ttft_ms) / 1000
        for s in run.samples
        if (t := s.trace).total_ms is not None and t.ttft_ms is not None
    ]
    return max(decodes) if decodes else 1.0


def _length(run: _Run) -> None:
    """The real step: each length once, the reference first, the reference again when it
    does not settle the rule, cut as the real step cuts it."""
    decode_s = _decode_s(run)
    short_s = _short_ttft_s(run)
    points = [(SHORT_TOKENS, short_s)]
    left_at_start = run.seconds_left
    step_deadline = left_at_start - max(0.0, left_at_start) * LENGTH_TIME_SHARE
    for i, n in enumerate(LENGTH_ORDER):
        predicted = _extrapolate(points, n) + decode_s
        left = run.seconds_left - step_deadline
        must_have = i == 0 and predicted * SAFETY <= run.seconds_left
        if not must_have and predicted * SAFETY > left:
            return
        traces = run.send(Step.LENGTH, n, new=i == 0, target=n)
        if run.over:
            return
        if not traces or traces[0].ttft_ms is None:
            continue
        ttft_s = traces[0].ttft_ms / 1000
        points.append((n, ttft_s))
        unsettled = n == LONG_REFERENCE_TOKENS and length_unsettled(1000 * short_s, 1000 * ttft_s)
        if unsettled and predicted * SAFETY <= run.seconds_left - step_deadline:
            run.send(Step.LENGTH, n, count=REFERENCE_REPEATS, new=False, target=n)
            if run.over:
                return


def _extrapolate(points: list[tuple[int, float]], n: int) -> float:
    pts = sorted(points)
    if len(pts) < 2:
        return pts[-1][1] * max(1.0, n / max(pts[-1][0], 1))
    (n1, t1), (n2, t2) = pts[-2], pts[-1]
    slope = max(0.0, (t2 - t1) / max(n2 - n1, 1))
    return t2 + slope * (n - n2)


def _load(run: _Run) -> None:
    per_request = _short_ttft_s(run) + _decode_s(run)
    for r in range(SEQUENTIAL_REPEATS):
        if run.seconds_left < per_request * SAFETY:
            return
        run.send(Step.LOAD, SHORT_TOKENS, new=r == 0, target=SHORT_TOKENS)
    at_once = run.s.concurrency
    if run.seconds_left < per_request * min(at_once, 4) * SAFETY:
        return
    run.send(
        Step.LOAD,
        SHORT_TOKENS,
        count=at_once,
        new=True,
        target=SHORT_TOKENS,
        concurrency=at_once,
    )
