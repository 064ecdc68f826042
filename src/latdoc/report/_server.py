"""The server's own account of the run, in words every renderer shares."""

from __future__ import annotations

from latdoc.i18n import N_, say, translate
from latdoc.i18n import gettext as _
from latdoc.model import ServerAccount
from latdoc.report.names import format_ms, format_value

__all__ = ["disagreement_texts", "server_lines"]

_LABELS = (
    ("queue_ms", N_("queue")),
    ("prefill_ms", N_("prefill")),
    ("decode_ms", N_("decode")),
    ("processing_ms", N_("processing")),
    ("gateway_ms", N_("gateway")),
    ("wait_beyond_prefill_ms", N_("wait beyond prefill")),
    ("network_and_client_ms", N_("network + client")),
)


def server_lines(account: ServerAccount) -> list[str]:
    """Lines for the terminal: the medians the server told, then the scraped metrics."""
    n = account.numbers
    lines = []
    requests = int(n.get("requests") or 0)
    if requests:
        told = [
            f"{_(label)} {format_ms(value)}"
            for key, label in _LABELS
            if (value := n.get(key)) is not None
        ]
        lines.append(
            say(
                "{n} requests told their timing ({source}), medians:",
                n=requests,
                source=account.source,
            )
        )
        lines.append("  " + ", ".join(told))
        conc, alone = n.get("concurrent_wait_ms"), n.get("alone_wait_ms")
        if conc is not None and alone is not None:
            lines.append(
                say(
                    "  wait beyond prefill alone {alone}, with others in flight {together}",
                    alone=format_ms(alone),
                    together=format_ms(conc),
                )
            )
    if account.metrics_source is not None:
        lines.append(say("engine metrics, {source}:", source=account.metrics_source))
        shown = [
            f"{key} {format_value(key, value)}"
            for key, value in account.metrics.items()
            if value is not None
        ]
        lines.append("  " + (", ".join(shown) or _("nothing counted")))
    return lines


def disagreement_texts(account: ServerAccount | None) -> list[str]:
    """Each disagreement of client and server, in one line."""
    if account is None:
        return []
    return [
        say(
            "{what} ({n} of {of} requests; up to {ms} apart)",
            what=translate(d.what),
            n=d.requests,
            of=d.of,
            ms=format_ms(d.worst_ms),
        )
        for d in account.disagreements
    ]
