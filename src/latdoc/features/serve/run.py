"""``latdoc serve``: the store as a local web app (:func:`serve`), on Starlette and
uvicorn, the stack the lab already serves with: an ASGI app of a dozen routes needs no
more."""

from __future__ import annotations

from collections.abc import Callable

from latdoc.errors import UsageError
from latdoc.features.serve.app import ServeOptions, make_app
from latdoc.i18n import Message
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
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            Message("cannot listen on {host}:{port}: {why}", host=host, port=port,
                    why=exc.strerror or str(exc))
        ) from None  # fmt: skip
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    config = uvicorn.Config(
        make_app(options), log_level="warning", access_log=False, lifespan="off",
        timeout_graceful_shutdown=1,
    )  # fmt: skip
    server = uvicorn.Server(config)
    if ready is not None:
        ready(f"http://{shown_host}:{bound}/")
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def check_store(db: str) -> None:
    """Open the store ``db`` once, read-only: a store that cannot be served is said
    before the server starts, not on its first page."""
    with Store(db, read_only=True):
        pass
