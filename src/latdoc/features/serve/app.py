"""The app ``latdoc serve`` serves (:func:`make_app`): its pages, its JSON API, its live
events, and the token check.

Every request opens the store read-only (:class:`~latdoc.store.Store` with
``read_only``), on a worker thread, and closes it: a page always reads what the measuring
processes have committed, never waits on them beyond SQLite's own read of a WAL file,
and cannot write. A run being written is followed over server-sent events:
``/api/runs/{id}/events`` says ``change`` whenever its samples or its status change, and
``end`` once it is finished; the list follows the whole store the same way on
``/api/events``.

Every failure is said as a page (or, under ``/api/``, as a JSON error), never a
traceback: an unknown run is 404, a bad query 400, a store that cannot be read 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from latdoc.errors import LatdocError, NotFound, StoreUnusable, UsageError, message_of
from latdoc.features.report import page_of
from latdoc.features.serve.analysis import (
    MAX_ROWS,
    list_query,
    page_rows,
    related,
    run_row,
    runs_page,
)
from latdoc.features.serve.render import (
    framed,
    message_html,
    nav_html,
    run_facts,
    runs_html,
)
from latdoc.features.serve.wire import API_SCHEMA, TokenCheck, event_stream
from latdoc.i18n import Message, gettext, language, translate
from latdoc.store import Store
from latdoc.store.requests import SCHEMA as ROWS_SCHEMA
from latdoc.store.requests import VERSION as ROWS_VERSION
from latdoc.store.requests import RowRun, row

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["API_SCHEMA", "ServeOptions", "api_index", "make_app"]

POLL_S = 0.5
"""How often a live page's events read the store for news."""
PAGES_KEPT = 32
"""Rendered run pages kept, by run and by how far it had come: viewers of one live run
share a render."""

_log = logging.getLogger("latdoc.serve")
T = TypeVar("T")


def api_index() -> dict[str, Any]:
    """What ``/api/`` says of itself: each route, what it returns and its schema."""
    return {
        "schema": API_SCHEMA,
        "routes": {
            "/api/runs": "runs, newest first: ?endpoint=TEXT&kind=KIND&since=YYYY-MM-DD"
            "&until=YYYY-MM-DD&limit=N&after=RUN_ID (the page after RUN_ID: `next`)",
            "/api/runs/{run_id}": "a run: its facts and its document (`report --json`'s)",
            "/api/runs/{run_id}/rows": f"its requests as {ROWS_SCHEMA} v{ROWS_VERSION} rows "
            f"(`latdoc export`'s): ?offset=N&limit=N (at most {MAX_ROWS})",
            "/api/runs/{run_id}/events": "server-sent events: `change` as the run is "
            "written, `end` when it has finished",
            "/api/events": "server-sent events: `change` when any run is added or written",
        },
        "rows": {"schema": ROWS_SCHEMA, "version": ROWS_VERSION},
    }


@dataclass(frozen=True)
class ServeOptions:
    """Where the store is, and the token every request must carry (``None``: none)."""

    db: str
    token: str | None = None


class _Pages:
    """Rendered run pages, newest last, at most :data:`PAGES_KEPT`."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, ...], str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, ...], make: Callable[[], str]) -> str:
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        page = make()
        with self._lock:
            self._kept[key] = page
            while len(self._kept) > PAGES_KEPT:
                self._kept.popitem(last=False)
        return page


def make_app(options: ServeOptions) -> Starlette:
    """The app serving the store ``options.db``."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route

    app = _App(options)
    routes = [
        Route("/", app.runs),
        Route("/runs/{run_id}", app.run),
        Route("/favicon.ico", app.icon),
        Route("/api", app.api),
        Route("/api/", app.api),
        Route("/api/runs", app.api_runs),
        Route("/api/runs/{run_id}", app.api_run),
        Route("/api/runs/{run_id}/rows", app.api_rows),
        Route("/api/runs/{run_id}/events", app.run_events),
        Route("/api/events", app.store_events),
    ]
    middleware = [] if options.token is None else [Middleware(TokenCheck, token=options.token)]
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={404: app.not_found, 405: app.not_found, Exception: app.failed},
    )


