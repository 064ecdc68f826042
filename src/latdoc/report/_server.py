"""The server's own account of the run, in words every renderer shares."""

from __future__ import annotations

from latdoc.model import ServerAccount
from latdoc.report.names import format_ms, format_value

__all__ = ["disagreement_texts", "server_lines"]

_LABELS = (
    ("queue_ms", "queue"),
    ("prefill_ms", "prefill"),
    ("decode_ms", "decode"),
    ("processing_ms", "processing"),
    ("gateway_ms", "gateway"),
    ("wait_beyond_prefill_ms", "wait beyond prefill"),
    ("network_and_client_ms", "network + client"),
)


def server_lines(account: ServerAccount) -> list[str]:
    """Lines for the terminal: the medians the server told, then the scraped metrics."""
    n = account.numbers
    lines = []
    requests = int(n.get("requests") or 0)
    if requests:
        told = [
            f"{label} {format_ms(value)}"
            for key, label in _LABELS
            if (value := n.get(key)) is not None
        ]
        lines.append(f"{requests} requests told their timing ({account.source}), medians:")
        lines.append("  " + ", ".join(told))
        conc, alone = n.get("concurrent_wait_ms"), n.get("alone_wait_ms")
        if conc is not None and alone is not None:
            lines.append(
                f"  wait beyond prefill alone {format_ms(alone)}, with others in flight "
                f"{format_ms(conc)}"
            )
    if account.metrics_source is not None:
        lines.append(f"engine metrics, {account.metrics_source}:")
        shown = [
            f"{key} {format_value(key, value)}"
            for key, value in account.metrics.items()
            if value is not None
        ]
        lines.append("  " + (", ".join(shown) or "nothing counted"))
    return lines


def disagreement_texts(account: ServerAccount | None) -> list[str]:
    """Each disagreement of client and server, in one line."""
    if account is None:
        return []
    return [
        f"{d.what} ({d.requests} of {d.of} requests; up to {format_ms(d.worst_ms)} apart)"
        for d in account.disagreements
    ]
