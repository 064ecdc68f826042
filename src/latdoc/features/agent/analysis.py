"""An agent's run read from its spans: where its wall-clock time went, how its context
grew, what the seed's context remedies would save at the run's own turn count, and
what holds the agent back.

The run is its user turns, one trace each (a root span and the spans below it). Each
instant of a turn is counted once, by the most specific span running then: a model
call, else a tool, else the agent itself (its framework's own work between calls); so
the three parts add up to the turns' wall-clock time. Tool calls made one after the
other for the same model answer (no model call between them) could have run at once:
what that would save is the waits beyond the longest of them.

Context growth is read from the model calls: each call's prompt (the usage's count,
else the estimate from its characters) and its time to first token. The time a prompt
token costs is the least-squares slope of TTFT on the prompt's tokens, with its interval
(:func:`~latdoc.analysis.stats.slope_interval`); a remedy saves that slope times the
tokens it leaves out, and where the interval holds zero no saving is given. A window of
the last ``k`` user turns leaves out, from each call of a later turn, what the context
grew since turn ``k`` (measured: its first call's prompt against the turn's); a reset
(a window of one) everything the earlier turns added; a cached prefix, where no call
reported cached prompt tokens, the prefill of each prompt's part that the call before
it sent already.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from latdoc.analysis.policy import NOTICEABLE_FRACTION
from latdoc.analysis.stats import Slope, slope_interval
from latdoc.model import Kind
from latdoc.records import RequestTrace
from latdoc.workload.otlp import AgentSpan

__all__ = [
    "AgentRemedy",
    "AgentRun",
    "Bar",
    "ContextRemedy",
    "ToolUse",
    "Turn",
    "analyse_agent",
    "ranked_remedies",
]

WINDOW_TURNS = 2
"""The window remedy keeps the last this many user turns of context."""
_NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class Turn:
    """One user turn: its wall-clock parts and its first model call's prompt and TTFT."""

    start_ns: int
    end_ns: int
    model_ms: float
    tool_ms: float
    agent_ms: float
    model_calls: int
    tool_calls: int
    prompt_tokens: int | None
    ttft_ms: float | None

    @property
    def wall_ms(self) -> float:
        return (self.end_ns - self.start_ns) / _NS_PER_MS


@dataclass(frozen=True)
class Bar:
    """A model call or a tool call on the run's time axis (ms from the run's start)."""

    turn: int
    """The user turn it belongs to, from 0."""
    role: str
    """``"model"`` or ``"tool"``."""
    label: str
    start_ms: float
    end_ms: float
    first_token_ms: float | None = None
    """A model call's first token, on the same axis; ``None`` when not recorded."""


@dataclass(frozen=True)
class ToolUse:
    """One tool's calls over the run."""

    name: str
    calls: int
    total_ms: float


@dataclass(frozen=True)
class ContextRemedy:
    """What one of the seed's context remedies would save over the run."""

    name: str
    """``"window"`` (the last :data:`WINDOW_TURNS` turns kept), ``"reset"`` or
    ``"prefix"`` (a cached prefix, offered where no call reported one)."""
    tokens_left_out: int
    """Prompt tokens the remedy leaves out of the run's model calls, measured."""
    saving_ms: float | None
    """TTFT saved over the run: the fitted cost of a prompt token times the tokens left
    out; ``None`` where the cost's interval holds zero."""
    low_ms: float | None
    high_ms: float | None


