"""Batched commits for busy writers: :class:`SampleWriter`.

A commit is a disk sync, so one commit per sample caps a writer at a few
thousand samples a second. A :class:`SampleWriter` holds the samples it is
given and commits them together once ``max_samples`` are held or the oldest has
waited ``max_delay`` seconds, and on leaving its block (also when the block
raises), so a crash loses at most the samples of the last ``max_delay``.
Diagnoses keep :meth:`Store.add_sample` (each sample committed as it finishes);
batching is for writers that asked for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Protocol, Self

from latdoc.records import Sample

DEFAULT_MAX_SAMPLES = 5000
DEFAULT_MAX_DELAY = 0.25
"""Seconds a sample may wait for its commit."""


class _Sink(Protocol):
    def add_samples(self, run_id: str, samples: Sequence[Sample]) -> None: ...


class SampleWriter:
    """Adds samples of one run in batches; use it as a context manager."""

    def __init__(
        self,
        sink: _Sink,
        run_id: str,
        *,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        max_delay: float = DEFAULT_MAX_DELAY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_samples < 1:
            raise ValueError(f"max_samples must be at least 1, got {max_samples}")
        if max_delay < 0:
            raise ValueError(f"max_delay must not be negative, got {max_delay}")
        self.run_id = run_id
        self.max_samples = max_samples
        self.max_delay = max_delay
        self.committed = 0
        self._sink = sink
        self._clock = clock
        self._held: list[Sample] = []
        self._oldest = 0.0

    def add(self, sample: Sample) -> None:
        """Hold ``sample``; commit what is held when the batch is full or old enough."""
        if not self._held:
            self._oldest = self._clock()
        self._held.append(sample)
        if len(self._held) >= self.max_samples or self._clock() - self._oldest >= self.max_delay:
            self.flush()

    def flush(self) -> None:
        """Commit every held sample now."""
        if self._held:
            held, self._held = self._held, []
            self._sink.add_samples(self.run_id, held)
            self.committed += len(held)

    @property
    def pending(self) -> int:
        """Samples held and not yet committed."""
        return len(self._held)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.flush()