class _App:
    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.pages = _Pages()

    # -- the store, read on a worker thread -------------------------------------

    @contextlib.contextmanager
    def _store(self) -> Iterator[Store]:
        with Store(self.options.db, read_only=True) as store:
            yield store

    async def _read(self, read: Callable[[Store], T]) -> T:
        def work() -> T:
            with self._store() as store:
                return read(store)

        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(work)

    # -- pages -------------------------------------------------------------------

    async def runs(self, request: Request) -> Response:
        from starlette.responses import HTMLResponse

        base = _base(request)
        try:
            query = list_query(request.query_params)
            html = await self._read(
                lambda store: runs_html(
                    runs_page(store, query),
                    base=base,
                    store=self.options.db,
                    live_url=f"{base}/api/events",
                )
            )
        except LatdocError as exc:
            return self._said(request, exc)
        return HTMLResponse(html)

    async def run(self, request: Request) -> Response:
        from starlette.responses import HTMLResponse

        run_id = request.path_params["run_id"]
        base = _base(request)

        def read(store: Store) -> str:
            info = store.runs.run_info(run_id)
            progress = store.runs.progress(info.run_id)
            live = progress.status == "running"
            live_url = f"{base}/api/runs/{info.run_id}/events" if live else None
            key = (info.run_id, progress.status, str(progress.last_seq), base, language())

            def make() -> str:
                nav = nav_html(info, related(store, info), base=base, live=live)
                shown = page_of(store, info) if info.requests else None
                page = None if shown is None else shown.page()
                if page is None:
                    return message_html(
                        translate(Message("Run {run}", run=info.run_id)),
                        _no_page_lines(info),
                        base=base,
                        nav=nav,
                        facts=run_facts(info),
                        notes=[note.text for note in info.notes],
                        live_url=live_url,
                    )
                return framed(page, nav, live_url=live_url)

            return self.pages.get(key, make)

        try:
            html = await self._read(read)
        except LatdocError as exc:
            return self._said(request, exc)
        return HTMLResponse(html)

    async def icon(self, request: Request) -> Response:
        """Nothing, said as nothing: a browser asks every page's site for an icon, and a
        404 would stand in its console as an error on every page."""
        from starlette.responses import Response

        return Response(status_code=204)

    # -- the API -----------------------------------------------------------------

    async def api(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        return JSONResponse(api_index())

    async def api_runs(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        try:
            query = list_query(request.query_params)
            page = await self._read(lambda store: runs_page(store, query))
        except LatdocError as exc:
            return self._said(request, exc)
        return JSONResponse(
            {
                "schema": API_SCHEMA,
                "total": page.total,
                "runs": page_rows(page),
                "next": page.next_after,
            }
        )

    async def api_run(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        run_id = request.path_params["run_id"]

        def read(store: Store) -> dict[str, Any]:
            info = store.runs.run_info(run_id)
            shown = page_of(store, info) if info.requests else None
            cost = store.runs.costs([info.run_id]).get(info.run_id)
            return {
                "schema": API_SCHEMA,
                "run": {
                    **run_row(info, cost),
                    "notes": [{"step": str(n.step), "text": n.text} for n in info.notes],
                },
                "document": None if shown is None else shown.document(),
            }

        try:
            return JSONResponse(await self._read(read))
        except LatdocError as exc:
            return self._said(request, exc)

    async def api_rows(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        run_id = request.path_params["run_id"]
        try:
            offset = _whole(request.query_params.get("offset"), "offset", 0, None, 0)
            limit = _whole(request.query_params.get("limit"), "limit", 1, MAX_ROWS, 100)

            def read(store: Store) -> dict[str, Any]:
                info = store.runs.run_info(run_id)
                samples = store.samples.samples_page(info.run_id, offset=offset, limit=limit)
                on = RowRun.of(info)
                rows = [row(on, sample) for sample in samples]
                more = offset + len(rows) < info.requests
                return {
                    "schema": ROWS_SCHEMA,
                    "version": ROWS_VERSION,
                    "run_id": info.run_id,
                    "total": info.requests,
                    "offset": offset,
                    "rows": rows,
                    "next_offset": offset + len(rows) if more else None,
                }

            return JSONResponse(await self._read(read))
        except LatdocError as exc:
            return self._said(request, exc)

    # -- live --------------------------------------------------------------------

    async def run_events(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            first = await self._read(lambda store: store.runs.progress(run_id))
        except LatdocError as exc:
            return self._said(request, exc)
        news = self._news(
            first,
            lambda store: store.runs.progress(first.run_id),
            lambda now: {"samples": now.samples, "status": now.status},
            going=lambda now: now.status == "running",
        )
        return event_stream(request, news, poll_s=POLL_S)

    async def store_events(self, request: Request) -> Response:
        def mark(store: Store) -> tuple[int, int, int]:
            return store.runs.mark()

        try:
            first = await self._read(mark)
        except LatdocError as exc:
            return self._said(request, exc)
        news = self._news(first, mark, lambda now: {"runs": now[0], "running": now[2]})
        return event_stream(request, news, poll_s=POLL_S)

    async def _news(
        self,
        first: T,
        read: Callable[[Store], T],
        said: Callable[[T], dict[str, Any]],
        going: Callable[[T], bool] = lambda _: True,
    ) -> AsyncIterator[tuple[str, dict[str, Any]] | None]:
        """What ``read`` finds, every :data:`POLL_S`, while it is ``going``: ``change``
        when it differs from the time before, ``None`` when it does not, and ``end``
        once it has stopped going."""
        seen = first
        while going(seen):
            await asyncio.sleep(POLL_S)
            now = await self._read(read)
            if now == seen:
                yield None
                continue
            seen = now
            yield "change", said(now)
        yield "end", said(seen)

    # -- failures ----------------------------------------------------------------

    def _said(self, request: Request, exc: LatdocError) -> Response:
        from starlette.responses import HTMLResponse, JSONResponse

        message = translate(message_of(exc))
        status = _status_of(exc)
        if request.url.path.startswith("/api"):
            return JSONResponse(
                {"schema": API_SCHEMA, "error": message, "status": status}, status_code=status
            )
        title = gettext("Not found") if status == 404 else gettext("Cannot show this")
        return HTMLResponse(message_html(title, [message], base=_base(request)), status_code=status)

    async def not_found(self, request: Request, exc: Exception) -> Response:
        said = Message("nothing is served at {path}", path=request.url.path)
        return self._said(request, NotFound(said))

    async def failed(self, request: Request, exc: Exception) -> Response:
        from starlette.responses import HTMLResponse, JSONResponse

        # Said in a line, kept in the server's log with its traceback: never shown whole.
        _log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        error = f"{type(exc).__name__}: {exc}"
        message = translate(Message("latdoc could not show this: {error}", error=error))
        if request.url.path.startswith("/api"):
            return JSONResponse(
                {"schema": API_SCHEMA, "error": message, "status": 500}, status_code=500
            )
        return HTMLResponse(
            message_html(gettext("Cannot show this"), [message], base=_base(request)),
            status_code=500,
        )


def _status_of(exc: LatdocError) -> int:
    """The HTTP status an error is answered with: what is not there, 404; a store that
    cannot be read, 503; any other mistake in what was asked, 400."""
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, StoreUnusable) or not isinstance(exc, UsageError):
        return 503
    return 400


def _no_page_lines(info: Any) -> list[str]:
    if not info.requests:
        return [translate(Message("This run has no request kept yet."))]
    return [
        translate(
            Message(
                "A {kind} run has no page of its own: `latdoc compare` compares it with "
                "another run, and `latdoc export {run}` writes its requests out.",
                kind=info.kind,
                run=info.run_id,
            )
        )
    ]


def _whole(text: str | None, name: str, least: int, most: int | None, default: int) -> int:
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least or (most is not None and value > most):
        if most is None:
            raise UsageError(
                Message("{name} {text!r}: give a whole number of at least {least}",
                        name=name, text=text, least=least)
            )  # fmt: skip
        raise UsageError(
            Message("{name} {text!r}: give a whole number from {least} to {most}",
                    name=name, text=text, least=least, most=most)
        )  # fmt: skip
    return value


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")
