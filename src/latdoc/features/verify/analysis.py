"""What an arm's samples say beyond the comparison of its metrics."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from latdoc.records import Sample


def cached_prompt_tokens(samples: Sequence[Sample]) -> float | None:
    """The median prompt tokens the server reported cached, over the samples that say."""
    known = [s.trace.cached_prompt_tokens for s in samples]
    reported = [n for n in known if n is not None]
    return float(statistics.median(reported)) if reported else None
