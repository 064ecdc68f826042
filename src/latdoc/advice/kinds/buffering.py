"""Remedies for ``buffering``: a stream a proxy, gateway or CDN holds back gets its route
unbuffered.
"""

from __future__ import annotations

from collections.abc import Iterator

from latdoc.advice import keys
from latdoc.advice.kinds._builder import RemedyBuilder
from latdoc.advice.verify import VERIFY_ENDPOINT, verify_command
from latdoc.i18n import N_, Message
from latdoc.model import Diagnosis, Effects, Finding, Kind, Remedy, RunContext

__all__ = ["BUILDER", "buffering_remedies"]


def buffering_remedies(f: Finding, d: Diagnosis, ctx: RunContext) -> Iterator[Remedy]:
    held = f.evidence.get("held_ms", 0.0)
    yield Remedy(
        keys.UNBUFFER_STREAM,
        N_("Turn response buffering off for the streaming route"),
        f.kind,
        Message(
            "The first token was held back ~{held:.0f} ms per request by a hop that buffers "
            "the event stream. Let it pass each event on at once:\n"
            "  the server's response: X-Accel-Buffering: no   (nginx honours it per response)\n"
            "  nginx, in the route's location:  proxy_buffering off;  proxy_cache off;\n"
            "    proxy_http_version 1.1;  (gzip off for text/event-stream)\n"
            "  an API gateway or CDN: its streaming / response-streaming setting for the route\n"
            "  (e.g. no response buffering or compression of text/event-stream).\n"
            "To measure it, serve the route unbuffered at a second URL (URL2) beside this one.",
            held=held,
        ),
        None,
        verify_command=verify_command(ctx, VERIFY_ENDPOINT, alt="URL2"),
    )


BUILDER = RemedyBuilder(Kind.BUFFERING, buffering_remedies, {keys.UNBUFFER_STREAM: Effects()})