@dataclass(frozen=True)
class AgentRun:
    """An agent's run: its wall-clock parts (adding up to ``wall_ms``), its turns, its
    tools, its context's growth and what holds it back."""

    wall_ms: float
    model_ms: float
    tool_ms: float
    agent_ms: float
    parallel_saving_ms: float
    """Tool calls of one model answer made one after another, run at once instead."""
    turns: tuple[Turn, ...]
    model_calls: int
    tools: tuple[ToolUse, ...]
    growth: Slope | None
    """Prompt tokens a user turn adds (the turns' first calls), with its interval."""
    token_cost: Slope | None
    """TTFT milliseconds a prompt token costs over the run's calls, with its interval."""
    remedies: tuple[ContextRemedy, ...]
    cached_calls: int
    """Model calls whose usage reported prompt tokens served from the provider's cache."""
    cached_tokens: int
    """Prompt tokens the provider reported served from its cache, over the run."""
    prompt_tokens: int
    """Prompt tokens of the run's calls that told them (reported, else estimated)."""
    cached_ttft_ms: float | None
    """The median TTFT of the calls whose usage reported cached prompt tokens; ``None``
    where no call beside them reported none (nothing to hold them against)."""
    uncached_ttft_ms: float | None
    """The median TTFT of the calls that reported no cached prompt token, beside
    :attr:`cached_ttft_ms`."""
    holds_back: str
    """``"model"``, ``"tools"`` or ``"agent"``: the largest part of the wall clock."""
    bars: tuple[Bar, ...]
    """Every model and tool call on the run's time axis, in the order they began."""
    context_noticeable: bool
    """The context's growth added at least :data:`NOTICEABLE_FRACTION` of the run (the
    reset's saving, at the low end of its interval)."""

    @property
    def tool_calls(self) -> int:
        return sum(t.calls for t in self.tools)

    def verdict(self, model_kind: Kind) -> Kind:
        """The kind of slow that holds the run back: ``agent`` where its tools or its own
        work took the largest part of the wall clock, else ``model_kind``, the kind the
        diagnosis of its model calls named."""
        return model_kind if self.holds_back == "model" else Kind.AGENT

    def share(self, part_ms: float) -> float:
        return part_ms / self.wall_ms if self.wall_ms > 0 else 0.0


