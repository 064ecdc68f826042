"""A trace of real traffic replayed: ``latdoc load --trace FILE``.

The trace (:mod:`latdoc.workload.traces`) is read twice, as a stream both times: once
whole before anything is sent, so a line it cannot replay is an error before the first
request, and once as it is sent, so a trace of any size replays in bounded memory.

- **At the trace's times** (``--speed S``, 1 by default): each request is sent at its
  time ÷ S after the start, whatever the endpoint is doing, with at most
  ``--max-in-flight`` open at once. How late each was sent against its schedule is
  measured, and the run says how many were late and by how much. The level is one
  open-loop level (step ``arrivals``) at the trace's rate.
- **As fast as the loop allows** (a trace without times, or ``--speed max``):
  ``--concurrency``'s first level of streams, each sending the next request as its last
  ends (step ``load``).

What is sent is the trace's own shape: its prompt lengths and answer lengths (capped by
``--max-tokens``); a Mooncake trace's ``hash_ids`` become prompts whose blocks are the
same text wherever the ids are the same, so a prefix cache hits where the trace says it
would; a conversation (ShareGPT) is sent turn by turn on one stream, each turn with the
history so far, the model's answers in it the endpoint's own. The run's notes give the
schedule's lag, and the time to first token and the cached prompt tokens by turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import statistics
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from latdoc.errors import UsageError
from latdoc.features.load.analysis import (
    FindMax,
    LevelWindow,
    Objective,
    Reading,
    read_values,
    turn_values,
)
from latdoc.features.load.send.findmax import searched
from latdoc.features.load.send.meter import ClientMeter
from latdoc.features.load.send.sweep import (
    LoadPlan,
    _Level,
    ended_ns,
    sleep_until,
    too_many_failed,
    within_time_budget,
)
from latdoc.i18n import N_, Message
from latdoc.probe import CalledTool, ProbeSession, Tool, dialects, now_ns, run_sending
from latdoc.records import RequestTrace, Sample, Step, StepNote
from latdoc.store import INSTRUMENT_KIND, Store
from latdoc.workload import (
    ASSUMED,
    Budget,
    answer_of,
    budget_for,
    make_prompt,
    prompt_cost,
)
from latdoc.workload.traces import ToolResult, TraceRequest, open_trace
from latdoc.workload.traces.mooncake import BLOCK_TOKENS

MAX_USER_TURNS = 1_000_000
"""The most user turns a replay keeps the samples of, so a trace of any size replays in
bounded memory."""
LATE_MS = 5.0
"""A request sent this much after its time in the trace is counted late."""
_NS = 1_000_000_000


@dataclass(frozen=True)
class Replay:
    """Which trace to replay, and how fast."""

    path: str
    fmt: str | None = None
    speed: float | None = 1.0
    """Times in the trace divided by this; ``None``: as fast as the streams allow."""
    streams: int = 1
    """Streams sending at once when not at the trace's times."""


@dataclass(frozen=True)
class TraceShape:
    """What the first reading of a trace found."""

    requests: int
    timed: bool
    duration_s: float
    sessions: int
    tools: tuple[str, ...] = ()
    """The tools an agent trace's results name, in the order first met."""


def survey(replay: Replay) -> TraceShape:
    """Read the whole trace once (a line it cannot replay is an error now, before
    anything is sent) and say what it holds."""
    n = 0
    last = 0.0
    timed = True
    sessions: set[str] = set()
    tools: dict[str, None] = {}
    for r in open_trace(Path(replay.path), replay.fmt):
        n += 1
        for result in r.tool_results:
            if len(tools) < 128:
                tools.setdefault(result.name)
        if r.at_s is None:
            timed = False
        else:
            last = r.at_s
        if r.session is not None and len(sessions) < 1_000_000:
            sessions.add(r.session)
    return TraceShape(n, timed and n > 0, last, len(sessions), tuple(tools))


