"""What ``latdoc probe`` and ``latdoc diagnose`` build alike from their options."""

from __future__ import annotations

import argparse
from typing import TextIO

from latdoc.errors import UsageError
from latdoc.measure import ConnectionOptions
from latdoc.probe.dialects import Dialect
from latdoc.probe.endpoint import Endpoint, Timeouts

EXIT_OK = 0
EXIT_REQUEST_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def endpoint_and_connection(
    args: argparse.Namespace,
    url: str,
    model: str | None,
    cacert: str | None,
    api_key: str | None,
) -> tuple[Endpoint, ConnectionOptions]:
    """The endpoint to measure and how to connect to it, from the shared options."""
    if not model:
        raise UsageError("--model is required for an endpoint other than the built-in one")
    endpoint = Endpoint(url, model, Dialect(args.api), api_key=api_key)
    connection = ConnectionOptions(
        http2=args.http2,
        cacert=cacert,
        insecure=args.insecure,
        timeouts=Timeouts(total=args.timeout),
    )
    return endpoint, connection


class ProgressLine:
    """A bar per labelled stage on a terminal (``label ███░░ k/n``); silent elsewhere."""

    WIDTH = 24

    def __init__(self, stream: TextIO, *, enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled and stream.isatty()
        self.label: str | None = None

    def __call__(self, label: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.label is not None and label != self.label:
            self.stream.write("\n")
        self.label = label
        filled = self.WIDTH * min(done, total) // max(total, 1)
        bar = "█" * filled + "░" * (self.WIDTH - filled)
        self.stream.write(f"\r  {label:<12} {bar} {done}/{total}")
        self.stream.flush()

    def clear(self) -> None:
        """Erase the current bar, e.g. before printing an error line."""
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def close(self) -> None:
        """Keep the last bar on screen and end its line."""
        if self.enabled and self.label is not None:
            self.stream.write("\n")
            self.stream.flush()
