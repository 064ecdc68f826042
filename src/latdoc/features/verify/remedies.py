"""Each remedy ``latdoc verify`` can test, as two arms: today's way (A) and the remedy (B).

Only the remedy differs between the arms: the same prompts at the same lengths
(calibrated on the endpoint's own token count), the same output, the same
endpoint unless the remedy is another endpoint or model.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass, field, replace

from latdoc.analysis.compare import MEDIAN, TRIAL_MEAN
from latdoc.errors import UsageError
from latdoc.features.verify.conversation.send import parse_strategies
from latdoc.features.verify.send import Arm
from latdoc.probe import ConnectionOptions, Endpoint, Prompt
from latdoc.workload import TokenCalibration, make_prompt, prompt_cost

SHORT_TOKENS = 64
"""The prompt length of remedies that are not about the prompt."""
GENEROUS_MAX_TOKENS = 4096
DEFAULT_PREFIX_TOKENS = 2048
QUESTION_TOKENS = 32
"""The varied question after a prompt-cache prefix."""

QUESTIONS = (
    "Which is larger, the sun or the moon?",
    "What colour is a clear daytime sky?",
    "How many days are in a week?",
    "Is water wet or dry?",
    "What do bees make?",
    "Which season comes after winter?",
)
"""Questions with a short natural answer, for the max-tokens remedy."""


class VerifyRemedy(enum.StrEnum):
    """The remedies ``latdoc verify --remedy`` can measure."""

    KEEPALIVE = "keepalive"
    HTTP2 = "http2"
    POOL = "pool"
    TRIM = "trim"
    CONVERSATION = "conversation"
    MAX_TOKENS = "max-tokens"
    PROMPT_CACHE = "prompt-cache"
    RETRY = "retry"
    ENDPOINT = "endpoint"
    MODEL = "model"
    REASONING_EFFORT = "reasoning-effort"


HEADLINE: dict[VerifyRemedy, tuple[str, str]] = {
    VerifyRemedy.KEEPALIVE: ("ttft", MEDIAN),
    VerifyRemedy.HTTP2: ("ttft", TRIAL_MEAN),
    VerifyRemedy.POOL: ("ttft", TRIAL_MEAN),
    VerifyRemedy.TRIM: ("ttft", MEDIAN),
    VerifyRemedy.CONVERSATION: ("ttft", TRIAL_MEAN),
    VerifyRemedy.MAX_TOKENS: ("ttft", MEDIAN),
    VerifyRemedy.PROMPT_CACHE: ("ttft", MEDIAN),
    VerifyRemedy.RETRY: ("total", MEDIAN),
    VerifyRemedy.ENDPOINT: ("ttft", MEDIAN),
    VerifyRemedy.MODEL: ("ttft", MEDIAN),
    VerifyRemedy.REASONING_EFFORT: ("total", MEDIAN),
}
"""The metric each remedy is judged by, and the statistic: the trial mean where requests
sent at once finish in waves of the pool's size, since a median would fall anywhere
between two waves. The comparison shows every metric's median besides."""


def arm_summaries(plan: VerifyPlan) -> tuple[str, str]:
    """What arms A and B will be, said before anything is sent."""
    r, n = plan.remedy, plan.concurrency
    if r is VerifyRemedy.KEEPALIVE:
        return "a new connection per request", "one connection, kept alive and reused"
    if r is VerifyRemedy.HTTP2:
        today = plan.pool_size if plan.pool_size is not None else n
        return (
            f"HTTP/1.1, a pool of {today}, {n} requests at once",
            f"HTTP/2, {n} requests multiplexed on one connection",
        )
    if r is VerifyRemedy.POOL:
        return (
            f"a pool of {plan.pool_size} (today), {n} requests at once",
            f"a pool of {plan.advised_pool} (2 × {plan.cpu_count} cores + {n}), "
            f"{n} requests at once",
        )
    if r is VerifyRemedy.TRIM:
        return f"a prompt of {plan.from_tokens} tokens", f"the same task at {plan.to_tokens} tokens"
    if r is VerifyRemedy.MAX_TOKENS:
        return (
            f"max_tokens={plan.generous_max_tokens}",
            "max_tokens just above what the answer needs (measured first)",
        )
    if r is VerifyRemedy.PROMPT_CACHE:
        return (
            f"a {plan.prefix_tokens}-token prefix varied every request",
            "the same prefix kept stable, the question after it varied",
        )
    if r is VerifyRemedy.ENDPOINT:
        return plan.endpoint.base_url, str(plan.alt_url)
    if r is VerifyRemedy.RETRY:
        return (
            "no retries: the first failure is the application's",
            "latdoc.client.RetryPolicy(): connect errors and timeouts, 5xx, 529 and 429 "
            "retried with backoff, Retry-After honoured, other 4xx never",
        )
    if r is VerifyRemedy.CONVERSATION:
        return (
            f"a {plan.turns}-turn chat of {plan.tokens_per_turn} tokens a turn that keeps "
            "everything",
            f"the same chat under each of {plan.strategies}",
        )
    if r is VerifyRemedy.REASONING_EFFORT:
        return "reasoning as the requests ask today", f"reasoning effort {plan.reasoning_effort}"
    return f"model {plan.endpoint.model}", f"model {plan.alt_model}"


