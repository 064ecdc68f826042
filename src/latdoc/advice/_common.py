"""The remedies that answer several kinds alike, built once: an asynchronous client, a
smaller or quantised model (one of the trade-offs :func:`another_model` builds), and
retries by error class with backoff; and the effects on cost and quality of those and of
a trimmed prompt, declared once for every kind that gives them.
"""

from __future__ import annotations

from latdoc.advice import keys
from latdoc.advice.verify import VERIFY_MODEL, VERIFY_RETRY, checked, verify_command
from latdoc.model import CostChange, Effects, Kind, QualityRisk, Remedy, RunContext

__all__ = [
    "SMALLER_MODEL_EFFECTS",
    "TRIMMED_PROMPT_EFFECTS",
    "another_model",
    "async_client",
    "retries",
    "smaller_model",
]

SMALLER_MODEL_EFFECTS = Effects(
    CostChange.LOWER,
    QualityRisk.MAY_LOWER,
    cost_why="a smaller model costs less a token",
    quality_why="a smaller or quantised model knows less",
)
TRIMMED_PROMPT_EFFECTS = Effects(
    CostChange.LOWER,
    QualityRisk.MAY_CHANGE,
    cost_why="fewer prompt tokens billed",
    quality_why="the model no longer reads what was trimmed",
)


def async_client(kind: Kind) -> Remedy:
    return Remedy(
        keys.ASYNC_CLIENT,
        "Use an asynchronous client",
        kind,
        "httpx.AsyncClient or openai.AsyncOpenAI with one shared client, so waiting "
        "requests do not hold threads.",
        None,
    )


def another_model(
    key: str, title: str, kind: Kind, change: str, tradeoff: str, ctx: RunContext
) -> Remedy:
    """A remedy that swaps the model: always a trade-off, its gain measured by
    ``latdoc verify --remedy model`` against the model the user names."""
    command = verify_command(ctx, VERIFY_MODEL, alt_model="NAME")
    return Remedy(
        key, title, kind, checked(change, command), None, tradeoff=tradeoff, verify_command=command
    )


def smaller_model(kind: Kind, change: str, ctx: RunContext) -> Remedy:
    return another_model(
        keys.SMALLER_MODEL,
        "A smaller or quantised model of the same family",
        kind,
        change,
        "lower quality; know your priority order of latency, cost and quality",
        ctx,
    )


def retries(kind: Kind, retry_after_s: float | None, ctx: RunContext) -> Remedy:
    wait = (
        f"429: wait the Retry-After the server sends ({retry_after_s:g} s here)"
        if retry_after_s is not None
        else "429: wait for Retry-After"
    )
    return Remedy(
        keys.RETRIES,
        "Retry by error class with exponential backoff",
        kind,
        "Timeouts and 5xx: retry with exponential backoff and jitter, a few tries at most; "
        f"{wait}; other 4xx: never retry; never replay a stream that has begun.\n"
        "  from latdoc.client import RetryPolicy, make_async_client\n"
        "  openai.AsyncOpenAI(max_retries=0, http_client=make_async_client(retry=RetryPolicy()))",
        None,
        verify_command=verify_command(ctx, VERIFY_RETRY),
    )
