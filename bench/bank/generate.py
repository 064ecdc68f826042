"""The samples a real diagnosis run would record from a scenario's endpoint.

:func:`generate` follows :mod:`latdoc.workload._steps` request by request, with its
own counts (read from that module, so a change of plan changes the bank too):
calibration (two requests of one output token, a new connection then a reused one);
the network step (one cold request and the warm ones on one connection, then the
extra cold ones each on its own when the first does not settle the network rules);
the length step (each length of ``LENGTH_ORDER`` once on one connection, the
reference again when it does not settle the length rule, cut as the real step cuts
it);
the load step (``concurrency`` at once on as many new connections, queueing on the
server's slots, then sequential repeats on one connection). A simulated clock stands
for the run's time budget. Each trace has every field the analysis reads, as the probe
on Linux records them: cumulative phase marks in ns (the pool's grant at t0, the
client's own delay up to its turn on the loop, DNS, connect and TLS ending where the
queue ended on a reused connection, the end of send at the peer's ACK), one chunk per
streamed event with its arrival (events a hop passed on together share their read's
stamp), the usage (reasoning tokens among the output tokens), the first reasoning and
answer events, ``new_connection``, request bytes, the kernel's TCP_INFO, the server's
own timing as it tells it, the headers that name a hop, the loop's lag, and a typed
error for a failed request.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from bank.scenario import (
    HEADERS_MS,
    INITIAL_WINDOW,
    KEEPALIVE_COMMENT_MS,
    Draws,
    Scenario,
    arrived,
    burst_queue_ms,
    draw_requests,
    produced,
    request_bytes,
)
from latdoc.analysis.kinds.input_length import LONG_REFERENCE_TOKENS
from latdoc.errors import ErrorKind, Phase, TraceError
from latdoc.model import RunContext
from latdoc.records import Chunk, RequestTrace, Sample, Step, TcpInfo
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
QUEUE_DONE_NS = 120_000
"""From t0 to the request's turn on an idle client loop."""
WRITE_NS = 40_000
"""From the connection being ready to the first request byte handed to the kernel."""
EVENT_CHARS = 4
EVENT_BYTES = 120
"""One streamed event of one token, on the wire."""
RESPONSE_HEAD_BYTES = 200


def context(s: Scenario) -> RunContext:
    """What a run of ``s`` tells the analysis besides its samples: the user's workload
    among it (their prompt, and their concurrency, which the run's burst is)."""
    return RunContext(
        f"bank-{s.seed}",
        ENDPOINT,
        MODEL,
        concurrency=s.concurrency,
        cpu_count=4,
        prompt_tokens=s.prompt_tokens,
    )


