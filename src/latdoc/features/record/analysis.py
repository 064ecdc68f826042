"""What the gateway's own time per piece of body comes to (:func:`relay_figures`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Recorded", "RelayFigures", "relay_figures"]


@dataclass(frozen=True)
class RelayFigures:
    """The gateway's time from a piece's read off the upstream to its hand-over to the
    application, over every piece of a recording."""

    pieces: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    def document(self) -> dict[str, float | int]:
        return {
            "pieces": self.pieces,
            "p50": round(self.p50_ms, 4),
            "p99": round(self.p99_ms, 4),
            "max": round(self.max_ms, 4),
        }


def relay_figures(relay_us: Sequence[int]) -> RelayFigures | None:
    """The figures of ``relay_us`` (µs each); ``None`` when no piece was passed on."""
    if not relay_us:
        return None
    ms = np.asarray(relay_us, dtype=np.float64) / 1000.0
    p50, p99 = np.quantile(ms, [0.5, 0.99])
    return RelayFigures(len(ms), float(p50), float(p99), float(ms.max()))


@dataclass(frozen=True)
class Recorded:
    """What a recording kept, for its closing lines."""

    run_id: str
    requests: int
    """Calls the gateway passed on."""
    kept: int
    not_recorded: int
    app_connections: int
    """Connections the application opened to the gateway."""
    upstream_reused: int
    """Calls that went to the upstream on a connection already open."""
    setup_ms: float | None
    """The median set-up (DNS, TCP, TLS) of the upstream connections the gateway opened;
    ``None`` when it opened none it could time."""
    relay: RelayFigures | None
    interrupted: bool
