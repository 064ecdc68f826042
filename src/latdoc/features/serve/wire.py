"""How ``latdoc serve`` speaks HTTP beyond a page: the token every request must carry
(:class:`TokenCheck`), and a stream of server-sent events (:func:`event_stream`)."""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

API_SCHEMA = "latdoc.serve/1"
"""The schema every JSON answer of the API names."""
TOKEN_COOKIE = "latdoc_serve_token"
HEARTBEAT_S = 15.0
"""How often an idle event stream sends a comment, so proxies keep it open."""
NEEDS_TOKEN = (
    "this latdoc serve needs its token: open the address it printed, or send "
    "`Authorization: Bearer TOKEN`"
)


def event_stream(
    request: Request,
    news: AsyncIterator[tuple[str, dict[str, Any]] | None],
    *,
    poll_s: float,
) -> Response:
    """``news`` as server-sent events: each item an event, ``None`` a quiet poll of
    ``poll_s`` (a comment is sent after :data:`HEARTBEAT_S` of them); it ends when the
    client goes."""
    from starlette.responses import StreamingResponse

    async def body() -> AsyncIterator[str]:
        quiet = 0.0
        yield "retry: 2000\n\n"
        async for item in news:
            if await request.is_disconnected():
                return
            if item is None:
                quiet += poll_s
                if quiet >= HEARTBEAT_S:
                    quiet = 0.0
                    yield ": still here\n\n"
                continue
            quiet = 0.0
            event, data = item
            yield f"event: {event}\ndata: {json.dumps(data)}\n\n"

    return StreamingResponse(
        body(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


class TokenCheck:
    """Every request carries the token: ``Authorization: Bearer TOKEN``, the cookie a
    first visit with ``?token=TOKEN`` sets, or that query itself."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.requests import Request
        from starlette.responses import JSONResponse, RedirectResponse

        request = Request(scope)
        offered = [
            request.headers.get("authorization", "").removeprefix("Bearer ").strip(),
            request.cookies.get(TOKEN_COOKIE, ""),
        ]
        in_query = request.query_params.get("token")
        if in_query is not None and self._matches(in_query):
            # The token leaves the address bar at once: a cookie carries it from now on.
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            from urllib.parse import urlencode

            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(TOKEN_COOKIE, in_query, httponly=True, samesite="strict")
            await response(scope, receive, send)
            return
        if any(self._matches(candidate) for candidate in offered if candidate):
            await self.app(scope, receive, send)
            return
        answer = JSONResponse(
            {
                "schema": API_SCHEMA,
                "error": NEEDS_TOKEN,
                "status": 401,
            },
            status_code=401,
        )
        await answer(scope, receive, send)

    def _matches(self, offered: str) -> bool:
        return hmac.compare_digest(offered.encode(), self.token.encode())