@dataclass
class _Run:
    s: Scenario
    rng: np.random.Generator
    samples: list[Sample] = field(default_factory=list)
    clock_ms: float = 0.0
    over: bool = False
    """The time budget ran out: the real run abandons the request in flight and stops."""
    connections: int = 0
    """Connections opened so far; the last one is the one a reused request rides."""
    max_seconds: float = MAX_SECONDS
    """The plan's time budget."""
    spells: list[tuple[float, float]] | None = None
    """The busy spells of the run, (start, end) in seconds, drawn on first use."""

    @property
    def seconds_left(self) -> float:
        return self.max_seconds - self.clock_ms / 1000

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
        now = {
            "speed": self._speed(),
            "in_flight": min(concurrency, max(1, self.s.slots)),
        }
        firsts = draw_requests(
            self.s,
            self.rng,
            size=1,
            prompt_tokens=tokens,
            output_tokens=out,
            new_connection=fresh,
            busy=self._busy(1),
            **now,
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
                busy=self._busy(count - 1),
                **now,
            )
        draws = _join(firsts, rest)
        if concurrency > 1:
            service = draws.prefill + draws.think + draws.gaps.sum(axis=1)
            queue = burst_queue_ms(self.s, draws.at_server, service)
            draws = _with_queue(draws, queue)
        traces, lags = [], []
        start = self.clock_ms
        for i in range(count):
            if concurrency == 1:
                start = self.clock_ms
            if fresh:
                self.connections += 1
            trace, ended_ns = self._trace(draws, i, tokens, out, fresh, start)
            end = start + ended_ns / NS
            if end / 1000 > self.max_seconds:
                self.over = True
                break
            traces.append(trace)
            lags.append(float(draws.lag[i]))
            self.clock_ms = max(self.clock_ms, end + BETWEEN_MS)
        for t, lag in zip(traces, lags, strict=True):
            self.samples.append(
                Sample(step, t, target, concurrency, cold, index=len(self.samples), loop_lag_ms=lag)
            )
        return traces

    def _speed(self) -> float:
        """The drift's factor on the server's times now."""
        if self.s.drift == 0:
            return 1.0
        return 1.0 + self.s.drift * (min(1.0, self.clock_ms / 1000 / self.max_seconds) - 0.5)

    def _busy(self, size: int) -> npt.NDArray[np.bool_] | None:
        """Which of ``size`` requests sent now meet a busy period, when busy periods
        come in spells (else None: each request draws its own)."""
        if self.s.spell_s <= 0 or self.s.busy_share <= 0:
            return None
        if self.spells is None:
            self.spells = _spells(self.s, self.rng, self.max_seconds)
        at = self.clock_ms / 1000
        busy = any(start <= at < end for start, end in self.spells)
        return np.full(size, busy)

    def _trace(
        self, d: Draws, i: int, tokens: int, out: int, new: bool, start_ms: float
    ) -> tuple[RequestTrace, int]:
        """Request ``i``'s trace, and when it ended (ns from its t0): a failed request's
        trace has no end of its own."""
        s = self.s
        # The pool grants a connection at t0; the client's busy loop picks it up late.
        queue_done = QUEUE_DONE_NS + _ns(d.client[i])
        if new:
            dns_done = queue_done + _ns(d.dns[i])
            connect_done = dns_done + _ns(d.connect[i])
            tls_done = connect_done + _ns(d.tls[i]) if s.tls else None
        else:
            # A reused connection's DNS, connect and TLS end where its queue ended.
            dns_done = connect_done = queue_done
            tls_done = queue_done if s.tls else None
        ready = tls_done if tls_done is not None else connect_done
        write_start = ready + WRITE_NS
        sent = write_start + _ns(d.send[i])
        headers = first_byte = sent + _ns(d.wait[i])
        first_out = first_byte + _ns(d.prefill[i] + d.hidden[i])
        times, shown_tokens = produced(s, d, i)
        times, per_event, shown = _events(s, self.rng, times, shown_tokens)
        arrivals = [first_out + _ns(t) for t in arrived(s, times)]
        keepalive: dict[str, int] = {}
        if s.keepalive_comments:
            # Headers as soon as the request reaches the server, a comment every
            # KEEPALIVE_COMMENT_MS while it waits for its slot.
            arrival = float(d.upload[i] + d.rtt[i] - d.send[i])
            first_byte = sent + _ns(arrival + HEADERS_MS)
            keepalive = _keepalive(first_byte, float(d.wait[i]) - arrival - HEADERS_MS)
        if s.buffer_whole:
            # The hop sends the headers with the body, once it has all of it.
            first_byte = arrivals[0]
        # The probe counts a chat chunk as one token, not exactly, when the usage comes
        # only at the end: an event of several tokens reads as one.
        exact = s.tokens_per_event == 1
        chunks = tuple(
            Chunk(t, EVENT_CHARS * k, k if exact else 1)
            for t, k in zip(arrivals, per_event, strict=True)
        )
        reasoning = int(d.reasoning[i])
        response_bytes = RESPONSE_HEAD_BYTES + EVENT_BYTES * len(chunks)
        started = STARTED + timedelta(milliseconds=start_ms)
        request_id = f"bank-{s.seed}-{len(self.samples) + i}"
        base = RequestTrace(
            started_at=started,
            t0_ns=10_000_000_000 + round(start_ms * NS),
            url=ENDPOINT,
            model=MODEL,
            dialect="openai-chat",
            http_version="HTTP/1.1",
            remote_ip="198.51.100.7",
            connection_id=self.connections,
            new_connection=new,
            queue_done_ns=queue_done,
            dns_done_ns=dns_done,
            connect_done_ns=connect_done,
            tls_done_ns=tls_done,
            sent_ns=sent,
            sent_acked=True,
            first_byte_ns=first_byte,
            first_token_ns=arrivals[0],
            done_ns=arrivals[-1] + 300_000,
            status=200,
            chunks=chunks,
            # The usage counts the hidden reasoning, the events do not carry it.
            chunk_tokens_exact=exact and shown_tokens == reasoning,
            prompt_tokens=tokens,
            output_tokens=out + reasoning,
            output_tokens_exact=True,
            finish_reason="length",
            request_bytes=request_bytes(tokens),
            response_bytes=response_bytes,
            server_timing=_server_timing(s, d, i, out + reasoning),
            tcp_info=_tcp_info(d, i, tokens, response_bytes),
            first_reasoning_ns=arrivals[0] if shown else None,
            first_answer_ns=arrivals[shown],
            reasoning_tokens=reasoning or None,
            proxy_headers=_proxy_headers(s, response_bytes),
            pool_granted_ns=0,
            write_start_ns=write_start,
            arrival_clock="kernel",
            started_ns=round(started.timestamp() * 1e9),
            request_id=request_id,
            response_id=f"chatcmpl-{request_id}",
            **keepalive,
        )
        error = self._error()
        if error is None:
            return base, base.done_ns or 0
        return _failed(base, error, shown, headers)

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


