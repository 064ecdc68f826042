"""How the endpoint counts a prompt, learned from its own ``usage.prompt_tokens``.

Two calibration requests (``max_tokens=1``) at two lengths give the chat
template's fixed overhead and the tokens per word of :mod:`._prompts`' words;
:func:`prompt_cost` bounds what a prompt will cost before it is sent, which is
what a :class:`~latdoc.workload.Budget` reserves.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from latdoc.errors import CalibrationError, TraceError
from latdoc.i18n import Message
from latdoc.probe import ProbeSession
from latdoc.records import RequestTrace
from latdoc.workload._prompts import make_prompt


def cannot_answer_note(error: TraceError) -> str:
    """What a run that stopped at ``error``, a failure every request meets alike, says."""
    return (
        f"stopped at the first request: {error}; {error.cannot_answer}. Every other request "
        "would fail the same way, so none was sent"
    )


class CalibrationFailed(CalibrationError):
    """The calibration could not learn the token count; :attr:`traces` holds the
    requests it sent, so a caller keeps them."""

    def __init__(self, message: str, traces: list[RequestTrace]) -> None:
        super().__init__(message)
        self.traces = traces

    @property
    def cannot_answer(self) -> TraceError | None:
        """The last request's failure when every request to the endpoint would meet it
        alike (:attr:`~latdoc.errors.TraceError.cannot_answer`), else ``None``."""
        error = self.traces[-1].error if self.traces else None
        return error if error is not None and error.cannot_answer is not None else None


@dataclass(frozen=True, slots=True)
class TokenCalibration:
    """How the endpoint counts a prompt of ``w`` words: ``overhead + per_word * w``."""

    overhead: float
    per_word: float
    measured: bool
    """False when the endpoint reported no usage and 1 token per word was assumed."""

    def words_for(self, tokens: int) -> int:
        """Words needed for a prompt the endpoint counts as ``tokens`` tokens."""
        return max(1, round((tokens - self.overhead) / self.per_word))

    def tokens_for(self, words: int) -> int:
        return round(self.overhead + self.per_word * words)


ASSUMED = TokenCalibration(overhead=0.0, per_word=1.0, measured=False)


def calibration_words(near_tokens: int) -> tuple[int, int]:
    """The two prompt lengths, in words, that :func:`calibrate` sends."""
    return 16, max(64, near_tokens)


async def calibrate(
    session: ProbeSession,
    rng: random.Random,
    *,
    near_tokens: int = 256,
) -> tuple[TokenCalibration, list[RequestTrace]]:
    """Learn the endpoint's token count from two requests with ``max_tokens=1``.

    The second length is close to ``near_tokens`` so the fitted rate is measured
    where it will be used. Returns the calibration and the calibration traces.
    """
    short_words, long_words = calibration_words(near_tokens)
    traces: list[RequestTrace] = []
    counts: list[int] = []
    for words in (short_words, long_words):
        trace = await session.request(make_prompt(words, rng), max_tokens=1)
        traces.append(trace)
        if trace.error is not None:
            raise CalibrationFailed(
                Message("calibration request failed: {error}", error=trace.error), traces
            )
        if trace.prompt_tokens is None:
            return ASSUMED, traces
        counts.append(trace.prompt_tokens)
    try:
        return fit_calibration((short_words, long_words), (counts[0], counts[1])), traces
    except CalibrationError as exc:
        raise CalibrationFailed(exc.args[0], traces) from exc


def fit_calibration(words: tuple[int, int], counts: tuple[int, int]) -> TokenCalibration:
    """The line through two prompts' word counts and the prompt tokens the endpoint counted."""
    (short_words, long_words), (short_count, long_count) = words, counts
    per_word = (long_count - short_count) / (long_words - short_words)
    if per_word <= 0:
        raise CalibrationError(
            Message(
                "the endpoint counted {short_count} and {long_count} prompt tokens for "
                "{short_words} and {long_words} words; cannot fit a token rate",
                short_count=short_count,
                long_count=long_count,
                short_words=short_words,
                long_words=long_words,
            )
        )
    overhead = short_count - per_word * short_words
    return TokenCalibration(overhead=overhead, per_word=per_word, measured=True)


def prompt_cost(calibration: TokenCalibration, words: int) -> int:
    """An upper bound of the tokens an endpoint counts for a prompt of ``words`` words.

    Calibrated: the fitted count with 5% and 8 tokens to spare (random words vary).
    Not calibrated: two tokens a word and 64 for the chat template, more than any
    common tokenizer takes for these words.
    """
    if calibration.measured:
        return math.ceil(calibration.tokens_for(words) * 1.05) + 8
    return 2 * words + 64