def _offering_tools(plan: LoadPlan, names: tuple[str, ...]) -> LoadPlan:
    """An agent trace's plan: its requests offer the tools its results name (where the
    plan offers none of its own, ``--tools``), in a dialect whose tool turns latdoc
    writes (:attr:`~latdoc.probe.dialects.DialectSpec.tool_turn`)."""
    endpoint = plan.endpoint
    if endpoint.spec.tool_turn is None:
        writes = ", ".join(n for n in dialects.names() if dialects.get(n).tool_turn is not None)
        raise UsageError(
            Message(
                "an agent trace replays in a dialect whose tool calls and results latdoc "
                "writes ({writes}), not {name}: use --api",
                writes=writes,
                name=endpoint.spec.name,
            )
        )
    if endpoint.tools:
        return plan
    offered = tuple(Tool(name) for name in names)
    return replace(plan, endpoint=replace(endpoint, tools=offered))


def block_words(block: int, words: int) -> list[str]:
    """The words of one of a trace's prompt blocks: the same for the same id."""
    return make_prompt(words, random.Random(f"block-{block}")).split()


def prompt_of(request: TraceRequest, rng: random.Random) -> str:
    """A prompt of the request's length whose blocks repeat where its ids repeat."""
    words = ASSUMED.words_for(request.input_tokens)
    if not request.blocks:
        return make_prompt(words, rng)
    per_block = ASSUMED.words_for(BLOCK_TOKENS)
    out: list[str] = []
    for block in request.blocks:
        if len(out) >= words:
            break
        out += block_words(block, per_block)
    if len(out) < words:
        out += make_prompt(words - len(out), rng).split()
    return " ".join(out[:words])