def _events(
    s: Scenario, rng: np.random.Generator, times: list[float], shown: int
) -> tuple[list[float], list[int], int]:
    """The streamed events of tokens produced at ``times`` (the first ``shown`` of them
    reasoning): ``s.tokens_per_event`` tokens each (an irregular 1 to 8 when 0), never
    mixing reasoning and answer, each sent when its last token is produced; returns
    their times, their token counts and how many are reasoning."""
    if s.tokens_per_event == 1:
        return times, [1] * len(times), shown
    out_times: list[float] = []
    counts: list[int] = []
    shown_events = 0
    for start, end in ((0, shown), (shown, len(times))):
        k = start
        while k < end:
            size = s.tokens_per_event or int(rng.integers(1, 9))
            last = min(end, k + size) - 1
            out_times.append(times[last])
            counts.append(last - k + 1)
            k = last + 1
        if end == shown:
            shown_events = len(out_times)
    return out_times, counts, shown_events


def _spells(s: Scenario, rng: np.random.Generator, seconds: float) -> list[tuple[float, float]]:
    """Busy spells over a run of ``seconds``: busy and quiet in turn, exponential lengths
    of mean ``spell_s`` and ``spell_s × (1 − share) / share``, starting in either as
    their shares say."""
    quiet_s = s.spell_s * (1 - s.busy_share) / s.busy_share
    at, busy = 0.0, bool(rng.random() < s.busy_share)
    spells = []
    while at < seconds:
        length = float(rng.exponential(s.spell_s if busy else quiet_s))
        if busy:
            spells.append((at, at + length))
        at += length
        busy = not busy
    return spells


def _ns(ms: float) -> int:
    return round(float(ms) * NS)


def _server_timing(s: Scenario, d: Draws, i: int, output_tokens: int) -> dict[str, float]:
    """What the server tells of request ``i``'s timing, in ms, as the probe parses it."""
    if s.server_timing == "server-timing" and s.keepalive_comments:
        # The headers leave before the wait and the prefill are known: the time per
        # token alone, as a server that keeps the stream alive while queued tells it.
        gap = float(d.gaps[i][0]) if d.gaps.shape[1] else s.tpot_ms
        return {"tpot": round(gap, 3)}
    if s.server_timing == "server-timing":
        # Sent with the headers when the request got its slot: the wait for it, the
        # prefill it is charged, and its first token gap.
        queue = float(d.wait[i]) - float(d.upload[i] + d.rtt[i] - d.send[i]) - HEADERS_MS
        gap = float(d.gaps[i][0]) if d.gaps.shape[1] else s.tpot_ms
        return {
            "queue": round(max(0.0, queue), 3),
            "prefill": round(float(d.prefill[i]), 3),
            "tpot": round(gap, 3),
        }
    if s.server_timing == "llama.cpp":
        # The last event's ``timings``: every predicted token, the reasoning's too.
        predicted = float(d.think[i] + d.gaps[i].sum()) + s.tpot_ms
        return {
            "prompt_ms": round(float(d.prefill[i]), 3),
            "predicted_ms": round(predicted, 3),
            "predicted_per_token_ms": round(predicted / max(1, output_tokens), 3),
        }
    if s.server_timing == "openai-processing":
        # The provider's time to its response headers, in whole ms.
        told = float(d.wait[i]) - float(d.upload[i] + d.rtt[i] - d.send[i])
        return {"openai-processing": float(round(max(0.0, told)))}
    return {}


def _tcp_info(d: Draws, i: int, tokens: int, response_bytes: int) -> TcpInfo:
    """The kernel's view of the connection when the response ended."""
    rtt = float(d.rtt[i])
    return TcpInfo(
        rtt_us=round(rtt * 1000),
        rttvar_us=round(rtt * 250),
        min_rtt_us=round(rtt * 900),
        retransmits=0,
        snd_cwnd=INITIAL_WINDOW,
        bytes_acked=request_bytes(tokens),
        bytes_received=response_bytes,
    )


