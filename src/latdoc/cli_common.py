"""What ``latdoc probe`` and ``latdoc diagnose`` build alike from their options."""

from __future__ import annotations

import argparse

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
