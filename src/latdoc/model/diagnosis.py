"""The diagnosis as data: kinds of slow, findings with evidence, remedies, the verdict.

Everything here is a frozen record built by pure functions from traces; the
report layer renders it and the store keeps it. Durations are milliseconds
unless a name says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from latdoc.i18n import Message
from latdoc.model.cost import CostSummary
from latdoc.model.host import SystemItem
from latdoc.model.kind import Kind
from latdoc.model.length import LengthCurve
from latdoc.model.priorities import Effects, Priorities, Scenario
from latdoc.model.server import ServerAccount
from latdoc.records import StepNote


@dataclass(frozen=True, slots=True)
class Finding:
    """One kind of slow that a rule detected, with the numbers that made it fire."""

    kind: Kind
    title: str
    rule: str
    """The rule that fired, in words, with its threshold."""
    evidence: Mapping[str, float]
    """The measured numbers the rule used (ms, ratios, counts)."""
    share_ms: float
    """Latency this kind adds to a typical request, in ms."""
    confidence: float
    """0..1: how sure the rule is (sample size, margin over the threshold)."""
    n: int | None = None
    """How many requests (or streams, or lengths' requests) the rule read."""
    excess_ms: float = -1.0
    """What the typical request would save were this kind at the reference profile's
    slow edge of healthy (:mod:`latdoc.reference`), in ms: the part of ``share_ms`` a
    healthy endpoint would not spend, and what the verdict weighs. Left out, the whole
    share (a kind a healthy endpoint has none of)."""

    beyond_alone_ms: float = 0.0
    """The part of ``share_ms`` a typical request sent alone does not pay, which the
    user's request does: the wait a request among the user's concurrency adds, decode
    slowed by streams decoding together, or what swings add to identical requests'
    mean over their median. The typical request's time counts it
    (:attr:`Workload.beyond_alone_ms`); 0 where the whole share lies inside a request
    sent alone."""

    def __post_init__(self) -> None:
        if self.excess_ms < 0:
            object.__setattr__(self, "excess_ms", self.share_ms)

    @property
    def past_healthy(self) -> bool:
        """Part of the share is a healthy endpoint's own: the excess is less than it."""
        return self.excess_ms < self.share_ms


GainSource = Literal["measured", "fitted"]
"""Where a remedy's gain comes from: ``measured`` from this run's requests (a
difference of medians with its bootstrap interval), ``fitted`` from the length
curve (a difference of predictions with the interval of its bootstrap refits)."""


@dataclass(frozen=True, slots=True)
class Remedy:
    """A concrete change, ranked for the user's priorities.

    Its gain is printed only when this run measured it or the length curve models it,
    with the interval and the source; otherwise ``predicted_gain_ms`` is ``None`` and
    ``verify_command`` (when ``latdoc verify`` can measure it) says how to find out.
    """

    key: str
    title: str
    addresses: Kind
    change: str
    """What to change, phrased for httpx and the openai SDK."""
    predicted_gain_ms: float | None
    """TTFT or end-to-end saving per request, measured or fitted; None otherwise."""
    tradeoff: str | None = None
    """What it costs (quality, money, effort); set for trade-offs like a smaller model."""
    gain_interval_ms: tuple[float, float] | None = None
    """The 95% interval of the gain; None when there is no gain or nothing to resample."""
    gain_source: GainSource | None = None
    """``measured`` or ``fitted``; None exactly when there is no gain."""
    verify_command: str | None = None
    """The ``latdoc verify`` command that measures this remedy on this endpoint."""
    how_to_measure: str | None = None
    """In words, how to measure a remedy that ``latdoc verify`` cannot."""
    effects: Effects | None = None
    """What it does to cost and quality, as its kind's registry declares; None in
    documents written before remedies declared it."""

    def __post_init__(self) -> None:
        if (self.predicted_gain_ms is None) != (self.gain_source is None):
            raise ValueError(f"remedy {self.key!r}: a gain needs its source, a source its gain")
        if self.gain_interval_ms is not None and self.predicted_gain_ms is None:
            raise ValueError(f"remedy {self.key!r}: an interval without a gain")


@dataclass(frozen=True, slots=True)
class Verdict:
    """Which kind of slow this is: the primary kind, the other noticeable kinds that
    contribute (largest share first), the probability that the primary kind is right,
    the kinds found too small to notice, and what that probability was read from."""

    primary: Kind
    contributing: tuple[Kind, ...]
    confidence: float
    """0..1: the probability that the primary kind is right, read from the primary
    rule's own confidence by the truth bank's calibration
    (:mod:`latdoc.analysis.calibration`); the rule's own number while uncalibrated."""
    negligible: tuple[Kind, ...] = ()
    """Kinds a rule found whose share is too small to notice (see
    :mod:`latdoc.analysis.noticeable`): listed, never given remedies."""
    rule_confidence: float | None = None
    """The primary kind's rule confidence (samples behind it, margin over its
    threshold) that ``confidence`` was read from; None in documents written before
    confidence was calibrated."""
    confidence_model: str | None = None
    """The version of the calibration table that read it; None when uncalibrated."""
    bank_accuracy: float | None = None
    """How often the truth bank's verdicts of this primary kind were right; None when
    the bank never named it or the verdict was not calibrated."""
    bank_n: int | None = None
    """How many of the truth bank's verdicts named this primary kind."""
    runner_up: Kind | None = None
    """The kind a second run would most likely name instead: the next kind by its share,
    ``healthy`` when nothing else counts, or for a healthy verdict the kind nearest its
    bar; None when nothing was found or the verdict was not calibrated."""
    near_threshold: bool = False
    """The verdict is within a threshold's reach of another answer: a second run may
    say otherwise (:mod:`latdoc.analysis.calibration`)."""
    evidence: Mapping[str, float] = field(default_factory=dict, compare=False)
    """What the confidence was read from, by feature (``margin``, ``runner_up``, …):
    kept for the fit of the confidence, not stored."""


@dataclass(frozen=True, slots=True)
class LengthCheck:
    """What the seed's input-length rule compared, fired or not, in its own numbers."""

    short_tokens: int
    short_ms: float
    """The fitted curve's TTFT at the shortest length."""
    long_tokens: int
    long_ms: float
    """The fitted curve's TTFT at the rule's long length (~2K tokens; the longest for
    longdoc)."""
    ratio: float
    growth_ms: float
    noise_ms: float
    """Same-length TTFT p95 − p50, for the record: the rule reads the growth's interval."""
    grows_with_length: bool
    """The growth's interval lies above zero (without an interval: no longer prompt was
    served clearly faster than a shorter one)."""
    fired: bool
    why: str
    """Why it fired or did not, in words with the thresholds."""
    growth_interval_ms: tuple[float, float] | None = None
    """The 95% interval of ``growth_ms`` from the curve's bootstrap; None without one."""
    asked_tokens: int | None = None
    """The prompt the rule was asked to read when it lies beyond the longest length
    measured: ``long_tokens`` is then that longest, not an extrapolation; None otherwise."""
    reference_growth_ms: float | None = None
    """What a healthy endpoint's prefill adds between the same two lengths, at the
    reference profile's slow edge (``prefill_ms_per_1k``); None in runs stored before
    the profile."""

    @property
    def excess_ms(self) -> float:
        """The growth past healthy: what the long prompt would save were the prefill at
        the reference's slow edge (0 when the TTFT does not grow with the length beyond
        the requests' jitter). In runs stored before the profile, the whole growth where
        the seed's rule fired."""
        if self.reference_growth_ms is None:
            return max(0.0, self.growth_ms) if self.fired else 0.0
        if not self.grows_with_length:
            return 0.0
        return max(0.0, self.growth_ms - self.reference_growth_ms)


PromptSource = Literal["told", "recorded", "seed"]
"""Where the typical request's prompt came from (:attr:`Workload.source`)."""


@dataclass(frozen=True, slots=True)
class Workload:
    """The one request every share, the noticeable bar and the verdict speak of: the
    user's typical request, of ``prompt_tokens`` prompt tokens.

    Its time is the shortest length's typical request (the median end-to-end time of
    the warm requests sent alone), plus what the fitted length curve adds from the
    shortest length to ``prompt_tokens``, plus what the kinds add to it beyond a request
    sent alone (:attr:`Finding.beyond_alone_ms`: the wait among the user's
    concurrency): one set of figures its kinds' shares and the rest of it add up to."""

    prompt_tokens: int | None
    """None where the requests asked for no length and none was measured (recorded
    traffic without a length curve)."""
    output_tokens: int | None
    """The median output tokens of the requests sent alone; None where not counted."""
    concurrency: int
    total_ms: float
    """Its end-to-end time: :attr:`short_ms` + :attr:`growth_ms` + :attr:`beyond_alone_ms`."""
    short_ms: float
    """The shortest length's typical request, end to end."""
    growth_ms: float = 0.0
    """What the fitted curve adds from the shortest length to ``prompt_tokens``."""
    source: PromptSource = "seed"
    """Where ``prompt_tokens`` came from: ``told`` by the user (``--prompt-tokens``),
    ``recorded``: the median of the recorded requests' prompts (a trace or recorded
    traffic), or ``seed``: the seed's long prompt (or the length the requests asked for)."""
    asked_tokens: int | None = None
    """The prompt asked for when it lies beyond the longest length measured, which
    ``prompt_tokens`` is then: the curve is not extrapolated past it."""
    beyond_alone_ms: float = 0.0
    """What the kinds add to it beyond a request sent alone (the sum of the findings'
    :attr:`Finding.beyond_alone_ms`)."""

    @property
    def told(self) -> bool:
        """The user told the prompt (``--prompt-tokens``)."""
        return self.source == "told"

    def text(self) -> str:
        """``a typical request of 2,048 prompt tokens, 32 output tokens, at concurrency 4``."""
        parts = [Message("{n:,} prompt tokens", n=self.prompt_tokens)] if self.prompt_tokens else []
        if self.output_tokens is not None:
            parts.append(Message("{n:,} output tokens", n=self.output_tokens))
        if not parts:
            return Message("a typical request, at concurrency {n}", n=self.concurrency)
        return Message(
            "a typical request of {size}, at concurrency {n}",
            size=Message.joined(", ", parts),
            n=self.concurrency,
        )


@dataclass(frozen=True, slots=True)
class LongerPrompt:
    """A longer prompt the run measured at which input length would be named and
    noticeable, though not at the request the verdict is of: read from the fitted curve."""

    prompt_tokens: int
    growth_ms: float
    """What input length would add to a request of ``prompt_tokens`` (fitted)."""
    growth_interval_ms: tuple[float, float]
    """Its 95% interval from the curve's bootstrap."""
    ratio: float
    """TTFT at ``prompt_tokens`` over TTFT at the shortest length (fitted)."""


NetworkBottleneck = Literal["network", "model service"]
"""What step 1's rule can name as the main bottleneck."""


@dataclass(frozen=True, slots=True)
class NetworkCheck:
    """What step 1 of the seed's method, the network rule, compared and decided, in its own
    numbers and thresholds: a new connection's setup (DNS + TCP + TLS) against its first
    byte. ``statement`` is the one sentence every report prints; the rule names the
    network only when the verdict is a network kind, and the model service only when it
    is not, so the sentence never contradicts the verdict."""

    setup_ms: float | None
    """Median DNS + TCP + TLS of the network step's new connections."""
    first_byte_ms: float | None
    """Median first byte of the network step's requests on a new connection."""
    slow_setup_ms: float
    """The setup above which the network can be the main bottleneck (the seed: 200 ms)."""
    service_ratio: float
    """What "first byte ≫ network setup" means: at least this many times the setup."""
    bottleneck: NetworkBottleneck | None
    """The main bottleneck the rule named; None when it named neither."""
    statement: str
    """The rule's decision in words, with its numbers and thresholds."""
    keepalive_why: str | None = None
    """Why keep-alive's saving was not measured; None when it was."""


@dataclass(frozen=True, slots=True)
class NoticeableBar:
    """The share a kind must add to a typical request before it counts as contributing."""

    typical_ms: float
    """The typical request's end-to-end time (median of the network step's warm requests)."""
    noise_ms: float
    """How much identical requests' end-to-end times vary (scaled MAD)."""
    fraction: float
    """The least fraction of ``typical_ms`` a user would notice."""
    ttft_noise_ms: float | None = None
    """How much the same requests' times to first token vary (scaled MAD): the noise
    of the kinds that act before the first token; ``None`` where not measured."""
    new_connection_ms: float = 0.0
    """What a new connection's setup adds to the typical request where the server keeps
    connections alive (the median DNS + TCP + TLS of the requests that opened one): a
    kind that acts only on such a request is weighed on it, the request that pays it
    (step 1 of the method); 0 where every request opens one, and pays it already."""

    @property
    def min_share_ms(self) -> float:
        return max(self.fraction * self.typical_ms, self.noise_ms)

    def noise_for(self, before_first_token: bool) -> float:
        """The noise a kind's share is held against: its own metric's, the first
        token's for a kind that acts before it."""
        if before_first_token and self.ttft_noise_ms is not None:
            return self.ttft_noise_ms
        return self.noise_ms


@dataclass(frozen=True, slots=True)
class RequestParts:
    """A request on a new connection split into its phases (medians over the network
    step's cold requests), as the trace defines them: setup = DNS + TCP + TLS,
    send = writing the request, prefill = first token − setup − send − the client's
    pool wait (the server's wait and first-token delay), reasoning = first reasoning
    output to first answer token, decode = the rest of the stream to the end.

    Where the server tells its own prefill (:mod:`latdoc.analysis.servertime`), prefill is the
    server's and ``server_wait_ms`` the rest of that wait: the server's queue, its
    overhead and the round trip. Where it keeps a waiting request's stream open with
    ``: keep-alive`` comments instead (:mod:`latdoc.analysis.queue_comments`),
    ``server_wait_ms`` is the wait they tell, its queue, and prefill the rest."""

    setup_ms: float
    send_ms: float
    prefill_ms: float
    decode_ms: float
    requests: int
    reasoning_ms: float = 0.0
    server_wait_ms: float | None = None

    @property
    def total_ms(self) -> float:
        wait = self.server_wait_ms or 0.0
        before = self.setup_ms + self.send_ms + wait + self.prefill_ms
        return before + self.reasoning_ms + self.decode_ms

    def items(self) -> tuple[tuple[str, float], ...]:
        """The phases in order; reasoning only when the requests reasoned, the server's
        wait only when it told its prefill."""
        wait = () if self.server_wait_ms is None else (("server wait", self.server_wait_ms),)
        thinking = (("reasoning", self.reasoning_ms),) if self.reasoning_ms > 0 else ()
        return (
            ("network setup", self.setup_ms),
            ("send", self.send_ms),
            *wait,
            ("prefill", self.prefill_ms),
            *thinking,
            ("decode", self.decode_ms),
        )


@dataclass(frozen=True)
class Diagnosis:
    """The answer: verdict, shares, findings, remedies, and the numbers behind them."""

    run_id: str
    endpoint: str
    model: str
    scenario: Scenario
    verdict: Verdict
    shares_ms: Mapping[Kind, float]
    findings: tuple[Finding, ...]
    remedies: tuple[Remedy, ...]
    network: Mapping[str, float | None]
    length: LengthCurve | None
    load: Mapping[str, float | None]
    notes: tuple[StepNote, ...] = ()
    requests: int = 0
    failed: int = 0
    extra: Mapping[str, object] = field(default_factory=dict)
    length_check: LengthCheck | None = None
    """The input-length rule's comparison, also when it did not fire."""
    network_check: NetworkCheck | None = None
    """Step 1's network rule: what it compared and named; None without a network step."""
    noticeable: NoticeableBar | None = None
    """The bar a finding's share had to clear to contribute; None when nothing succeeded."""
    typical_request: RequestParts | None = None
    """A request on a new connection, split into setup, send, prefill and decode."""
    system: tuple[SystemItem, ...] = ()
    """The client host's failing checklist items that matter for the verdict or a
    contributing kind (``latdoc system`` lists them all)."""
    server: ServerAccount | None = None
    """The requests as the server itself timed them, and where it and the client
    disagree; None when the server told nothing."""
    reasoning: Mapping[str, float | None] = field(default_factory=dict)
    """The reasoning phase (medians over successful requests): time to first reasoning,
    time to first answer token, time thinking, reasoning tokens; empty when no request
    reasoned (:func:`latdoc.analysis.facts.reasoning_facts`)."""
    requests_by_step: Mapping[str, int] = field(default_factory=dict)
    """How many of :attr:`requests` each step sent (``network``, ``length``, ``load``;
    ``traffic`` for recorded traffic): each step stops when its decision is settled."""
    workload: Workload | None = None
    """The request the shares, the bar and the verdict are of; None when none succeeded."""
    longer_prompt: LongerPrompt | None = None
    """Where the user did not tell their prompt: the shortest longer length measured at
    which input length would be named and noticeable; None when there is none."""
    cost: CostSummary | None = None
    """What the run's requests cost at the model's price; None where latdoc knew none."""
    priorities: Priorities | None = None
    """What the remedies were ranked for: the user's priorities, else the scenario's
    preset; None before remedies are added, and in documents written before."""
    reference: tuple[str, str] | None = None
    """The user's reference of healthy the run was held against, as its name and where
    it came from (``diagnose --reference FILE``); None for the profile latdoc ships."""

    def noticed_shares(self) -> dict[Kind, float]:
        """The shares of the kinds not negligible, largest first: what the report's
        "where the time goes" shows."""
        noticed = {k: ms for k, ms in self.shares_ms.items()
                   if k not in self.verdict.negligible and ms > 0}  # fmt: skip
        return dict(sorted(noticed.items(), key=lambda kv: -kv[1]))

    @property
    def rest_ms(self) -> float | None:
        """What of the typical request no noticed kind adds, so its shown shares and this
        add up to :attr:`Workload.total_ms`; None without a typical request or where a
        healthy verdict's whole request is its one share."""
        if self.workload is None or Kind.HEALTHY in self.shares_ms:
            return None
        return max(0.0, self.workload.total_ms - sum(self.noticed_shares().values()))

    def requests_text(self) -> str:
        """``17 requests (network 4, length 5, load 8)``."""
        requests = (
            Message("{n} request", n=self.requests)
            if self.requests == 1
            else Message("{n} requests", n=self.requests)
        )
        if not self.requests_by_step:
            return requests
        steps = Message.joined(
            ", ",
            [
                Message("{step} {n}", step=Message.of(str(step)), n=n)
                for step, n in self.requests_by_step.items()
            ],
        )
        return Message("{requests} ({steps})", requests=requests, steps=steps)