@dataclass(frozen=True)
class VerifyPlan:
    """What to test, against which endpoint, within which budget."""

    endpoint: Endpoint
    remedy: VerifyRemedy
    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    max_tokens: int = 32
    """Output length of every request (the max-tokens remedy sets its own)."""
    concurrency: int = 8
    """Requests at once per trial, for ``http2`` and ``pool``."""
    pool_size: int | None = None
    """Arm A's pool for ``pool`` (required) and ``http2`` (default: ``concurrency``)."""
    cpu_count: int = 1
    """Cores of this host, for the advised pool ``2 × cores + concurrency``."""
    from_tokens: int | None = None
    to_tokens: int | None = None
    prefix_tokens: int = DEFAULT_PREFIX_TOKENS
    generous_max_tokens: int = GENEROUS_MAX_TOKENS
    alt_url: str | None = None
    alt_model: str | None = None
    turns: int = 20
    tokens_per_turn: int = 200
    trials: int = 40
    """retry: logical requests per arm."""
    strategies: str = "window:6,summary:10,reset:20"
    reasoning_effort: str = "low"
    """reasoning-effort: the effort arm B asks for (Anthropic: a thinking budget)."""
    max_requests: int = 200
    token_budget: int | None = None
    max_seconds: float = 180.0
    precision: float = 0.05
    """Stop once the 95% interval of the headline ratio is within ± this fraction."""
    seed: int | None = None

    def __post_init__(self) -> None:
        r = self.remedy
        if r is VerifyRemedy.POOL and self.pool_size is None:
            raise UsageError("--remedy pool needs --pool-size: the pool your client has today")
        if self.pool_size is not None and self.pool_size < 1:
            raise UsageError("--pool-size must be at least 1")
        if r is VerifyRemedy.TRIM:
            if self.from_tokens is None or self.to_tokens is None:
                raise UsageError("--remedy trim needs --from N and --to M (prompt tokens)")
            if self.to_tokens >= self.from_tokens:
                raise UsageError("--to must be fewer tokens than --from: trimming shortens")
        if r is VerifyRemedy.ENDPOINT and not self.alt_url:
            raise UsageError("--remedy endpoint needs --alt URL2: the endpoint to try")
        if r is VerifyRemedy.MODEL and not self.alt_model:
            raise UsageError("--remedy model needs --alt-model NAME: the model to try")
        if r is VerifyRemedy.MODEL and self.alt_model == self.endpoint.model:
            raise UsageError("--alt-model names the model under test: name another one")
        if r is VerifyRemedy.REASONING_EFFORT:
            self.endpoint.dialect.reasoning_fields(self.reasoning_effort)
        if r is VerifyRemedy.CONVERSATION:
            parse_strategies(self.strategies)
            if self.turns < 2:
                raise UsageError("--turns must be at least 2: a conversation needs history")
        if not 0 < self.precision < 1:
            raise UsageError("--precision must be between 0 and 1, e.g. 0.05")

    @property
    def advised_pool(self) -> int:
        """The pool the advice gives: ``2 × cores + concurrency``."""
        return 2 * max(1, self.cpu_count) + self.concurrency


def needs_answer_length(plan: VerifyPlan) -> bool:
    return plan.remedy is VerifyRemedy.MAX_TOKENS


def short_question(rng: random.Random) -> str:
    """A question with a short natural answer, made unique so no cache answers it."""
    return f"Request {rng.getrandbits(40):010x}. In one short sentence: {rng.choice(QUESTIONS)}"


