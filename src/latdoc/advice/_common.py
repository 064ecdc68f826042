"""The remedies that answer several kinds alike, built once: an asynchronous client, a
smaller or quantised model (one of the trade-offs :func:`another_model` builds), and
retries by error class with backoff; and the effects on cost and quality of those and of
a trimmed prompt, declared once for every kind that gives them.
"""

from __future__ import annotations

from latdoc.advice import keys
from latdoc.advice.verify import VERIFY_MODEL, VERIFY_RETRY, checked, verify_command
from latdoc.i18n import N_, Message
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
    cost_why=N_("a smaller model costs less a token"),
    quality_why=N_("a smaller or quantised model knows less"),
)
TRIMMED_PROMPT_EFFECTS = Effects(
    CostChange.LOWER,
    QualityRisk.MAY_CHANGE,
    cost_why=N_("fewer prompt tokens billed"),
    quality_why=N_("the model no longer reads what was trimmed"),
)


def async_client(kind: Kind) -> Remedy:
    return Remedy(
        keys.ASYNC_CLIENT,
        N_("Use an asynchronous client"),
        kind,
        N_(
            "httpx.AsyncClient or openai.AsyncOpenAI with one shared client, so waiting "
            "requests do not hold threads."
        ),
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
        N_("A smaller or quantised model of the same family"),
        kind,
        change,
        N_("lower quality; know your priority order of latency, cost and quality"),
        ctx,
    )


def retries(kind: Kind, retry_after_s: float | None, ctx: RunContext) -> Remedy:
    wait = (
        Message("429: wait the Retry-After the server sends ({s:g} s here)", s=retry_after_s)
        if retry_after_s is not None
        else Message("429: wait for Retry-After")
    )
    return Remedy(
        keys.RETRIES,
        N_("Retry by error class with exponential backoff"),
        kind,
        Message(
            "Timeouts and 5xx: retry with exponential backoff and jitter, a few tries at "
            "most; {wait}; other 4xx: never retry; never replay a stream that has begun.\n"
            "  from latdoc.client import RetryPolicy, make_async_client\n"
            "  openai.AsyncOpenAI(max_retries=0, "
            "http_client=make_async_client(retry=RetryPolicy()))",
            wait=wait,
        ),
        None,
        verify_command=verify_command(ctx, VERIFY_RETRY),
    )
