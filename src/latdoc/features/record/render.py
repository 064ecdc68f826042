"""What ``latdoc record`` says: a line per call as it ends, and its closing lines."""

from __future__ import annotations

from latdoc.features.record.analysis import Recorded
from latdoc.i18n import Message, translate
from latdoc.records import RequestTrace

__all__ = ["call_line", "closing_lines", "gateway_messages"]


def call_line(number: int, trace: RequestTrace) -> str:
    """One finished call: its number, status, TTFT, total and connection."""
    status = str(trace.status) if trace.status is not None else trace.error.kind.value \
        if trace.error is not None else "-"  # fmt: skip
    ttft = trace.ttft_ms
    total = trace.total_ms
    connection = translate(Message("new connection") if trace.new_connection
                           else Message("reused connection"))  # fmt: skip
    return translate(
        Message(
            "{n:>5}  {status}  TTFT {ttft}  total {total}  {connection}",
            n=number,
            status=status,
            ttft=_ms(ttft),
            total=_ms(total),
            connection=connection,
        )
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else format(value, ".0f") + " ms"


def closing_lines(recorded: Recorded) -> list[str]:
    """What the recording kept, what the gateway added, and what to run next."""
    lines = [
        translate(
            Message(
                "Recorded {kept} of {requests} calls as run {run_id}{how}.",
                kept=recorded.kept,
                requests=recorded.requests,
                run_id=recorded.run_id,
                how=translate(Message(" (stopped by Ctrl-C)")) if recorded.interrupted else "",
            )
        )
    ]
    if recorded.not_recorded:
        lines.append(
            translate(
                Message(
                    "Calls passed on but not recorded: {n} (see `latdoc runs`).",
                    n=recorded.not_recorded,
                )
            )
        )
    lines.extend(translate(m) for m in gateway_messages(recorded))
    if recorded.kept:
        lines.append(
            translate(
                Message("Diagnose it: latdoc diagnose --from-run {run_id}",
                        run_id=recorded.run_id)
            )
        )  # fmt: skip
    return lines


def gateway_messages(recorded: Recorded) -> list[Message]:
    """What the gateway added, and the application's own connections where each call
    opened one: said at the end and kept with the run as its notes."""
    said: list[Message] = []
    relay = recorded.relay
    if relay is not None:
        said.append(
            Message(
                "The gateway added {p50:.3f} ms a piece of body at the median, "
                "{p99:.3f} ms at p99 ({pieces} pieces).",
                p50=relay.p50_ms,
                p99=relay.p99_ms,
                pieces=relay.pieces,
            )
        )
    if recorded.requests >= 2 and recorded.app_connections >= recorded.requests:
        said.append(
            Message(
                "The application opened a new connection for each of its {n} calls: "
                "it does not keep connections alive.",
                n=recorded.requests,
            )
        )
        if recorded.upstream_reused and recorded.setup_ms is not None:
            said.append(
                Message(
                    "Through this gateway {reused} of them reused a connection to the "
                    "provider; sent directly, each would set one up again: "
                    "{setup:.0f} ms at the median here.",
                    reused=recorded.upstream_reused,
                    setup=recorded.setup_ms,
                )
            )
    return said