def build_arms(
    plan: VerifyPlan, calibration: TokenCalibration, *, answer_tokens: int | None = None
) -> tuple[Arm, Arm]:
    """Arm A (today) and arm B (the remedy) for ``plan.remedy``."""
    r = plan.remedy

    def words(tokens: int) -> int:
        return calibration.words_for(tokens)

    def cost(tokens: int) -> int:
        return prompt_cost(calibration, words(tokens))

    def unique(tokens: int) -> _Prompts:
        return _Prompts(words(tokens))

    base = Arm(
        name="A",
        label="",
        endpoint=plan.endpoint,
        connection=plan.connection,
        prompt=unique(SHORT_TOKENS),
        prompt_cost=cost(SHORT_TOKENS),
        max_tokens=plan.max_tokens,
        target_prompt_tokens=SHORT_TOKENS,
        warmup_trials=1,
    )
    if r is VerifyRemedy.KEEPALIVE:
        return (
            replace(
                base,
                label="a new connection (DNS, TCP, TLS) per request",
                reuse=False,
                warmup_trials=0,
            ),
            replace(base, name="B", label="one connection, kept alive and reused", warmup_trials=1),
        )
    if r in (VerifyRemedy.HTTP2, VerifyRemedy.POOL):
        n = plan.concurrency
        today = plan.pool_size if plan.pool_size is not None else n
        a = replace(
            base,
            label=f"HTTP/1.1, a pool of {today} connection{'s' if today != 1 else ''}, "
            f"{n} requests at once",
            connection=replace(plan.connection, http2=False),
            max_connections=today,
            concurrency=n,
            warmup_trials=1,
        )
        if r is VerifyRemedy.HTTP2:
            b = replace(
                a,
                name="B",
                label=f"HTTP/2, {n} requests multiplexed on one connection",
                connection=replace(plan.connection, http2=True),
                max_connections=1,
            )
        else:
            size = plan.advised_pool
            b = replace(
                a,
                name="B",
                label=f"HTTP/1.1, a pool of {size} connections (2 × {plan.cpu_count} cores + "
                f"{n}), {n} requests at once",
                max_connections=size,
            )
        return a, b
    if r is VerifyRemedy.TRIM:
        assert plan.from_tokens is not None and plan.to_tokens is not None
        return (
            replace(
                base,
                label=f"a prompt of {plan.from_tokens} tokens",
                prompt=unique(plan.from_tokens),
                prompt_cost=cost(plan.from_tokens),
                target_prompt_tokens=plan.from_tokens,
            ),
            replace(
                base,
                name="B",
                label=f"the same task trimmed to {plan.to_tokens} tokens",
                prompt=unique(plan.to_tokens),
                prompt_cost=cost(plan.to_tokens),
                target_prompt_tokens=plan.to_tokens,
            ),
        )
    if r is VerifyRemedy.MAX_TOKENS:
        if answer_tokens is None:
            raise ValueError("the max-tokens remedy needs the answer's natural length")
        tight = tight_max_tokens(answer_tokens)
        question = replace(
            base,
            prompt=short_question,
            prompt_cost=cost(QUESTION_TOKENS),
            target_prompt_tokens=None,
        )
        return (
            replace(
                question,
                label=f"max_tokens={plan.generous_max_tokens} for a ~{answer_tokens}-token answer",
                max_tokens=plan.generous_max_tokens,
            ),
            replace(
                question,
                name="B",
                label=f"max_tokens={tight}, just above the answer's {answer_tokens} tokens",
                max_tokens=tight,
            ),
        )
    if r is VerifyRemedy.PROMPT_CACHE:
        total = plan.prefix_tokens + QUESTION_TOKENS
        prefix_words = max(1, round(plan.prefix_tokens / calibration.per_word))
        question_words = max(1, words(total) - prefix_words)
        fixed = make_prompt(prefix_words, random.Random(plan.seed))
        return (
            replace(
                base,
                label=f"a {plan.prefix_tokens}-token prefix that changes every request",
                prompt=_Prompts(words(total)),
                prompt_cost=cost(total),
                target_prompt_tokens=total,
            ),
            replace(
                base,
                name="B",
                label=f"the same {plan.prefix_tokens}-token prefix kept stable, "
                "the question after it varied",
                prompt=_Prompts(question_words, prefix=fixed),
                prompt_cost=cost(total),
                target_prompt_tokens=total,
                warmup_trials=1,
            ),
        )
    if r is VerifyRemedy.RETRY:
        label_a, label_b = arm_summaries(plan)
        return replace(base, label=label_a, warmup_trials=0), replace(
            base, name="B", label=label_b, warmup_trials=0
        )
    if r is VerifyRemedy.ENDPOINT:
        assert plan.alt_url is not None
        alt = Endpoint(
            plan.alt_url,
            plan.alt_model or plan.endpoint.model,
            plan.endpoint.dialect,
            api_key=plan.endpoint.api_key,
        )
        return (
            replace(base, label=f"{plan.endpoint.base_url}", warmup_trials=1),
            replace(base, name="B", label=f"{plan.alt_url}", endpoint=alt, warmup_trials=1),
        )
    if r is VerifyRemedy.REASONING_EFFORT:
        ep = plan.endpoint
        asked = ep.dialect.reasoning_fields(plan.reasoning_effort)
        lighter = replace(ep, extra_body={**ep.extra_body, **asked})
        label_a, label_b = arm_summaries(plan)
        return (
            replace(base, label=label_a, warmup_trials=1),
            replace(base, name="B", label=f"{label_b}: {asked}", endpoint=lighter),
        )
    assert plan.alt_model is not None
    alt_model = replace(plan.endpoint, model=plan.alt_model)
    return (
        replace(base, label=f"model {plan.endpoint.model}", warmup_trials=1),
        replace(
            base, name="B", label=f"model {plan.alt_model}", endpoint=alt_model, warmup_trials=1
        ),
    )


def tight_max_tokens(answer_tokens: int) -> int:
    """A limit just above an answer of ``answer_tokens``: a quarter more, at least 8 more."""
    return answer_tokens + max(8, answer_tokens // 4)


@dataclass(frozen=True)
class _Prompts:
    """Unique random-word prompts of ``words`` words, after a fixed ``prefix`` if given."""

    words: int
    prefix: str | None = None

    def __call__(self, rng: random.Random) -> Prompt:
        text = make_prompt(self.words, rng)
        return text if self.prefix is None else f"{self.prefix} {text}"
