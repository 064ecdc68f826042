"""What a trace is made of besides its phase marks: the streamed chunks
(:class:`Chunk`), the kernel's view of the connection (:class:`TcpInfo`), each TCP
attempt of a new connection (:class:`ConnectAttempt`), and the estimate of a prompt's
tokens from its characters (:func:`estimate_tokens`) for a server that reports no usage.
"""

from __future__ import annotations

from dataclasses import dataclass

_NS_PER_MS = 1_000_000

CHARS_PER_TOKEN = 4
"""Characters a token is taken to hold when a prompt's tokens are estimated from its
text: OpenAI's rule of thumb for English text with its tokenizers."""


def estimate_tokens(chars: int) -> int:
    """An estimate of the tokens in ``chars`` characters of text (rounded up)."""
    return -(-chars // CHARS_PER_TOKEN)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One streamed event that carried output text (or reasoning text)."""

    t_ns: int
    """Arrival time of the socket read that completed the event, from t0."""
    chars: int
    tokens: int
    """Tokens in this chunk: exact when ``RequestTrace.chunk_tokens_exact``."""


@dataclass(frozen=True, slots=True)
class TcpInfo:
    """Kernel view of the connection (Linux ``TCP_INFO``), read at the end."""

    rtt_us: int
    rttvar_us: int
    min_rtt_us: int | None
    retransmits: int
    """Segments retransmitted over the connection's whole life."""
    snd_cwnd: int
    bytes_acked: int | None
    bytes_received: int | None
    lost: int | None = None
    """Segments the kernel counts as lost and not yet retransmitted (``tcpi_lost``)."""
    backoff_retransmits: int | None = None
    """Retransmission timeouts in a row still unanswered when read (``tcpi_retransmits``):
    above 0, the connection is waiting out an exponential backoff."""
    data_segments_out: int | None = None
    """Segments carrying data sent over the connection's whole life
    (``tcpi_data_segs_out``), retransmissions included."""
    data_segments_in: int | None = None
    """Segments carrying data received over the connection's whole life
    (``tcpi_data_segs_in``)."""
    out_of_order_in: int | None = None
    """Segments received out of order (``tcpi_rcv_ooopack``): one before it was lost on
    the way here, and the server resends it. The client sees the server's
    retransmissions only so."""

    @property
    def resent_share(self) -> float | None:
        """Segments resent either way (the client's retransmissions and the server's, seen
        as out-of-order arrivals) over the data segments sent and received; ``None`` when
        not counted."""
        if self.data_segments_out is None or self.data_segments_in is None:
            return None
        segments = self.data_segments_out + self.data_segments_in
        if not segments:
            return None
        return (self.retransmits + (self.out_of_order_in or 0)) / segments


@dataclass(frozen=True, slots=True)
class ConnectAttempt:
    """One TCP connection attempt of a new connection (happy eyeballs, RFC 8305)."""

    address: str
    family: int
    """4 or 6."""
    start_ns: int
    """When the attempt started, from ``t0``."""
    elapsed_ns: int
    """From its start to its outcome."""
    outcome: str
    """``"connected"`` (the connection used), ``"failed"`` (refused, unreachable),
    ``"timeout"`` (the request's connect timeout ran out), ``"cancelled"`` (still
    waiting when another attempt connected), or ``"spare"`` (connected just after
    another did, and closed)."""

    @property
    def ms(self) -> float:
        return self.elapsed_ns / _NS_PER_MS


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the response streamed: its name, how much its arguments held, and
    when its first and last parts arrived."""

    name: str | None
    """The tool's name as the response gave it; ``None`` when no part named it."""
    argument_chars: int
    """Characters of its arguments (the JSON text as streamed, or as the dialect's
    whole-call part serialises compactly)."""
    first_ns: int
    """When the first event carrying the call (its name or arguments) arrived, from t0."""
    last_ns: int
    """When the last event carrying its arguments arrived (else its name), from t0: the
    arguments' last byte."""

    @property
    def streaming_ms(self) -> float:
        """From its first part to its arguments' last byte."""
        return (self.last_ns - self.first_ns) / _NS_PER_MS
