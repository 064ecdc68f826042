"""``latdoc serve``: the store as a local web app (:func:`serve`), on Starlette and
uvicorn, the stack the lab already serves with: an ASGI app of a dozen routes needs no
more."""

from __future__ import annotations

from collections.abc import Callable

from latdoc.features.serve.app import ServeOptions, make_app
from latdoc.pipeline import http_address, listen_on
from latdoc.store import Store

__all__ = ["check_store", "serve"]


def serve(
    options: ServeOptions,
    *,
    host: str,
    port: int,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until Ctrl-C (or SIGTERM). ``ready`` is told the address once it listens.
    Its access log is off: a request's query may carry the token."""
    import uvicorn

    sock = listen_on(host, port)
    address = http_address(host, sock.getsockname()[1])
    config = uvicorn.Config(
        make_app(options), log_level="warning", access_log=False, lifespan="off",
        timeout_graceful_shutdown=1,
    )  # fmt: skip
    server = uvicorn.Server(config)
    if ready is not None:
        ready(address + "/")
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def check_store(db: str) -> None:
    """Open the store ``db`` once, read-only: a store that cannot be served is said
    before the server starts, not on its first page."""
    with Store(db, read_only=True):
        pass