def _proxy_headers(s: Scenario, response_bytes: int) -> dict[str, str]:
    """The response headers the probe keeps: a streamed body is chunked, a body held
    whole has its length; a hop that buffers names itself."""
    if s.buffer_whole:
        return {"content-length": str(response_bytes), "server": "gateway"}
    if s.buffer_events > 1:
        return {"transfer-encoding": "chunked", "server": "nginx"}
    return {"transfer-encoding": "chunked"}


def _keepalive(first_byte: int, queued_ms: float) -> dict[str, int]:
    """The keep-alive comments of a request that waited ``queued_ms`` for its slot after
    its headers (at ``first_byte``): one every :data:`KEEPALIVE_COMMENT_MS`, as the probe
    records them."""
    count = max(0, int(queued_ms // KEEPALIVE_COMMENT_MS))
    if not count:
        return {"keepalive_comments": 0}
    return {
        "keepalive_comments": count,
        "first_keepalive_ns": first_byte + _ns(KEEPALIVE_COMMENT_MS),
        "last_keepalive_ns": first_byte + _ns(count * KEEPALIVE_COMMENT_MS),
    }


def _failed(
    trace: RequestTrace, error: TraceError, shown: int, headers: int
) -> tuple[RequestTrace, int]:
    """``trace`` as it is recorded when it failed with ``error``, and when it ended (ns
    from t0). The probe marks no end of a failed request and reads no usage (it comes
    last, with the prompt's count): only what arrived before the failure; an error
    status comes when the server sends its headers (``headers``), no hop holds it; a
    stream broken off keeps its first events, counted as the output so far."""
    nothing: dict[str, object] = {
        "chunks": (),
        "first_token_ns": None,
        "first_reasoning_ns": None,
        "first_answer_ns": None,
        "done_ns": None,
        "prompt_tokens": None,
        "output_tokens": None,
        "output_tokens_exact": False,
        "reasoning_tokens": None,
        "finish_reason": None,
        "tcp_info": None,
        "chunk_tokens_exact": False,
        "error": error,
    }
    # Headers came before the failure; llama.cpp's timings come in the last event.
    head_only = {} if "predicted_ms" in trace.server_timing else dict(trace.server_timing)
    if error.kind is ErrorKind.HTTP:
        failed = replace(
            trace,
            **nothing,
            status=error.status,
            keepalive_comments=None,
            first_keepalive_ns=None,
            last_keepalive_ns=None,
            first_byte_ns=headers,
            server_timing={},
            proxy_headers={},
            response_id=None,
            response_bytes=200,
        )
        return failed, headers + 200_000
    if error.kind is ErrorKind.TIMEOUT:
        failed = replace(trace, **nothing, server_timing=head_only)
        return failed, trace.first_token_ns or headers
    half = trace.chunks[: max(1, len(trace.chunks) // 2)]
    failed = replace(
        trace,
        **{
            **nothing,
            "chunks": half,
            "first_token_ns": half[0].t_ns,
            "first_reasoning_ns": half[0].t_ns if shown else None,
            "first_answer_ns": half[shown].t_ns if shown < len(half) else None,
            "output_tokens": sum(c.tokens for c in half),
            "server_timing": head_only,
        },
    )
    return failed, half[-1].t_ns + 100_000


def _join(a: Draws, b: Draws | None) -> Draws:
    if b is None:
        return a
    return Draws(
        *(np.concatenate([getattr(a, f), getattr(b, f)]) for f in Draws.__dataclass_fields__)
    )


def _with_queue(d: Draws, queue: np.ndarray) -> Draws:
    return replace(d, wait=d.wait + queue)


def generate(s: Scenario, *, max_seconds: float = MAX_SECONDS) -> list[Sample]:
    """The samples of one diagnosis run of ``s``'s endpoint, seeded by ``s.seed``, within
    the plan's time budget of ``max_seconds`` (the default plan's unless given)."""
    run = _Run(s, np.random.default_rng(s.seed), max_seconds=max_seconds)
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
            # A failed request tells nothing of the length: it is asked once more.
            traces = run.send(Step.LENGTH, n, new=False, target=n)
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
    """The real step: the burst first, then the sequential repeats as time allows."""
    per_request = _short_ttft_s(run) + _decode_s(run)
    at_once = run.s.concurrency
    if run.seconds_left >= per_request * min(at_once, 4) * SAFETY:
        run.send(
            Step.LOAD,
            SHORT_TOKENS,
            count=at_once,
            new=True,
            target=SHORT_TOKENS,
            concurrency=at_once,
        )
    for r in range(SEQUENTIAL_REPEATS):
        if run.seconds_left < per_request * SAFETY:
            return
        run.send(Step.LOAD, SHORT_TOKENS, new=r == 0, target=SHORT_TOKENS)