class _Replayer:
    def __init__(
        self,
        plan: LoadPlan,
        replay: Replay,
        shape: TraceShape,
        budget: Budget,
        keep: Callable[[Sample], None],
        on_level: Callable[[LevelWindow], None],
        on_note: Callable[[StepNote], None],
        on_progress: Callable[[str, int, int], None] | None,
        as_traffic: bool = False,
    ) -> None:
        self.plan, self.replay, self.shape, self.budget = plan, replay, shape, budget
        if shape.tools:
            self.plan = _offering_tools(plan, shape.tools)
        self.as_traffic = as_traffic
        """Keep each request as recorded traffic (step ``traffic``, its concurrency the
        requests in flight when it left), as :func:`record_replay` does."""
        self.in_flight = 0
        self.keep, self.on_level, self.on_note, self.on_progress = (
            keep,
            on_level,
            on_note,
            on_progress,
        )
        self.rng = random.Random(plan.seed)
        self.notes: list[StepNote] = []
        self.index = 0
        self.late_ms: list[float] = []
        self.by_turn: dict[int, list[RequestTrace]] = {}
        self.stopped: str | None = None
        self.seen_blocks: set[int] = set()
        self.shared: list[tuple[bool, int | None]] = []
        """Per request with blocks: whether the trace says its first block was sent
        before, and the cached prompt tokens the endpoint reported."""
        self.meter = ClientMeter()
        self.tool_waits: list[float] = []
        """An agent trace's tool times the streams waited, in seconds."""
        self.think_waits: list[float] = []
        """A conversation trace's think times (its turns' ``delay``), in seconds."""
        self.user_turns: list[list[Any]] = []
        """A conversation's user turns: each its place in its session and the indexes
        of its samples (:data:`~latdoc.features.load.analysis.USER_TURNS_META`)."""
        self.on_turn: Callable[[list[RequestTrace]], None] | None = None
        """Told each user turn's requests as the turn ends."""

    def note(self, text: str) -> None:
        note = StepNote(Step.RUN, text)
        self.notes.append(note)
        self.on_note(note)

    def _session(self) -> ProbeSession:
        return self.plan.connection.session(self.plan.endpoint, max_connections=1)

    async def send(
        self,
        session: ProbeSession,
        request: TraceRequest,
        prompt: Any,
        step: Step,
        label: int,
        due_ns: int | None = None,
        calls: dict[object, dict[str, str]] | None = None,
        sent: list[tuple[int, RequestTrace]] | None = None,
    ) -> tuple[RequestTrace, str] | None:
        """Reserve, send and keep one request; ``due_ns``: when the trace says it is sent
        (its lag is measured as it leaves); ``calls`` keeps the tool calls it answers with;
        ``sent`` its sample's index and its trace."""
        out = max(1, min(request.output_tokens, self.plan.max_tokens))
        cost = prompt_cost(ASSUMED, ASSUMED.words_for(request.input_tokens))
        reservation = self.budget.reserve(cost, out)
        if reservation is None:
            self.stopped = f"the {self.budget.caps} ran out"
            return None
        text: list[str] = []
        repeated = bool(request.blocks) and request.blocks[0] in self.seen_blocks
        if request.blocks and len(self.seen_blocks) < 1_000_000:
            self.seen_blocks.add(request.blocks[0])
        if due_ns is not None:
            self.late_ms.append(max(0.0, (now_ns() - due_ns) / 1e6))
        self.in_flight += 1
        with_others = self.in_flight
        try:
            trace = await session.request(
                prompt,
                out,
                on_event=self.plan.on_event,
                on_info=answer_of(text, calls),
                due_ns=due_ns,
            )
        finally:
            self.in_flight -= 1
        self.meter.observe(trace)
        if request.blocks:
            self.shared.append((repeated, trace.cached_prompt_tokens if trace.ok else None))
        self.budget.settle(reservation, trace)
        if self.as_traffic:
            step, label = Step.TRAFFIC, with_others
        self.keep(Sample(step, trace, request.input_tokens, label, index=self.index))
        if sent is not None:
            sent.append((self.index, trace))
        self.index += 1
        self.by_turn.setdefault(request.turn, []).append(trace)
        if self.on_progress is not None:
            self.on_progress("requests", self.index, self.shape.requests)
        return trace, "".join(text)

    async def timed(self, speed: float) -> None:
        requests = open_trace(Path(self.replay.path), self.replay.fmt)
        start = now_ns()
        rate = float(f"{self.shape.requests / max(self.shape.duration_s / speed, 1e-3):.3g}")
        self.meter.start()
        partial = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                idle: asyncio.Queue[ProbeSession] = asyncio.Queue()
                for _ in range(self.plan.max_in_flight):
                    idle.put_nowait(await stack.enter_async_context(self._session()))

                async def arrival(
                    session: ProbeSession, r: TraceRequest, prompt: str, due: int
                ) -> None:
                    try:
                        await self.send(session, r, prompt, Step.ARRIVALS, 1, due)
                    finally:
                        idle.put_nowait(session)

                async with asyncio.TaskGroup() as group:
                    for r in requests:
                        if self.stopped is not None:
                            break
                        # The prompt is made before its time comes, so making it is no lag.
                        prompt = prompt_of(r, self.rng)
                        due = start + int((r.at_s or 0.0) / speed * _NS)
                        await sleep_until(due)
                        session = await idle.get()
                        group.create_task(arrival(session, r, prompt, due))
        except BaseException:
            partial = True
            raise
        finally:
            late = statistics.median(self.late_ms) if self.late_ms else None
            self.on_level(
                LevelWindow(1, None, rate, start, now_ns(), self.shape.requests, late,
                            partial=partial, client=self.meter.end())
            )  # fmt: skip
            self._say_lag(speed)

    async def closed(self) -> None:
        sessions = _sessions(open_trace(Path(self.replay.path), self.replay.fmt))
        streams = self.replay.streams
        self.meter.start()
        start = now_ns()
        partial = False
        try:
            await self.on_streams(streams, sessions)
        except BaseException:
            partial = True
            raise
        finally:
            self.on_level(
                LevelWindow(1, streams, None, start, now_ns(), partial=partial,
                            client=self.meter.end())
            )  # fmt: skip

    async def on_streams(
        self,
        streams: int,
        sessions: Iterator[list[TraceRequest]],
        sending: Callable[[], bool] | None = None,
    ) -> None:
        """``streams`` streams, each replaying the next of ``sessions`` in turn, until
        they run out, the replay stops, or ``sending`` says the level is over."""

        async def stream() -> None:
            # When the stream's next request is due: the level's start, then the end of
            # its last request, later by the think time or the tools' time the trace
            # puts between them (a closed loop's due time, over sessions).
            free = [now_ns()]
            async with self._session() as session:
                while self.stopped is None and (sending is None or sending()):
                    turns = next(sessions, None)
                    if turns is None:
                        return
                    await self._conversation(session, turns, streams, free, sending)

        async with asyncio.TaskGroup() as group:
            for _ in range(streams):
                group.create_task(stream())

    async def _conversation(
        self,
        session: ProbeSession,
        turns: list[TraceRequest],
        streams: int,
        free: list[int],
        sending: Callable[[], bool] | None = None,
    ) -> None:
        """A session's turns in order on one stream, until one fails, the replay stops, or
        ``sending`` says the level is over (no turn is begun after); ``free[0]`` is when
        the stream's last request ended, moved on as each ends."""
        first = turns[0].system if turns else None
        history: list[dict[str, Any]] = (
            [] if first is None else [{"role": "system", "content": first}]
        )
        for r in turns:
            if self.stopped is not None or (sending is not None and not sending()):
                return
            # Due the think time after the stream's last request ended.
            free[0] += int((r.delay_ms or 0) * 1e6)
            if r.delay_ms:
                # The user's think time: the stream holds nothing in flight meanwhile.
                self.think_waits.append(r.delay_ms / 1000)
                await sleep_until(free[0])
                if self.stopped is not None or (sending is not None and not sending()):
                    return
            sent: list[tuple[int, RequestTrace]] = []
            try:
                if r.text is None:
                    prompt = prompt_of(r, self.rng)
                    await self.send(session, r, prompt, Step.LOAD, streams, free[0], sent=sent)
                    continue
                answered = await self._turn(session, r, history, streams, sent, free[0])
            finally:
                self._turn_ended(r.turn, sent)
                if sent:
                    free[0] = ended_ns(sent[-1][1])
            if answered is None:
                return
            history = answered

    def _turn_ended(self, turn: int, sent: list[tuple[int, RequestTrace]]) -> None:
        if not sent:
            return
        if len(self.user_turns) < MAX_USER_TURNS:
            self.user_turns.append([turn, [index for index, _ in sent]])
        if self.on_turn is not None:
            self.on_turn([trace for _, trace in sent])

    async def _turn(
        self,
        session: ProbeSession,
        r: TraceRequest,
        history: list[dict[str, Any]],
        streams: int,
        sent: list[tuple[int, RequestTrace]],
        due: int,
    ) -> list[dict[str, Any]] | None:
        """One user turn: the model asked, with the tools' results handed back as the
        trace has them, until it answers in text; the history with the answer, or
        ``None`` where a request failed or the replay stopped. The first request is due
        at ``due``, each after a tool the tools' recorded time after the one before
        ended."""
        messages: list[dict[str, Any]] = [*history, {"role": "user", "content": r.text}]
        results = list(r.tool_results)
        while True:
            calls: dict[object, dict[str, str]] = {}
            done = await self.send(
                session, r, messages, Step.LOAD, streams, due, calls=calls, sent=sent
            )
            if done is None or not done[0].ok:
                return None
            answer = done[1]
            if not calls or not results:
                return [*messages, {"role": "assistant", "content": answer}]
            waited = sum(res.ms or 0 for res in results[: len(calls)])
            messages = await self._tools_answered(messages, answer, calls, results)
            due = ended_ns(done[0]) + int(waited * 1e6)

    async def _tools_answered(
        self,
        messages: list[dict[str, Any]],
        answer: str,
        calls: dict[object, dict[str, str]],
        results: list[ToolResult],
    ) -> list[dict[str, Any]]:
        """The conversation with the model's tool calls and, for each, the trace's next
        result, handed back after the tool's recorded time (an empty answer where the
        trace has no more results: every call is answered, as the APIs require), in the
        dialect's own shape."""
        called = [
            CalledTool(c["id"] or f"call_{n}", c["name"], c["arguments"])
            for n, c in enumerate(calls.values())
        ]
        answers = []
        for _ in called:
            result = results.pop(0) if results else None
            if result is not None and result.ms:
                self.tool_waits.append(result.ms / 1000)
                await asyncio.sleep(result.ms / 1000)
            answers.append("" if result is None else result.content)
        turn = self.plan.endpoint.spec.tool_turn
        assert turn is not None  # _offering_tools refused a dialect without one
        return [*messages, *turn(answer, called, answers)]

    def _say_lag(self, speed: float) -> None:
        if not self.late_ms:
            return
        ordered = sorted(self.late_ms)
        p50 = ordered[len(ordered) // 2]
        p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
        late = sum(1 for v in ordered if v > LATE_MS)
        self.note(
            f"the trace's schedule at {speed:g}×: {len(ordered)} requests sent, "
            f"{late} more than {LATE_MS:g} ms after their time; lag p50 {p50:.2f} ms, "
            f"p99 {p99:.2f} ms"
        )

    def say_cache(self) -> None:
        """Where the trace's blocks repeat, how often the endpoint said it cached them."""
        repeats = [cached for repeated, cached in self.shared if repeated]
        fresh = [cached for repeated, cached in self.shared if not repeated]
        if not repeats:
            return
        told = [c for c in repeats if c is not None]
        if not told:
            self.note(
                f"{len(repeats)} requests repeat an earlier prompt's leading block; the "
                "endpoint reported no cached tokens, so whether its prefix cache hit is unknown"
            )
            return
        hits = sum(1 for c in told if c > 0)
        cold_hits = sum(1 for c in fresh if c)
        self.note(
            f"prefix cache: {hits} of {len(told)} requests whose leading block the trace "
            f"repeats had cached prompt tokens (p50 {statistics.median(told):.0f}); "
            f"{cold_hits} of {len(fresh)} whose block was new"
        )

    def say_turns(self) -> None:
        if len(self.by_turn) < 2:
            return
        parts = []
        for turn in sorted(self.by_turn)[:8]:
            ok = [t for t in self.by_turn[turn] if t.ok]
            ttfts = [t.ttft_ms for t in ok if t.ttft_ms is not None]
            cached = [t.cached_prompt_tokens for t in ok if t.cached_prompt_tokens is not None]
            if not ttfts:
                continue
            text = f"turn {turn + 1}: TTFT p50 {statistics.median(ttfts):.0f} ms"
            tpots = [t.tpot_ms for t in ok if t.tpot_ms is not None]
            if tpots:
                text += f", TPOT p50 {statistics.median(tpots):.1f} ms"
            text += f" (n {len(ttfts)})"
            if cached:
                text += f", cached tokens p50 {statistics.median(cached):.0f}"
            parts.append(text)
        if parts:
            self.note("by turn: " + "; ".join(parts))

    async def run(self) -> None:
        speed = self.replay.speed
        if speed is not None and self.shape.timed:
            await self.timed(speed)
        else:
            if speed is not None and not self.shape.timed:
                self.note("the trace has no times: sent as fast as the streams allow")
            await self.closed()
        if self.stopped is not None:
            self.note(f"the replay stopped early: {self.stopped}")
        self.say_cache()
        if self.as_traffic:
            # A load run shows its user turns as a table of their own.
            self.say_turns()
        self.say_tools()

    def say_tools(self) -> None:
        """An agent trace's tool times and a conversation's think times: the streams
        waited on them with nothing in flight, which Little's law reads as load the client
        did not hold."""
        if self.tool_waits:
            self.note(
                f"the sessions' tools held their streams {sum(self.tool_waits):.1f} s in all "
                f"({len(self.tool_waits)} results, the trace's own times), with no request in "
                "flight: Little's law counts that time as load the client did not hold"
            )
        if self.think_waits:
            self.note(
                f"the sessions' think times held their streams {sum(self.think_waits):.1f} s "
                f"in all ({len(self.think_waits)} turns' delay, the trace's own), with no "
                "request in flight: Little's law counts that time as load the client did "
                "not hold"
            )


def _sessions(requests: Iterator[TraceRequest]) -> Iterator[list[TraceRequest]]:
    """Consecutive turns of one session together; a request of no session alone."""
    held: list[TraceRequest] = []
    for r in requests:
        if held and (r.session is None or r.session != held[-1].session):
            yield held
            held = []
        held.append(r)
    if held:
        yield held


def record_replay(
    plan: LoadPlan,
    replay: Replay,
    store: Store,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> str:
    """Replay a trace and keep it as recorded traffic (a run of kind ``instrument``, each
    request of step ``traffic``), for the diagnosis of natural traffic to read: the
    workload-shaped diagnosis of ``latdoc diagnose --trace``. Ctrl-C keeps what finished
    (the run is then ``interrupted``). Return the run's id."""
    shape = survey(replay)
    run_id = store.new_run(
        endpoint=plan.endpoint.base_url,
        model=plan.endpoint.model,
        scenario="chat",
        meta={"replay": {"trace": replay.path, "format": replay.fmt, "speed": replay.speed,
                         "streams": replay.streams, "requests": shape.requests},
              "source": "replay", "instrumentation": "latdoc's replay of a trace",
              "file": replay.path},
        kind=INSTRUMENT_KIND,
    )  # fmt: skip
    notes: list[StepNote] = []
    status = "recorded"
    budget = budget_for(plan)
    try:
        with store.batch(run_id, max_samples=1) as writer:
            replayer = _Replayer(plan, replay, shape, budget, writer.add, lambda _w: None,
                                 notes.append, on_progress, as_traffic=True)  # fmt: skip
            run_sending(within_time_budget(budget.seconds_left, replayer.run(), replayer.note))
    except KeyboardInterrupt:
        status = "interrupted"
        notes.append(StepNote(Step.RUN, "interrupted by the user; kept what finished"))
    store.finish_run(run_id, status=status, diagnosis=None, notes=notes)
    return run_id


def replay_sweep(
    plan: LoadPlan,
    replay: Replay,
    on_progress: Callable[[str, int, int], None] | None,
    user_turns: list[list[Any]] | None = None,
) -> Callable[
    [Callable[[Sample], None], Callable[[LevelWindow], None], Callable[[StepNote], None]],
    Coroutine[Any, Any, list[StepNote]],
]:
    """The replay as a sweep :func:`~latdoc.features.load.run.load_endpoint` runs; the
    trace is surveyed now, before anything is sent. ``user_turns`` receives a
    conversation's user turns as they end, what it finished of them on Ctrl-C too."""
    shape = survey(replay)

    async def sweep(
        keep: Callable[[Sample], None],
        on_level: Callable[[LevelWindow], None],
        on_note: Callable[[StepNote], None],
    ) -> list[StepNote]:
        budget = budget_for(plan)
        replayer = _Replayer(plan, replay, shape, budget, keep, on_level, on_note, on_progress)
        if user_turns is not None:
            replayer.user_turns = user_turns
        await within_time_budget(budget.seconds_left, replayer.run(), replayer.note)
        return replayer.notes

    return sweep


class _TurnLevels:
    """A conversation's or an agent's sessions as the levels ``--find-max`` probes: the
    level's streams take the trace's sessions in turn (from its start again when they
    run out) until the level's time is up, no turn begun after it; the level is judged
    on its user turns (:func:`~latdoc.features.load.analysis.turn_values`): what the
    user waited, the model's tool calls and the tools' time in it."""

    on_turns = True

    def __init__(self, replayer: _Replayer) -> None:
        self.replayer = replayer
        self.budget = replayer.budget
        self.on_sample: Callable[[Sample], None] = replayer.keep
        self.on_level: Callable[[LevelWindow], None] = replayer.on_level
        self.turns: list[list[RequestTrace]] = []
        """The user turns of the level being probed, over its rounds."""
        self.number = 0
        self.level: _Level | None = None
        replayer.keep = self._kept
        replayer.on_turn = self.turns.append
        self.sessions = self._cycle()

    def _cycle(self) -> Iterator[list[TraceRequest]]:
        replay = self.replayer.replay
        while True:
            yield from _sessions(open_trace(Path(replay.path), replay.fmt))

    def _kept(self, sample: Sample) -> None:
        self.on_sample(sample)
        level = self.level
        if level is None:
            return
        level.done += 1
        level.failed += 0 if sample.trace.ok else 1
        limit = self.replayer.plan.max_error_rate
        if too_many_failed(level.done, level.failed, limit):
            level.too_many_errors = True
            level.stop(
                f"{level.failed} of {level.done} requests failed, more than the "
                f"{limit:.0%} --max-error-rate"
            )

    async def closed(self, number: int, streams: int, seconds: float) -> _Level:
        r = self.replayer
        if number != self.number:
            self.number = number
            self.turns.clear()
        r.meter.start()
        start = now_ns()
        level = self.level = _Level(number, start + int(seconds * _NS))
        partial = False
        try:
            await r.on_streams(streams, self.sessions, lambda: level.sending)
        except BaseException:
            partial = True
            raise
        finally:
            if r.stopped is not None:
                level.stop(r.stopped)
            partial = partial or level.too_many_errors
            end = level.stop_ns if level.stop_ns is not None else now_ns()
            self.on_level(
                LevelWindow(number, streams, None, start, end, partial=partial,
                            client=r.meter.end())
            )  # fmt: skip
        return level

    def read(
        self, objectives: Sequence[Objective], traces: Sequence[RequestTrace]
    ) -> tuple[Reading, ...]:
        return read_values(objectives, turn_values(self.turns))


def find_max_replay_sweep(
    plan: LoadPlan,
    replay: Replay,
    objectives: Sequence[Objective],
    limit: float,
    on_progress: Callable[[str, int, int], None] | None,
    on_result: Callable[[FindMax], None],
) -> Callable[
    [Callable[[Sample], None], Callable[[LevelWindow], None], Callable[[StepNote], None]],
    Coroutine[Any, Any, list[StepNote]],
]:
    """``--find-max`` over a conversation's or an agent's sessions
    (:class:`_TurnLevels`): streams doubling from one, then bisected, each level judged
    on the user's turns; the trace is surveyed now, and refused unless it holds
    sessions."""
    shape = survey(replay)
    if not shape.sessions:
        raise UsageError(
            N_(
                "--find-max with --trace probes a conversation's or an agent's sessions "
                "(the sharegpt and agent formats); this trace has none"
            )
        )

    def progress(what: str, done: int, _total: int) -> None:
        if on_progress is not None:
            on_progress(what, done, plan.max_requests)

    async def sweep(
        keep: Callable[[Sample], None],
        on_level: Callable[[LevelWindow], None],
        on_note: Callable[[StepNote], None],
    ) -> list[StepNote]:
        budget = budget_for(plan)
        replayer = _Replayer(plan, replay, shape, budget, keep, on_level, on_note, progress)
        levels = _TurnLevels(replayer)
        await searched(plan, objectives, levels, limit, on_level, on_result, replayer.note)
        replayer.say_tools()
        return replayer.notes

    return sweep
