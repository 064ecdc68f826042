"""Prompts of an exact token length, as the endpoint itself counts tokens.

A prompt is a run of common English words, each one token in the BPE
vocabularies of the major model families when preceded by a space. The words
are drawn at random from 309, so the first eight alone make 309**8 different
starts: no two prompts share a prefix and no prefix cache can answer one.

The endpoint's count is learned from its own ``usage.prompt_tokens``: two
calibration requests (``max_tokens=1``) at two lengths give the chat template's
fixed overhead and the tokens per word.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from latdoc.errors import LatdocError

if TYPE_CHECKING:
    from latdoc.probe.session import ProbeSession
    from latdoc.probe.trace import RequestTrace

WORDS = (
    "the of and to in is was for on are with as his they be at one have this from "
    "or had by word but what some we can out other were all there when up use your "
    "how said an each she which do their time if will way about many then them write "
    "would like so these her long make thing see him two has look more day could go "
    "come did number sound no most people my over know water than call first who may "
    "down side been now find any new work part take get place made live where after "
    "back little only round man year came show every good me give our under name very "
    "through just form great think say help low line before turn cause same mean "
    "differ move right boy old too does tell set three want air well also play small "
    "end put home read hand port large spell add even land here must big high such "
    "follow act why ask men change went light kind off need house picture try us "
    "again animal point mother world near build self earth father head stand own page "
    "should country found answer school grow study still learn plant cover food sun "
    "four thought let keep eye never last door between city tree cross since hard "
    "start might story saw far sea draw left late run while press close night real "
    "life few stop open seem together next white children begin got walk example ease "
    "paper often always music those both mark book letter until mile river car feet "
    "care second group carry took rain eat room friend began idea fish mountain north "
    "once base hear horse cut sure watch color face wood main enough plain girl usual "
    "young ready above ever red list though feel talk bird soon body dog family direct"
).split()


class CalibrationError(LatdocError):
    """The endpoint's token count could not be learned (it reports no usage)."""


def make_prompt(words: int, rng: random.Random) -> str:
    """``words`` common words drawn at random (so its start is unique)."""
    if words < 1:
        raise ValueError("a prompt needs at least one word")
    return " ".join(rng.choices(WORDS, k=words))


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
            raise CalibrationError(f"calibration request failed: {trace.error}")
        if trace.prompt_tokens is None:
            return ASSUMED, traces
        counts.append(trace.prompt_tokens)
    per_word = (counts[1] - counts[0]) / (long_words - short_words)
    if per_word <= 0:
        raise CalibrationError(
            f"the endpoint counted {counts[0]} and {counts[1]} prompt tokens for "
            f"{short_words} and {long_words} words; cannot fit a token rate"
        )
    overhead = counts[0] - per_word * short_words
    return TokenCalibration(overhead=overhead, per_word=per_word, measured=True), traces