def analyse_agent(spans: Sequence[AgentSpan]) -> AgentRun | None:
    """The run the spans hold, or ``None`` when they hold no model call."""
    by_trace: dict[str, list[AgentSpan]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    turns = []
    calls: list[tuple[int, AgentSpan]] = []
    for members in sorted(by_trace.values(), key=lambda m: min(s.start_ns for s in m)):
        models = [s for s in members if s.role == "model"]
        if not models:
            continue
        turns.append(_turn(members))
        calls += [(len(turns) - 1, s) for s in sorted(models, key=lambda s: s.start_ns)]
    if not turns:
        return None
    model_ms = sum(t.model_ms for t in turns)
    tool_ms = sum(t.tool_ms for t in turns)
    agent_ms = sum(t.agent_ms for t in turns)
    parts = {"model": model_ms, "tools": tool_ms, "agent": agent_ms}
    token_cost = _token_cost(calls)
    remedies = tuple(
        _remedy(name, keep, turns, calls, token_cost)
        for name, keep in (("window", WINDOW_TURNS), ("reset", 1))
    )
    traces = [s.trace for _, s in calls if s.trace is not None]
    cached = [t.cached_prompt_tokens or 0 for t in traces]
    if not any(cached):
        remedies += (_prefix_remedy(calls, token_cost),)
    wall = sum(t.wall_ms for t in turns)
    reset = next(r for r in remedies if r.name == "reset")
    cached_ttft, uncached_ttft = _ttft_by_cache(traces)
    return AgentRun(
        wall_ms=wall,
        model_ms=model_ms,
        tool_ms=tool_ms,
        agent_ms=agent_ms,
        parallel_saving_ms=sum(_parallel_saving(members) for members in by_trace.values()),
        turns=tuple(turns),
        model_calls=len(calls),
        tools=_tools(spans),
        growth=slope_interval(
            [i for i, t in enumerate(turns) if t.prompt_tokens is not None],
            [t.prompt_tokens for t in turns if t.prompt_tokens is not None],
        ),
        token_cost=token_cost,
        remedies=remedies,
        cached_calls=sum(1 for c in cached if c),
        cached_tokens=sum(cached),
        prompt_tokens=sum(p for t in traces if (p := _prompt(t)) is not None),
        cached_ttft_ms=cached_ttft,
        uncached_ttft_ms=uncached_ttft,
        holds_back=max(parts, key=lambda k: parts[k]),
        bars=_bars(spans, turns),
        context_noticeable=reset.low_ms is not None
        and wall > 0
        and reset.low_ms >= NOTICEABLE_FRACTION * wall,
    )


def _ttft_by_cache(traces: list[RequestTrace]) -> tuple[float | None, float | None]:
    """The median TTFT of the calls that reported cached prompt tokens and of those that
    reported none (a call that did not say is in neither), where both are there."""
    timed = [(t.cached_prompt_tokens, ms) for t in traces if t.ok and (ms := t.ttft_ms) is not None]
    cached = [ms for tokens, ms in timed if tokens]
    fresh = [ms for tokens, ms in timed if tokens == 0]
    if not cached or not fresh:
        return None, None
    return statistics.median(cached), statistics.median(fresh)


def _bars(spans: Sequence[AgentSpan], turns: list[Turn]) -> tuple[Bar, ...]:
    origin = turns[0].start_ns
    bars = []
    for span in sorted(spans, key=lambda s: s.start_ns):
        if span.role not in ("model", "tool"):
            continue
        turn = max((n for n, t in enumerate(turns) if t.start_ns <= span.start_ns), default=0)
        ttft = None if span.trace is None else span.trace.ttft_ms
        start = (span.start_ns - origin) / _NS_PER_MS
        label = span.trace.model if span.trace is not None and span.trace.model else span.name
        bars.append(
            Bar(
                turn,
                span.role,
                label or span.role,
                start,
                (span.end_ns - origin) / _NS_PER_MS,
                None if ttft is None else start + ttft,
            )
        )
    return tuple(bars)


def _turn(members: list[AgentSpan]) -> Turn:
    """A trace's parts: each instant counted by the most specific span running then."""
    start = min(s.start_ns for s in members)
    end = max(s.end_ns for s in members)
    marks = sorted({start, end, *(t for s in members for t in (s.start_ns, s.end_ns))})
    parts = {"model": 0, "tool": 0, "agent": 0}
    for a, b in itertools.pairwise(marks):
        running = {s.role for s in members if s.start_ns <= a and s.end_ns >= b}
        part = "model" if "model" in running else "tool" if "tool" in running else "agent"
        parts[part] += b - a
    models = sorted((s for s in members if s.role == "model"), key=lambda s: s.start_ns)
    first = models[0].trace if models else None
    return Turn(
        start_ns=start,
        end_ns=end,
        model_ms=parts["model"] / _NS_PER_MS,
        tool_ms=parts["tool"] / _NS_PER_MS,
        agent_ms=parts["agent"] / _NS_PER_MS,
        model_calls=len(models),
        tool_calls=sum(1 for s in members if s.role == "tool"),
        prompt_tokens=_prompt(first),
        ttft_ms=None if first is None else first.ttft_ms,
    )


def _prompt(trace: RequestTrace | None) -> int | None:
    """A call's prompt tokens: the usage's count, else the estimate from its text."""
    if trace is None:
        return None
    told = trace.prompt_tokens
    return told if told is not None else trace.prompt_tokens_estimated


def _token_cost(calls: list[tuple[int, AgentSpan]]) -> Slope | None:
    points = [
        (p, s.trace.ttft_ms)
        for _, s in calls
        if s.trace is not None
        and s.trace.ok
        and s.trace.ttft_ms is not None
        and (p := _prompt(s.trace)) is not None
    ]
    return slope_interval([p for p, _ in points], [t for _, t in points])


def _remedy(
    name: str,
    keep: int,
    turns: list[Turn],
    calls: list[tuple[int, AgentSpan]],
    cost: Slope | None,
) -> ContextRemedy:
    """The tokens a window of the last ``keep`` turns leaves out of each call of a later
    turn: what its turn's first prompt grew past turn ``keep - 1``'s, measured."""
    base = turns[min(keep, len(turns)) - 1].prompt_tokens
    left_out = 0
    for turn, span in calls:
        grown = turns[turn].prompt_tokens
        prompt = _prompt(span.trace)
        if turn < keep or base is None or grown is None or prompt is None:
            continue
        left_out += max(0, min(prompt, grown - base))
    return _saving(name, left_out, cost)


def _prefix_remedy(calls: list[tuple[int, AgentSpan]], cost: Slope | None) -> ContextRemedy:
    """A cached prefix, where no call reported one: each call's prompt, up to the last
    call's length, served from the provider's cache (an agent's next prompt holds its
    last one whole), its prefill skipped."""
    left_out = 0
    last: int | None = None
    for _, span in calls:
        prompt = _prompt(span.trace)
        if prompt is not None and last is not None:
            left_out += min(prompt, last)
        last = prompt if prompt is not None else last
    return _saving("prefix", left_out, cost)


def _saving(name: str, left_out: int, cost: Slope | None) -> ContextRemedy:
    if cost is None or cost.low <= 0 or not left_out:
        return ContextRemedy(name, left_out, None, None, None)
    return ContextRemedy(
        name, left_out, cost.slope * left_out, cost.low * left_out, cost.high * left_out
    )


def _parallel_saving(members: list[AgentSpan]) -> float:
    """For each parent, its tool calls made one after another with no model call between
    (a tool overlapping the last one began a run of its own): running them at once saves
    all but the longest."""
    by_parent: dict[str | None, list[AgentSpan]] = defaultdict(list)
    for span in members:
        by_parent[span.parent_id].append(span)
    saved = 0
    for children in by_parent.values():
        run: list[AgentSpan] = []
        for span in sorted(children, key=lambda s: s.start_ns):
            if span.role == "tool" and (not run or span.start_ns >= run[-1].end_ns):
                run.append(span)
                continue
            if span.role in ("model", "call"):
                saved += _sequential(run)
                run = []
            elif span.role == "tool":
                saved += _sequential(run)
                run = [span]
        saved += _sequential(run)
    return saved / _NS_PER_MS


def _sequential(run: list[AgentSpan]) -> int:
    if len(run) < 2:
        return 0
    lengths = [s.end_ns - s.start_ns for s in run]
    return sum(lengths) - max(lengths)


def _tools(spans: Sequence[AgentSpan]) -> tuple[ToolUse, ...]:
    counts: dict[str, list[int]] = defaultdict(list)
    for span in spans:
        if span.role == "tool":
            counts[span.name or "(unnamed)"].append(span.end_ns - span.start_ns)
    uses = [ToolUse(name, len(v), sum(v) / _NS_PER_MS) for name, v in counts.items()]
    return tuple(sorted(uses, key=lambda u: -u.total_ms))


@dataclass(frozen=True)
class AgentRemedy:
    """One change to the agent, with what it would save over the run."""

    name: str
    """``"parallel"`` (the tool calls of one answer at once), ``"tool"`` (the slowest
    tool made faster or its results cached), or a :class:`ContextRemedy`'s name."""
    saving_ms: float | None
    """What it saves: measured (``parallel``) or fitted, with ``low_ms``/``high_ms``."""
    low_ms: float | None = None
    high_ms: float | None = None
    at_most_ms: float | None = None
    """Where no saving can be given, the most it could save (the tool's whole time)."""
    subject: str = ""
    """What it acts on: the tool's name."""


def ranked_remedies(run: AgentRun) -> tuple[AgentRemedy, ...]:
    """The changes to the agent, largest saving first: those with a measured or fitted
    saving ranked by it, then those only bounded (a tool made faster saves at most its
    time), by their bound."""
    found: list[AgentRemedy] = []
    if run.parallel_saving_ms > 0:
        saving = run.parallel_saving_ms
        found.append(AgentRemedy("parallel", saving, saving, saving))
    found += [
        AgentRemedy(r.name, r.saving_ms, r.low_ms, r.high_ms)
        for r in run.remedies
        if r.saving_ms is not None and r.name != "reset"
    ]
    found.sort(key=lambda r: -(r.saving_ms or 0.0))
    if run.tools:
        slowest = run.tools[0]
        found.append(AgentRemedy("tool", None, at_most_ms=slowest.total_ms, subject=slowest.name))
    return tuple(found)
